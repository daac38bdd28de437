package io.github.sparkkinesis.aggregation

import java.util.concurrent.Executor

import org.slf4j.LoggerFactory
import io.github.sparkkinesis.shaded.kpl.{UserRecordFailedException, UserRecordResult}

/** What the producer's answer for a Kinesis record leads to. Its records complete, unless:
  *   - an aggregate landed in another shard than the one it was built for (a split or merge raced the map): the map is
  *     read again; if the landing shard holds every one of its records (a merge: the child holds both parents' ranges)
  *     they complete, else **all** of them are routed again by the new map ([[RetryPolicy.delivered]]), or, while the
  *     map read does not know the landing shard yet (it lags the reshard), each sent alone, which Kinesis places by its
  *     own key: a stale map must not send them to the wrong shard again, and again. With `ordered` they go alone, each
  *     key's one at a time ([[KeyChains]]), and the shard's next aggregate waits for them;
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
      if (!settings.ordered) pacing.accepted(a) // ordered: once its records are where they belong ([[misplaced]])
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
    case _ =>
      o match {
        case a: Aggregate => pacing.failed(a)
        case _: Alone     =>
      }
      Pending.complete(o.entries, result)
      o match {
        case alone: Alone if alone.answered != null => alone.answered()
        case _                                      =>
      }
  }

  private def expired(o: Outgoing): Boolean =
    scheduler.clock.nanoTime() - o.firstSentNanos > settings.recordTtlMs * 1000000L

  /** `a` landed in `r.getShardId`: reads the map again; its records complete if they were delivered there, else all of
    * them are sent again (counted as re-sent) and complete when a copy is confirmed where it belongs.
    */
  private def misplaced(a: Aggregate, r: UserRecordResult): Unit = {
    val s = layouts(a.stream)
    layouts.read(s)
    val layout = s.layout
    if (layout != null && delivered(a.entries, layout.shards, r.getShardId)) {
      if (settings.ordered) pacing.accepted(a)
      Pending.complete(a.entries, Right(r))
    } else {
      val stale = layout != null && !layout.shards.has(r.getShardId)
      metrics.recordsResent(a.records)
      log.info(
        s"An aggregate of ${a.records} records for shard ${a.shard.id} of stream ${a.stream} landed in " +
          s"${r.getShardId} (the stream was resharded), which does not hold all of them: they are sent again" +
          (if (settings.ordered) " alone, each key's in order, before anything later of the shard."
           else if (stale) s", each alone until the stream's shard map knows ${r.getShardId}."
           else ".")
      )
      if (settings.ordered) {
        a.buffer.goesAlone = true // its map is stale: the shard's next aggregates would land elsewhere too
        pacing.sendAlone(a)
      } else
        a.entries.foreach { p =>
          try if (stale) send(new Alone(p)) else route(p)
          catch { case scala.util.control.NonFatal(e) => Pending.complete(Array(p), Left(e)) }
        }
    }
  }
}

private[sparkkinesis] object RetryPolicy {
  private val log = LoggerFactory.getLogger(classOf[RetryPolicy])

  /** Whether an aggregate of `entries` that landed in shard `landed` reached its consumers: only if that shard, in the
    * stream's current `map`, holds the hash key of every one of them. A KCL consumer (`AggregatorUtil.deaggregate`, and
    * KCL 1.x's `UserRecord.deaggregate` before it) reading an aggregate from a shard that does not own one of its
    * sub-records drops the whole aggregate, the sub-records it had already taken too; the KPL re-sends every user
    * record of a Kinesis record that went to the wrong shard for the same reason. A plain reader then sees the records
    * the landing shard held twice: at-least-once allows duplicates, never loss.
    */
  def delivered(entries: Array[Pending], map: ShardMap, landed: String): Boolean =
    entries.forall(e => map.contains(landed, e.key))

  /** Whether the KPL failed a record because Kinesis throttled its shard. */
  def throttled(e: Throwable): Boolean = e match {
    case u: UserRecordFailedException if u.getResult != null && !u.getResult.getAttempts.isEmpty =>
      val attempts = u.getResult.getAttempts
      attempts.get(attempts.size - 1).getErrorCode == "ProvisionedThroughputExceededException"
    case _ => false
  }
}
