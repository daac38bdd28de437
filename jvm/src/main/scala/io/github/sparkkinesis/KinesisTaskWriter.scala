package io.github.sparkkinesis

import java.nio.charset.StandardCharsets
import java.util.concurrent.{CancellationException, ExecutionException, TimeUnit}
import java.util.concurrent.atomic.{AtomicLong, AtomicReference, LongAdder}

import io.github.sparkkinesis.shaded.guava.util.concurrent.{Futures, ListenableFuture, MoreExecutors}
import org.slf4j.LoggerFactory
import io.github.sparkkinesis.shaded.kpl.{
  Attempt,
  DaemonException,
  FutureTimedOutException,
  UserRecordFailedException,
  UserRecordResult
}

import io.github.sparkkinesis.aggregation.{HashKey, RecordOwner}
import io.github.sparkkinesis.compat.CollectionConverters._

/** One task's writes, whatever the entry point (`foreach`, or the `kinesis` DataSource V2 sink for streaming and
  * batch): each adapter turns its rows into [[KinesisRecord]]s and drives this core.
  *
  *   - `write`: rethrow the first async failure, reserve room under `queue_limit`/`max_outstanding_bytes` (blocking
  *     while there is none), put, and count the completion in a callback.
  *   - `commit`: check → flush → wait until every record of this task is confirmed → check. Only then may the epoch (or
  *     the batch task) commit, so a query restarted from its checkpoint loses nothing (at-least-once).
  *   - `close`: add the task's totals to the accumulators, log one line, give the producer back. Always called, once.
  *
  * Built on the executor by the adapter, from options parsed once on the driver.
  */
private[sparkkinesis] final class KinesisTaskWriter(
    options: KinesisWriterOptions,
    pool: ProducerPool,
    accumulators: Option[WriterAccumulators],
    val partitionId: Long,
    epochId: Long
) {
  private val producer: SharedProducer = pool.acquire(
    options.producer,
    options.label,
    options.producerIdleTimeoutMs,
    options.queueLimit,
    options.maxOutstandingBytes
  )
  private[sparkkinesis] val state = new WriterState(options, producer)
  private var closed = false

  private val limiter: QueueLimiter = {
    val s = state
    val m = producer.metrics
    new QueueLimiter(
      producer.bound.tryReserve,
      producer.bound.latch,
      () => { m.backpressureCycles.inc(); s.cycles += 1 }
    )
  }

  def write(record: KinesisRecord): Unit = {
    val s = state
    s.check()
    val bytes = record.data.remaining()
    // Reserves the record and its bytes (released by its completion, or below if the put throws).
    val blocked =
      limiter.await(bytes, () => s.check(), waitedMs => KinesisTaskWriter.warnBlocked(options, waitedMs))
    if (blocked > 0) s.blocked(blocked)
    val start = s.latencyStart()
    s.pending.incrementAndGet()
    try
      producer.aggregator match {
        case Some(a) if record.partitionKey != null =>
          val key = record.partitionKey.getBytes(StandardCharsets.UTF_8)
          val hashKey =
            if (record.explicitHashKey != null) HashKey.ofDecimal(record.explicitHashKey) else HashKey.ofKeyBytes(key)
          a.add(WriterAggregation.pending(record, s, bytes, start, hashKey, key.length))
        case Some(a) => a.add(WriterAggregation.pending(record, s, bytes, start, null, 0)) // keyless (AUTO): alone
        case None    => KinesisTaskWriter.putAlone(producer.client, record, s, bytes, start)
      }
    catch {
      case e: Throwable =>
        s.pending.decrementAndGet()
        producer.bound.release(1, bytes.toLong)
        throw translate(record, e)
    }
    s.written += 1
    s.writtenBytes += bytes
  }

  private def translate(record: KinesisRecord, e: Throwable): Throwable = e match {
    case d: DaemonException =>
      producer.markBroken()
      WriterState.describe(options, d)
    case i: IllegalArgumentException if record.partitionKey == null =>
      new IllegalArgumentException(
        s"Stream ${record.stream} takes no record without a partitionKey (the KPL reports its " +
          "RecordDistributionStrategy as USER_PARTITION_KEY): partitioner='none' is for AUTO streams. Give " +
          "every row a partitionKey, or use partitioner='random'.",
        i
      )
    case _ => e
  }

  /** Returns once every record this task wrote is confirmed; throws the first failure otherwise. */
  def commit(): Unit = {
    state.check()
    // This task's records may wait in aggregates shared with other tasks; records re-sent after a reshard wait there
    // again, so each step of the wait seals them too.
    val flushOwn: () => Unit = producer.aggregator.fold(() => ())(a => () => a.flushFor(state))
    flushOwn()
    producer.client.flush()
    state.awaitDrained(options.flushTimeoutMs, flushOwn)
    state.check()
  }

  /** Ends the task: totals to the accumulators (committed or not, as today's metrics count confirmed records), one INFO
    * line, the producer back to the pool. Idempotent.
    */
  def close(committed: Boolean): Unit = if (!closed) {
    closed = true
    try {
      accumulators.foreach(_.add(state))
      KinesisTaskWriter.log.info(state.summary(partitionId, epochId, committed))
    } finally pool.release(producer)
  }
}

private[sparkkinesis] object KinesisTaskWriter {
  val log = LoggerFactory.getLogger(classOf[KinesisTaskWriter])

  /** Puts one user record as it is (the KPL may still aggregate it); its completion is counted for `state`. */
  def putAlone(client: ProducerClient, record: KinesisRecord, state: WriterState, bytes: Int, start: Long): Unit = {
    val future = client.put(record)
    future.addListener(new RecordCallback(future, state, bytes, start), MoreExecutors.directExecutor())
  }

  private def warnBlocked(options: KinesisWriterOptions, waitedMs: Long): Unit =
    RateLimitedLog.warn(
      log,
      "blocked",
      s"KinesisTaskWriter blocked ${waitedMs} ms on queue_limit=${options.queueLimit} / " +
        s"max_outstanding_bytes=${options.maxOutstandingBytes}: Kinesis accepts records slower " +
        "than this query produces them (add shards, or expect this rate). Logged at most every 30 s."
    )
}

/** Completion of one record: runs on the KPL's callback thread (replaces Guava's per-record `addCallback` wrapper, so
  * it costs no extra allocation).
  */
private[sparkkinesis] final class RecordCallback(
    future: ListenableFuture[UserRecordResult],
    state: WriterState,
    bytes: Int,
    startNanos: Long
) extends Runnable {
  def run(): Unit =
    try {
      val result = Futures.getDone(future)
      state.latency(startNanos)
      state.succeeded(result, 1, bytes.toLong)
    } catch {
      case e: ExecutionException    => state.failed(e.getCause, 1, bytes.toLong)
      case e: CancellationException => state.failed(e, 1, bytes.toLong)
    }
}

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
    metrics.backpressureWaitTime.update(nanos, TimeUnit.NANOSECONDS)
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
      case _                            =>
        // Anything else means the daemon failed (the KPL fails every pending record, then restarts
        // its child in place): retire this producer so retried tasks get a fresh one.
        producer.markBroken()
    }
    val described = WriterState.describe(options, t)
    if (options.failOnError) firstError.compareAndSet(null, described)
    else
      RateLimitedLog.warn(
        log,
        "record-failed",
        s"${described.getMessage} (fail_on_error=false: the record is dropped and counted; ${failedCount.sum} so far in this task)"
      )
    done(n, bytes)
  }

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
    if (pending.addAndGet(-n.toLong) == 0 || firstError.get != null) bound.latch.trigger()
  }

  /** Rethrows the first async failure (fail_on_error), wrapped so the stack shows the caller. */
  def check(): Unit = {
    val e = firstError.get
    if (e != null) throw new KinesisWriteException(e.getMessage, e)
  }

  /** Waits until every record this task put has completed; fails with the count still pending. */
  def awaitDrained(timeoutMs: Long, onStep: () => Unit = () => ()): Unit = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    while (pending.get > 0) {
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
