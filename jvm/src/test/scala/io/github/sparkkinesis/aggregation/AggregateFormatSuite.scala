package io.github.sparkkinesis.aggregation

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import java.security.MessageDigest

import scala.util.Random

import io.github.sparkkinesis.shaded.kpl.protobuf.Messages
import io.github.sparkkinesis.shaded.protobuf.ByteString
import org.scalatest.funsuite.AnyFunSuite

/** The writer's own serializer against the KPL's generated `AggregatedRecord` (its messages.proto): the same bytes. */
class AggregateFormatSuite extends AnyFunSuite {

  /** The aggregate as the KPL's generated classes build it: magic, protobuf, MD5. */
  private def byTheKpl(entries: Array[Pending], keys: Seq[String], hashKeys: Seq[String]): Array[Byte] = {
    val b = Messages.AggregatedRecord.newBuilder()
    keys.foreach(b.addPartitionKeyTable)
    hashKeys.foreach(b.addExplicitHashKeyTable)
    entries.foreach { e =>
      val r = Messages.Record.newBuilder().setPartitionKeyIndex(e.keyIndex.toLong)
      if (e.hashKeyIndex >= 0) r.setExplicitHashKeyIndex(e.hashKeyIndex.toLong)
      b.addRecords(r.setData(ByteString.copyFrom(e.data.duplicate())))
    }
    val body = b.build().toByteArray
    AggregateFormat.Magic ++ body ++ MessageDigest.getInstance("MD5").digest(body)
  }

  /** `n` records over `distinct` keys (multi-byte UTF-8 among them), every third with an explicit hash key, data of 0
    * to `maxData` bytes in heap, sliced and direct buffers; encoded by both, compared byte for byte.
    */
  private def check(n: Int, distinct: Int, maxData: Int, seed: Int): Unit = {
    val rng = new Random(seed)
    val keys = scala.collection.mutable.LinkedHashMap.empty[String, Int]
    val hashKeys = scala.collection.mutable.LinkedHashMap.empty[String, Int]
    val entries = (0 until n).map { i =>
      val key = s"ключ-${rng.nextInt(distinct)}-✓"
      val ehk =
        if (i % 3 == 0) HashKey.ofBigInteger(new java.math.BigInteger(128 - rng.nextInt(100), rng.self)).toString
        else null
      val bytes = new Array[Byte](rng.nextInt(maxData + 1))
      rng.nextBytes(bytes)
      val data = i % 3 match {
        case 0 => ByteBuffer.wrap(bytes)
        case 1 => // a slice of a larger array, at an offset
          val big = new Array[Byte](bytes.length + 7)
          System.arraycopy(bytes, 0, big, 5, bytes.length)
          ByteBuffer.wrap(big, 5, bytes.length).slice()
        case _ => ByteBuffer.allocateDirect(bytes.length).put(bytes).flip().asInstanceOf[ByteBuffer]
      }
      val utf8 = key.getBytes(StandardCharsets.UTF_8)
      val p = new Pending("s", key, ehk, data, null, bytes.length, 0L, HashKey.of(key, ehk), utf8)
      p.keyIndex = keys.getOrElseUpdate(key, keys.size)
      p.hashKeyIndex = if (ehk == null) -1 else hashKeys.getOrElseUpdate(ehk, hashKeys.size)
      p
    }.toArray
    // In first-use order (on Scala 2.12 `keys` is a set: mapped first, it loses that order).
    val keyTable = keys.keys.toIndexedSeq
    val hashKeyTable = hashKeys.keys.toIndexedSeq
    val ours = AggregateFormat.encode(entries, keyTable.map(_.getBytes(StandardCharsets.UTF_8)), hashKeyTable)
    val theirs = byTheKpl(entries, keyTable, hashKeyTable)
    assert(ours.length == theirs.length)
    assert(ours.sameElements(theirs), s"the bytes differ at ${ours.indices.find(i => ours(i) != theirs(i))}")
  }

  test("the writer's aggregates are the bytes the KPL's generated classes write") {
    check(n = 400, distinct = 400, maxData = 100, seed = 1) // small records, a key each
    check(n = 300, distinct = 7, maxData = 300, seed = 2) // keys repeated: table indices of one byte
    check(n = 1, distinct = 1, maxData = 0, seed = 3) // one empty record
    check(n = 4, distinct = 2, maxData = 300000, seed = 4) // data lengths of three-byte varints
    check(n = 2000, distinct = 1500, maxData = 10, seed = 5) // key indices of two-byte varints
  }
}
