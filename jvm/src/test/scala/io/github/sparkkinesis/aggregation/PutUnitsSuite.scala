package io.github.sparkkinesis.aggregation

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets

import scala.collection.mutable.ArrayBuffer

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.{FakeClock, FakeMetadata}

/** What the writer's aggregates cost as Kinesis bills them, records coming faster than aggregates close: each Kinesis
  * record in PUT units of 25 KiB of its data and partition key, rounded up, against the floor (the user records' data
  * and keys in units, not rounded per record). Where an aggregate closes is [[SealRule.closesBefore]]'s.
  */
class PutUnitsSuite extends AnyFunSuite {
  private val Unit = SealRule.PutUnitBytes

  /** The writer's settings when the user sets no `AggregationMaxSize` (`sized`: the KPL's 51,200 set by the user). */
  private def settings(sized: Boolean) =
    AggregationSettings(51200, Long.MaxValue, 100, 60000, rateLimit = 100, sizedByWriter = !sized)

  /** The aggregates of `n` records of `size` bytes and a distinct key each, all into one shard, sealed only when full,
    * and the last by a commit; `share`: the producer's part of the shard's quota.
    */
  private def aggregates(size: Int, n: Int, sized: Boolean = false, share: Double = 1.0): Seq[Aggregate] = {
    val clock = new FakeClock
    val b = new ShardBuffer(
      "s",
      FakeMetadata.even(1).shards.shards(0),
      settings(sized),
      clock,
      new RateShare(clock, start = share)
    )
    val out = ArrayBuffer.empty[Aggregate]
    val data = new Array[Byte](size)
    (0 until n).foreach { i =>
      val key = s"key-$i"
      val keyUtf8 = key.getBytes(StandardCharsets.UTF_8)
      val p = new Pending("s", key, null, ByteBuffer.wrap(data), null, size, 0L, HashKey.of(key, null), keyUtf8)
      assert(b.fitsAlone(p))
      b.add(p, out)
    }
    out += b.seal()
    out.toSeq
  }

  private def units(bytes: Long): Long = (bytes + Unit - 1) / Unit

  /** The units `aggs` are billed over the floor of their records. */
  private def overFloor(aggs: Seq[Aggregate]): Double = {
    val billed = aggs.map(a => units(a.quotaBytes.toLong)).sum
    val floor = aggs.flatMap(_.entries).map(p => (p.bytes + p.keyBytes).toLong).sum.toDouble / Unit
    billed / floor
  }

  test("aggregates close where their PUT units are full: within 1.05x the floor from 1 KiB to 25,000 B a record") {
    // 10 KiB before: four records to an aggregate closed at AggregationMaxSize, 41 KB billed as two units, 1.25x.
    val sizes = Seq(1024, 4096, 10240, 12800, 20480, 25000) ++ (1000 to 25000 by 1499)
    for (size <- sizes) {
      val aggs = aggregates(size, 20 * 1024 * 1024 / size)
      val x = overFloor(aggs.dropRight(1)) // the commit's last aggregate closes where it stands
      assert(x <= 1.05, f"$size B records: ${x}%.3fx the floor, aggregates of ${aggs.head.quotaBytes} B")
      assert(aggs.forall(_.quotaBytes <= 524288), s"$size B records: an aggregate over the shard's quota bucket")
    }
    val tenKiB = overFloor(aggregates(10240, 2000).dropRight(1))
    assert(tenKiB < 1.03, f"10 KiB records: ${tenKiB}%.3fx the floor")
  }

  test("small records close near two units, as at the KPL's default size; the user's AggregationMaxSize is kept") {
    val small = aggregates(100, 5000)
    assert(
      small.dropRight(1).forall(a => a.quotaBytes <= 51200 && a.quotaBytes > 51000),
      small.map(_.quotaBytes).take(3)
    )
    val kept = aggregates(10240, 400, sized = true)
    assert(kept.forall(_.quotaBytes <= 51200) && kept.head.records == 4)
    assert(overFloor(kept.dropRight(1)) > 1.2, "the user's 51,200 B closes four 10 KiB records in two units, as asked")
  }

  test("an aggregate grows past two units only within its shard's quota bucket: a quarter share, 128 KiB") {
    val quarter = aggregates(10240, 400, share = 0.25)
    assert(
      quarter.forall(_.quotaBytes <= 131072) && quarter.head.quotaBytes > 100000,
      quarter.map(_.quotaBytes).take(3)
    )
    val whole = aggregates(10240, 400)
    assert(whole.head.quotaBytes > 131072, whole.map(_.quotaBytes).take(3))
  }

  test("fillLater: the best fill at a later unit's end, records of the next one's size, within the most it may grow") {
    // 41,000 B now (two units, 1.25x); 10,250 B records: 8 more end at 123,000 B, in five units (1.041x), 13 more at
    // 174,250 B in seven (1.028x), 18 more at 225,500 B in nine (1.022x); 21 more, all that fit, in eleven (1.099x).
    assert(math.abs(SealRule.fillLater(41000, 10250, 262144) - 9 * 25600.0 / 225500) < 1e-9)
    assert(math.abs(SealRule.fillLater(41000, 10250, 130000) - 5 * 25600.0 / 123000) < 1e-9)
    assert(SealRule.fillLater(41000, 10250, 45000) == Double.MaxValue, "no record fits: no later end")
  }
}
