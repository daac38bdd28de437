package io.github.sparkkinesis.aggregation

import io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration

/** The user's aggregation settings, applied by the writer (the daemon then gets one record per aggregate), how often a
  * stream's layout is read again (`DescribeStreamSummaryIntervalMs`, as the KPL re-reads the strategy), and the share
  * of a shard's quota the writer sends it (`RateLimit`, percent).
  */
private[sparkkinesis] final case class AggregationSettings(
    maxSize: Long,
    maxCount: Long,
    lingerMs: Long,
    recheckMs: Long,
    rateLimit: Long,
    failIfThrottled: Boolean = false,
    recordTtlMs: Long = 30000L,
    gatherMs: Long = SealRule.DefaultGatherMs,
    ordered: Boolean = false
) {

  /** A shard's write quota in bytes and in Kinesis records per second, times `RateLimit`. */
  def bytesPerSecond: Double = 1024.0 * 1024.0 * rateLimit / 100.0
  def aggregatesPerSecond: Double = 1000.0 * rateLimit / 100.0

  /** `AggregationMaxSize`, and at most a quarter second of the shard's bytes, so one throttled aggregate costs its
    * shard no more than that (binds only below `RateLimit=20`).
    */
  def aggregateMaxBytes: Long = math.min(maxSize, math.max(1024L, (bytesPerSecond / 4).toLong))
}

private[sparkkinesis] object AggregationSettings {

  /** From the user's settings as the KPL reads them (its defaults where none), and the writer's `gather_ms` and
    * `ordered`.
    */
  def of(c: KinesisProducerConfiguration, gatherMs: Long, ordered: Boolean): AggregationSettings =
    AggregationSettings(
      c.getAggregationMaxSize,
      c.getAggregationMaxCount,
      c.getRecordMaxBufferedTime,
      c.getDescribeStreamSummaryIntervalMs,
      c.getRateLimit,
      c.isFailIfThrottled,
      c.getRecordTtl,
      gatherMs,
      ordered
    )
}
