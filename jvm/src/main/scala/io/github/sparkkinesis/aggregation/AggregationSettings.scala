package io.github.sparkkinesis.aggregation

import io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration

/** The user's aggregation settings, applied by the writer (the daemon then gets one record per aggregate), how often a
  * stream's layout is read again (`DescribeStreamSummaryIntervalMs`, as the KPL re-reads the strategy), and the share
  * of a shard's quota the writer sends it (`RateLimit`, percent). `maxSize` is `AggregationMaxSize` as the KPL reads it
  * (51,200 unless set); `sizedByWriter`: the user set none, so an aggregate may grow past it to fill its PUT units
  * ([[growBytes]]).
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
    ordered: Boolean = false,
    sizedByWriter: Boolean = false
) {

  /** A shard's write quota in bytes and in Kinesis records per second, times `RateLimit`. */
  def bytesPerSecond: Double = 1024.0 * 1024.0 * rateLimit / 100.0
  def aggregatesPerSecond: Double = 1000.0 * rateLimit / 100.0

  /** A quarter second of the shard's bytes: one throttled aggregate costs its shard no more than that. */
  private def quarterSecond: Long = math.max(1024L, (bytesPerSecond / 4).toLong)

  /** What the pace and idle rules count as a full aggregate ([[SealRule]]): `AggregationMaxSize`, at most a quarter
    * second of the shard's bytes (which binds only below `RateLimit=20`).
    */
  val fullBytes: Long = math.min(maxSize, quarterSecond)

  /** How big an aggregate may grow: [[fullBytes]] when the user set `AggregationMaxSize`; else a Kinesis record (1
    * MiB), so it can close where its last PUT unit is full ([[SealRule.closesBefore]], which also keeps it within its
    * shard's quota bucket).
    */
  val growBytes: Long = if (sizedByWriter) math.max(fullBytes, AggregationSettings.KinesisRecordBytes) else fullBytes
}

private[sparkkinesis] object AggregationSettings {

  /** The most a Kinesis record holds, data and partition key (a stream's default `MaxRecordSizeInKiB`). */
  val KinesisRecordBytes: Long = 1024L * 1024

  /** From the user's settings as the KPL reads them (its defaults where none; `sizedByWriter`: no `AggregationMaxSize`
    * among them), and the writer's `gather_ms` and `ordered`.
    */
  def of(
      c: KinesisProducerConfiguration,
      sizedByWriter: Boolean,
      gatherMs: Long,
      ordered: Boolean
  ): AggregationSettings =
    AggregationSettings(
      c.getAggregationMaxSize,
      c.getAggregationMaxCount,
      c.getRecordMaxBufferedTime,
      c.getDescribeStreamSummaryIntervalMs,
      c.getRateLimit,
      c.isFailIfThrottled,
      c.getRecordTtl,
      gatherMs,
      ordered,
      sizedByWriter
    )
}
