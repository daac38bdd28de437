package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite

class PoolSuite extends AnyFunSuite {
  private val cfgA = TestWriters.options(Map.empty).producer
  private val cfgB = TestWriters.options(Map("kpl.RecordTtl" -> "60000")).producer

  test("one producer per distinct config, reference-counted") {
    val f = new FakePool
    val a1 = f.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26)
    val a2 = f.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26)
    val b = f.pool.acquire(cfgB, "s", 1000, 10000, 1L << 26)
    assert(a1 eq a2)
    assert(a1 ne b)
    assert(a1.refs == 2 && f.created.size == 2)
  }

  test("idle producers close after their timeout, not before, and not while in use") {
    val f = new FakePool
    val p = f.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26)
    f.nowMs = 10
    f.pool.release(p)
    f.nowMs = 1009
    f.pool.evictIdle()
    assert(!f.last.destroyed)
    f.nowMs = 1010
    f.pool.evictIdle()
    assert(f.last.destroyed)
    assert(f.pool.live.isEmpty)
    val again = f.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26)
    assert(again ne p, "a closed producer is never handed out again")
    f.nowMs = 1000000L
    f.pool.evictIdle()
    assert(!f.last.destroyed, "in use: never evicted")
  }

  test("a broken producer is never handed out; it closes when its last user leaves") {
    val f = new FakePool
    val p = f.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26)
    val dead = f.last
    p.markBroken()
    val fresh = f.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26)
    assert(fresh ne p)
    assert(!dead.destroyed, "still referenced by its task")
    f.pool.release(p)
    assert(dead.destroyed)
    assert(f.pool.live == Seq(fresh))
  }

  test("each stream gets its own producer and metrics source; same-named sources get a suffix") {
    val f = new FakePool
    val a = f.pool.acquire(cfgA, "orders", 1000, 10000, 1L << 26)
    val b = f.pool.acquire(cfgA, "clicks", 1000, 10000, 1L << 26)
    val a2 = f.pool.acquire(cfgB, "orders", 1000, 10000, 1L << 26)
    assert(a ne b)
    assert(
      Seq(a, b, a2)
        .map(_.sourceName) == Seq("kinesisProducer.orders", "kinesisProducer.clicks", "kinesisProducer.orders.2")
    )
  }

  test("closeAll destroys every producer") {
    val f = new FakePool
    f.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26)
    f.pool.acquire(cfgB, "s", 1000, 10000, 1L << 26)
    f.pool.closeAll()
    assert(f.created.toArray.forall(_.asInstanceOf[FakeProducer].destroyed))
  }

  test("closeAll destroys the producers side by side, not one after another") {
    val f = new FakePool
    f.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26)
    f.pool.acquire(cfgB, "s", 1000, 10000, 1L << 26)
    f.pool.acquire(cfgA, "t", 1000, 10000, 1L << 26)
    val fakes = f.created.toArray.map(_.asInstanceOf[FakeProducer])
    // Each destroy waits until all have begun, as each KPL's waits a second: one after another, the first gives up.
    val begun = new java.util.concurrent.CountDownLatch(fakes.length)
    val together = new java.util.concurrent.ConcurrentLinkedQueue[Boolean]()
    fakes.foreach(_.onDestroy = () => {
      begun.countDown()
      together.add(begun.await(10, java.util.concurrent.TimeUnit.SECONDS))
    })
    f.pool.closeAll()
    assert(fakes.forall(_.destroyed))
    assert(together.toArray.toSeq == Seq.fill(fakes.length)(true))
    assert(f.pool.live.isEmpty)
  }

  test("at exit: records in flight get their time to be confirmed, at most the bound; then every producer goes") {
    def exiting(f: FakePool, settleMs: Long): (Thread, java.util.concurrent.atomic.AtomicBoolean) = {
      val settled = new java.util.concurrent.atomic.AtomicBoolean()
      val t = new Thread(() => settled.set(f.pool.closeAtExit(settleMs)))
      t.start()
      val deadline = System.nanoTime() + 10000000000L
      while (t.getState != Thread.State.TIMED_WAITING) { assert(System.nanoTime() < deadline); Thread.`yield`() }
      (t, settled)
    }
    val f = new FakePool
    val p = f.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26)
    p.bound.records.set(1) // a record in flight
    val (t, settled) = exiting(f, 60000)
    assert(!f.last.destroyed, "destroyed while a record was in flight")
    p.bound.release(1, 0) // confirmed
    t.join(10000)
    assert(settled.get && f.last.destroyed && f.pool.live.isEmpty)

    val g = new FakePool
    g.pool.acquire(cfgA, "s", 1000, 10000, 1L << 26).bound.records.set(1) // never confirmed
    val (u, settled2) = exiting(g, 5000)
    g.nowMs = 5001
    u.join(10000)
    assert(!u.isAlive && !settled2.get && g.last.destroyed)
  }

  test("pool keys never print secrets") {
    val cfg = TestWriters
      .options(
        Map(
          "aws_access_key_id" -> "AKIAXXXXSECRET",
          "aws_secret_access_key" -> "s3cr3t",
          "aws_session_token" -> "tok3n",
          "role_arn" -> "arn:aws:iam::1:role/r",
          "role_external_id" -> "pr0xy"
        )
      )
      .producer
    val s = cfg.toString
    Seq("AKIAXXXXSECRET", "s3cr3t", "tok3n", "pr0xy").foreach(secret => assert(!s.contains(secret), s))
  }
}
