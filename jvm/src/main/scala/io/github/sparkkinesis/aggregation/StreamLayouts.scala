package io.github.sparkkinesis.aggregation

import java.util.concurrent.{ConcurrentHashMap, Executor, ThreadLocalRandom}
import org.slf4j.LoggerFactory

/** The layouts of the streams written. The driver reads a query's fixed stream for each write and ships it ([[adopt]]),
  * so a fleet's executors do not read it each (the account has 20 `DescribeStreamSummary` a second); a stream without
  * one (streams named per row, `driver_check=false`, a driver read that failed) is read on its first record (on the
  * writer's thread). Either is read again in `background` when a record's key lies in no shard of the map or an
  * aggregate landed elsewhere (the map is proven stale), and when no newer layout came within
  * `DescribeStreamSummaryIntervalMs` (the strategy may change either way, and a reshard shows there too: a task that
  * runs longer than the driver's interval); after a failed read, again after a backoff, jittered (a fleet of executors
  * throttled together must not retry together). A new layout gets new buffers; the old ones are handed to `replaced`,
  * to be sealed and sent. `jitter` draws from [0, 1).
  */
private[sparkkinesis] final class StreamLayouts(
    metadata: StreamMetadata,
    settings: AggregationSettings,
    clock: Clock,
    background: Executor,
    warnings: Warnings,
    replaced: (Array[ShardBuffer], Array[ShardBuffer]) => Unit,
    jitter: () => Double = () => ThreadLocalRandom.current().nextDouble()
) {
  import StreamLayouts._

  private val streams = new ConcurrentHashMap[String, StreamState]()

  /** The latest task's count of producers writing its query (0: none given), for the shares of streams not yet seen. */
  @volatile var writers = 0

  /** The stream `name`, its layout read now if it has none and its backoff has passed. */
  def apply(name: String): StreamState = {
    val s = streams.computeIfAbsent(name, n => new StreamState(n, jitter))
    if (s.layout == null && clock.nanoTime() >= s.retryAtNanos) s.synchronized {
      if (s.layout == null && clock.nanoTime() >= s.retryAtNanos) read(s)
    }
    s
  }

  /** The stream `name` if a record of it was seen, else null. */
  def get(name: String): StreamState = streams.get(name)

  def foreach(f: StreamState => Unit): Unit = streams.values.forEach(s => f(s))

  /** The largest record stream `name` takes: its layout's, or [[StreamLayout.DefaultMaxRecordBytes]] while none could
    * be read. A raised (or lowered) limit shows within `DescribeStreamSummaryIntervalMs`, or at once with `readNow`
    * (the layout read again on the caller's thread: the writer does so before failing a record over the limit).
    */
  def maxRecordBytes(name: String, readNow: Boolean = false): Long = {
    val s = apply(name)
    if (readNow) read(s) else if (s.layout != null) recheckIfDue(s)
    val layout = s.layout
    if (layout == null) StreamLayout.DefaultMaxRecordBytes else layout.maxRecordBytes
  }

  /** Reads `s` again in the background once `DescribeStreamSummaryIntervalMs` has passed since the last read. */
  def recheckIfDue(s: StreamState): Unit =
    if (clock.nanoTime() - s.checkedAtNanos > settings.recheckMs * 1000000L) refreshLater(s)

  def refreshLater(s: StreamState): Unit =
    if (s.refreshing.compareAndSet(false, true))
      background.execute { () =>
        try read(s)
        finally s.refreshing.set(false)
      }

  /** Takes the layout the driver read for this write, `shipped.ageMs` ago, as if this producer had read it then, unless
    * it holds one read later (after its map was proven stale: that read stays to be reported, [[readSinceShipped]],
    * until the driver ships one newer). No call is made.
    */
  def adopt(shipped: ShippedLayout): Unit = {
    val s = streams.computeIfAbsent(shipped.stream, n => new StreamState(n, jitter))
    val readAt = clock.nanoTime() - shipped.ageMs * 1000000L
    s.synchronized {
      if (s.layout == null || readAt - s.layoutAtNanos > 0) {
        install(s, shipped.layout, readAt)
        s.checkedAtNanos = math.max(s.checkedAtNanos, readAt)
        s.retryAtNanos = 0L
        s.readSinceShipped = false
      }
    }
  }

  /** Whether this producer read stream `name` itself since it last adopted a shipped layout of it (its map was proven
    * stale: an aggregate landed elsewhere, a key in no shard, a record over the limit; or none came in time).
    */
  def readSinceShipped(name: String): Boolean = { val s = streams.get(name); s != null && s.readSinceShipped }

  /** Reads `s`'s layout now; on failure keeps the last one (or none: records go alone) and retries after a backoff. */
  def read(s: StreamState): Unit = s.synchronized {
    s.readSinceShipped = true
    try {
      install(s, metadata.layout(s.name), clock.nanoTime())
      s.checkedAtNanos = clock.nanoTime()
    } catch {
      case scala.util.control.NonFatal(e) =>
        val waitMs = s.backoff.nextMs()
        s.retryAtNanos = clock.nanoTime() + waitMs * 1000000L
        s.checkedAtNanos = clock.nanoTime()
        val why = e match {
          case t: ThrottledRead =>
            s"Kinesis throttled it: ${t.getMessage}. The account's control-plane calls are over their limits " +
              "(docs/configuration.md, Large fleets)."
          case _ =>
            s"${e.getClass.getSimpleName}: ${e.getMessage}. The writer's credentials need kinesis:ListShards and " +
              "kinesis:DescribeStreamSummary (docs/configuration.md, IAM)."
        }
        warnings.warn(
          log,
          s"shard-map-${s.name}",
          s"Reading the shards of stream ${s.name} failed; its records go to the KPL one by one until it succeeds " +
            s"(next try in $waitMs ms). $why"
        )
    }
  }

  /** Makes `layout`, read at `readAtNanos`, `s`'s: new buffers when its shards or strategy changed. */
  private def install(s: StreamState, layout: StreamLayout, readAtNanos: Long): Unit = {
    val old = s.layout
    if (old == null || old.auto != layout.auto || old.shards.shards != layout.shards.shards) {
      val previous = s.buffers
      val share = s.share(clock, writers)
      // With `ordered`, a new map's buffers hold what they seal until the old ones drain ([[Handover]]).
      val gated = settings.ordered && previous != null && previous.nonEmpty
      s.buffers = layout.shards.shards.map(sh => new ShardBuffer(s.name, sh, settings, clock, share, gated)).toArray
      s.layout = layout
      // Records already waiting in the old map's buffers go now; their placement is checked as any other's.
      replaced(previous, s.buffers)
      log.info(
        s"Stream ${s.name}: ${layout.shards.size} open shards" +
          (if (layout.auto) ", RecordDistributionStrategy AUTO: records go alone, not aggregated" else "") +
          s", records up to ${layout.maxRecordBytes} bytes"
      )
    } else if (old.maxRecordBytes != layout.maxRecordBytes) {
      s.layout = layout // same shards: the buffers stay
      log.info(s"Stream ${s.name}: records up to ${layout.maxRecordBytes} bytes (was ${old.maxRecordBytes})")
    }
    s.layoutAtNanos = readAtNanos
    s.backoff.reset()
  }

  def close(): Unit =
    try metadata.close()
    catch { case scala.util.control.NonFatal(e) => log.debug("Closing the shard-map client failed", e) }
}

private[sparkkinesis] object StreamLayouts {
  private val log = LoggerFactory.getLogger(classOf[StreamLayouts])

  /** The first wait after a failed read; each further failure waits half as long again, up to [[MaxBackoffMs]]. */
  val FirstBackoffMs = 1000L
  val MaxBackoffMs = 30000L

}
