package io.github.sparkkinesis.aggregation

import java.math.BigInteger

/** One open shard: its id and hash-key range (inclusive). */
private[sparkkinesis] final case class ShardRange(id: String, start: BigInteger, end: BigInteger)

/** A stream's open shards by hash-key range, for routing records to the shard Kinesis will put them in. Immutable: a
  * refresh builds a new one. Built from `ListShards`; closed shards (a split's or merge's parents) are left out.
  */
private[sparkkinesis] final class ShardMap private (val shards: IndexedSeq[ShardRange]) {
  private val startHi = shards.map(_.start.shiftRight(64).longValue).toArray
  private val startLo = shards.map(_.start.longValue).toArray
  private val endHi = shards.map(_.end.shiftRight(64).longValue).toArray
  private val endLo = shards.map(_.end.longValue).toArray

  def size: Int = shards.size

  /** The index of the shard whose range holds `key`, or -1 when none does (a map caught mid-reshard). */
  def indexOf(key: HashKey): Int = {
    var lo = 0
    var hi = shards.size - 1
    var found = -1
    while (lo <= hi) { // the last shard starting at or below the key
      val mid = (lo + hi) >>> 1
      if (HashKey.compare(startHi(mid), startLo(mid), key.hi, key.lo) <= 0) { found = mid; lo = mid + 1 }
      else hi = mid - 1
    }
    if (found >= 0 && HashKey.compare(key.hi, key.lo, endHi(found), endLo(found)) <= 0) found else -1
  }

  /** Whether `shardId` is one of the open shards of this map (a map read before a reshard does not know its children).
    */
  def has(shardId: String): Boolean = shards.exists(_.id == shardId)

  def contains(shardId: String, key: HashKey): Boolean = {
    val i = indexOf(key)
    i >= 0 && shards(i).id == shardId
  }

  override def toString: String = s"ShardMap(${shards.size} open shards)"
}

private[sparkkinesis] object ShardMap {
  def apply(open: Seq[ShardRange]): ShardMap = new ShardMap(
    open.sortWith((a, b) => a.start.compareTo(b.start) < 0).toIndexedSeq
  )
}
