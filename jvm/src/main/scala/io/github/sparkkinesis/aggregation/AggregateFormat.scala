package io.github.sparkkinesis.aggregation

import io.github.sparkkinesis.shaded.protobuf.CodedOutputStream

/** The KPL's aggregated-record format, as KCL consumers read it: a magic number, an `AggregatedRecord` protobuf (the
  * KPL's messages.proto: key tables, then records indexing into them) and the MD5 of that protobuf.
  */
private[sparkkinesis] object AggregateFormat {

  /** The format's own constant, ahead of the protobuf. */
  val Magic: Array[Byte] = Array(0xf3, 0x89, 0x9a, 0xc2).map(_.toByte)

  /** What the format adds around the protobuf: the magic and the MD5. */
  val FrameBytes: Int = Magic.length + 16

  /** Serializes `entries` (their key indices set) with the key tables: `keys` (the partition keys' UTF-8 bytes) and
    * `hashKeys` (decimal explicit hash keys, ASCII), in the order their indices count. Written field by field into one
    * array, as the KPL's generated `AggregatedRecord` serializes (fields 1, 2 and 3, then each record's 1, 2 and 3; the
    * unit tests hold the two byte for byte): the builders took half of sealing's time in the writer's profile at 100 B
    * (a builder, a `ByteString` and a UTF-8 encoding per record; docs/benchmarks.md, "Hot path").
    */
  def encode(
      entries: Array[Pending],
      keys: collection.IndexedSeq[Array[Byte]],
      hashKeys: collection.IndexedSeq[String]
  ): Array[Byte] = {
    // Indexed loops, not `foreach`: a generic collection's iterator took a tenth of the writer's hot path (JMH).
    var n = 0L
    var i = 0
    while (i < keys.length) { n += tableEntryBytes(keys(i).length); i += 1 }
    i = 0
    while (i < hashKeys.length) { n += tableEntryBytes(hashKeys(i).length); i += 1 }
    i = 0
    while (i < entries.length) {
      val e = entries(i)
      n += recordBytes(e.keyIndex, e.hashKeyIndex, e.bytes)
      i += 1
    }
    val out = new Array[Byte](FrameBytes + Math.toIntExact(n))
    System.arraycopy(Magic, 0, out, 0, Magic.length)
    var at = Magic.length
    i = 0
    while (i < keys.length) {
      val k = keys(i)
      at = varint(out, at, PartitionKeyTableTag)
      at = varint(out, at, k.length.toLong)
      System.arraycopy(k, 0, out, at, k.length)
      at += k.length
      i += 1
    }
    i = 0
    while (i < hashKeys.length) {
      val h = hashKeys(i)
      at = varint(out, at, ExplicitHashKeyTableTag)
      at = varint(out, at, h.length.toLong)
      var c = 0
      while (c < h.length) { out(at + c) = h.charAt(c).toByte; c += 1 } // digits: one byte each in UTF-8
      at += h.length
      i += 1
    }
    i = 0
    while (i < entries.length) {
      val e = entries(i)
      val d = e.data
      at = varint(out, at, RecordsTag)
      at = varint(out, at, innerBytes(e.keyIndex, e.hashKeyIndex, e.bytes).toLong)
      at = varint(out, at, KeyIndexTag)
      at = varint(out, at, e.keyIndex.toLong)
      if (e.hashKeyIndex >= 0) {
        at = varint(out, at, HashKeyIndexTag)
        at = varint(out, at, e.hashKeyIndex.toLong)
      }
      at = varint(out, at, DataTag)
      at = varint(out, at, e.bytes.toLong)
      if (d.hasArray) System.arraycopy(d.array(), d.arrayOffset() + d.position(), out, at, e.bytes)
      else d.duplicate().get(out, at, e.bytes)
      at += e.bytes
      i += 1
    }
    val digest = HashKey.md5
    digest.update(out, Magic.length, at - Magic.length)
    digest.digest(out, at, 16)
    out
  }

  // The fields' tags (field number << 3 | wire type): AggregatedRecord's tables and records (length-delimited), a
  // Record's key indices (varints) and data (length-delimited), as the KPL's messages.proto numbers them.
  private val PartitionKeyTableTag = (1L << 3) | 2
  private val ExplicitHashKeyTableTag = (2L << 3) | 2
  private val RecordsTag = (3L << 3) | 2
  private val KeyIndexTag = (1L << 3) | 0
  private val HashKeyIndexTag = (2L << 3) | 0
  private val DataTag = (3L << 3) | 2

  /** Writes `v` as a protobuf varint at `at`; returns the index after it. */
  private def varint(out: Array[Byte], at: Int, v: Long): Int = {
    var i = at
    var x = v
    while ((x & ~0x7fL) != 0) {
      out(i) = ((x & 0x7f) | 0x80).toByte
      x >>>= 7
      i += 1
    }
    out(i) = x.toByte
    i + 1
  }

  private def varintBytes(v: Long): Int = CodedOutputStream.computeUInt64SizeNoTag(v)

  /** The bytes a string of `n` UTF-8 bytes adds to a key table. */
  def tableEntryBytes(n: Int): Int = 1 + varintBytes(n.toLong) + n

  /** The bytes one record adds, given its key indices (`hashKeyIndex` -1: none) and data size. */
  def recordBytes(keyIndex: Int, hashKeyIndex: Int, dataBytes: Int): Int = {
    val inner = innerBytes(keyIndex, hashKeyIndex, dataBytes)
    1 + varintBytes(inner.toLong) + inner
  }

  /** A record's own bytes, inside its tag and length. */
  private def innerBytes(keyIndex: Int, hashKeyIndex: Int, dataBytes: Int): Int =
    1 + varintBytes(keyIndex.toLong) + (if (hashKeyIndex >= 0) 1 + varintBytes(hashKeyIndex.toLong) else 0) +
      1 + varintBytes(dataBytes.toLong) + dataBytes
}
