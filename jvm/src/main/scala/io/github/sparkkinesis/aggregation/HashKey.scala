package io.github.sparkkinesis.aggregation

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
