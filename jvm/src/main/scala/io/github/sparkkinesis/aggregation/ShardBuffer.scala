package io.github.sparkkinesis.aggregation

import scala.collection.mutable.ArrayBuffer

import io.github.sparkkinesis.compat.CollectionConverters._

/** The records waiting for one shard of one stream, encoded into an aggregate when sealed ([[SealRule]] says when); and
  * the shard's way out: its quota and the sealed aggregates waiting for it. Its lock guards all of it: [[Pacing]] sends
  * a shard's aggregates under it, so they reach the producer in order.
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

  /** When this buffer goes, and why ([[SealRule]]): its state is the shard's, under this buffer's lock. */
  private[aggregation] val rule = new SealRule(settings, clock)

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
    if (entries.nonEmpty && rule.overflows(sizeWith(p, fresh = false) + firstKeyBytes)) out += seal()
    val opened = entries.isEmpty
    p.keyIndex = indexIn(keys, p.partitionKey, p.keyBytes)
    val hk = p.explicitHashKey
    p.hashKeyIndex = if (hk == null) -1 else indexIn(hashKeys, hk, hk.length)
    size += AggregateFormat.recordBytes(p.keyIndex, p.hashKeyIndex, p.bytes)
    if (opened) firstKeyBytes = p.keyBytes
    entries += p
    rule.added(p.bytes.toLong + p.keyBytes, opened)
    if (owners.isEmpty || !(owners.last eq p.owner) && !owners.exists(_ eq p.owner)) owners += p.owner
    if (rule.full(entries.length)) out += seal()
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

  /** Whether records come fast enough to fill an aggregate within the linger ([[SealRule.fillsWithinLinger]]). */
  def fillsWithinLinger: Boolean = rule.fillsWithinLinger(entries.length, size)

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
    rule.wasSealed()
    a
  }
}
