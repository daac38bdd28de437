package io.github.sparkkinesis

import java.util.concurrent.Executors

import io.github.sparkkinesis.aggregation.{Clock, Scheduler, StreamLayouts, WriterAggregator}

/** One KPL daemon, shared by the tasks of an executor JVM whose writers have the same [[ProducerPool.Key]]: stream
  * label, KPL config and bound. It owns what those writers share: the bound, the metrics and, when the writer
  * aggregates, the aggregates being filled.
  */
private[sparkkinesis] final class SharedProducer private[sparkkinesis] (
    val id: Int,
    val key: ProducerPool.Key,
    val client: ProducerClient,
    val idleTimeoutMs: Long,
    val sourceName: String,
    newScheduler: String => Scheduler,
    val clockMs: () => Long = () => System.currentTimeMillis()
) {
  def config: ProducerConfig = key.config

  val bound = new RecordBound(key.queueLimit, key.maxOutstandingBytes)
  val metrics = new ProducerMetrics(() => client.outstandingRecords, () => refs, bound)

  /** Layout reads after a stream's first, and the aggregator's re-sends: off the writers' and the daemon's callback
    * threads. Its thread starts on first use.
    */
  private val background =
    Executors.newSingleThreadExecutor(r => WriterAggregation.newThread(s"spark-kinesis-shard-map-$id", r))

  /** The layouts of the streams this producer writes ([[StreamLayouts]]): the driver's, taken per write ([[adopt]]), or
    * read here. The aggregator places records by them, and every record is held to its stream's size limit from them.
    * Made with the aggregator when the writer aggregates; with aggregation='kpl' on first use (a record's limit, a
    * shipped layout), so a producer that needs none makes no client.
    */
  lazy val layouts: StreamLayouts = {
    layoutsMade = true
    val clock = scheduler.fold(Clock.system)(_.clock)
    WriterAggregation.layouts(this, clock, background, (old, next) => aggregator.foreach(_.replaced(old, next)))
  }
  @volatile private var layoutsMade = false

  /** The aggregation's linger thread, when the writer aggregates; its clock is the layouts' too. */
  private val scheduler: Option[Scheduler] =
    if (config.aggregatesInWriter) Some(newScheduler(id.toString)) else None

  val aggregator: Option[WriterAggregator] = scheduler.map(s => WriterAggregation(this, layouts, s, background))

  /** The largest record (data and partition key) `stream` takes: its `MaxRecordSizeInKiB`, read with the stream's
    * layout; `readNow`: read again first.
    */
  def maxRecordBytes(stream: String, readNow: Boolean = false): Long = layouts.maxRecordBytes(stream, readNow)

  /** Takes what the driver worked out for a task's write, the one place an executor does: the count of producers
    * writing (where a new stream's share of the quota starts, when the writer aggregates) and the layouts the driver
    * read, so this producer need not read them itself.
    */
  def adopt(plan: WritePlan): Unit = {
    if (plan.writers > 0 && aggregator.isDefined) layouts.writers = plan.writers
    plan.layouts.foreach(layouts.adopt)
  }

  /** Of the streams `plan` shipped, those this producer found stale and read itself since it last adopted them (an
    * aggregate landed elsewhere, a key in no shard, a record over the limit; or none came in time).
    */
  def staleShipped(plan: WritePlan): Seq[String] =
    if (!layoutsMade) Nil else plan.layouts.map(_.stream).filter(layouts.readSinceShipped)

  /** Stops the aggregation's threads and the layouts' client. */
  def closeParts(): Unit = {
    aggregator.foreach(_.close())
    background.shutdownNow()
    if (layoutsMade) layouts.close()
  }

  @volatile private[sparkkinesis] var broken = false
  // Tasks holding this producer: changed under the pool's lock, read by the metrics' gauge.
  @volatile private[sparkkinesis] var refs = 0
  private[sparkkinesis] var idleSinceMs = 0L
  private[sparkkinesis] var unregister: () => Unit = () => ()

  def outstanding: Long = client.outstandingRecords

  /** The daemon died under us: stop handing this producer out; close it when its last user leaves. */
  def markBroken(): Unit = broken = true

  /** The streams Kinesis refused for good, as this producer's daemon met them ([[StreamRefusals]]). */
  val refusals = new StreamRefusals(s"producer #$id", config, clockMs)

  /** The watch saw Kinesis refuse writes to `stream` with `code`: its records in flight fail at once, as the KPL would
    * only after `kpl.RecordTtl` ([[StreamRefusals.refuse]]). The producer stays: its other streams' records, and other
    * queries' tasks, are not concerned.
    */
  def refuse(stream: String, code: String): Unit = client.failInFlight(stream, refusals.refuse(stream, code))

  override def toString: String = s"SharedProducer#$id($config)"
}
