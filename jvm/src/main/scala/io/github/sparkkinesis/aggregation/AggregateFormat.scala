package io.github.sparkkinesis.aggregation

import io.github.sparkkinesis.shaded.kpl.protobuf.Messages
import io.github.sparkkinesis.shaded.protobuf.{CodedOutputStream, UnsafeByteOperations}

/** The KPL's aggregated-record format, as KCL consumers read it: a magic number, an `AggregatedRecord` protobuf (the
  * KPL's own generated classes: key tables, then records indexing into them) and the MD5 of that protobuf.
  */
private[sparkkinesis] object AggregateFormat {

  /** The format's own constant, ahead of the protobuf. */
  val Magic: Array[Byte] = Array(0xf3, 0x89, 0x9a, 0xc2).map(_.toByte)

  /** What the format adds around the protobuf: the magic and the MD5. */
  val FrameBytes: Int = Magic.length + 16

  /** Serializes `entries` (their key indices set) with the key tables `keys` and `hashKeys`. */
  def encode(entries: Array[Pending], keys: Seq[String], hashKeys: Seq[String]): Array[Byte] = {
    val b = Messages.AggregatedRecord.newBuilder()
    keys.foreach(b.addPartitionKeyTable)
    hashKeys.foreach(b.addExplicitHashKeyTable)
    entries.foreach { e =>
      val d = e.data
      val data =
        if (d.hasArray) UnsafeByteOperations.unsafeWrap(d.array(), d.arrayOffset() + d.position(), d.remaining())
        else UnsafeByteOperations.unsafeWrap(d.duplicate())
      val r = Messages.Record.newBuilder().setPartitionKeyIndex(e.keyIndex.toLong).setData(data)
      if (e.hashKeyIndex >= 0) r.setExplicitHashKeyIndex(e.hashKeyIndex.toLong)
      b.addRecords(r)
    }
    val message = b.build()
    val n = message.getSerializedSize
    val out = new Array[Byte](FrameBytes + n)
    System.arraycopy(Magic, 0, out, 0, Magic.length)
    val coded = CodedOutputStream.newInstance(out, Magic.length, n)
    message.writeTo(coded)
    coded.checkNoSpaceLeft()
    val digest = HashKey.md5
    digest.update(out, Magic.length, n)
    digest.digest(out, Magic.length + n, 16)
    out
  }

  private def varint(v: Long): Int = CodedOutputStream.computeUInt64SizeNoTag(v)

  /** The bytes a string of `n` UTF-8 bytes adds to a key table. */
  def tableEntryBytes(n: Int): Int = 1 + varint(n.toLong) + n

  /** The bytes one record adds, given its key indices (`hashKeyIndex` -1: none) and data size. */
  def recordBytes(keyIndex: Int, hashKeyIndex: Int, dataBytes: Int): Int = {
    val inner = 1 + varint(keyIndex.toLong) + (if (hashKeyIndex >= 0) 1 + varint(hashKeyIndex.toLong) else 0) +
      1 + varint(dataBytes.toLong) + dataBytes
    1 + varint(inner.toLong) + inner
  }
}
