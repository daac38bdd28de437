package io.github.sparkkinesis

import java.nio.charset.StandardCharsets
import java.util.concurrent.{CancellationException, ExecutionException}

import io.github.sparkkinesis.shaded.guava.util.concurrent.{Futures, ListenableFuture, MoreExecutors}
import org.slf4j.LoggerFactory
import io.github.sparkkinesis.shaded.kpl.{DaemonException, UserRecordResult}

import io.github.sparkkinesis.aggregation.{HashKey, WriterAggregator}
import io.github.sparkkinesis.replay.{Fingerprint, TaskReplay}

/** One task's writes, whatever the entry point (`foreach`, or the `kinesis` DataSource V2 sink for streaming and
  * batch): each adapter turns its rows into [[KinesisRecord]]s and drives this core.
  *
  *   - `write`: rethrow the first async failure, reserve room under `queue_limit`/`max_outstanding_bytes` (blocking
  *     while there is none), put, and count the completion in a callback.
  *   - `commit`: check → flush → wait until every record of this task is confirmed → check. Only then may the epoch (or
  *     the batch task) commit, so a query restarted from its checkpoint loses nothing (at-least-once).
  *   - `close`: add the task's totals to the accumulators, log one line, give the producer back. Always called, once.
  *
  * Built on the executor by the adapter, from options parsed once on the driver and the write's [[WritePlan]]: its
  * producer takes the plan ([[SharedProducer.adopt]]), and skip on replay's part of the task is made from its replay
  * plan (ended here too if the producer cannot start: nothing of it stays open).
  */
private[sparkkinesis] final class KinesisTaskWriter(
    prepared: KinesisWriter.Prepared,
    plan: WritePlan,
    attempt: TaskAttempt,
    pool: ProducerPool
) {
  private val options = prepared.options
  val partitionId: Long = attempt.partitionId
  private val replay: TaskReplay = plan.replay.map { p =>
    new TaskReplay(p, partitionId, attempt.epochId, attempt.taskId, attempt.retried, options.flushTimeoutMs)
  }.orNull
  private val producer: SharedProducer =
    try
      pool.acquire(
        options.producer,
        options.label,
        options.producerIdleTimeoutMs,
        options.queueLimit,
        options.maxOutstandingBytes
      )
    catch { case e: Throwable => if (replay != null) replay.abort(); throw e }
  producer.adopt(plan)
  private[sparkkinesis] val state = new WriterState(options, producer)
  state.replay = replay
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
    if (replay != null && replay.skip(record.stream, record.partitionKey, record.explicitHashKey, record.data)) return
    val bytes = record.data.remaining()
    s.writes(record.stream)
    if (!options.failOnError) { // a stream Kinesis refused for good: its records are dropped (PermanentErrors)
      val refused = producer.refusals.dropping(record.stream)
      if (refused != null) { s.dropped(refused, bytes); return }
    }
    RecordLimit.check(record, bytes, producer)
    RecordLimit.checkBound(record.stream, bytes, options.maxOutstandingBytes)
    // Reserves the record and its bytes (released by its completion, or below if the put throws).
    val blocked =
      limiter.await(bytes, () => s.check(), waitedMs => KinesisTaskWriter.warnBlocked(options, waitedMs))
    if (blocked > 0) s.blocked(blocked)
    val start = s.latencyStart()
    s.pending.incrementAndGet()
    var alone = false
    try
      producer.aggregator match {
        case Some(a) if record.partitionKey != null =>
          val key = record.partitionKey.getBytes(StandardCharsets.UTF_8)
          val hashKey =
            if (record.explicitHashKey != null) HashKey.ofDecimal(record.explicitHashKey) else HashKey.ofKeyBytes(key)
          val p = WriterAggregation.pending(record, s, bytes, start, hashKey, key)
          // Ordered: a record that goes alone skips its shard's one-in-flight order, so it waits for the task's earlier
          // records (all but itself) and the next record waits for it (below).
          alone = a.add(p, barrier) && options.ordered
        case Some(a) => a.add(WriterAggregation.pending(record, s, bytes, start, null, null)) // keyless (AUTO): alone
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
    if (alone) drain()
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

  private val barrier: () => Unit = if (options.ordered) () => drain(leaving = 1) else WriterAggregator.NoBarrier

  /** Returns once every record this task wrote is confirmed; throws the first failure otherwise. */
  def commit(): Unit = {
    state.check()
    drain()
    state.check()
    if (replay != null) replay.commit()
  }

  /** Sends what this task's records wait in and returns once all but `leaving` are confirmed (or failed, without
    * fail_on_error).
    */
  private def drain(leaving: Int = 0): Unit = {
    // This task's records may wait in aggregates shared with other tasks; records re-sent after a reshard wait there
    // again, so each step of the wait seals them too.
    val flushOwn: () => Unit = producer.aggregator.fold(() => ())(a => () => a.flushFor(state))
    flushOwn()
    producer.client.flush()
    state.awaitDrained(options.flushTimeoutMs, flushOwn, leaving)
  }

  /** Of the streams whose layouts the driver shipped, those the producer found stale and read itself since (the driver
    * reads them again for the next write).
    */
  def staleShipped: Seq[String] = producer.staleShipped(plan)

  /** Ends the task: totals to the accumulators (committed or not, as today's metrics count confirmed records), one INFO
    * line, the producer back to the pool. Idempotent.
    */
  def close(committed: Boolean): Unit = if (!closed) {
    closed = true
    try {
      if (replay != null && !committed) replay.abort(() => state.pending.get)
      prepared.accumulators.foreach(_.add(state))
      KinesisTaskWriter.log.info(state.summary(partitionId, attempt.epochId, committed))
    } finally pool.release(producer)
  }
}

private[sparkkinesis] object KinesisTaskWriter {
  val log = LoggerFactory.getLogger(classOf[KinesisTaskWriter])

  /** Puts one user record as it is (the KPL may still aggregate it); its completion is counted for `state`. */
  def putAlone(client: ProducerClient, record: KinesisRecord, state: WriterState, bytes: Int, start: Long): Unit = {
    val callback = new RecordCallback(state, bytes, start)
    // With skip on replay, the fingerprint of the data as put: the KPL reads the record's buffer.
    if (state.replay != null)
      state.replay.fingerprint(record.stream, record.partitionKey, record.explicitHashKey, record.data, callback)
    callback.future = client.put(record)
    callback.future.addListener(callback, MoreExecutors.directExecutor())
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
  * it costs no extra allocation). With skip on replay it holds the record's fingerprint (as a [[Fingerprint.Sink]]),
  * not the record.
  */
private[sparkkinesis] final class RecordCallback(state: WriterState, bytes: Int, startNanos: Long)
    extends Runnable
    with Fingerprint.Sink {
  var future: ListenableFuture[UserRecordResult] = null // set before the listener is added
  private var h1 = 0L
  private var h2 = 0L

  def apply(h1: Long, h2: Long): Unit = { this.h1 = h1; this.h2 = h2 }

  def run(): Unit =
    try {
      val result = Futures.getDone(future)
      state.latency(startNanos)
      state.confirmed(h1, h2)
      state.succeeded(result, 1, bytes.toLong)
    } catch {
      case e: ExecutionException    => state.failed(e.getCause, 1, bytes.toLong)
      case e: CancellationException => state.failed(e, 1, bytes.toLong)
    }
}
