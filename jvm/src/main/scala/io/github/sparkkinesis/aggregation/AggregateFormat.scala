package io.github.sparkkinesis.aggregation

import io.github.sparkkinesis.shaded.kpl.protobuf.Messages
import io.github.sparkkinesis.shaded.protobuf.{CodedOutputStream, WireFormat}

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
    * array with protobuf's own encoder, as the KPL's generated `AggregatedRecord` serializes (the unit tests hold the
    * two byte for byte): the builders took half of sealing's time in the writer's profile at 100 B (a builder, a
    * `ByteString` and a UTF-8 encoding per record; docs/benchmarks.md, "Hot path").
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
    val size = Math.toIntExact(n)
    val out = new Array[Byte](FrameBytes + size)
    System.arraycopy(Magic, 0, out, 0, Magic.length)
    val coded = CodedOutputStream.newInstance(out, Magic.length, size)
    i = 0
    while (i < keys.length) {
      coded.writeByteArray(Messages.AggregatedRecord.PARTITION_KEY_TABLE_FIELD_NUMBER, keys(i)); i += 1
    }
    i = 0
    while (i < hashKeys.length) {
      coded.writeString(Messages.AggregatedRecord.EXPLICIT_HASH_KEY_TABLE_FIELD_NUMBER, hashKeys(i)); i += 1
    }
    i = 0
    while (i < entries.length) {
      val e = entries(i)
      val d = e.data
      coded.writeTag(Messages.AggregatedRecord.RECORDS_FIELD_NUMBER, WireFormat.WIRETYPE_LENGTH_DELIMITED)
      coded.writeUInt32NoTag(innerBytes(e.keyIndex, e.hashKeyIndex, e.bytes))
      coded.writeUInt64(Messages.Record.PARTITION_KEY_INDEX_FIELD_NUMBER, e.keyIndex.toLong)
      if (e.hashKeyIndex >= 0)
        coded.writeUInt64(Messages.Record.EXPLICIT_HASH_KEY_INDEX_FIELD_NUMBER, e.hashKeyIndex.toLong)
      coded.writeTag(Messages.Record.DATA_FIELD_NUMBER, WireFormat.WIRETYPE_LENGTH_DELIMITED)
      coded.writeUInt32NoTag(e.bytes)
      if (d.hasArray) coded.writeRawBytes(d.array(), d.arrayOffset() + d.position(), e.bytes)
      else coded.writeRawBytes(d.duplicate())
      i += 1
    }
    coded.checkNoSpaceLeft() // the sizes above and the bytes written agree
    val digest = HashKey.md5
    digest.update(out, Magic.length, size)
    digest.digest(out, Magic.length + size, 16)
    out
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
