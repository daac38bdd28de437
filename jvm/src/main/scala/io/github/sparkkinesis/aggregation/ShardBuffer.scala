package io.github.sparkkinesis.aggregation

import scala.collection.mutable.ArrayBuffer

/** The records waiting for one shard of one stream, encoded into an aggregate when sealed ([[SealRule]] says when); and
  * the shard's way out: its quota and the sealed aggregates waiting for it. Its lock guards all of it: [[Pacing]] sends
  * a shard's aggregates under it, so they reach the producer in order.
  */
private[sparkkinesis] final class ShardBuffer(
    val stream: String,
    val shard: ShardRange,
    settings: AggregationSettings,
    clock: Clock,
    share: RateShare,
    gated: Boolean = false
) {
  def this(stream: String, shard: ShardRange, settings: AggregationSettings, clock: Clock) =
    this(stream, shard, settings, clock, new RateShare(clock))

  private var entries = new ArrayBuffer[Pending]()
  // The open aggregate's key tables: each distinct key once, in order of first use, and its index. Cleared, not
  // replaced, by a seal: the maps keep their capacity for the next aggregate.
  private val keys = new java.util.HashMap[String, Integer]()
  private val keyTable = new ArrayBuffer[Array[Byte]]()
  private val hashKeys = new java.util.HashMap[String, Integer]()
  private val hashKeyTable = new ArrayBuffer[String]()
  private var size = AggregateFormat.FrameBytes.toLong
  private var owners = new ArrayBuffer[RecordOwner](4)
  private var lastOwner: RecordOwner = null // the last record's: most records follow one of the same task
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
  private[aggregation] val rule = new SealRule(settings, clock, gated)

  /** A new map replaced this buffer ([[StreamLayouts]]): a record a writer routed here just before goes by the new one
    * instead ([[WriterAggregator]]). Set under this buffer's lock.
    */
  @volatile private[aggregation] var retired = false

  /** With `ordered`: one of this shard's aggregates landed in a shard not holding all of its records (the map it was
    * built by is stale), so the rest go as their records alone, each key's in order ([[KeyChains]]), until a new map
    * replaces this buffer: a second aggregate landing in a sibling shard would put a key's later records where a reader
    * of that sibling meets them before the earlier ones. Set by [[RetryPolicy]].
    */
  @volatile private[aggregation] var goesAlone = false

  /** With `ordered`: the new map's buffers wait for this one to drain ([[Handover]]); null when none wait. */
  @volatile private[aggregation] var handover: Handover = null

  /** Nothing of the shard left in the writer: no record open, none waiting, none in flight. Under this buffer's lock.
    */
  def drained: Boolean = isEmpty && waiting.isEmpty && largeWaiting.isEmpty && !rule.anyInFlight

  /** Whether `p` alone (as the only record of an aggregate) fits `AggregationMaxSize`. */
  def fitsAlone(p: Pending): Boolean =
    sizeWith(p, AggregateFormat.FrameBytes.toLong, null, 0, null, 0) + p.keyBytes <= settings.maxSize

  /** The aggregate's size (`base` so far) with `p` added: its key at index `known` (null: a new entry, index `next`),
    * its explicit hash key likewise.
    */
  private def sizeWith(p: Pending, base: Long, known: Integer, next: Int, knownHk: Integer, nextHk: Int): Long = {
    val hk = p.explicitHashKey
    val keyIndex = if (known != null) known.intValue else next
    val hkIndex = if (hk == null) -1 else if (knownHk != null) knownHk.intValue else nextHk
    base +
      (if (known != null) 0 else AggregateFormat.tableEntryBytes(p.keyBytes)) +
      (if (hk == null || knownHk != null) 0 else AggregateFormat.tableEntryBytes(hk.length)) +
      AggregateFormat.recordBytes(keyIndex, hkIndex, p.bytes)
  }

  /** Adds `p` (the caller checked [[fitsAlone]]); returns the aggregates this sealed (the one `p` did not fit in, and
    * `p`'s own when it reached `AggregationMaxCount`) and whether the buffer went from empty to holding `p` (it then
    * needs a linger ticket). Called under this buffer's lock. Looks each key up once (and adds it when new).
    */
  def add(p: Pending, out: ArrayBuffer[Aggregate]): Boolean = {
    val hk = p.explicitHashKey
    var known = keys.get(p.partitionKey)
    var knownHk = if (hk == null) null else hashKeys.get(hk)
    if (
      entries.nonEmpty &&
      rule.closesBefore(
        size + firstKeyBytes,
        sizeWith(p, size, known, keys.size, knownHk, hashKeys.size) + firstKeyBytes,
        quota.burst
      )
    ) {
      out += seal()
      known = null
      knownHk = null
    }
    val opened = entries.isEmpty
    p.keyIndex = if (known != null) known.intValue else newEntry(keys, keyTable, p.partitionKey, p.keyUtf8, p.keyBytes)
    p.hashKeyIndex =
      if (hk == null) -1
      else if (knownHk != null) knownHk.intValue
      else newEntry(hashKeys, hashKeyTable, hk, hk, hk.length)
    size += AggregateFormat.recordBytes(p.keyIndex, p.hashKeyIndex, p.bytes)
    if (opened) firstKeyBytes = p.keyBytes
    entries += p
    rule.added(p.bytes.toLong + p.keyBytes, opened)
    if (!(lastOwner eq p.owner)) {
      if (!owners.exists(_ eq p.owner)) owners += p.owner
      lastOwner = p.owner
    }
    if (rule.full(entries.length)) out += seal()
    opened
  }

  /** Adds key `s` (not in the table yet) as its next `entry`, of `bytes` bytes, and them to the size; its index. */
  private def newEntry[T](
      index: java.util.HashMap[String, Integer],
      table: ArrayBuffer[T],
      s: String,
      entry: T,
      bytes: Int
  ): Int = {
    val i = table.length
    size += AggregateFormat.tableEntryBytes(bytes)
    index.put(s, i)
    table += entry
    i
  }

  def isEmpty: Boolean = entries.isEmpty

  /** A full aggregate's bytes: the quota has room for one when an idle shard's buffer goes ([[Pacing]]). */
  def fullBytes: Long = settings.fullBytes

  /** Whether records come fast enough to fill an aggregate within the linger ([[SealRule.fillsWithinLinger]]). */
  def fillsWithinLinger: Boolean = rule.fillsWithinLinger(entries.length, size)

  /** Whether a record of `owner` waits here (a commit of its task seals the buffer). */
  def holds(owner: RecordOwner): Boolean = owners.exists(_ eq owner)

  /** Takes the buffered records out as one aggregate, encoded. Called under this buffer's lock. */
  def seal(): Aggregate = {
    val taken = entries.toArray
    val a = new Aggregate(this, taken, AggregateFormat.encode(taken, keyTable, hashKeyTable))
    entries = new ArrayBuffer[Pending](math.max(16, a.entries.length))
    keys.clear()
    keyTable.clear()
    hashKeys.clear()
    hashKeyTable.clear()
    owners = new ArrayBuffer[RecordOwner](4)
    lastOwner = null
    size = AggregateFormat.FrameBytes.toLong
    generation += 1
    rule.wasSealed()
    a
  }
}
