package io.github.sparkkinesis.aggregation

import scala.collection.mutable.ArrayBuffer

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.FakeClock

class SchedulerSuite extends AnyFunSuite {

  test("work runs once due on the scheduler's clock, earliest first, in the order asked for when due at once") {
    val clock = new FakeClock
    val s = new Scheduler(clock, "test")
    val ran = ArrayBuffer.empty[String]
    s.after(20000000L)(() => ran += "20 ms")
    s.after(10000000L)(() => ran += "10 ms, first")
    s.after(10000000L)(() => ran += "10 ms, second")
    s.after(0L)(() => throw new IllegalStateException("a failing ticket"))
    s.runDue()
    assert(ran.isEmpty, "nothing was due but the failing ticket, which did not stop the scheduler")
    clock.advanceMs(9)
    s.runDue()
    assert(ran.isEmpty)
    clock.advanceMs(11)
    s.runDue()
    assert(ran == Seq("10 ms, first", "10 ms, second", "20 ms"))
  }

  test("the linger thread runs work as it falls due and stops on close") {
    val s =
      Scheduler.onThread(Clock.system, (name, body) => { val t = new Thread(body, name); t.setDaemon(true); t }, "t")
    val done = new java.util.concurrent.CountDownLatch(1)
    s.after(1000000L)(() => done.countDown())
    assert(done.await(10, java.util.concurrent.TimeUnit.SECONDS), "work due in 1 ms did not run within 10 s")
    s.close()
  }
}
