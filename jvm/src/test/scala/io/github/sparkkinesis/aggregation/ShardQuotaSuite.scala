package io.github.sparkkinesis.aggregation

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.FakeClock

class ShardQuotaSuite extends AnyFunSuite {

  // RateLimit=1: 10 Kinesis records and 10,485.76 bytes a second for a shard.
  private val settings = AggregationSettings(51200, Long.MaxValue, 100, 60000, rateLimit = 1)

  test("a shard's bucket holds half a second of its quota, then refills at its rate") {
    val clock = new FakeClock
    val q = new ShardQuota(settings, clock)
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
    val q = new ShardQuota(settings, clock)
    assert(q.take(8000) == 0L, "5,242 bytes in hand: 8,000 goes on a full bucket")
    val wait = q.take(100)
    assert(wait >= 250000000L, s"the debt of 2,758 bytes and the next 100 take a quarter second at least, not $wait ns")
    clock.advanceMs(1000)
    assert(q.take(100) == 0L, "a second later the debt is paid")
    q.spent()
    assert(q.take(100) == 100000000L, "after a throttle, nothing in hand: the next waits for its record's share")
  }
}
