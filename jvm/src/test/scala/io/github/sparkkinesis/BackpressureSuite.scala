package io.github.sparkkinesis

import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.{CountDownLatch, TimeUnit}

import org.scalatest.funsuite.AnyFunSuite

class BackpressureSuite extends AnyFunSuite {

  /** Polls until `cond` holds or fails after `timeoutMs` (deterministic, no fixed sleeps). */
  private def eventually(timeoutMs: Long)(cond: => Boolean): Unit = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    while (!cond) {
      assert(System.nanoTime() < deadline, s"condition not met within $timeoutMs ms")
      Thread.onSpinWait()
    }
  }

  test("TimeoutLatch.await returns on trigger, long before its timeout") {
    val latch = new TimeoutLatch
    val returned = new CountDownLatch(1)
    val t = new Thread(() => { latch.await(60000); returned.countDown() })
    t.start()
    // trigger until the waiter has woken: a trigger before it waits is (by design) a no-op
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10)
    while (!returned.await(5, TimeUnit.MILLISECONDS)) {
      assert(System.nanoTime() < deadline, "await did not return after trigger")
      latch.trigger()
    }
  }

  test("TimeoutLatch.await is bounded by its timeout when nobody triggers") {
    val latch = new TimeoutLatch
    val start = System.nanoTime()
    latch.await(50)
    assert(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(45))
  }

  test("QueueLimiter passes straight through below the limit, counting no cycle") {
    val cycles = new AtomicLong
    val limiter =
      new QueueLimiter(
        QueueLimiter.full(10, 1000, () => 9L, () => 999L),
        new TimeoutLatch,
        () => cycles.incrementAndGet()
      )
    assert(limiter.await(() => (), _ => fail("no warning expected")) == 0L)
    assert(cycles.get == 0)
  }

  test("QueueLimiter blocks at the limit and counts a cycle per wait step") {
    val outstanding = new AtomicLong(5)
    val cycles = new AtomicLong
    var now = 0L
    val latch = new TimeoutLatch
    val limiter = new QueueLimiter(
      () => outstanding.get >= 5,
      latch,
      () => {
        cycles.incrementAndGet()
        now += 300L * 1000000L // each step "takes" 300 ms on the injected clock
        if (cycles.get == 4) outstanding.set(4)
      },
      nanoClock = () => now,
      stepMs = 1
    )
    var warnedAt = -1L
    limiter.await(() => (), ms => warnedAt = ms)
    assert(cycles.get == 4)
    assert(warnedAt >= 1000L, "a wait over 1 s warns")
  }

  test("full: either bound blocks") {
    assert(!QueueLimiter.full(10, 100, () => 9L, () => 99L)())
    assert(QueueLimiter.full(10, 100, () => 10L, () => 0L)())
    assert(QueueLimiter.full(10, 100, () => 0L, () => 100L)())
  }

  test("QueueLimiter rethrows the writer's async error instead of waiting on") {
    val limiter = new QueueLimiter(() => true, new TimeoutLatch, () => (), stepMs = 1)
    val e = intercept[IllegalStateException](limiter.await(() => throw new IllegalStateException("boom"), _ => ()))
    assert(e.getMessage == "boom")
  }

  test("writer blocks at max_outstanding_bytes and unblocks as records complete") {
    val fakes = new FakePool
    val writer = TestWriters.writer(fakes, Map("queue_limit" -> "1000", "max_outstanding_bytes" -> "10"))
    writer.open(0, 0)
    val producer = fakes.last
    writer.process(TestWriters.row("k", "123456")) // 6 bytes: under the bound
    writer.process(TestWriters.row("k", "12345")) // 11 bytes outstanding now: at/over the bound
    val m = fakes.pool.live.head.metrics
    assert(m.outstandingBytes.get == 11)
    val third = new Thread(() => writer.process(TestWriters.row("k", "x")))
    third.start()
    eventually(10000)(m.backpressureCycles.getCount > 0)
    assert(third.isAlive && producer.sent.size == 2, "blocked by bytes, not by the record count")
    producer.succeed(1) // 5 bytes left: under the bound
    third.join(10000)
    assert(!third.isAlive && producer.sent.size == 3)
    producer.succeed(2)
    writer.close(null)
    assert(m.outstandingBytes.get == 0)
  }

  // FLINK-9374's testBackpressure: with queue_limit=1, the first record goes straight out, the
  // second blocks until the first completes, the third until the second completes.
  test("writer blocks at queue_limit and unblocks as callbacks complete records") {
    val fakes = new FakePool
    val writer = TestWriters.writer(fakes, Map("queue_limit" -> "1"))
    writer.open(0, 0)
    val producer = fakes.last
    writer.process(TestWriters.row("k", "msg-1"))
    assert(producer.outstandingRecords == 1)

    val second = new Thread(() => writer.process(TestWriters.row("k", "msg-2")))
    second.start()
    eventually(10000)(fakes.pool.live.head.metrics.backpressureCycles.getCount > 0)
    assert(second.isAlive, "second record must wait while 1 record is outstanding")
    assert(producer.sent.size == 1)

    producer.succeed(1)
    second.join(10000)
    assert(!second.isAlive, "completing the first record releases the second")
    assert(producer.sent.size == 2)

    val third = new Thread(() => writer.process(TestWriters.row("k", "msg-3")))
    third.start()
    eventually(10000)(third.getState == Thread.State.TIMED_WAITING)
    assert(producer.sent.size == 2)
    producer.succeed(1)
    third.join(10000)
    assert(!third.isAlive)
    producer.succeed(1)
    writer.close(null)
  }
}
