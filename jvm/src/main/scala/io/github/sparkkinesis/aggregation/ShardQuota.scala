package io.github.sparkkinesis.aggregation

/** A shard's write quota as the writer spends it: a token bucket of bytes and of Kinesis records, refilled at this
  * producer's [[RateShare]] of `RateLimit` of the shard's quota, holding at most [[ShardQuota.BurstSeconds]] of that
  * rate. An aggregate bigger than the bucket (a low `RateLimit`) goes once the bucket is full and leaves it in debt.
  * Not thread-safe: its shard buffer's lock guards it.
  */
private[sparkkinesis] final class ShardQuota(
    settings: AggregationSettings,
    clock: Clock,
    share: RateShare
) {
  import ShardQuota.BurstSeconds

  /** When the last aggregate was taken (paced). */
  def lastTaken: Long = stamp

  private var seen = 0.0
  private var byteRate = 0.0
  private var recordRate = 0.0
  private var burstBytes = 0.0
  private var burstRecords = 0.0
  private var bytes = Double.PositiveInfinity // full at the start: rescale caps it at the burst
  private var records = Double.PositiveInfinity
  private var stamp = clock.nanoTime()
  rescale()

  /** The rates and bucket at the share's current value (it changes only on a throttle or an acceptance); called before
    * the bucket is used, so its refill since the last use runs at the current share.
    */
  private def rescale(): Unit = {
    seen = share.current
    byteRate = settings.bytesPerSecond * seen
    recordRate = settings.aggregatesPerSecond * seen
    burstBytes = byteRate * BurstSeconds
    burstRecords = math.max(1.0, recordRate * BurstSeconds)
    bytes = math.min(bytes, burstBytes)
    records = math.min(records, burstRecords)
  }

  /** Rescales the bucket when the share moved since it was last used. */
  private def followShare(): Unit = if (share.current != seen) rescale()

  /** The most the bucket holds at the producer's current share: what one aggregate may cost without going into debt. */
  def burst: Long = {
    followShare()
    burstBytes.toLong
  }

  /** Takes one Kinesis record of `quotaBytes` (data and partition key, as Kinesis counts them): 0 when taken, else the
    * nanoseconds until it can be (at least a millisecond).
    */
  def take(quotaBytes: Int): Long = {
    val wait = waitFor(quotaBytes)
    if (wait == 0L) {
      bytes -= quotaBytes
      records -= 1.0
    }
    wait
  }

  /** As [[take]], without taking: 0 when the bucket holds a Kinesis record of `quotaBytes` now, else the nanoseconds
    * until it does (at least a millisecond).
    */
  def waitFor(quotaBytes: Long): Long = {
    followShare()
    val now = clock.nanoTime()
    val elapsed = (now - stamp) / 1e9
    stamp = now
    bytes = math.min(burstBytes, bytes + elapsed * byteRate)
    records = math.min(burstRecords, records + elapsed * recordRate)
    val need = math.min(quotaBytes.toDouble, burstBytes)
    if (bytes >= need && records >= 1.0) 0L
    else {
      val s = math.max((need - bytes) / byteRate, (1.0 - records) / recordRate)
      math.max(1000000L, (s * 1e9).toLong)
    }
  }

  /** Charges one Kinesis record of `quotaBytes` that went by another way (a large record, [[LargeRecords]]): the bucket
    * may go into debt, and what follows waits until it is repaid.
    */
  def charge(quotaBytes: Int): Unit = {
    followShare()
    val now = clock.nanoTime()
    val elapsed = (now - stamp) / 1e9
    stamp = now
    bytes = math.min(burstBytes, bytes + elapsed * byteRate) - quotaBytes
    records = math.min(burstRecords, records + elapsed * recordRate) - 1.0
  }

  /** Kinesis throttled the shard: what the bucket held was not there (another producer, or the writer's own records
    * sent alone, took it), and the producer's share may go down. Returns whether it did.
    */
  def spent(pacedNanos: Long): Boolean = {
    bytes = math.min(bytes, 0.0)
    records = math.min(records, 0.0)
    share.throttled(pacedNanos)
  }

  /** Kinesis accepted an aggregate of the shard: the producer's share may go up. */
  def accepted(): Unit = share.accepted()
}

private[sparkkinesis] object ShardQuota {

  /** Kinesis lets a shard take about a second of its quota at once. The writer holds half of that, so Kinesis' bucket
    * stays ahead of the writer's and sends that reach it bunched (one delayed on the way, the next not) still find
    * room.
    */
  val BurstSeconds = 0.5
}
