package io.github.sparkkinesis.aggregation

/** A shard's allowance for records too big for an aggregate (up to 10 MiB): Kinesis takes such a record in one burst
  * that refills at the shard's byte rate (its "large records" page; the KPL's per-shard limiter since 1.0.6 allows byte
  * bursts up to 10 MiB refilling at 1 MiB/s). The bucket holds at most [[LargeRecordBurst.Bytes]] and refills at
  * `RateLimit` of the shard's quota. A record goes once the bucket holds it: a 10 MiB one waits at most until the
  * bucket is full again, never behind the half second [[ShardQuota]] holds. Not thread-safe: its shard buffer's lock
  * guards it.
  */
private[sparkkinesis] final class LargeRecordBurst(settings: AggregationSettings, clock: Clock) {
  import LargeRecordBurst.Bytes

  private val rate = settings.bytesPerSecond
  private var bytes = Bytes.toDouble
  private var stamp = clock.nanoTime()

  /** Takes `quotaBytes` (data and partition key): 0 when taken, else the nanoseconds until it can be (at least 1 ms).
    */
  def take(quotaBytes: Int): Long = {
    val now = clock.nanoTime()
    bytes = math.min(Bytes.toDouble, bytes + (now - stamp) / 1e9 * rate)
    stamp = now
    val need = math.min(quotaBytes.toDouble, Bytes.toDouble)
    if (bytes >= need) { bytes -= quotaBytes; 0L }
    else math.max(1000000L, ((need - bytes) / rate * 1e9).toLong)
  }
}

private[sparkkinesis] object LargeRecordBurst {

  /** The burst a shard allows: one record of the largest size Kinesis takes. */
  val Bytes: Long = 10L * 1024 * 1024
}

/** Sends a shard's records too big for an aggregate ([[Alone]]), in order, each when its shard's [[LargeRecordBurst]]
  * holds it; its bytes are charged to the shard's [[ShardQuota]] too (leaving it in debt), so the aggregates behind it
  * wait and the shard's average stays within `RateLimit`. Runs under the shard buffer's lock.
  */
private[sparkkinesis] final class LargeRecords(scheduler: Scheduler, send: Outgoing => Unit) {

  def dispatch(b: ShardBuffer, o: Alone): Unit = b.synchronized {
    val wait = if (b.largeWaiting.isEmpty) b.burst.take(o.quotaBytes) else -1L
    if (wait == 0L) go(b, o)
    else {
      b.largeWaiting.add(o)
      if (wait > 0L) scheduler.after(wait)(() => paced(b))
    }
  }

  private def paced(b: ShardBuffer): Unit = b.synchronized {
    var wait = 0L
    while (!b.largeWaiting.isEmpty && { wait = b.burst.take(b.largeWaiting.peek().quotaBytes); wait == 0L })
      go(b, b.largeWaiting.poll())
    if (!b.largeWaiting.isEmpty) scheduler.after(wait)(() => paced(b))
  }

  private def go(b: ShardBuffer, o: Alone): Unit = {
    b.quota.charge(o.quotaBytes)
    send(o)
  }
}
