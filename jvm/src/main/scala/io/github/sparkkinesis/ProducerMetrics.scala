package io.github.sparkkinesis

import com.codahale.metrics.{Counter, Gauge, Histogram, MetricRegistry, Timer}

/** One producer's metrics (Codahale), reported through Spark's metrics system as the source `kinesisProducer.<stream>`.
  * Hot-path updates are `LongAdder`-backed counters and two compare-and-sets (the limits' reservation); the latency
  * histogram is sampled (1 in [[ProducerMetrics.LatencySampleEvery]]) and the KPL daemon's own metrics are polled off
  * the hot path by the pool's reaper thread.
  */
private[sparkkinesis] final class ProducerMetrics(outstandingRecords: () => Long, bound: RecordBound) {
  import ProducerMetrics._

  val registry = new MetricRegistry
  val backpressureCycles: Counter = registry.counter(BackpressureCycles)
  val recordsSent: Counter = registry.counter(RecordsSent)
  val recordsFailed: Counter = registry.counter(RecordsFailed)
  val bytesSent: Counter = registry.counter(BytesSent)
  val retries: Counter = registry.counter(Retries)
  val backpressureWaitTime: Timer = registry.timer(BackpressureWaitTime)
  val putLatency: Histogram = registry.histogram(PutLatency)
  val aggregatesSent: Counter = registry.counter(AggregatesSent)
  val recordsPerAggregate: Histogram = registry.histogram(RecordsPerAggregate)
  val misplacedAggregates: Counter = registry.counter(MisplacedAggregates)
  val pacedAggregates: Counter = registry.counter(PacedAggregates)
  val resentRecords: Counter = registry.counter(ResentRecords)
  // The KPL's own outstanding count (Kinesis records: aggregates count once) also holds the pool's pending getMetrics
  // request, so it can read one higher; the bound's counts are what queue_limit and max_outstanding_bytes limit.
  registry.register(OutstandingRecordsCount, gauge(outstandingRecords()))
  registry.register(OutstandingBytes, gauge(bound.bytes.get))

  @volatile private var daemon: Map[String, Double] = Map.empty
  DaemonMetrics.foreach { case (name, _) => registry.register(name, gauge(daemon.getOrElse(name, Double.NaN))) }

  /** Latest values polled from `KinesisProducer.getMetrics` (keyed by our metric names). */
  def updateDaemonMetrics(values: Map[String, Double]): Unit = daemon = values

  private def gauge[T](f: => T): Gauge[T] = new Gauge[T] { def getValue: T = f }
}

private[sparkkinesis] object ProducerMetrics {
  val SourcePrefix = "kinesisProducer"
  val BackpressureCycles = "backpressureCycles"
  val OutstandingRecordsCount = "outstandingRecordsCount"
  val RecordsSent = "recordsSent"
  val RecordsFailed = "recordsFailed"
  val BytesSent = "bytesSent"
  val OutstandingBytes = "outstandingBytes"
  val BackpressureWaitTime = "backpressureWaitTime"
  val PutLatency = "putLatency"
  val Retries = "retries"
  val AggregatesSent = "aggregatesSent"
  val RecordsPerAggregate = "recordsPerAggregate"
  val MisplacedAggregates = "misplacedAggregates"
  val PacedAggregates = "pacedAggregates"
  val ResentRecords = "resentRecords"
  val LatencySampleEvery = 16

  /** Our name -> (KPL metric name, statistic). Means over the KPL's last minute. */
  val DaemonMetrics: Seq[(String, (String, String))] = Seq(
    ("kplUserRecordsPending", ("UserRecordsPending", "mean")),
    ("kplBufferingTimeMs", ("BufferingTime", "mean")),
    ("kplRequestTimeMs", ("RequestTime", "mean")),
    ("kplRetriesPerRecord", ("RetriesPerRecord", "mean")),
    ("kplAllErrors", ("AllErrors", "sum"))
  )

  /** Every metric name a source registers (docs/metrics.md is checked against this). */
  val names: Seq[String] = Seq(
    BackpressureCycles,
    OutstandingRecordsCount,
    RecordsSent,
    RecordsFailed,
    BytesSent,
    OutstandingBytes,
    BackpressureWaitTime,
    PutLatency,
    Retries,
    AggregatesSent,
    RecordsPerAggregate,
    MisplacedAggregates,
    PacedAggregates,
    ResentRecords
  ) ++ DaemonMetrics.map(_._1)
}
