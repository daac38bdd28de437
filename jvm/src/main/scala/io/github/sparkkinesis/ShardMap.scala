package io.github.sparkkinesis

import java.math.BigInteger
import java.nio.charset.StandardCharsets
import java.security.MessageDigest

/** Where Kinesis places a record: its explicit hash key, else the MD5 of its partition key (UTF-8), read as an unsigned
  * 128-bit number. Held as two longs (`hi`, `lo`, compared unsigned) so routing a record allocates nothing big.
  */
private[sparkkinesis] final class HashKey(val hi: Long, val lo: Long) {
  def toBigInteger: BigInteger =
    new BigInteger(1, java.nio.ByteBuffer.allocate(16).putLong(hi).putLong(lo).array())

  /** The decimal form Kinesis takes as an `ExplicitHashKey`. */
  override def toString: String = toBigInteger.toString
}

private[sparkkinesis] object HashKey {
  private val digests = new ThreadLocal[MessageDigest] {
    override def initialValue(): MessageDigest = MessageDigest.getInstance("MD5")
  }

  /** This thread's MD5 (partition keys, and an aggregate's checksum). */
  def md5: MessageDigest = digests.get

  def ofPartitionKey(key: String): HashKey = ofKeyBytes(key.getBytes(StandardCharsets.UTF_8))

  /** The MD5 of a partition key's UTF-8 bytes. */
  def ofKeyBytes(key: Array[Byte]): HashKey = ofDigest(md5.digest(key))

  /** `explicitHashKey` if set (a decimal string the row converter checked), else the partition key's MD5. */
  def of(partitionKey: String, explicitHashKey: String): HashKey =
    if (explicitHashKey != null) ofDecimal(explicitHashKey) else ofPartitionKey(partitionKey)

  def ofDecimal(decimal: String): HashKey = ofBigInteger(new BigInteger(decimal))

  def ofBigInteger(v: BigInteger): HashKey = new HashKey(v.shiftRight(64).longValue, v.longValue)

  private def ofDigest(d: Array[Byte]): HashKey = {
    val b = java.nio.ByteBuffer.wrap(d)
    new HashKey(b.getLong, b.getLong)
  }

  /** Unsigned 128-bit comparison. */
  def compare(aHi: Long, aLo: Long, bHi: Long, bLo: Long): Int = {
    val c = java.lang.Long.compareUnsigned(aHi, bHi)
    if (c != 0) c else java.lang.Long.compareUnsigned(aLo, bLo)
  }
}

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
