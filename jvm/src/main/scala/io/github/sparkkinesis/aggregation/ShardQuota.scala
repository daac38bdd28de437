package io.github.sparkkinesis.aggregation

/** A shard's write quota as the writer spends it: a token bucket of bytes and of Kinesis records, refilled at
  * `RateLimit` of the shard's quota, holding at most [[ShardQuota.BurstSeconds]] of it. An aggregate bigger than the
  * bucket (a low `RateLimit`) goes once the bucket is full and leaves it in debt. Not thread-safe: its shard buffer's
  * lock guards it.
  */
private[sparkkinesis] final class ShardQuota(settings: AggregationSettings, clock: Clock) {
  import ShardQuota.BurstSeconds

  private val byteRate = settings.bytesPerSecond
  private val recordRate = settings.aggregatesPerSecond
  private val burstBytes = byteRate * BurstSeconds
  private val burstRecords = math.max(1.0, recordRate * BurstSeconds)
  private var bytes = burstBytes
  private var records = burstRecords
  private var stamp = clock.nanoTime()

  /** Takes one Kinesis record of `quotaBytes` (data and partition key, as Kinesis counts them): 0 when taken, else the
    * nanoseconds until it can be (at least a millisecond).
    */
  def take(quotaBytes: Int): Long = {
    val now = clock.nanoTime()
    val elapsed = (now - stamp) / 1e9
    stamp = now
    bytes = math.min(burstBytes, bytes + elapsed * byteRate)
    records = math.min(burstRecords, records + elapsed * recordRate)
    val need = math.min(quotaBytes.toDouble, burstBytes)
    if (bytes >= need && records >= 1.0) {
      bytes -= quotaBytes
      records -= 1.0
      0L
    } else {
      val s = math.max((need - bytes) / byteRate, (1.0 - records) / recordRate)
      math.max(1000000L, (s * 1e9).toLong)
    }
  }

  /** Charges one Kinesis record of `quotaBytes` that went by another way (a large record, [[LargeRecords]]): the bucket
    * may go into debt, and what follows waits until it is repaid.
    */
  def charge(quotaBytes: Int): Unit = {
    val now = clock.nanoTime()
    val elapsed = (now - stamp) / 1e9
    stamp = now
    bytes = math.min(burstBytes, bytes + elapsed * byteRate) - quotaBytes
    records = math.min(burstRecords, records + elapsed * recordRate) - 1.0
  }

  /** Kinesis throttled the shard: what the bucket held was not there (another producer, or the writer's own records
    * sent alone, took it).
    */
  def spent(): Unit = {
    bytes = math.min(bytes, 0.0)
    records = math.min(records, 0.0)
  }
}

private[sparkkinesis] object ShardQuota {

  /** Kinesis lets a shard take about a second of its quota at once. The writer holds half of that, so Kinesis' bucket
    * stays ahead of the writer's and sends that reach it bunched (one delayed on the way, the next not) still find
    * room.
    */
  val BurstSeconds = 0.5
}
