package io.github.sparkkinesis

import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

import com.google.common.util.concurrent.{FutureCallback, Futures, MoreExecutors}
import org.apache.spark.sql.{ForeachWriter, Row}
import org.slf4j.LoggerFactory
import software.amazon.kinesis.producer.{DaemonException, UserRecordFailedException, UserRecordResult}

import scala.jdk.CollectionConverters._

/** A record write failed after the KPL's retries (or the daemon died). The message names the cause. */
final class KinesisWriteException(message: String, cause: Throwable) extends RuntimeException(message, cause)

/** Writes rows to Kinesis through a shared per-JVM KPL, with the queue limit enforced before each put.
  *
  * Built on the driver by `KinesisWriter.create` (options and schema already checked) and
  * serialized to tasks; each task gets its own copy, so the per-writer state below is per task.
  * `close` is the epoch's commit: every record this task put must be confirmed before it returns,
  * so a query restarted from its checkpoint loses nothing (at-least-once).
  */
class KinesisForeachWriter(val options: KinesisWriterOptions, converter: RowConverter) extends ForeachWriter[Row] {
  @transient private var producer: SharedProducer = _
  @transient private var limiter: QueueLimiter = _
  @transient private var state: WriterState = _
  @transient private var partitionId: Long = 0L

  /** The pool to use; tests of the writer substitute one with fake producers. */
  protected def pool: ProducerPool = ProducerPool.default

  override def open(partitionId: Long, epochId: Long): Boolean = {
    this.partitionId = partitionId
    producer = pool.acquire(options.producer, options.producerIdleTimeoutMs)
    state = new WriterState(options, producer.latch)
    val p = producer
    limiter = new QueueLimiter(options.queueLimit, () => p.outstanding, p.latch, () => p.backpressureCycles.inc())
    true
  }

  override def process(row: Row): Unit = {
    state.check()
    val record = converter.convert(row, partitionId)
    limiter.await(() => state.check(), waitedMs => KinesisForeachWriter.warnBlocked(options, waitedMs))
    val future =
      try producer.client.put(record)
      catch {
        case e: DaemonException =>
          producer.markBroken()
          throw new KinesisWriteException(s"The KPL daemon is not running (${e.getMessage}); the task fails and its retry gets a fresh producer.", e)
      }
    state.pending.incrementAndGet()
    Futures.addCallback(future, state, MoreExecutors.directExecutor())
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
      pool.release(producer)
      producer = null
    }
  }

  /** Shown in the query plan and progress: never a secret. */
  override def toString: String = s"KinesisWriter(${options.streamName.getOrElse("<per-row streams>")}, queueLimit=${options.queueLimit})"
}

object KinesisForeachWriter {
  private val log = LoggerFactory.getLogger(classOf[KinesisForeachWriter])

  private def warnBlocked(options: KinesisWriterOptions, waitedMs: Long): Unit =
    RateLimitedLog.warn(
      log,
      "blocked",
      s"KinesisWriter blocked ${waitedMs} ms on queue_limit=${options.queueLimit}: Kinesis accepts records slower " +
        "than this query produces them (add shards, or expect this rate). Logged at most every 30 s."
    )
}

/** Per-task bookkeeping and the KPL callback (one instance per task, not per record). */
private[sparkkinesis] final class WriterState(options: KinesisWriterOptions, latch: TimeoutLatch)
    extends FutureCallback[UserRecordResult] {
  import WriterState.log

  val pending = new AtomicLong()
  val failed = new AtomicLong()
  private val firstError = new AtomicReference[Throwable]()

  override def onSuccess(result: UserRecordResult): Unit = done()

  override def onFailure(t: Throwable): Unit = {
    failed.incrementAndGet()
    val described = WriterState.describe(options, t)
    if (options.failOnError) firstError.compareAndSet(null, described)
    else
      RateLimitedLog.warn(
        log,
        "record-failed",
        s"${described.getMessage} (fail_on_error=false: the record is dropped and counted; ${failed.get} so far in this task)"
      )
    done()
  }

  private def done(): Unit = {
    pending.decrementAndGet()
    latch.trigger()
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
}

private[sparkkinesis] object WriterState {

  /** "ResourceNotFoundException x3 (Stream s not found), then Expired (Record has reached expiration)":
    * the distinct causes in order, since the last one alone ("Expired") rarely explains anything.
    */
  def summarize(attempts: Seq[software.amazon.kinesis.producer.Attempt]): String =
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

  private val log = LoggerFactory.getLogger(classOf[KinesisForeachWriter])

  def describe(options: KinesisWriterOptions, t: Throwable): Throwable = {
    val where = s"stream ${options.streamName.getOrElse("<per-row>")} at ${options.producer.endpoint.getOrElse("the region's endpoint")}"
    t match {
      case e: UserRecordFailedException =>
        val attempts = Option(e.getResult).map(_.getAttempts.asScala.toSeq).getOrElse(Nil)
        new KinesisWriteException(
          s"Kinesis did not accept a record for $where after ${attempts.size} attempts: ${summarize(attempts)}",
          e
        )
      case other =>
        new KinesisWriteException(s"Writing a record to $where failed: ${other.getClass.getSimpleName}: ${other.getMessage}", other)
    }
  }
}
