package io.github.sparkkinesis.aggregation

import scala.collection.mutable.ArrayBuffer

import io.github.sparkkinesis.compat.CollectionConverters._

/** The records waiting for one shard of one stream, sealed into an aggregate by size, count or linger; and the shard's
  * way out: its quota and the sealed aggregates waiting for it. Its lock guards all of it: [[Pacing]] sends a shard's
  * aggregates under it, so they reach the producer in order.
  */
private[sparkkinesis] final class ShardBuffer(
    val stream: String,
    val shard: ShardRange,
    settings: AggregationSettings,
    clock: Clock,
    share: RateShare
) {
  def this(stream: String, shard: ShardRange, settings: AggregationSettings, clock: Clock) =
    this(stream, shard, settings, clock, new RateShare(clock))

  private var entries = new ArrayBuffer[Pending]()
  private var keys = new java.util.LinkedHashMap[String, Integer]()
  private var hashKeys = new java.util.LinkedHashMap[String, Integer]()
  private var size = AggregateFormat.FrameBytes.toLong
  private var owners = new ArrayBuffer[RecordOwner](4)
  private var firstKeyBytes = 0

  /** Bumped by every seal, so a linger ticket for an aggregate sealed meanwhile does nothing. */
  @volatile private[aggregation] var generation = 0L

  private[aggregation] val quota = new ShardQuota(settings, clock, share)

  /** The shard's burst for records too big for an aggregate, and those waiting for it, oldest first. */
  private[aggregation] val burst = new LargeRecordBurst(settings, clock)
  private[aggregation] val largeWaiting = new java.util.ArrayDeque[Alone]()

  /** Sealed aggregates waiting for the shard's quota, oldest first; a pace ticket is due while it is not empty. */
  private[aggregation] val waiting = new java.util.ArrayDeque[Aggregate]()

  /** Aggregates handed to the producer and not answered yet: while there are, the buffer gathers ([[Pacing]]). */
  private[aggregation] var inFlight = 0

  /** The shard was idle but its quota had no room for a full aggregate: a ticket is due when it will. */
  private[aggregation] var awaitingRoom = false

  /** The shard was idle and its buffer gathers ([[Pacing.GatherNanos]]): a ticket seals it when the gather ends. */
  private[aggregation] var gathering = false

  /** The linger ended while aggregates waited for the shard's quota: the buffer is sealed when they have gone, so a
    * shard held back by its quota gets fewer, fuller aggregates rather than a queue of small ones.
    */
  private[aggregation] var lingered = false

  /** Whether `p` alone (as the only record of an aggregate) fits `AggregationMaxSize`. */
  def fitsAlone(p: Pending): Boolean = sizeWith(p, fresh = true) + p.keyBytes <= settings.maxSize

  private def sizeWith(p: Pending, fresh: Boolean): Long = {
    val key = p.partitionKey
    val hk = p.explicitHashKey
    val knownKey = !fresh && keys.containsKey(key)
    val knownHk = hk == null || (!fresh && hashKeys.containsKey(hk))
    val keyIndex = if (knownKey) keys.get(key).intValue else if (fresh) 0 else keys.size
    val hkIndex = if (hk == null) -1 else if (knownHk) hashKeys.get(hk).intValue else if (fresh) 0 else hashKeys.size
    (if (fresh) AggregateFormat.FrameBytes.toLong else size) +
      (if (knownKey) 0 else AggregateFormat.tableEntryBytes(p.keyBytes)) +
      (if (knownHk) 0 else AggregateFormat.tableEntryBytes(hk.length)) +
      AggregateFormat.recordBytes(keyIndex, hkIndex, p.bytes)
  }

  /** Adds `p` (the caller checked [[fitsAlone]]); returns the aggregates this sealed (the one `p` did not fit in, and
    * `p`'s own when it reached `AggregationMaxCount`) and whether the buffer went from empty to holding `p` (it then
    * needs a linger ticket). Called under this buffer's lock.
    */
  def add(p: Pending, out: ArrayBuffer[Aggregate]): Boolean = {
    if (entries.nonEmpty && sizeWith(p, fresh = false) + firstKeyBytes > settings.aggregateMaxBytes) out += seal()
    val opened = entries.isEmpty
    p.keyIndex = indexIn(keys, p.partitionKey, p.keyBytes)
    val hk = p.explicitHashKey
    p.hashKeyIndex = if (hk == null) -1 else indexIn(hashKeys, hk, hk.length)
    size += AggregateFormat.recordBytes(p.keyIndex, p.hashKeyIndex, p.bytes)
    if (opened) { firstKeyBytes = p.keyBytes; openedAt = clock.nanoTime() }
    entries += p
    windowBytes += p.bytes + p.keyBytes
    if (owners.isEmpty || !(owners.last eq p.owner) && !owners.exists(_ eq p.owner)) owners += p.owner
    if (entries.length >= settings.maxCount) out += seal()
    opened
  }

  /** `s`'s index in a key table, adding it (and its bytes to the size) when new. */
  private def indexIn(table: java.util.LinkedHashMap[String, Integer], s: String, bytes: Int): Int = {
    val known = table.get(s)
    if (known != null) known.intValue
    else {
      val i = table.size
      size += AggregateFormat.tableEntryBytes(bytes)
      table.put(s, i)
      i
    }
  }

  def isEmpty: Boolean = entries.isEmpty

  /** The most an aggregate of this buffer costs its shard's quota. */
  def maxQuotaBytes: Long = settings.aggregateMaxBytes

  // The bytes records brought since `windowStart`, and the last window's pace in bytes per window (the linger, at most
  // ShardBuffer.PaceHorizonMs) ([[fillsWithinLinger]]); rolled when asked, so adding a record reads no clock.
  private val windowNanos = math.max(1L, math.min(settings.lingerMs, ShardBuffer.PaceHorizonMs)) * 1000000L
  private var windowStart = clock.nanoTime()
  private var windowBytes = 0L
  private var lastPace = 0.0
  private var openedAt = 0L // when the open aggregate got its first record

  private def roll(now: Long): Unit = {
    val elapsed = now - windowStart
    if (elapsed >= windowNanos) {
      lastPace = if (elapsed < 4 * windowNanos) windowBytes.toDouble * windowNanos / elapsed else 0.0
      windowBytes = 0L
      windowStart = now
    }
  }

  /** Whether records come to this shard fast enough to fill an aggregate within `RecordMaxBufferedTime` (at most
    * [[ShardBuffer.PaceHorizonMs]]): a full aggregate's bytes came within the last such window, or come at that pace in
    * the current one (once a tenth of it has passed: a burst at its start is not a pace), or the open aggregate, at the
    * pace it filled so far, would be full within one. Such a shard does not send when idle ([[Pacing.sendIfIdle]]): its
    * aggregates fill within their linger anyway, and sending at each answer would only cut them into pieces of one
    * round trip's records, each a Kinesis record to build, send and confirm.
    */
  def fillsWithinLinger: Boolean = {
    import ShardBuffer.{PaceNanos, PaceRecords}
    val now = clock.nanoTime()
    roll(now)
    val max = settings.aggregateMaxBytes
    val elapsed = now - windowStart
    val open = now - openedAt
    windowBytes >= max || lastPace >= max ||
    elapsed * 10 >= windowNanos && windowBytes.toDouble * windowNanos >= max * elapsed.toDouble ||
    entries.length >= PaceRecords && open >= PaceNanos && size.toDouble * windowNanos >= max * open.toDouble
  }

  /** Whether a record of `owner` waits here (a commit of its task seals the buffer). */
  def holds(owner: RecordOwner): Boolean = owners.exists(_ eq owner)

  /** Takes the buffered records out as one aggregate, encoded. Called under this buffer's lock. */
  def seal(): Aggregate = {
    val taken = entries.toArray
    val a = new Aggregate(
      this,
      taken,
      AggregateFormat.encode(taken, keys.keySet.asScala.toSeq, hashKeys.keySet.asScala.toSeq)
    )
    entries = new ArrayBuffer[Pending](math.max(16, a.entries.length))
    keys = new java.util.LinkedHashMap[String, Integer]()
    hashKeys = new java.util.LinkedHashMap[String, Integer]()
    owners = new ArrayBuffer[RecordOwner](4)
    size = AggregateFormat.FrameBytes.toLong
    generation += 1
    lingered = false
    a
  }
}

private object ShardBuffer {

  /** What an open aggregate must hold, and for how long, before its pace counts ([[ShardBuffer.fillsWithinLinger]]): a
    * few records in an instant say nothing of a rate, and a shard that had a record or two waiting for an answer is not
    * busy.
    */
  val PaceRecords = 8
  val PaceNanos: Long = 1000000L

  /** The window a busy shard's pace is judged over, whatever `RecordMaxBufferedTime` is (the KPL's default): a busy
    * shard is one that fills an aggregate within it, about 5,000 records/s of 100 B. A longer linger must not make a
    * trickle count as busy and wait for it.
    */
  val PaceHorizonMs = 100L
}
