package io.github.sparkkinesis.aggregation

import java.util.concurrent.Executor

import org.slf4j.LoggerFactory
import io.github.sparkkinesis.shaded.kpl.{UserRecordFailedException, UserRecordResult}

/** What the producer's answer for a Kinesis record leads to. Its records complete, unless:
  *   - an aggregate landed in another shard than the one it was built for (a split or merge raced the map): the map is
  *     read again, its records the landing shard holds complete, the others are routed again (a KCL consumer drops
  *     those; duplicates are allowed, loss never);
  *   - Kinesis throttled it (the daemon runs with `FailIfThrottled`, else it would re-send it every millisecond), the
  *     user did not ask for `FailIfThrottled` and its `RecordTtl` has not passed: an aggregate waits again, first in
  *     line, for its shard's quota; a record alone waits half a linger, as the KPL re-sends after half its
  *     `RecordMaxBufferedTime`.
  *
  * An aggregate Kinesis accepted (wherever it landed) lets its shard's share of the quota grow ([[Pacing.accepted]]).
  */
private[sparkkinesis] final class RetryPolicy(
    settings: AggregationSettings,
    scheduler: Scheduler,
    pacing: Pacing,
    layouts: StreamLayouts,
    metrics: AggregationMetrics,
    background: Executor,
    send: Outgoing => Unit,
    route: Pending => Unit
) {
  import RetryPolicy._

  def completed(o: Outgoing, result: Either[Throwable, UserRecordResult]): Unit = (o, result) match {
    case (a: Aggregate, Right(r)) if r.getShardId != null && r.getShardId != a.shard.id =>
      pacing.accepted(a)
      metrics.aggregateMisplaced()
      background.execute(() => misplaced(a, r)) // reads the map: off the producer's callback thread
    case (_, Left(e)) if throttled(e) && !settings.failIfThrottled && !expired(o) =>
      metrics.recordsRetried(o.records)
      o match {
        case a: Aggregate => pacing.throttled(a)
        case alone: Alone => scheduler.after(math.max(1L, settings.lingerMs / 2) * 1000000L)(() => send(alone))
      }
    case (a: Aggregate, Right(_)) =>
      pacing.accepted(a)
      Pending.complete(a.entries, result)
    case _ => Pending.complete(o.entries, result)
  }

  private def expired(o: Outgoing): Boolean =
    scheduler.clock.nanoTime() - o.firstSentNanos > settings.recordTtlMs * 1000000L

  /** `a` landed in `r.getShardId`: reads the map again; its records whose hash key that shard holds are delivered, the
    * others are routed again (counted as re-sent).
    */
  private def misplaced(a: Aggregate, r: UserRecordResult): Unit = {
    val s = layouts(a.stream)
    layouts.read(s)
    val layout = s.layout
    val (kept, again) =
      if (layout == null) (Array.empty[Pending], a.entries)
      else a.entries.partition(e => layout.shards.contains(r.getShardId, e.key))
    if (kept.nonEmpty) Pending.complete(kept, Right(r))
    if (again.nonEmpty) {
      metrics.recordsResent(again.length)
      log.info(
        s"An aggregate of ${a.records} records for shard ${a.shard.id} of stream ${a.stream} landed in " +
          s"${r.getShardId} (the stream was resharded): ${again.length} of its records are sent again."
      )
      again.foreach { p =>
        try route(p)
        catch { case scala.util.control.NonFatal(e) => Pending.complete(Array(p), Left(e)) }
      }
    }
  }
}

private[sparkkinesis] object RetryPolicy {
  private val log = LoggerFactory.getLogger(classOf[RetryPolicy])

  /** Whether the KPL failed a record because Kinesis throttled its shard. */
  def throttled(e: Throwable): Boolean = e match {
    case u: UserRecordFailedException if u.getResult != null && !u.getResult.getAttempts.isEmpty =>
      val attempts = u.getResult.getAttempts
      attempts.get(attempts.size - 1).getErrorCode == "ProvisionedThroughputExceededException"
    case _ => false
  }
}
