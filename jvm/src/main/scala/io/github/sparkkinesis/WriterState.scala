package io.github.sparkkinesis

import java.util.concurrent.TimeUnit
import java.util.concurrent.atomic.{AtomicLong, AtomicReference, LongAdder}

import org.slf4j.LoggerFactory
import io.github.sparkkinesis.shaded.kpl.{
  Attempt,
  DaemonException,
  FutureTimedOutException,
  UserRecordFailedException,
  UserRecordResult
}

import io.github.sparkkinesis.aggregation.{Pending, RecordOwner}
import io.github.sparkkinesis.replay.TaskReplay
import io.github.sparkkinesis.compat.CollectionConverters._

/** Per-task bookkeeping: pending records, first error, and the task's totals. */
private[sparkkinesis] final class WriterState(options: KinesisWriterOptions, producer: SharedProducer)
    extends RecordOwner {
  import KinesisTaskWriter.log

  private val metrics = producer.metrics
  private val bound = producer.bound
  val pending = new AtomicLong()
  val sent = new LongAdder()
  val failedCount = new LongAdder()
  val failedBytes = new LongAdder() // touched only when a record fails
  val bytesSent = new LongAdder()
  private val firstError = new AtomicReference[Throwable]()
  // Task-thread only:
  var cycles = 0L
  var written = 0L // records and bytes put by this task (successful puts only)
  var writtenBytes = 0L
  var blockedNanos = 0L
  private var puts = 0L
  private var controlPlaneClaimed = ControlPlaneCount.zero
  // Set before the task's first put (skip on replay, docs/reliability.md); null when the mode is off.
  var replay: TaskReplay = null
  // Task-thread only: each stream this task wrote to, and when it first did (a refusal seen since fails the task).
  private var lastStream: String = null
  private val firstWrites = new java.util.HashMap[String, java.lang.Long]()

  /** Notes that this task writes to `stream` (cheap when it is the last record's stream, as with one stream). */
  def writes(stream: String): Unit = if (stream != lastStream) {
    lastStream = stream
    if (!firstWrites.containsKey(stream)) firstWrites.put(stream, producer.clockMs())
  }

  override def confirmed(entries: Array[Pending], from: Int, until: Int): Unit =
    if (replay != null) replay.confirmed(entries, from, until)

  /** A record sent alone confirmed; its fingerprint, taken when it was put. */
  def confirmed(h1: Long, h2: Long): Unit = if (replay != null) replay.confirmed(h1, h2)

  /** The control-plane calls of this task's producer that this task counts (task thread): the ones made since another
    * task last claimed them, added to what it claimed before ([[ControlPlaneCalls.claim]]).
    */
  def controlPlane(): ControlPlaneCount = {
    controlPlaneClaimed += metrics.controlPlane.claim()
    controlPlaneClaimed
  }

  /** A start time for 1 in LatencySampleEvery records (0 = not sampled): `nanoTime` is not free. */
  def latencyStart(): Long = {
    puts += 1
    if (puts % ProducerMetrics.LatencySampleEvery == 1) System.nanoTime() else 0L
  }

  /** Records a confirmed record's latency, if it was sampled. */
  def latency(startNanos: Long): Unit =
    if (startNanos != 0L) metrics.putLatency.update((System.nanoTime() - startNanos) / 1000000L)

  def blocked(nanos: Long): Unit = {
    blockedNanos += nanos
    metrics.backpressureWaitMs.update(nanos, TimeUnit.NANOSECONDS)
  }

  /** `n` records of this task (`bytes` in all) confirmed by one Kinesis record: alone, or one aggregate. */
  def succeeded(result: UserRecordResult, n: Int, bytes: Long): Unit = {
    metrics.recordsSent.inc(n.toLong)
    metrics.bytesSent.inc(bytes)
    sent.add(n.toLong)
    bytesSent.add(bytes)
    retried(result, n)
    done(n, bytes)
  }

  def failed(t: Throwable, n: Int, bytes: Long): Unit = {
    metrics.recordsFailed.inc(n.toLong)
    failedCount.add(n.toLong)
    failedBytes.add(bytes)
    t match {
      case e: UserRecordFailedException => retried(e.getResult, n)
      case _: FutureTimedOutException   =>
      case _: StreamRefused             => // its stream's fault, not the daemon's
      case _                            =>
        // Anything else means the daemon failed (the KPL fails every pending record, then restarts
        // its child in place): retire this producer so retried tasks get a fresh one.
        producer.markBroken()
    }
    val described = WriterState.describe(options, t)
    if (options.failOnError) firstError.compareAndSet(null, described)
    else warnDropped(described)
    done(n, bytes)
  }

  /** A record of a stream Kinesis refused for good, dropped before its put (fail_on_error=false): counted as failed. */
  def dropped(refusal: StreamRefused, bytes: Int): Unit = {
    metrics.recordsFailed.inc()
    failedCount.increment()
    failedBytes.add(bytes.toLong)
    warnDropped(WriterState.describe(options, refusal))
  }

  private def warnDropped(described: Throwable): Unit =
    RateLimitedLog.warn(
      log,
      "record-failed",
      s"${described.getMessage} (fail_on_error=false: the record is dropped and counted; ${failedCount.sum} so far in this task)"
    )

  /** The KPL's re-sends of a Kinesis record (`result`'s attempts after the first), counted for each of the `n` user
    * records it carries. The writer's own re-sends of throttled aggregates are counted where it makes them.
    */
  private def retried(result: UserRecordResult, n: Int): Unit =
    if (result != null && result.getAttempts.size > 1) metrics.retries.inc((result.getAttempts.size - 1L) * n)

  /** Gives the room back (the bound wakes writers once a batch of it is free) and wakes this task's commit when its
    * last record is in, or a blocked write when a record failed.
    */
  private def done(n: Int, bytes: Long): Unit = {
    bound.release(n, bytes)
    val left = pending.addAndGet(-n.toLong)
    if (left <= 1 || firstError.get != null) bound.latch.trigger() // 1: an ordered record alone waits for the rest
    if (left == 0 && replay != null) replay.drained()
  }

  /** Rethrows the first async failure (fail_on_error), wrapped so the stack shows the caller; with fail_on_error, also
    * a permanent refusal of a stream this task wrote to, seen since it first did ([[StreamRefusals.failureFor]]).
    */
  def check(): Unit = {
    val e = firstError.get
    if (e != null) throw new KinesisWriteException(e.getMessage, e)
    if (options.failOnError) {
      val refused = producer.refusals.failureFor(firstWrites)
      if (refused != null) throw new KinesisWriteException(refused.getMessage, refused)
    }
  }

  /** Waits until every record this task put has completed (all but `leaving`); fails with the count still pending. */
  def awaitDrained(timeoutMs: Long, onStep: () => Unit = () => (), leaving: Int = 0): Unit = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    while (pending.get > leaving) {
      check()
      if (System.nanoTime() > deadline)
        throw new KinesisWriteException(
          s"${pending.get} records to ${options.streamName.getOrElse("per-row streams")} were still unconfirmed after " +
            s"flush_timeout_ms=$timeoutMs; failing the task so the epoch is retried. Raise flush_timeout_ms or check the endpoint.",
          null
        )
      bound.latch.await(QueueLimiter.StepMs)
      onStep()
    }
  }

  def summary(partitionId: Long, epochId: Long, committed: Boolean): String =
    s"KinesisTaskWriter ${if (committed) "committed" else "aborted"} partition=$partitionId epoch=$epochId " +
      s"stream=${options.label} sent=${sent.sum} failed=${failedCount.sum} bytes=${bytesSent.sum} " +
      s"pending=${pending.get} backpressureCycles=$cycles blockedMs=${blockedNanos / 1000000L} " +
      (if (replay != null) replay.summary + " " else "") +
      s"(producer ${producer.sourceName})"
}

private[sparkkinesis] object WriterState {

  /** "ResourceNotFoundException x3 (Stream s not found), then Expired (Record has reached expiration)": the distinct
    * causes in order, since the last one alone ("Expired") rarely explains anything.
    */
  def summarize(attempts: Seq[Attempt]): String =
    if (attempts.isEmpty) "no attempt details"
    else {
      val runs = attempts.foldLeft(List.empty[(String, String, Int)]) { (acc, a) =>
        val code = Option(a.getErrorCode).filter(_.nonEmpty).getOrElse("UnknownError")
        acc match {
          case (c, m, n) :: rest if c == code => (c, m, n + 1) :: rest
          case _                              => (code, Option(a.getErrorMessage).getOrElse(""), 1) :: acc
        }
      }
      runs.reverse
        .map { case (c, m, n) => s"$c${if (n > 1) s" x$n" else ""}${if (m.nonEmpty) s" (${m.take(200)})" else ""}" }
        .mkString(", then ")
    }

  /** What a record without a partition key needs, however the refusal reached the writer. */
  val KeylessHint: String =
    "Only streams whose RecordDistributionStrategy is AUTO take records without a partitionKey " +
      "(partitioner='none'): give every row a partitionKey, or use partitioner='random'"

  def describe(options: KinesisWriterOptions, t: Throwable): Throwable = {
    val where =
      s"stream ${options.streamName.getOrElse("<per-row>")} at ${options.producer.endpoint.getOrElse("the region's endpoint")}"
    t match {
      case r: StreamRefused => new KinesisWriteException(r.getMessage, r)
      case e: UserRecordFailedException =>
        val attempts = Option(e.getResult).map(_.getAttempts.asScala.toSeq).getOrElse(Nil)
        val hint = if (attempts.exists(_.getErrorCode == "InvalidPartitionKey")) s". $KeylessHint" else ""
        new KinesisWriteException(
          s"Kinesis did not accept a record for $where after ${attempts.size} attempts: ${summarize(attempts)}$hint",
          e
        )
      case d: DaemonException =>
        new KinesisWriteException(
          s"The KPL daemon is not running (${d.getMessage}) for $where; the task fails and its retry gets a fresh " +
            "producer.",
          d
        )
      case i: IllegalArgumentException if i.getMessage != null && i.getMessage.contains("partitionKey") =>
        new KinesisWriteException(s"The KPL refused a record for $where: ${i.getMessage}. $KeylessHint.", i)
      case other =>
        new KinesisWriteException(
          s"Writing a record to $where failed: ${other.getClass.getSimpleName}: ${other.getMessage}",
          other
        )
    }
  }
}
