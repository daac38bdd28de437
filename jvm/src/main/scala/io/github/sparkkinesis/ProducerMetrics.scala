package io.github.sparkkinesis

import com.codahale.metrics.{Counter, Gauge, Histogram, MetricRegistry, Timer}

import io.github.sparkkinesis.compat.CollectionConverters._

/** One producer's metrics (Codahale), reported through Spark's metrics system as the source `kinesisProducer.<stream>`.
  * Hot-path updates are `LongAdder`-backed counters and two compare-and-sets (the limits' reservation); the latency
  * histogram is sampled (1 in [[ProducerMetrics.LatencySampleEvery]]) and the KPL daemon's own metrics are polled off
  * the hot path by the pool's reaper thread.
  */
private[sparkkinesis] final class ProducerMetrics(
    outstandingRecords: () => Long,
    tasksWriting: () => Int,
    bound: RecordBound
) {
  import ProducerMetrics._

  val registry = new MetricRegistry
  val backpressureCycles: Counter = registry.counter("backpressureCycles")
  val recordsSent: Counter = registry.counter("recordsSent")
  val recordsFailed: Counter = registry.counter("recordsFailed")
  val bytesSent: Counter = registry.counter("bytesSent")
  val retries: Counter = registry.counter("retries")
  val backpressureWaitMs: Timer = registry.timer("backpressureWaitMs")
  val putLatency: Histogram = registry.histogram("putLatency")
  val aggregatesSent: Counter = registry.counter("aggregatesSent")
  val recordsPerAggregate: Histogram = registry.histogram("recordsPerAggregate")
  val misplacedAggregates: Counter = registry.counter("misplacedAggregates")
  val pacedAggregates: Counter = registry.counter("pacedAggregates")
  val resentRecords: Counter = registry.counter("resentRecords")
  val rateShareDecreases: Counter = registry.counter("rateShareDecreases")
  val controlPlane =
    new ControlPlaneCalls(registry.counter("controlPlaneCalls"), registry.counter("controlPlaneThrottles"))
  // The KPL's own outstanding count (Kinesis records: aggregates count once) also holds the pool's pending getMetrics
  // request, so it can read one higher.
  registry.register("outstandingRecordsCount", gauge(outstandingRecords()))
  // The bound's own counts, what queue_limit and max_outstanding_bytes limit: user records and their bytes from write to
  // confirmation, and the fuller of the two as a fraction of its limit (1.0: writers block).
  registry.register("boundRecords", gauge(bound.records.get))
  registry.register("boundBytes", gauge(bound.bytes.get))
  registry.register("boundFill", gauge(bound.fill))
  // Tasks holding the producer now: 0 between tasks, while it waits out producer_idle_timeout_ms.
  registry.register("tasksWriting", gauge(tasksWriting()))

  @volatile private var daemon: Map[String, Double] = Map.empty
  DaemonMetrics.foreach { case (name, _) => registry.register(name, gauge(daemon.getOrElse(name, Double.NaN))) }

  /** Latest values polled from `KinesisProducer.getMetrics` (keyed by our metric names). */
  def updateDaemonMetrics(values: Map[String, Double]): Unit = daemon = values

  private def gauge[T](f: => T): Gauge[T] = new Gauge[T] { def getValue: T = f }
}

private[sparkkinesis] object ProducerMetrics {
  val SourcePrefix = "kinesisProducer"
  val LatencySampleEvery = 16

  /** Our name -> (KPL metric name, statistic). Means over the KPL's last minute. */
  val DaemonMetrics: Seq[(String, (String, String))] = Seq(
    ("kplUserRecordsPending", ("UserRecordsPending", "mean")),
    ("kplBufferingTimeMs", ("BufferingTime", "mean")),
    ("kplRequestTimeMs", ("RequestTime", "mean")),
    ("kplRetriesPerRecord", ("RetriesPerRecord", "mean")),
    ("kplAllErrors", ("AllErrors", "sum"))
  )

  /** Every metric name a source registers (docs/metrics.md is checked against this): read off a producer's registry, so
    * each name is written once, where its metric is made.
    */
  lazy val names: Seq[String] = {
    val template = new ProducerMetrics(() => 0L, () => 0, new RecordBound(1, 1L))
    template.registry.getNames.asScala.toSeq
  }
}
