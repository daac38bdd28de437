package io.github.sparkkinesis.aggregation

import java.util.concurrent.atomic.AtomicBoolean

/** A stream as the aggregator knows it: its layout (null until first read, or while it cannot be read) and one buffer
  * per open shard of that layout.
  */
private[sparkkinesis] final class StreamState(val name: String, jitter: () => Double) {
  @volatile var layout: StreamLayout = _
  @volatile var buffers: Array[ShardBuffer] = Array.empty

  private var rateShare: RateShare = _

  /** The producer's share of `RateLimit` on the stream's shards ([[RateShare]]): made on first use, starting at `1 /
    * writers` when the driver counted the producers writing (`writers` > 0), else finding its start alone.
    */
  def share(clock: Clock, writers: Int = 0): RateShare = synchronized {
    if (rateShare == null) rateShare = RateShare(clock, writers)
    rateShare
  }
  @volatile private[aggregation] var checkedAtNanos = 0L

  /** When the layout held was read (by this producer, or by the driver for a write: [[StreamLayouts.adopt]]). */
  @volatile private[aggregation] var layoutAtNanos = 0L

  /** Whether this producer read the stream itself since it last adopted a shipped layout. */
  @volatile private[aggregation] var readSinceShipped = false
  @volatile private[aggregation] var retryAtNanos = 0L

  /** After a failed read (under this state's lock). */
  private[aggregation] val backoff = new Backoff(StreamLayouts.FirstBackoffMs, StreamLayouts.MaxBackoffMs, jitter)
  private[aggregation] val refreshing = new AtomicBoolean()
}
