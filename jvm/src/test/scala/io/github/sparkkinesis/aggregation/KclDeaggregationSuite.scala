package io.github.sparkkinesis.aggregation

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import java.util.Collections

import scala.collection.mutable.ArrayBuffer
import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite
import software.amazon.kinesis.retrieval.{AggregatorUtil, KinesisClientRecord}

import io.github.sparkkinesis.{FakeClock, FakeMetadata}
import io.github.sparkkinesis.compat.CollectionConverters._

/** The writer's aggregates as a KCL consumer reads them: the KCL's own deaggregation, which drops every sub-record
  * whose hash key lies outside the shard the aggregate was read from.
  */
class KclDeaggregationSuite extends AnyFunSuite {

  test("the KCL deaggregates every record of the writer's aggregates from the shard they were built for") {
    val layout = FakeMetadata.even(4).shards
    val settings =
      AggregationSettings(maxSize = 8192, maxCount = Long.MaxValue, lingerMs = 100, recheckMs = 300000, rateLimit = 100)
    val buffers = layout.shards.map(sh => new ShardBuffer("s", sh, settings, new FakeClock))
    val rng = new Random(26)
    val sealedAggregates = ArrayBuffer.empty[Aggregate]
    val n = 5000
    (0 until n).foreach { i =>
      val key = s"user-${rng.nextInt(700)}"
      val ehk = if (i % 4 == 0) HashKey.ofBigInteger(new java.math.BigInteger(128, rng.self)).toString else null
      val data = s"record-$i".getBytes(StandardCharsets.UTF_8)
      val hashKey = HashKey.of(key, ehk)
      val keyBytes = key.getBytes(StandardCharsets.UTF_8).length
      val p = new Pending("s", key, ehk, ByteBuffer.wrap(data), null, data.length, 0L, hashKey, keyBytes)
      val b = buffers(layout.indexOf(hashKey))
      b.add(p, sealedAggregates) // seals into sealedAggregates when full
    }
    buffers.filterNot(_.isEmpty).foreach(b => sealedAggregates += b.seal())
    assert(sealedAggregates.size > 4 && sealedAggregates.size < n / 50, s"${sealedAggregates.size} aggregates")

    val kcl = new AggregatorUtil
    def read(a: Aggregate, shard: ShardRange) = {
      val first = a.entries(0)
      val kinesisRecord = KinesisClientRecord
        .builder()
        .data(ByteBuffer.wrap(a.encoded))
        .partitionKey(first.partitionKey)
        .explicitHashKey(first.key.toString)
        .sequenceNumber("1")
        .build()
      kcl.deaggregate(Collections.singletonList(kinesisRecord), shard.start, shard.end).asScala.toSeq
    }
    val back = sealedAggregates.flatMap { a =>
      val got = read(a, a.shard)
      assert(got.size == a.records && got.forall(_.aggregated), s"the KCL kept ${got.size} of ${a.records}")
      got.map { r =>
        val bytes = new Array[Byte](r.data.remaining()); r.data.get(bytes)
        (new String(bytes, StandardCharsets.UTF_8), r.partitionKey, r.explicitHashKey)
      }
    }
    assert(back.map(_._1).sorted == (0 until n).map(i => s"record-$i").sorted)
    val ehks = sealedAggregates.flatMap(_.entries).map(e => e.explicitHashKey).count(_ != null)
    assert(back.count(_._3 != null) == ehks, "a sub-record carries an explicit hash key only when it had one")
    // The check is live: read from another shard, an aggregate loses every record.
    val a = sealedAggregates.head
    val other = layout.shards.find(_.id != a.shard.id).get
    assert(read(a, other).isEmpty)
  }
}
