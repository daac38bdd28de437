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
      Thread.`yield`()
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
        QueueLimiter.reserve(10, 1000, new AtomicLong(9), new AtomicLong(990)),
        new TimeoutLatch,
        () => cycles.incrementAndGet()
      )
    assert(limiter.await(10, () => (), _ => fail("no warning expected")) == 0L)
    assert(cycles.get == 0)
  }

  test("QueueLimiter blocks at the limit and counts a cycle per wait step") {
    val outstanding = new AtomicLong(5)
    val cycles = new AtomicLong
    var now = 0L
    val latch = new TimeoutLatch
    val limiter = new QueueLimiter(
      QueueLimiter.reserve(5, Long.MaxValue, outstanding, new AtomicLong),
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
    limiter.await(1, () => (), ms => warnedAt = ms)
    assert(cycles.get == 4)
    assert(outstanding.get == 5, "the record that got through is counted")
    assert(warnedAt >= 1000L, "a wait over 1 s warns")
  }

  test("reserve: either bound blocks, nothing is reserved when it does, an oversized record goes alone") {
    val records, bytes = new AtomicLong
    val reserve = QueueLimiter.reserve(10, 100, records, bytes)
    records.set(9); bytes.set(90)
    assert(reserve(10) && records.get == 10 && bytes.get == 100, "exactly at both bounds is allowed")
    records.set(9); bytes.set(91)
    assert(!reserve(10) && records.get == 9 && bytes.get == 91, "bytes would pass the bound: nothing reserved")
    records.set(10); bytes.set(0)
    assert(!reserve(1) && records.get == 10 && bytes.get == 0)
    records.set(0); bytes.set(0)
    assert(reserve(1000) && bytes.get == 1000, "larger than the bound, nothing outstanding: goes alone")
    assert(!reserve(1), "and then nothing else goes until it completes")
  }

  test("reserve never lets racing threads past either bound together") {
    val records, bytes, peakRecords, peakBytes = new AtomicLong
    val reserve = QueueLimiter.reserve(7, 700, records, bytes)
    val threads = (1 to 8).map { t =>
      new Thread(() => {
        val n = 50 + t * 10 // 60..130 bytes: sometimes the record bound binds, sometimes the byte bound
        var done = 0
        while (done < 20000) {
          if (reserve(n)) {
            peakRecords.accumulateAndGet(records.get, (a: Long, b: Long) => math.max(a, b))
            peakBytes.accumulateAndGet(bytes.get, (a: Long, b: Long) => math.max(a, b))
            records.decrementAndGet()
            bytes.addAndGet(-n.toLong)
            done += 1
          } else Thread.`yield`()
        }
      })
    }
    threads.foreach(_.start())
    threads.foreach(_.join(60000))
    assert(peakRecords.get <= 7 && peakBytes.get <= 700, s"peaks ${peakRecords.get} records, ${peakBytes.get} bytes")
    assert(records.get == 0 && bytes.get == 0)
  }

  test("QueueLimiter rethrows the writer's async error instead of waiting on") {
    val limiter = new QueueLimiter(_ => false, new TimeoutLatch, () => (), stepMs = 1)
    val e = intercept[IllegalStateException](limiter.await(1, () => throw new IllegalStateException("boom"), _ => ()))
    assert(e.getMessage == "boom")
  }

  test("writer blocks at max_outstanding_bytes and unblocks as records complete") {
    val fakes = new FakePool
    val writer = TestWriters.writer(fakes, Map("queue_limit" -> "1000", "max_outstanding_bytes" -> "10"))
    writer.open(0, 0)
    val producer = fakes.last
    writer.process(TestWriters.row("k", "123456")) // 6 bytes
    writer.process(TestWriters.row("k", "1234")) // 10 bytes outstanding now: exactly the bound
    val m = fakes.pool.live.head.metrics
    val b = fakes.pool.live.head.bound
    assert(b.bytes.get == 10 && b.records.get == 2)
    val third = new Thread(() => writer.process(TestWriters.row("k", "x")))
    third.start()
    eventually(10000)(m.backpressureCycles.getCount > 0)
    assert(third.isAlive && producer.sent.size == 2, "blocked by bytes, not by the record count")
    assert(b.bytes.get == 10, "a blocked record reserves nothing")
    producer.succeed(1) // 4 bytes left: room for 1 more
    third.join(10000)
    assert(!third.isAlive && producer.sent.size == 3 && b.bytes.get == 5)
    producer.succeed(2)
    writer.close(null)
    assert(b.bytes.get == 0 && b.records.get == 0)
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

  test("a blocked writer resumes once 1/32 of the bound is free (at least one record or byte)") {
    assert(QueueLimiter.resumeAt(1) == 0 && QueueLimiter.resumeAt(31) == 30 && QueueLimiter.resumeAt(64) == 62)
    assert(QueueLimiter.resumeAt(10000) == 9688 && QueueLimiter.resumeAt(64L * 1024 * 1024) == 62L * 1024 * 1024)
  }

  // Under backpressure every completion used to wake the blocked task for one record's room: a context switch per
  // record. Now one completion past the limit wakes nobody; the second (1/32 of 64) does.
  test("completions wake a writer blocked at queue_limit once a batch of room is free, not for each record") {
    val fakes = new FakePool
    val writer = TestWriters.writer(fakes, Map("queue_limit" -> "64"))
    writer.open(0, 0)
    val producer = fakes.last
    (1 to 64).foreach(i => writer.process(TestWriters.row("k", s"r$i")))
    val shared = fakes.pool.live.head
    val blocked = new Thread(() => (65 to 66).foreach(i => writer.process(TestWriters.row("k", s"r$i"))))
    blocked.start()
    eventually(10000)(shared.metrics.backpressureCycles.getCount > 0 && blocked.getState == Thread.State.TIMED_WAITING)
    producer.succeed(1) // 63 in flight: above the resume mark (62); the bound's test below: nobody is woken
    producer.succeed(1) // 62: the mark; the writer is woken (or finds the room at its next 100 ms step)
    blocked.join(10000)
    assert(!blocked.isAlive && producer.sent.size == 66 && shared.bound.records.get == 64)
    producer.succeed(64)
    writer.close(null)
    assert(shared.bound.records.get == 0)
  }

  test("a release wakes the writers only once the bound is back at its resume mark, not for each record") {
    val triggers = new java.util.concurrent.atomic.AtomicInteger
    val latch = new TimeoutLatch { override def trigger(): Unit = { triggers.incrementAndGet(); super.trigger() } }
    val bound = new RecordBound(64, Long.MaxValue, latch)
    (1 to 64).foreach(_ => assert(bound.tryReserve(10)))
    bound.release(1, 10L) // 63 held: above the resume mark (62)
    assert(triggers.get == 0, "one record's room must not wake the blocked writer")
    bound.release(1, 10L) // 62: the mark
    assert(triggers.get == 1)
  }
}
