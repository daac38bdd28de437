package io.github.sparkkinesis

import java.util.concurrent.{CancellationException, ExecutionException, TimeUnit}
import java.util.concurrent.atomic.{AtomicLong, AtomicReference, LongAdder}

import com.google.common.util.concurrent.{Futures, ListenableFuture, MoreExecutors}
import org.apache.spark.sql.{ForeachWriter, Row}
import org.slf4j.LoggerFactory
import software.amazon.kinesis.producer.{
  Attempt,
  DaemonException,
  FutureTimedOutException,
  UserRecordFailedException,
  UserRecordResult
}

import scala.jdk.CollectionConverters._

/** A record write failed after the KPL's retries (or the daemon died). The message names the cause. */
final class KinesisWriteException(message: String, cause: Throwable) extends RuntimeException(message, cause)

/** Writes rows to Kinesis through a shared per-JVM KPL, with the queue limit enforced before each put.
  *
  * Built on the driver by `KinesisWriter.create` (options and schema already checked) and serialized to tasks; each
  * task gets its own copy, so the per-writer state below is per task. `close` is the epoch's commit: every record this
  * task put must be confirmed before it returns, so a query restarted from its checkpoint loses nothing
  * (at-least-once).
  */
class KinesisForeachWriter(
    val options: KinesisWriterOptions,
    converter: RowConverter,
    val accumulators: Option[WriterAccumulators] = None
) extends ForeachWriter[Row] {
  @transient private var producer: SharedProducer = _
  @transient private var limiter: QueueLimiter = _
  @transient private var state: WriterState = _
  @transient private var partitionId: Long = 0L
  @transient private var epochId: Long = 0L

  /** The pool to use; tests of the writer substitute one with fake producers. */
  protected def pool: ProducerPool = ProducerPool.default

  override def open(partitionId: Long, epochId: Long): Boolean = {
    this.partitionId = partitionId
    this.epochId = epochId
    producer = pool.acquire(options.producer, options.label, options.producerIdleTimeoutMs)
    val s = new WriterState(options, producer)
    state = s
    val m = producer.metrics
    val p = producer
    limiter = new QueueLimiter(
      QueueLimiter.reserve(options.queueLimit, options.maxOutstandingBytes, m.inFlightRecords, m.outstandingBytes),
      p.latch,
      () => { m.backpressureCycles.inc(); s.cycles += 1 }
    )
    true
  }

  override def process(row: Row): Unit = {
    val s = state
    s.check()
    val record = converter.convert(row, partitionId)
    val bytes = record.data.remaining()
    // Reserves the record and its bytes (released by its completion, or below if the put throws).
    val blocked =
      limiter.await(bytes, () => s.check(), waitedMs => KinesisForeachWriter.warnBlocked(options, waitedMs))
    if (blocked > 0) s.blocked(blocked)
    val start = s.latencyStart()
    val future =
      try producer.client.put(record)
      catch {
        case e: Throwable =>
          s.release(bytes)
          e match {
            case d: DaemonException =>
              producer.markBroken()
              throw new KinesisWriteException(
                s"The KPL daemon is not running (${d.getMessage}); the task fails and its retry gets a fresh producer.",
                d
              )
            case _ => throw e
          }
      }
    s.pending.incrementAndGet()
    future.addListener(new RecordCallback(future, s, bytes, start), MoreExecutors.directExecutor())
  }

  override def close(errorOrNull: Throwable): Unit = {
    if (producer == null) return
    try {
      if (errorOrNull == null) {
        state.check()
        producer.client.flush()
        state.awaitDrained(options.flushTimeoutMs)
        state.check()
      }
    } finally {
      accumulators.foreach(_.add(state))
      KinesisForeachWriter.log.info(state.summary(partitionId, epochId, errorOrNull == null))
      pool.release(producer)
      producer = null
    }
  }

  /** Driver side: the accumulated totals of every finished task, as JSON (Python's `writer.metrics()`). */
  def metricsJson(): String = accumulators.map(_.json).getOrElse("{}")

  /** Shown in the query plan and progress: never a secret. */
  override def toString: String =
    s"KinesisWriter(${options.streamName.getOrElse("<per-row streams>")}, queueLimit=${options.queueLimit})"
}

object KinesisForeachWriter {
  private[sparkkinesis] val log = LoggerFactory.getLogger(classOf[KinesisForeachWriter])

  private def warnBlocked(options: KinesisWriterOptions, waitedMs: Long): Unit =
    RateLimitedLog.warn(
      log,
      "blocked",
      s"KinesisWriter blocked ${waitedMs} ms on queue_limit=${options.queueLimit} / " +
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
    try state.succeeded(Futures.getDone(future), bytes, startNanos)
    catch {
      case e: ExecutionException    => state.failed(e.getCause, bytes)
      case e: CancellationException => state.failed(e, bytes)
    }
}

/** Per-task bookkeeping: pending records, first error, and the task's totals. */
private[sparkkinesis] final class WriterState(options: KinesisWriterOptions, producer: SharedProducer) {
  import KinesisForeachWriter.log

  private val metrics = producer.metrics
  private val latch = producer.latch
  val pending = new AtomicLong()
  val sent = new LongAdder()
  val failedCount = new LongAdder()
  val bytesSent = new LongAdder()
  private val firstError = new AtomicReference[Throwable]()
  // Task-thread only:
  var cycles = 0L
  var blockedNanos = 0L
  private var puts = 0L

  /** A start time for 1 in LatencySampleEvery records (0 = not sampled): `nanoTime` is not free. */
  def latencyStart(): Long = {
    puts += 1
    if (puts % ProducerMetrics.LatencySampleEvery == 1) System.nanoTime() else 0L
  }

  def blocked(nanos: Long): Unit = {
    blockedNanos += nanos
    metrics.backpressureWaitTime.update(nanos, TimeUnit.NANOSECONDS)
  }

  def succeeded(result: UserRecordResult, bytes: Int, startNanos: Long): Unit = {
    metrics.recordsSent.inc()
    metrics.bytesSent.inc(bytes.toLong)
    sent.increment()
    bytesSent.add(bytes.toLong)
    val attempts = result.getAttempts.size
    if (attempts > 1) metrics.retries.inc(attempts - 1L)
    if (startNanos != 0L) metrics.putLatency.update((System.nanoTime() - startNanos) / 1000000L)
    done(bytes)
  }

  def failed(t: Throwable, bytes: Int): Unit = {
    metrics.recordsFailed.inc()
    failedCount.increment()
    t match {
      case e: UserRecordFailedException =>
        if (e.getResult != null) metrics.retries.inc(math.max(0, e.getResult.getAttempts.size - 1).toLong)
      case _: FutureTimedOutException =>
      case _                          =>
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
    done(bytes)
  }

  private def done(bytes: Int): Unit = {
    release(bytes)
    pending.decrementAndGet()
    latch.trigger()
  }

  /** Gives back the room a record reserved under the limits. */
  def release(bytes: Int): Unit = {
    metrics.inFlightRecords.decrementAndGet()
    metrics.outstandingBytes.addAndGet(-bytes.toLong)
  }

  /** Rethrows the first async failure (fail_on_error), wrapped so the stack shows the caller. */
  def check(): Unit = {
    val e = firstError.get
    if (e != null) throw new KinesisWriteException(e.getMessage, e)
  }

  /** Waits until every record this task put has completed; fails with the count still pending. */
  def awaitDrained(timeoutMs: Long): Unit = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    while (pending.get > 0) {
      check()
      if (System.nanoTime() > deadline)
        throw new KinesisWriteException(
          s"${pending.get} records to ${options.streamName.getOrElse("per-row streams")} were still unconfirmed after " +
            s"flush_timeout_ms=$timeoutMs; failing the task so the epoch is retried. Raise flush_timeout_ms or check the endpoint.",
          null
        )
      latch.await(QueueLimiter.StepMs)
    }
  }

  def summary(partitionId: Long, epochId: Long, committed: Boolean): String =
    s"KinesisWriter ${if (committed) "committed" else "aborted"} partition=$partitionId epoch=$epochId " +
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

  def describe(options: KinesisWriterOptions, t: Throwable): Throwable = {
    val where =
      s"stream ${options.streamName.getOrElse("<per-row>")} at ${options.producer.endpoint.getOrElse("the region's endpoint")}"
    t match {
      case e: UserRecordFailedException =>
        val attempts = Option(e.getResult).map(_.getAttempts.asScala.toSeq).getOrElse(Nil)
        new KinesisWriteException(
          s"Kinesis did not accept a record for $where after ${attempts.size} attempts: ${summarize(attempts)}",
          e
        )
      case other =>
        new KinesisWriteException(
          s"Writing a record to $where failed: ${other.getClass.getSimpleName}: ${other.getMessage}",
          other
        )
    }
  }
}
