package io.github.sparkkinesis.aggregation

import java.util.concurrent.Executor

import scala.collection.mutable

import org.scalatest.funsuite.AnyFunSuite
import org.slf4j.Logger

import io.github.sparkkinesis.{FakeClock, FakeMetadata}

class StreamLayoutsSuite extends AnyFunSuite {

  private val settings = AggregationSettings(51200, Long.MaxValue, 100, 60000, rateLimit = 100)
  private val whole = FakeMetadata.even(1)

  /** Answers with `throttles` throttled reads, then the layout; counts the reads. */
  private final class Throttling(var throttles: Int) extends StreamMetadata {
    var reads = 0
    def layout(stream: String): StreamLayout = {
      reads += 1
      if (throttles > 0) {
        throttles -= 1
        throw new ThrottledRead("Rate exceeded for DescribeStreamSummary (LimitExceededException)", null)
      }
      whole
    }
  }

  private final class Said extends Warnings {
    val messages = mutable.Buffer[String]()
    def warn(log: Logger, key: String, message: String): Unit = messages += message
  }

  private val inline: Executor = (r: Runnable) => r.run()

  private def layouts(metadata: StreamMetadata, clock: Clock, said: Warnings, jitter: Double) =
    new StreamLayouts(metadata, settings, clock, inline, said, (_, _) => (), () => jitter)

  test("a throttled read waits half its backoff and up to as much again, then reads; it names the limit, not IAM") {
    for ((jitter, waitMs) <- Seq(0.0 -> 500L, 0.5 -> 750L, 0.999 -> 999L)) {
      val clock = new FakeClock
      val metadata = new Throttling(1)
      val said = new Said
      val l = layouts(metadata, clock, said, jitter)
      assert(l("s").layout == null && metadata.reads == 1, "throttled: no layout, its records go alone")
      clock.advanceMs(waitMs - 1)
      assert(l("s").layout == null && metadata.reads == 1, s"jitter $jitter: no read before ${waitMs} ms")
      clock.advanceMs(1)
      assert(l("s").layout == whole && metadata.reads == 2, s"jitter $jitter: read again at ${waitMs} ms")
      val warning = said.messages.mkString("\n")
      assert(warning.contains("throttled") && warning.contains("Large fleets"), warning)
      assert(warning.contains(s"next try in $waitMs ms") && !warning.contains("IAM"), warning)
    }
  }

  test("each throttle in a row backs off half as long again, up to the cap, and the layout comes when one passes") {
    val clock = new FakeClock
    val metadata = new Throttling(20)
    val l = layouts(metadata, clock, new Said, jitter = 0.0)
    var backoff = StreamLayouts.FirstBackoffMs
    l("s")
    while (metadata.throttles > 0) {
      clock.advanceMs(backoff / 2)
      l("s")
      backoff = math.min(StreamLayouts.MaxBackoffMs, backoff * 3 / 2)
    }
    clock.advanceMs(backoff / 2)
    assert(l("s").layout == whole && metadata.reads == 21)
    assert(backoff == StreamLayouts.MaxBackoffMs, "twenty throttles reach the cap")
  }

  test("a shipped layout is taken without a call; the producer reads only when its map is proven stale or ages") {
    val clock = new FakeClock
    val metadata = new Throttling(0)
    val l = layouts(metadata, clock, new Said, jitter = 0.0)
    l.adopt(ShippedLayout("s", FakeMetadata.even(4), ageMs = 1000))
    assert(l("s").layout.shards.shards == FakeMetadata.even(4).shards.shards && metadata.reads == 0)
    clock.advanceMs(settings.recheckMs - 1000)
    l.recheckIfDue(l("s"))
    assert(
      metadata.reads == 0 && !l.readSinceShipped("s"),
      "the driver's read is as fresh as one of the producer's own"
    )
    clock.advanceMs(1)
    l.recheckIfDue(l("s"))
    assert(metadata.reads == 1 && l.readSinceShipped("s"), "none newer within the interval: the producer reads")
    assert(l("s").layout eq whole)

    // A layout the driver read before the producer's own read does not undo it, nor the report of that read (a task
    // starting after it must not hide it from the driver); one read after does both.
    l.adopt(ShippedLayout("s", FakeMetadata.even(4), ageMs = 10))
    assert((l("s").layout eq whole) && l.readSinceShipped("s"))
    clock.advanceMs(20)
    l.adopt(ShippedLayout("s", FakeMetadata.even(4), ageMs = 10))
    assert(l("s").layout.shards.size == 4 && metadata.reads == 1 && !l.readSinceShipped("s"))
  }

  test("a stream never shipped is read on its first record, as before") {
    val metadata = new Throttling(0)
    val l = layouts(metadata, new FakeClock, new Said, jitter = 0.0)
    assert((l("t").layout eq whole) && metadata.reads == 1 && l.readSinceShipped("t"))
  }
}
