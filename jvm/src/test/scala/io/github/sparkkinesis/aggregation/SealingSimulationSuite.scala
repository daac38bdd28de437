package io.github.sparkkinesis.aggregation

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets

import scala.collection.mutable.ArrayBuffer

import io.github.sparkkinesis.shaded.guava.util.concurrent.{ListenableFuture, SettableFuture}
import io.github.sparkkinesis.shaded.kpl.{Attempt, UserRecordFailedException, UserRecordResult}
import io.github.sparkkinesis.shaded.kpl.protobuf.Messages
import org.scalatest.funsuite.AnyFunSuite
import org.slf4j.Logger

import io.github.sparkkinesis.{FakeClock, FakeMetadata}
import io.github.sparkkinesis.compat.CollectionConverters._

/** The tests of [[SealRule]], the one rule of when a shard's buffer goes (full, idle after a gather, linger): the real
  * [[WriterAggregator]] on a fake clock, fed at a steady rate, sending to shards with Kinesis' quota
  * (RateShareSimulationSuite's `KinesisShard`) a round trip away. Each scenario reports the records' latency to
  * confirmation, the user records per Kinesis record and the throttles; no real time passes.
  *
  * What it does not model: the KPL daemon is a constant round trip here. The real one answers 5 to 15 ms after a put,
  * in steps of its two polling loops (docs/design.md, "Send when the shard is idle"), collects for 1 ms into a
  * PutRecords of many shards, and retries on its own; those costs show in the bench (`make bench`, realtime part), not
  * here.
  */
class SealingSimulationSuite extends AnyFunSuite {
  import SealingSimulationSuite._

  private def report(label: String, r: Result): Unit =
    info(
      f"$label: p50 ${r.p(50)}%.0f ms, p99 ${r.p(99)}%.0f ms, max ${r.p(100)}%.0f ms; ${r.perAggregate}%.1f records per " +
        f"Kinesis record (mean ${r.meanAggregateBytes}%.0f B), ${r.kinesisRecordsPerSecond}%.0f Kinesis records/s; " +
        s"throttled ${r.throttled} of ${r.requests}"
    )

  test("a trickle: each record goes after the gather and is confirmed one round trip later, not after a linger") {
    val r = new Simulation(shards = 1, rttMs = 4).run(ratePerSecond = 20, seconds = 10)
    report("20 records/s", r)
    assert(r.confirmed == 200)
    assert(r.p(100) <= GatherMs + 4, s"a lone record waited ${r.p(100)} ms: a 1 ms gather, a 4 ms round trip")
    assert(r.perAggregate == 1.0)
  }

  test("a steady rate below the quota: records gather while aggregates are in flight, each waits one trip at most") {
    for ((rate, shards) <- Seq((1000, 4), (10000, 4), (2000, 1))) {
      val r = new Simulation(shards, rttMs = 4).run(rate, seconds = 10)
      report(s"$rate records/s on $shards shards", r)
      assert(r.confirmed == rate * 10)
      assert(r.throttled == 0)
      assert(r.p(100) <= GatherMs + 2 * 4, s"$rate/s: a record waited ${r.p(100)} ms, more than two round trips")
      // At most IdleInFlight aggregates per shard and round trip: what comes meanwhile gathers.
      val most = shards * SealRule.IdleInFlight * 1000.0 / 4
      assert(r.kinesisRecordsPerSecond <= most, s"$rate/s: ${r.kinesisRecordsPerSecond} Kinesis records a second")
    }
  }

  test("bursts (a real-time query's polls): each goes as one aggregate a shard, none waits for the one before") {
    // 12,000 records/s as 120 every 10 ms over 4 shards, and a 10 ms round trip, as the KPL daemon's on loopback: a
    // burst comes while the one before is in flight. About 0.3 MB/s a shard: not busy.
    val r = new Simulation(shards = 4, rttMs = 10).run(ratePerSecond = 12000, seconds = 10, burstEveryMs = 10)
    report("120 records every 10 ms on 4 shards, a 10 ms round trip", r)
    assert(r.confirmed == 120000 && r.throttled == 0 && r.inOrder)
    assert(r.p(100) <= GatherMs + 10, s"a record waited ${r.p(100)} ms: more than the gather and one round trip")
    assert(r.kinesisRecordsPerSecond <= 4 * 100 + 1, s"${r.kinesisRecordsPerSecond} Kinesis records a second")
  }

  test("a shard that fills an aggregate within its linger seals full ones, not one per round trip") {
    // 8,000 records/s of 100 B on one shard: about 0.85 MB/s, under its quota; a full aggregate every 60 ms.
    val r = new Simulation(shards = 1, rttMs = 4).run(ratePerSecond = 8000, seconds = 10)
    report("8,000 records/s on 1 shard", r)
    assert(r.confirmed == 80000 && r.throttled == 0 && r.inOrder)
    val full = r.meanAggregateBytes(from = 0, until = 10)
    assert(full >= 0.95 * settings.maxSize, s"aggregates of $full B at a rate that fills them within the linger")
    // The shard is idle until IdleInFlight gathers are in flight (a millisecond's records each); by the first answer, a
    // round trip's records show the pace.
    val sizes = r.sends.map(_._2)
    val (idle, busy) = sizes.splitAt(SealRule.IdleInFlight)
    assert(idle.forall(_ < 1000) && busy.dropRight(1).forall(_ >= 0.95 * settings.maxSize), sizes.take(4))
    assert(r.p(100) <= settings.lingerMs + 2 * 4, s"a record waited ${r.p(100)} ms")
  }

  test("a burst above the quota: full aggregates at the quota, in order, none throttled, the backlog drains") {
    // 3 MB/s of 100 B records for 5 s on one shard (1 MiB/s): about 10 s of the shard's bytes.
    val sim = new Simulation(shards = 1, rttMs = 4)
    val r = sim.run(ratePerSecond = 30000, seconds = 5, drainSeconds = 20)
    report("30,000 records/s on 1 shard", r)
    assert(r.confirmed == 150000 && r.throttled == 0 && r.inOrder)
    // While the quota has room (its first half second in hand) each aggregate goes after one round trip; then they are
    // full.
    val held = r.meanAggregateBytes(from = 1, until = 14)
    assert(held >= 0.95 * settings.maxSize, s"aggregates of $held B under a backlog")
    assert(r.linkUse(from = 1, until = 12) >= 0.97, s"the shard's bytes used: ${r.linkUse(1, 12)}")
  }

  test("a throttled shard (other producers take three quarters of it): few throttles, aggregates stay full") {
    val sim = new Simulation(shards = 1, rttMs = 4, available = 0.25)
    val r = sim.run(ratePerSecond = 5000, seconds = 30, drainSeconds = 60)
    report("5,000 records/s, a quarter of the shard free", r)
    assert(r.confirmed == 150000 && r.inOrder)
    assert(r.throttled.toDouble / r.requests <= 0.05, s"${r.throttled} of ${r.requests} requests throttled")
    // Until Kinesis first throttles (about a second: its bucket), aggregates go at each round trip; then full.
    val held = r.meanAggregateBytes(from = 2, until = 60)
    assert(held >= 0.95 * settings.maxSize, s"aggregates of $held B when throttled")
    assert(r.linkUse(from = 10, until = 30) >= 0.85 * 0.25, s"the shard's bytes used: ${r.linkUse(10, 30)}")
  }

  test("gather_ms: a trickle trades latency for fuller Kinesis records, the gather the bound on its wait") {
    // 250 records/s a shard, a real-time query's trickle: at the default each record goes nearly alone.
    val at = Seq(1L, 20L, 50L).map { g =>
      val sim = new Simulation(shards = 4, rttMs = 10, settings = settings.copy(gatherMs = g))
      val r = sim.run(ratePerSecond = 1000, seconds = 10)
      report(s"1,000 records/s on 4 shards, gather_ms=$g", r)
      assert(r.confirmed == 10000 && r.throttled == 0 && r.inOrder)
      assert(
        r.p(100) <= g + 2 * 10,
        s"gather_ms=$g: a record waited ${r.p(100)} ms, more than its gather and two trips"
      )
      g -> r
    }.toMap
    // Fuller Kinesis records, about the gather's records: fewer PUT payload units at a trickle.
    assert(at(20L).perAggregate >= 3 * at(1L).perAggregate, (at(1L).perAggregate, at(20L).perAggregate))
    assert(at(50L).perAggregate >= 2 * at(20L).perAggregate, (at(20L).perAggregate, at(50L).perAggregate))
  }

  test("ordered: with failures the daemon retries, Kinesis stores no key's record after a later one; the rate holds") {
    // 10,000 records/s over 4 shards (about a quarter of their bytes), a 10 ms round trip, 5 % of the Kinesis records
    // failed once and retried by the daemon a round trip later, while the shard's next aggregates go on.
    def run(ordered: Boolean): Result = {
      val sim = new Simulation(4, rttMs = 10, settings = settings.copy(ordered = ordered), failing = 0.05)
      val r = sim.run(ratePerSecond = 10000, seconds = 10)
      report(s"10,000 records/s, 5 % retried, ordered=$ordered", r)
      info(s"ordered=$ordered: ${r.inversions} records stored after a later record of their key")
      r
    }
    val unordered = run(ordered = false)
    val ordered = run(ordered = true)
    assert(unordered.confirmed == 100000 && ordered.confirmed == 100000)
    assert(unordered.inversions > 0, "the scenario: retries reorder a shard's aggregates when several are in flight")
    assert(ordered.inversions == 0)
    // One aggregate in flight a shard: what comes meanwhile waits one round trip (or a retry's two) at most.
    assert(ordered.p(99) <= GatherMs + 3 * 10, s"ordered: p99 ${ordered.p(99)} ms")
  }

  test("ordered behind the quota: one aggregate in flight a shard still fills the link") {
    val sim = new Simulation(shards = 1, rttMs = 10, settings = settings.copy(ordered = true))
    val r = sim.run(ratePerSecond = 30000, seconds = 5, drainSeconds = 20)
    report("30,000 records/s on 1 shard, ordered", r)
    assert(r.confirmed == 150000 && r.throttled == 0 && r.inversions == 0)
    assert(r.linkUse(from = 1, until = 12) >= 0.97, s"the shard's bytes used: ${r.linkUse(1, 12)}")
  }

  test("RecordMaxBufferedTime still bounds a record's wait when no answer comes") {
    val r = new Simulation(shards = 1, rttMs = 60000).run(ratePerSecond = 100, seconds = 1, drainSeconds = 0)
    val waits = r.sendWaits
    info(f"a round trip of 60 s: records waited at most ${waits.max}%.0f ms to be sent")
    assert(waits.head == GatherMs, "the first record of an idle shard goes after the gather")
    assert(waits.max <= settings.lingerMs, s"a record waited ${waits.max} ms, more than its linger")
  }
}

private object SealingSimulationSuite {
  import RateShareSimulationSuite.KinesisShard

  /** The KPL's defaults: `AggregationMaxSize` 51,200, `RecordMaxBufferedTime` 100 ms, `RateLimit` 150 (its default). */
  val settings: AggregationSettings =
    AggregationSettings(51200, 4294967295L, lingerMs = 100, recheckMs = 3600000, rateLimit = 100)
  val RecordBytes = 100
  val GatherMs: Double = SealRule.DefaultGatherMs.toDouble

  final class Result(
      latencies: ArrayBuffer[Double],
      val sendWaits: ArrayBuffer[Double],
      val requests: Long,
      val throttled: Long,
      aggregates: Long,
      aggregateBytes: Long,
      val sends: ArrayBuffer[(Long, Int)],
      val admittedPerSecond: Array[Long],
      seconds: Double,
      val inOrder: Boolean,
      quotaBytes: Double,
      val inversions: Int = 0
  ) {
    def confirmed: Int = latencies.length
    private lazy val sorted = latencies.sorted
    def p(q: Double): Double = sorted(math.min(sorted.length - 1, (q / 100 * sorted.length).toInt))
    def perAggregate: Double = confirmed.toDouble / aggregates
    def kinesisRecordsPerSecond: Double = aggregates / seconds
    def meanAggregateBytes: Double = aggregateBytes.toDouble / aggregates

    /** The mean size of the Kinesis records sent in seconds `[from, until)`. */
    def meanAggregateBytes(from: Int, until: Int): Double = {
      val in = sends.filter { case (ms, _) => ms >= from * 1000L && ms < until * 1000L }.map(_._2)
      in.sum.toDouble / in.length
    }

    /** The shard's bytes Kinesis took in seconds `[from, until)`, over its whole quota. */
    def linkUse(from: Int, until: Int): Double =
      admittedPerSecond.slice(from, until).sum / (quotaBytes * (until - from))
  }

  /** One writer's aggregation over `shards` shards a round trip of `rttMs` away (half of it to reach Kinesis), each
    * shard with Kinesis' quota of which `available` is free for this writer (the rest taken by others as it comes).
    * `failing` of the Kinesis records that reach it fail (`InternalFailure`) and the daemon sends them again a round
    * trip later, as the KPL retries them, answering only once one is stored; `inversions` counts the records Kinesis
    * stored after a later record of their key.
    */
  final class Simulation(
      shards: Int,
      rttMs: Long,
      available: Double = 1.0,
      settings: AggregationSettings = SealingSimulationSuite.settings,
      failing: Double = 0.0
  ) {
    private val random = new scala.util.Random(5)
    private val stored = scala.collection.mutable.Map.empty[String, Int] // each key's latest record Kinesis stored
    private var inversions = 0
    private val clock = new FakeClock
    private val scheduler = new Scheduler(clock, "sealing")
    private val layout = FakeMetadata.even(shards)
    private val kinesis = Array.fill(shards)(new KinesisShard(clock, available))
    private val start = clock.nanoTime()
    private val latencies = ArrayBuffer.empty[Double]
    private val sendWaits = ArrayBuffer.empty[Double]
    private val admitted = new Array[Long](3600)
    private var requests, throttled, aggregates, aggregateBytes = 0L
    private var inOrder = true
    private val lastSeen = scala.collection.mutable.Map.empty[String, Int]
    private val added = ArrayBuffer.empty[Long] // record n's add time
    private val sends = ArrayBuffer.empty[(Long, Int)] // each Kinesis record: when it was sent (ms) and its bytes

    private val owner = new RecordOwner {
      def succeeded(result: UserRecordResult, n: Int, bytes: Long): Unit = ()
      def failed(t: Throwable, n: Int, bytes: Long): Unit = throw new AssertionError("a record failed", t)
      def latency(startNanos: Long): Unit = latencies += (clock.nanoTime() - startNanos) / 1e6
      override def confirmed(entries: Array[Pending], from: Int, until: Int): Unit =
        (from until until).foreach { i =>
          val p = entries(i)
          val n = p.data.getInt(0)
          if (lastSeen.getOrElse(p.partitionKey, -1) > n) inOrder = false
          lastSeen(p.partitionKey) = n
        }
    }

    private val sender: Sender = (_: String, _: String, explicitHashKey: String, data: ByteBuffer) => {
      val f = SettableFuture.create[UserRecordResult]()
      val shard = layout.shards.indexOf(HashKey.ofDecimal(explicitHashKey))
      val bytes = data.remaining()
      aggregates += 1
      aggregateBytes += bytes
      sends += (((clock.nanoTime() - start) / 1000000L, bytes))
      val body = new Array[Byte](bytes - AggregateFormat.Magic.length - 16)
      data.duplicate().position(AggregateFormat.Magic.length).asInstanceOf[ByteBuffer].get(body)
      val message = Messages.AggregatedRecord.parseFrom(body)
      val carried = message.getRecordsList.asScala.map { r =>
        val n = r.getData.asReadOnlyByteBuffer().getInt(0)
        sendWaits += (clock.nanoTime() - added(n)) / 1e6
        (message.getPartitionKeyTable(r.getPartitionKeyIndex.toInt), n)
      }
      lazy val reach: () => Unit = () => {
        requests += 1
        val ok = kinesis(shard).admit(bytes)
        if (ok) admitted(((clock.nanoTime() - start) / 1000000000L).toInt) += bytes else throttled += 1
        if (ok && random.nextDouble() < failing) scheduler.after(rttMs * 1000000L)(reach) // the daemon retries
        else {
          if (ok) carried.foreach { case (key, n) =>
            if (stored.getOrElse(key, -1) > n) inversions += 1 else stored(key) = n
          }
          answer(ok)
        }
      }
      def answer(ok: Boolean): Unit =
        scheduler.after(rttMs * 500000L) { () =>
          if (ok)
            f.set(
              new UserRecordResult(
                List(new Attempt(0, 1, null, null, true)).asJava,
                "1",
                layout.shards.shards(shard).id,
                true
              )
            )
          else {
            val attempt = new Attempt(0, 1, "slow down", "ProvisionedThroughputExceededException", false)
            f.setException(
              new UserRecordFailedException(new UserRecordResult(List(attempt).asJava, null, null, false), null)
            )
          }
        }
      scheduler.after(rttMs * 500000L)(reach)
      f: ListenableFuture[UserRecordResult]
    }

    private val metrics = new AggregationMetrics {
      def aggregateSent(records: Int): Unit = ()
      def aggregatePaced(): Unit = ()
      def aggregateMisplaced(): Unit = throw new AssertionError("misplaced")
      def recordsResent(n: Int): Unit = ()
      def recordsRetried(n: Int): Unit = ()
      def shareLowered(): Unit = ()
    }

    private val layouts = new StreamLayouts(
      new FakeMetadata(layout),
      settings,
      clock,
      (r: Runnable) => r.run(),
      (_: Logger, _: String, _: String) => (),
      (old, next) => aggregator.replaced(old, next)
    )
    layouts.writers = 1
    private lazy val aggregator: WriterAggregator =
      new WriterAggregator(sender, layouts, settings, metrics, scheduler, (r: Runnable) => r.run())

    /** `ratePerSecond` records of 100 B (keys k0..k96) for `seconds`, spread evenly over each millisecond (or added
      * together every `burstEveryMs`), then up to `drainSeconds` for the rest to be confirmed.
      */
    def run(ratePerSecond: Int, seconds: Int, drainSeconds: Int = 5, burstEveryMs: Int = 1): Result = {
      var sent = 0
      var ms = 0
      while (ms < seconds * 1000) {
        val due = ((ms / burstEveryMs + 1).toLong * burstEveryMs * ratePerSecond / 1000).toInt
        while (sent < due) {
          aggregator.add(record(sent))
          sent += 1
        }
        clock.advanceMs(1)
        scheduler.runDue()
        ms += 1
      }
      var drained = 0
      while (latencies.length < sent && drained < drainSeconds * 1000) {
        clock.advanceMs(1)
        scheduler.runDue()
        drained += 1
      }
      new Result(
        latencies,
        sendWaits,
        requests,
        throttled,
        aggregates,
        aggregateBytes,
        sends,
        admitted,
        seconds.toDouble,
        inOrder,
        settings.bytesPerSecond,
        inversions
      )
    }

    private def record(n: Int): Pending = {
      val key = s"k${n % 97}"
      val data = ByteBuffer.allocate(RecordBytes).putInt(0, n)
      added += clock.nanoTime()
      new Pending(
        "s",
        key,
        null,
        data,
        owner,
        RecordBytes,
        clock.nanoTime(),
        HashKey.ofPartitionKey(key),
        key.getBytes(StandardCharsets.UTF_8)
      )
    }
  }
}
