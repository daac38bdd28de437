package io.github.sparkkinesis.aggregation

/** The part of `RateLimit` this producer sends each shard of one stream. Executors writing to the same stream each keep
  * their share of its shards' quota from Kinesis' answers alone (none knows what the others send). One share per stream
  * and producer, not per shard: Spark's tasks spread a stream's keys over its shards alike, so the shards see the same
  * writers; and a task's records wait under one `queue_limit`, so shares found shard by shard would drift apart and the
  * slowest shard would set the pace of all. The rule:
  *   - **start**: at `1 / writers` when the driver counted the producers writing the query
  *     ([[io.github.sparkkinesis.WriterCount]]): writers that start together start fair and within the quota. Without a
  *     count, at [[RateShare.StartShare]], doubling every [[RateShare.DoublingNanos]] of answers until the first
  *     throttle, which halves it but not below the start share;
  *   - **throttled**: once per throttling, not per throttle: a throttle of an aggregate paced within
  *     [[RateShare.HoldNanos]] of the last decrease is ignored (the aggregates on their way, and those meeting the
  *     shards' buckets while they refill, say nothing of the lowered share). A throttle takes [[RateShare.Cut]] ×
  *     √share of the share: a bigger share gives back more, which draws the writers to equal shares;
  *   - **accepted**: each accepted aggregate adds [[RateShare.Growth]] of the share, but no more than
  *     [[RateShare.GrowthPerSecond]] times the time since the previous answer (a producer that writes hundreds of
  *     shards hears from Kinesis thousands of times a second; the answers of one `PutRecords` call, which arrive
  *     together, count about once).
  *
  * Why growth by answers: a writer must hear of its overshoot before it grows past its part, and it hears only through
  * its own requests. Growing by a part of itself per answer, a writer's throttled part of its requests settles near
  * `Growth / (Cut × √share)`, which rises only as the square root of the number of writers (RateShareSimulationSuite
  * holds 1 to 256 writers to its bounds; docs/configuration.md, "Several executors, one stream"). A writer alone is
  * never throttled and keeps the whole of `RateLimit`. Thread-safe: the stream's shard buffers share it.
  */
private[sparkkinesis] final class RateShare(
    clock: Clock,
    cut: Double = RateShare.Cut,
    start: Double = RateShare.StartShare,
    slowStart: Boolean = true
) {
  import RateShare._

  @volatile private var share = start
  private var starting = slowStart && start < 1.0
  private var lastAnswer = clock.nanoTime()
  private var lastDecrease = Long.MinValue

  /** The share of `RateLimit` to send at, in (0, 1]. */
  def current: Double = share

  /** Kinesis accepted an aggregate. */
  def accepted(): Unit = synchronized {
    val now = clock.nanoTime()
    val elapsed = math.max(0L, now - lastAnswer).toDouble
    lastAnswer = now
    if (starting) {
      // The time since the last answer counts, up to one doubling: a stream that was idle does not grow meanwhile.
      share = math.min(1.0, share * math.pow(2.0, math.min(elapsed / DoublingNanos, 1.0)))
    } else share = math.min(1.0, share * (1.0 + math.min(Growth, GrowthPerSecond * elapsed / 1e9)))
  }

  /** Kinesis throttled an aggregate paced at `pacedNanos`: whether the share went down. */
  def throttled(pacedNanos: Long): Boolean = synchronized {
    if (cut <= 0.0 || (lastDecrease != Long.MinValue && pacedNanos < lastDecrease + HoldNanos)) false
    else {
      share =
        if (starting) math.max(math.min(share, start), share * StartDecrease)
        else math.max(MinShare, share * (1.0 - cut * math.sqrt(share)))
      starting = false
      lastDecrease = clock.nanoTime()
      true
    }
  }
}

private[sparkkinesis] object RateShare {

  /** A share `writers` producers start at: the inverse of their count, or (0: not counted) the start found alone. */
  def apply(clock: Clock, writers: Int): RateShare =
    if (writers > 0) new RateShare(clock, start = 1.0 / writers, slowStart = false) else new RateShare(clock)

  /** What a throttle takes, times √share: 40 % of a share of 1, 20 % of a quarter (four writers, each seeing the same
    * throttling: their sum drops a fifth, which Kinesis' one-second bucket absorbs while they grow back), 2.5 % of
    * 1/256. Smaller, and 256 writers drift further from equal shares than 0.5–2× (RateShareSimulationSuite).
    */
  val Cut = 0.4

  /** Growth per accepted aggregate, as a part of the share: at the balance with [[Cut]], an eighth of a percent of four
    * writers' requests are throttled, about one percent of 256 writers' on one shard.
    */
  val Growth = 2.5e-4

  /** The most the share grows a second, whatever the answers: 4 %. */
  val GrowthPerSecond = 0.04

  /** After a decrease, throttles of aggregates paced within this are ignored: Kinesis' buckets, emptied, refill. */
  val HoldNanos: Long = 1000000000L

  /** Where a share not counted starts: four writers starting together fill the quota without a throttle. */
  val StartShare = 0.25

  /** What the first throttling of a share not counted leaves: its start overshot by at most a doubling. */
  val StartDecrease = 0.5

  /** Until the first throttle, a share not counted doubles this often: a writer alone has the whole `RateLimit` after
    * two.
    */
  val DoublingNanos: Long = 250000000L

  /** The lowest share: 1,024 writers on one stream. */
  val MinShare: Double = 1.0 / 1024
}
