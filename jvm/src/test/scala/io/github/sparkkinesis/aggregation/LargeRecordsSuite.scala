package io.github.sparkkinesis.aggregation

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.FakeClock

class LargeRecordsSuite extends AnyFunSuite {

  private val MiB = 1024 * 1024
  // RateLimit=100: a shard's 1 MiB and 1,000 records a second.
  private val settings = AggregationSettings(51200, Long.MaxValue, 100, 60000, rateLimit = 100)

  test("a shard's large-record burst holds 10 MiB and refills at its byte rate: a 10 MiB record never waits longer") {
    val clock = new FakeClock
    val b = new LargeRecordBurst(settings, clock)
    assert(b.take(10 * MiB) == 0L, "a full burst takes a 10 MiB record at once")
    assert(b.take(4 * MiB) == 4000000000L, "the next 4 MiB waits four seconds of refill")
    clock.advanceMs(4000)
    assert(b.take(4 * MiB) == 0L)
    assert(b.take(10 * MiB) == 10000000000L, "a 10 MiB record waits at most for a full burst")
    clock.advanceMs(60000)
    assert(b.take(6 * MiB) == 0L && b.take(4 * MiB) == 0L && b.take(1) > 0L, "an idle shard holds no more than 10 MiB")
  }

  test("large records go in order within the burst, and the aggregates behind them wait for the quota they used") {
    val clock = new FakeClock
    val scheduler = new Scheduler(clock, "t")
    val sent = new java.util.ArrayList[Int]()
    val large = new LargeRecords(scheduler, o => sent.add(o.data.remaining()))
    val buffer = new ShardBuffer("s", FakeShard.all, settings, clock)
    def alone(bytes: Int) =
      new Alone(
        new Pending("s", "k", null, java.nio.ByteBuffer.allocate(bytes), null, bytes, 0L, null, Array[Byte](107))
      )
    large.dispatch(buffer, alone(6 * MiB))
    large.dispatch(buffer, alone(6 * MiB)) // 4 MiB left in the burst: waits 2 s
    large.dispatch(buffer, alone(2 * MiB)) // behind it, in order
    assert(sent.size == 1)
    def advance(ms: Long): Unit = (1L to ms).foreach { _ => clock.advanceMs(1); scheduler.runDue() }
    advance(1999)
    assert(sent.size == 1, "sent before the burst held it")
    advance(2)
    assert(sent.size == 2)
    advance(1999)
    assert(sent.size == 2)
    advance(2)
    assert(sent.size == 3)
    // The shard's quota paid for all 14 MiB: an aggregate now waits until the debt is repaid.
    assert(buffer.quota.take(1000) > 9000000000L, "the aggregates' quota was not charged for the large records")
  }
}

object FakeShard {
  val all: ShardRange =
    ShardRange(
      "shardId-0",
      java.math.BigInteger.ZERO,
      java.math.BigInteger.ONE.shiftLeft(128).subtract(java.math.BigInteger.ONE)
    )
}
