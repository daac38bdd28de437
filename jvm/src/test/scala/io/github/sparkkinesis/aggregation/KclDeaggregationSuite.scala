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

/** The writer's aggregates as a KCL consumer reads them: the KCL's own deaggregation, which drops an aggregate whole
  * when one of its sub-records' hash keys lies outside the shard it was read from.
  */
class KclDeaggregationSuite extends AnyFunSuite {

  private val settings =
    AggregationSettings(maxSize = 8192, maxCount = Long.MaxValue, lingerMs = 100, recheckMs = 300000, rateLimit = 100)

  /** `n` records (every fourth with an explicit hash key) aggregated per shard of `layout`, as the writer seals them.
    */
  private def aggregates(layout: ShardMap, n: Int, seed: Int): Seq[Aggregate] = {
    val buffers = layout.shards.map(sh => new ShardBuffer("s", sh, settings, new FakeClock))
    val rng = new Random(seed)
    val sealedAggregates = ArrayBuffer.empty[Aggregate]
    (0 until n).foreach { i =>
      val key = s"user-${rng.nextInt(700)}"
      val ehk = if (i % 4 == 0) HashKey.ofBigInteger(new java.math.BigInteger(128, rng.self)).toString else null
      val data = s"record-$i".getBytes(StandardCharsets.UTF_8)
      val hashKey = HashKey.of(key, ehk)
      val keyUtf8 = key.getBytes(StandardCharsets.UTF_8)
      val p = new Pending("s", key, ehk, ByteBuffer.wrap(data), null, data.length, 0L, hashKey, keyUtf8)
      val b = buffers(layout.indexOf(hashKey))
      b.add(p, sealedAggregates) // seals into sealedAggregates when full
    }
    buffers.filterNot(_.isEmpty).foreach(b => sealedAggregates += b.seal())
    sealedAggregates.toSeq
  }

  private val kcl = new AggregatorUtil

  /** What a KCL consumer gets of `a` read from `shard`: the KCL's own deaggregation with the shard's hash-key range. */
  private def read(a: Aggregate, shard: ShardRange): Seq[KinesisClientRecord] = {
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

  test("the KCL deaggregates every record of the writer's aggregates from the shard they were built for") {
    val layout = FakeMetadata.even(4).shards
    val n = 5000
    val sealedAggregates = aggregates(layout, n, 26)
    assert(sealedAggregates.size > 4 && sealedAggregates.size < n / 50, s"${sealedAggregates.size} aggregates")
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

  test("RetryPolicy.delivered is the KCL's rule: an aggregate in a shard not holding all of it is dropped whole") {
    // Aggregates built for four shards land, by their explicit hash key (their first record's), in the open shards
    // after a split of each (eight) or a merge of pairs (two), as they do when a reshard races the writer's map.
    val four = FakeMetadata.even(4).shards
    val built = aggregates(four, 3000, 50)
    for (after <- Seq(FakeMetadata.even(8).shards, FakeMetadata.even(2).shards)) {
      val outcomes = built.map { a =>
        val landed = after.shards(after.indexOf(a.entries(0).key))
        val kept = read(a, landed).size
        val delivered = RetryPolicy.delivered(a.entries, after, landed.id)
        assert(kept == 0 || kept == a.records, s"the KCL kept $kept of ${a.records}: neither all nor none")
        assert(delivered == (kept == a.records), s"delivered=$delivered but the KCL kept $kept of ${a.records}")
        delivered
      }
      // Both outcomes occur: a split's child holds few aggregates whole, a merge's child holds every one.
      if (after.size == 8) assert(outcomes.count(!_) > built.size / 2, "a split leaves most aggregates undelivered")
      else assert(outcomes.forall(identity), "a merge's child holds its parents' aggregates whole")
    }
  }
}
