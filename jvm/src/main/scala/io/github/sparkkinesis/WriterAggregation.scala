package io.github.sparkkinesis

import java.nio.ByteBuffer
import java.util.concurrent.Executor

import org.slf4j.Logger
import io.github.sparkkinesis.shaded.guava.util.concurrent.ListenableFuture
import io.github.sparkkinesis.shaded.kpl.UserRecordResult

import io.github.sparkkinesis.aggregation._

/** A producer's aggregation in the writer ([[aggregation.WriterAggregator]]), wired to the writer's own parts behind
  * the interfaces the aggregation package defines: the producer client, the producer's metrics, the writer's daemon
  * threads ([[Threads]]) and its rate-limited log.
  */
private[sparkkinesis] object WriterAggregation {

  /** The aggregation of producer `p` over its `layouts`, its delayed work run by `scheduler`, its re-sends by
    * `background`.
    */
  def apply(p: SharedProducer, layouts: StreamLayouts, scheduler: Scheduler, background: Executor): WriterAggregator =
    new WriterAggregator(sender(p), layouts, settings(p), metrics(p.metrics), scheduler, background)

  /** The stream layouts of producer `p`, on `clock`: read through its client, again by `background`; the buffers a new
    * layout replaces go to `replaced`.
    */
  def layouts(
      p: SharedProducer,
      clock: Clock,
      background: Executor,
      replaced: (Array[ShardBuffer], Array[ShardBuffer]) => Unit
  ): StreamLayouts =
    new StreamLayouts(
      p.client.streamMetadata(p.metrics.controlPlane),
      settings(p),
      clock,
      background,
      warnings,
      replaced
    )

  private def settings(p: SharedProducer): AggregationSettings = p.config.aggregationSettings

  /** `record` of the task `owner` as the aggregation takes it; `key` and `keyUtf8` null for a record without a
    * partition key.
    */
  def pending(
      record: KinesisRecord,
      owner: WriterState,
      bytes: Int,
      start: Long,
      key: HashKey,
      keyUtf8: Array[Byte]
  ): Pending = {
    val p = new Pending(
      record.stream,
      record.partitionKey,
      record.explicitHashKey,
      record.data,
      owner,
      bytes,
      start,
      key,
      keyUtf8
    )
    // Skip on replay: the fingerprint goes with the record, taken before the aggregation may send (and confirm) it.
    if (owner.replay != null) owner.replay.fingerprint(p)
    p
  }

  /** Producer `name`'s linger thread, on the JVM's clock. */
  def scheduler(name: String): Scheduler = Scheduler.onThread(Clock.system, newThread, name)

  val newThread: NewThread = (name, body) => Threads.daemon(name)(body.run())

  private val warnings: Warnings = (log: Logger, key: String, message: String) => {
    RateLimitedLog.warn(log, key, message)
    ()
  }

  /** Puts through the producer's client. A put that throws fails its records through their owner, which retires the
    * producer when the daemon died ([[WriterState.failed]]).
    */
  private def sender(p: SharedProducer): Sender =
    (stream: String, partitionKey: String, explicitHashKey: String, data: ByteBuffer) =>
      p.client.put(KinesisRecord(stream, partitionKey, explicitHashKey, data))

  private def metrics(m: ProducerMetrics): AggregationMetrics = new AggregationMetrics {
    def aggregateSent(records: Int): Unit = {
      m.aggregatesSent.inc()
      m.recordsPerAggregate.update(records)
    }
    def aggregatePaced(): Unit = m.pacedAggregates.inc()
    def aggregateMisplaced(): Unit = m.misplacedAggregates.inc()
    def recordsResent(n: Int): Unit = m.resentRecords.inc(n.toLong)
    def recordsRetried(n: Int): Unit = m.retries.inc(n.toLong)
    def shareLowered(): Unit = m.rateShareDecreases.inc()
  }
}
