package io.github.sparkkinesis.aggregation

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.FakeClock

class RateShareSuite extends AnyFunSuite {
  import RateShareSuite.whole

  private def close(a: Double, b: Double): Boolean = math.abs(a - b) < 1e-12

  /** `s` throttled on an aggregate paced now, past the hold of any earlier decrease. */
  private def throttle(clock: FakeClock, s: RateShare): Boolean = {
    clock.advanceMs(RateShare.HoldNanos / 1000000L)
    s.throttled(clock.nanoTime())
  }

  test("counted producers start at the inverse of their count and grow by answers, never doubling") {
    val clock = new FakeClock
    val s = RateShare(clock, 4)
    assert(s.current == 0.25)
    clock.advanceMs(250)
    s.accepted()
    assert(close(s.current, 0.25 * (1 + RateShare.Growth)), "no start to double in: the count is the start")
    assert(RateShare(clock, 1).current == 1.0, "one producer: the whole RateLimit")
  }

  test(
    "not counted, a stream starts at a quarter of RateLimit and, never throttled, has the whole of it after two doublings"
  ) {
    val clock = new FakeClock
    val s = RateShare(clock, 0)
    assert(s.current == RateShare.StartShare)
    clock.advanceMs(250)
    s.accepted()
    assert(close(s.current, 0.5))
    clock.advanceMs(250)
    s.accepted()
    assert(s.current == 1.0)
    clock.advanceMs(60000)
    s.accepted()
    assert(s.current == 1.0, "never above the whole RateLimit")
    val idle = RateShare(clock, 0)
    clock.advanceMs(60000)
    idle.accepted()
    assert(close(idle.current, 0.5), "an idle minute counts as one doubling")
  }

  test("the first throttle ends the start: half the share, but not below the start share") {
    val clock = new FakeClock
    val grown = RateShare(clock, 0)
    (1 to 2).foreach { _ => clock.advanceMs(250); grown.accepted() }
    assert(grown.throttled(clock.nanoTime()) && grown.current == 0.5)
    val early = RateShare(clock, 0)
    assert(early.throttled(clock.nanoTime()), "a decrease, even if it keeps the start share")
    assert(early.current == RateShare.StartShare, "throttled before it grew: writers leave the start alike")
    clock.advanceMs(250)
    early.accepted()
    assert(early.current < RateShare.StartShare * 1.01, "after the start, no more doubling")
  }

  test("a throttle takes Cut × √share of the share: a bigger share gives back more") {
    val clock = new FakeClock
    val s = whole(clock)
    assert(throttle(clock, s) && close(s.current, 1 - RateShare.Cut))
    val quarter = RateShare(clock, 4)
    assert(throttle(clock, quarter) && close(quarter.current, 0.25 * (1 - RateShare.Cut * 0.5)))
    val small = RateShare(clock, 256)
    assert(throttle(clock, small) && close(small.current, (1.0 / 256) * (1 - RateShare.Cut / 16)))
  }

  test("throttles of aggregates paced within HoldNanos of the last decrease are ignored: a throttling lowers once") {
    val clock = new FakeClock
    val s = whole(clock)
    val paced = clock.nanoTime()
    clock.advanceMs(50)
    assert(s.throttled(paced))
    val once = s.current
    assert((1 to 50).forall(_ => !s.throttled(paced)), "the aggregates on their way meet the same empty shard")
    clock.advanceMs(RateShare.HoldNanos / 1000000L - 1)
    assert(!s.throttled(clock.nanoTime()), "paced while the shard's bucket refills")
    assert(s.current == once)
    clock.advanceMs(60)
    assert(s.throttled(clock.nanoTime()) && s.current < once, "paced after the hold: it counts")
  }

  test("each accepted aggregate grows the share by Growth of itself, at most GrowthPerSecond a second") {
    val clock = new FakeClock
    val s = RateShare(clock, 8)
    clock.advanceMs(1000)
    s.accepted()
    assert(close(s.current, 0.125 * (1 + RateShare.Growth)), "an answer a second: Growth")
    val before = s.current
    (1 to 1000).foreach { _ => clock.advanceMs(1); s.accepted() }
    val grown = s.current / before - 1
    assert(grown > 0.039 && grown < 0.041, s"a thousand answers in a second grow it GrowthPerSecond, not $grown")
  }

  test("the share goes back to the whole RateLimit and no further, and never below MinShare") {
    val clock = new FakeClock
    val s = whole(clock)
    (1 to 1000).foreach(_ => throttle(clock, s))
    assert(s.current == RateShare.MinShare)
    var n = 0
    while (s.current < 1.0 && n < 10000000) { clock.advanceMs(1000); s.accepted(); n += 1 }
    assert(s.current == 1.0)
    s.accepted()
    assert(s.current == 1.0)
  }

  test("a stream's shards share one share (StreamState), which starts at the producers' count") {
    val clock = new FakeClock
    val settings = AggregationSettings(51200, Long.MaxValue, 100, 60000, rateLimit = 1)
    val counted = new StreamState("c", () => 0.0)
    assert(counted.share(clock, writers = 4).current == 0.25)
    assert(counted.share(clock, writers = 2).current == 0.25, "made once: a later count changes nothing")
    val state = new StreamState("s", () => 0.0)
    val share = state.share(clock)
    assert(state.share(clock) eq share, "one per stream and producer")
    val (a, b) = (new ShardQuota(settings, clock, share), new ShardQuota(settings, clock, share))
    (1 to 2).foreach { _ => clock.advanceMs(250); a.accepted() }
    (1 to 3).foreach(_ => a.take(100))
    val before = share.current
    assert(a.spent(clock.nanoTime()) && share.current < before, "a throttle on one shard")
    clock.advanceMs(10000)
    val inHand = (1 to 100).takeWhile(_ => b.take(100) == 0L).size
    assert(inHand == math.max(1, (5 * share.current).toInt), s"the other shard holds half a second at ${share.current}")
  }
}

object RateShareSuite {

  /** A share at the whole `RateLimit`: one producer writing. */
  def whole(clock: FakeClock): RateShare = {
    val s = RateShare(clock, 1)
    assert(s.current == 1.0)
    s
  }
}
