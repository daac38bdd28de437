package io.github.sparkkinesis.aggregation

import scala.collection.mutable.ArrayBuffer

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.FakeClock

/** E executors' writers on one shard, on a fake clock: each a pacer of the real [[ShardQuota]] and [[RateShare]] with a
  * backlog of full aggregates, against one shard's quota as Kinesis documents it (and the fault front models it), with
  * a latency on the way there and back. No real time passes: an hour of it runs in about a second.
  */
class RateShareSimulationSuite extends AnyFunSuite {
  import RateShareSimulationSuite._

  private def report(label: String, w: Window): Unit =
    info(
      f"$label: throttled ${w.throttledShare * 100}%.2f %% of ${w.requests} requests, link ${w.linkUse * 100}%.1f %%, " +
        f"writers ${w.fairness._1}%.2f–${w.fairness._2}%.2f × fair"
    )

  test("one writer alone fills the shard and is never throttled") {
    for (size <- Seq(AggregateBytes, 1024)) {
      val sim = new Simulation(size, lawOn = true, seed = 1)
      sim.join(1)
      sim.runSeconds(60)
      val w = sim.window(240)
      report(s"E=1, $size B", w)
      assert(w.throttled == 0, s"$size B: a writer alone was throttled ${w.throttled} times")
      assert(w.linkUse >= 0.99, s"$size B: a writer alone used ${w.linkUse} of the shard")
    }
  }

  for (e <- Seq(8, 32, 128, 256)) test(s"$e writers settle near the quota, few throttles, each near a fair share") {
    val sim = new Simulation(AggregateBytes, lawOn = true, seed = e.toLong)
    sim.join(e)
    sim.runSeconds(7200) // from every writer at the start share
    val w = sim.window(3600)
    report(s"E=$e", w)
    w.assertSettled(s"E=$e")
  }

  // The bench's scaled shards: a writer's aggregate is a quarter second of its RateLimit, five times a real shard's
  // 51,200 B, so a writer hears from Kinesis five times less often and each collision weighs five times more.
  test("4 writers starting together with quarter-second aggregates (the bench's scaled shards) settle") {
    val sim = new Simulation(QuotaBytes.toInt / 4, lawOn = true, seed = 4)
    sim.join(4)
    val start = sim.window(8)
    val middle = sim.window(18)
    val end = sim.window(4)
    val whole = start + middle + end
    report("E=4, quarter-second aggregates, 30 s from the start", whole)
    report("  its middle 18 s", middle)
    assert(whole.throttledShare <= 0.25, s"${whole.throttled} of ${whole.requests} requests throttled")
    assert(middle.linkUse >= 0.97, s"the writers used ${middle.linkUse} of the shard")
  }

  test("after a writer joins and after one leaves, the writers settle again") {
    val sim = new Simulation(AggregateBytes, lawOn = true, seed = 7)
    sim.join(16)
    sim.runSeconds(3600)
    sim.join(1)
    sim.runSeconds(7200) // as long as the writers took to settle at first
    val joined = sim.window(3600)
    report("E=16, then a 17th joins", joined)
    joined.assertSettled("after a join")
    sim.leave()
    sim.runSeconds(7200)
    val left = sim.window(3600)
    report("E=17, then one leaves", left)
    left.assertSettled("after a leave")
  }

  test("without the rate share (every writer at the whole RateLimit), two writers or more are throttled") {
    for (e <- Seq(2, 8)) {
      val sim = new Simulation(AggregateBytes, lawOn = false, seed = e.toLong)
      sim.join(e)
      sim.runSeconds(60)
      val w = sim.window(240)
      report(s"E=$e, no rate share", w)
      assert(w.throttledShare > 0.25, s"E=$e without the rate share: ${w.throttledShare} of requests throttled")
    }
  }
}

private object RateShareSimulationSuite {

  /** The KPL's default `AggregationMaxSize`: writers with a backlog send full aggregates, the fewest requests a second,
    * so each throttle weighs most.
    */
  val AggregateBytes = 51200
  val QuotaBytes: Double = 1024.0 * 1024.0
  val QuotaRecords = 1000.0
  val settings: AggregationSettings = AggregationSettings(51200, Long.MaxValue, 100, 60000, rateLimit = 100)

  /** One shard's quota as Kinesis documents it: 1 MiB and 1,000 records a second, in a bucket holding a second of them,
    * refilled continuously and full at the start (testkit/spark_kinesis_testkit/faults.py's `_Bucket`); `available`:
    * the part of it left to the writer when others take the rest at a steady rate.
    */
  final class KinesisShard(clock: FakeClock, available: Double = 1.0) {
    private val QuotaBytes = RateShareSimulationSuite.QuotaBytes * available
    private val QuotaRecords = RateShareSimulationSuite.QuotaRecords * available
    private var bytes = QuotaBytes
    private var records = QuotaRecords
    private var stamp = clock.nanoTime()

    def admit(n: Int): Boolean = {
      val now = clock.nanoTime()
      val elapsed = (now - stamp) / 1e9
      stamp = now
      bytes = math.min(QuotaBytes, bytes + elapsed * QuotaBytes)
      records = math.min(QuotaRecords, records + elapsed * QuotaRecords)
      if (records < 1.0 || bytes < n) false
      else { bytes -= n; records -= 1.0; true }
    }
  }

  /** `admitted`: each writer's bytes Kinesis took. */
  final case class Window(requests: Long, throttled: Long, seconds: Double, size: Int, admitted: Seq[Long]) {
    def +(o: Window): Window =
      Window(
        requests + o.requests,
        throttled + o.throttled,
        seconds + o.seconds,
        size,
        admitted.zip(o.admitted).map { case (a, b) =>
          a + b
        }
      )

    def throttledShare: Double = if (requests == 0) 0.0 else throttled.toDouble / requests

    /** The share of the shard's quota used: of its bytes, or of its records when those bind (small aggregates). */
    def linkUse: Double = admitted.sum / (math.min(QuotaBytes, QuotaRecords * size) * seconds)

    /** The least and the most a writer sent, over the fair share. */
    def fairness: (Double, Double) = {
      val fair = admitted.sum.toDouble / admitted.size
      (admitted.min / fair, admitted.max / fair)
    }

    def assertSettled(label: String): Unit = {
      assert(throttledShare <= 0.01, s"$label: ${throttledShare * 100} % of requests throttled")
      assert(linkUse >= 0.95, s"$label: the writers used ${linkUse * 100} % of the shard")
      val (lo, hi) = fairness
      assert(lo >= 0.5 && hi <= 2.0, s"$label: a writer sent $lo to $hi times its fair share")
    }
  }

  /** Writers with a backlog of `size`-byte aggregates, each sent when its [[ShardQuota]] allows, reaching the shard
    * 10–60 ms later and answered as late again; a throttled one waits again first in line (as [[Pacing]] does), an
    * accepted one lets the share grow. `lawOn = false`: the share stays whole, as before the writer had one.
    */
  final class Simulation(size: Int, lawOn: Boolean, seed: Long) {
    private val clock = new FakeClock
    private val scheduler = new Scheduler(clock, "simulation")
    private val shard = new KinesisShard(clock)
    private val random = new scala.util.Random(seed)
    private val writers = ArrayBuffer.empty[Writer]
    private var requests = 0L
    private var throttled = 0L

    private final class Writer {
      val quota =
        new ShardQuota(
          settings,
          clock,
          new RateShare(clock, cut = if (lawOn) RateShare.Cut else 0.0)
        )
      var active = true
      var admitted = 0L

      def pace(): Unit = if (active) {
        val wait = quota.take(size)
        if (wait == 0L) {
          val paced = clock.nanoTime()
          scheduler.after(latency())(() => arrive(paced))
          scheduler.after(0L)(() => pace())
        } else scheduler.after(wait)(() => pace())
      }

      private def arrive(paced: Long): Unit = {
        requests += 1
        val ok = shard.admit(size)
        if (ok) admitted += size else throttled += 1
        scheduler.after(latency())(() => if (active) { if (ok) quota.accepted() else quota.spent(paced) })
      }
    }

    private def latency(): Long = (10 + random.nextInt(51)) * 1000000L

    def join(n: Int): Unit = (1 to n).foreach { _ =>
      val w = new Writer
      writers += w
      w.pace()
    }

    /** The newest writer stops (its executor went away). */
    def leave(): Unit = writers.remove(writers.length - 1).active = false

    def runSeconds(s: Int): Unit = (1L to s * 1000L).foreach { _ =>
      clock.advanceMs(1)
      scheduler.runDue()
    }

    /** Runs `s` seconds and returns what happened in them. */
    def window(s: Int): Window = {
      val (r0, t0) = (requests, throttled)
      val a0 = writers.map(_.admitted).toList
      runSeconds(s)
      Window(
        requests - r0,
        throttled - t0,
        s.toDouble,
        size,
        writers.map(_.admitted).toList.zip(a0).map(x => x._1 - x._2)
      )
    }
  }
}
