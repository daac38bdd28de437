package io.github.sparkkinesis.aggregation

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.FakeClock

class ShardQuotaSuite extends AnyFunSuite {

  // RateLimit=1: 10 Kinesis records and 10,485.76 bytes a second for a shard.
  private val settings = AggregationSettings(51200, Long.MaxValue, 100, 60000, rateLimit = 1)

  test("a shard's bucket holds half a second of its quota, then refills at its rate") {
    val clock = new FakeClock
    val q = new ShardQuota(settings, clock, RateShareSuite.whole(clock))
    assert((1 to 5).forall(_ => q.take(100) == 0L), "half a second: 5 records in hand")
    assert(q.take(100) == 100000000L, "the sixth waits a tenth of a second")
    clock.advanceMs(99)
    assert(q.take(100) > 0L)
    clock.advanceMs(1)
    assert(q.take(100) == 0L)
    clock.advanceMs(60000)
    assert(
      (1 to 5).forall(_ => q.take(100) == 0L) && q.take(100) > 0L,
      "an idle shard holds no more than half a second"
    )
  }

  test("a record bigger than the bucket goes once it is full and leaves it in debt; a throttle empties it") {
    val clock = new FakeClock
    val q = new ShardQuota(settings, clock, RateShareSuite.whole(clock))
    assert(q.take(8000) == 0L, "5,242 bytes in hand: 8,000 goes on a full bucket")
    val wait = q.take(100)
    assert(wait >= 250000000L, s"the debt of 2,758 bytes and the next 100 take a quarter second at least, not $wait ns")
    clock.advanceMs(1000)
    assert(q.take(100) == 0L, "a second later the debt is paid")
    assert(q.spent(clock.nanoTime()), "a first throttle lowers the producer's share of the shard")
    val after = q.take(100)
    assert(
      math.abs(after - 1e8 / (1 - RateShare.Cut)) < 1000,
      s"after a throttle, nothing in hand and a lower rate: the next waits a tenth of a second / (1 - Cut), not $after ns"
    )
  }

  test("the bucket refills at the producer's share of RateLimit: lower after throttles, back up as aggregates land") {
    val clock = new FakeClock
    val share = RateShareSuite.whole(clock)
    val q = new ShardQuota(settings, clock, share)
    while (share.current > 0.5) {
      assert(q.spent(clock.nanoTime())); clock.advanceMs(1000)
    }
    val s = share.current
    q.take(100)
    clock.advanceMs(10000)
    assert((1 to 5).count(_ => q.take(100) == 0L) == math.max(1, (5 * s).toInt), s"half a second at share $s")
    while (share.current < 1.0) { clock.advanceMs(1000); q.accepted() }
    clock.advanceMs(10000)
    assert((1 to 5).forall(_ => q.take(100) == 0L) && q.take(100) > 0L, "the whole share again: half a second in hand")
  }

  test("a large record charged under a lowered share is repaid at the share's rate") {
    val clock = new FakeClock
    val share = RateShareSuite.whole(clock)
    val q = new ShardQuota(settings, clock, share)
    clock.advanceMs(1000)
    while (share.current > 0.5) { q.spent(clock.nanoTime()); clock.advanceMs(1000) }
    val s = share.current
    clock.advanceMs(10000)
    q.charge(20000)
    val wait = q.take(100) / 1e9
    val expected = (20000 + 100 - 5242.88 * s) / (10485.76 * s)
    assert(math.abs(wait - expected) < 0.01, s"the debt waits $wait s at share $s, not $expected s")
  }
}
