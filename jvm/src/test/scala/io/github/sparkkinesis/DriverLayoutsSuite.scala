package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.aggregation.StreamLayout

class DriverLayoutsSuite extends AnyFunSuite {
  private val intervalMs = 60000L

  /** A stream read by a counting stand-in, on a clock the test moves. */
  private final class Fixture(extra: Map[String, String] = Map.empty, first: Option[StreamLayout] = None) {
    var nowNanos = 5L * 1000000000L
    var reads = 0
    var fail = false
    var throttles = 0
    var slept = Vector.empty[Long]
    var counted = 0
    val layouts = new DriverLayouts(
      TestWriters.options(Map("kpl.DescribeStreamSummaryIntervalMs" -> intervalMs.toString) ++ extra),
      first,
      _ => {
        reads += 1
        if (fail) throw new IllegalStateException("AccessDeniedException")
        if (throttles > 0) {
          throttles -= 1
          throw new aggregation.ThrottledRead("Rate exceeded (LimitExceededException)", null)
        }
        FakeMetadata.even(reads)
      },
      () => counted += 1,
      () => nowNanos,
      ms => { slept :+= ms; advanceMs(ms) },
      () => 0.0
    )
    def advanceMs(ms: Long): Unit = nowNanos += ms * 1000000L
  }

  test("the start check's layout ships first; the driver reads again at half the interval, not before") {
    val f = new Fixture(first = Some(FakeMetadata.even(4)))
    f.advanceMs(intervalMs / 2 - 1)
    val shipped = f.layouts.toShip()
    assert(f.reads == 0 && shipped.map(s => (s.stream, s.shards.size, s.ageMs)) == Seq(("s", 4, intervalMs / 2 - 1)))
    f.advanceMs(1)
    assert(f.layouts.toShip().map(s => (s.shards.size, s.ageMs)) == Seq((1, 0L)) && f.reads == 1)
    assert(f.counted == 2, "each write hands on the calls made (the driver's totals)")
  }

  test("foreach's serialization ships what the driver holds at once; a due read runs beside it, for the next batch") {
    val f = new Fixture(first = Some(FakeMetadata.even(4)))
    val entered = new java.util.concurrent.CountDownLatch(1)
    val release = new java.util.concurrent.CountDownLatch(1)
    val slow = new DriverLayouts(
      TestWriters.options(Map("kpl.DescribeStreamSummaryIntervalMs" -> intervalMs.toString)),
      Some(FakeMetadata.even(4)),
      _ => { entered.countDown(); release.await(); FakeMetadata.even(2) },
      () => (),
      () => f.nowNanos
    )
    assert(slow.toShipNow().map(_.shards.size) == Seq(4), "nothing due: the start check's layout")
    f.advanceMs(intervalMs / 2)
    assert(slow.toShipNow().map(_.shards.size) == Seq(4), "a read is due: it does not hold up the serialization")
    assert(entered.await(10, java.util.concurrent.TimeUnit.SECONDS), "the due read started beside it")
    release.countDown()
    val deadline = System.nanoTime() + 10000000000L
    while (slow.toShipNow().head.shards.size != 2 && System.nanoTime() < deadline) Thread.sleep(5)
    assert(slow.toShipNow().map(s => (s.shards.size, s.ageMs)) == Seq((2, 0L)), "the next batch ships the new read")
  }

  test("a stream an executor read itself is read again at the next write, at most once a second") {
    val f = new Fixture(first = Some(FakeMetadata.even(4)))
    f.layouts.reported(Seq("other"))
    f.advanceMs(DriverLayouts.MinReadIntervalMs)
    f.layouts.toShip()
    assert(f.reads == 0, "another stream's report is not this one's")
    f.layouts.reported(Seq("s"))
    assert(f.layouts.toShip().head.shards.size == 1 && f.reads == 1)
    f.layouts.reported(Seq("s"))
    f.layouts.toShip()
    assert(f.reads == 1, "within a second of the last read")
    f.advanceMs(DriverLayouts.MinReadIntervalMs)
    f.layouts.toShip()
    assert(f.reads == 2)
  }

  test("a failed read ships the last layout, or none; per-row streams and driver_check=false ship nothing") {
    val f = new Fixture()
    f.fail = true
    assert(f.layouts.toShip().isEmpty && f.reads == 1, "no check layout, a failed read: the executors read theirs")
    f.fail = false
    f.advanceMs(DriverLayouts.MinReadIntervalMs / 2 - 1)
    assert(f.layouts.toShip().isEmpty && f.reads == 1, "the readers' backoff after a failure (jitter 0), not before")
    f.advanceMs(1)
    assert(f.layouts.toShip().map(_.shards.size) == Seq(2) && f.reads == 2)
    f.fail = true
    f.advanceMs(intervalMs)
    assert(f.layouts.toShip().map(s => (s.shards.size, s.ageMs)) == Seq((2, intervalMs)) && f.reads == 3)
    for (waitMs <- Seq(500L, 750L, 1125L)) {
      f.advanceMs(waitMs - 1)
      f.layouts.toShip()
      val before = f.reads
      f.advanceMs(1)
      f.layouts.toShip()
      assert(f.reads == before + 1, s"failures in a row wait half as long again: $waitMs ms")
    }

    val off = new Fixture(Map("driver_check" -> "false"), first = Some(FakeMetadata.even(4)))
    assert(off.layouts.toShip().isEmpty && off.reads == 0)
    val perRow = new DriverLayouts(
      KinesisWriterOptions.parse(Map("region" -> "us-east-1")),
      None,
      _ => throw new AssertionError("no stream to read")
    )
    assert(perRow.toShip().isEmpty)
  }

  test("with nothing to ship yet, a throttled read is tried again on the driver for up to ten seconds") {
    val f = new Fixture()
    f.throttles = 3
    assert(f.layouts.toShip().map(_.shards.size) == Seq(4) && f.reads == 4)
    assert(f.slept == Vector(500L, 750L, 1125L), "half of 1 s, 1.5 s, 2.25 s at jitter 0")

    val long = new Fixture()
    long.throttles = 100
    assert(long.layouts.toShip().isEmpty, "ten seconds of throttles: the executors read for themselves")
    assert(long.slept.sum == DriverLayouts.FirstReadWaitMs, long.slept)

    val held = new Fixture(first = Some(FakeMetadata.even(2)))
    held.advanceMs(intervalMs)
    held.throttles = 1
    assert(held.layouts.toShip().map(_.shards.size) == Seq(2) && held.slept.isEmpty, "a layout to ship: no wait")
  }
}
