package io.github.sparkkinesis.aggregation

/** Sends each shard's aggregates in order within the shard's quota, and acts on its [[SealRule]]: the tickets that ask
  * it again (a gather's end, room in the quota) and the seals it decides. `RateLimit` holds in the writer, not in the
  * daemon: the daemon's own limiter starts with seconds of quota in hand, and what it lets past the quota is throttled
  * and re-sent every millisecond. Kinesis' answers move the producer's share of it ([[RateShare]]). Everything here
  * runs under the shard buffer's lock, so a shard's aggregates reach the producer in the order they were sealed.
  */
private[sparkkinesis] final class Pacing(scheduler: Scheduler, metrics: AggregationMetrics, send: Outgoing => Unit) {

  /** Sends `a` now if its shard's quota allows and nothing waits before it, else queues it behind them. Called under
    * `b`'s lock.
    */
  def dispatch(b: ShardBuffer, a: Aggregate): Unit = {
    val held = b.rule.holdsForAnswer
    val wait = if (b.waiting.isEmpty && !held) b.quota.take(a.quotaBytes) else -1L
    if (wait == 0L) go(b, a)
    else {
      b.waiting.add(a)
      if (!held) metrics.aggregatePaced()
      if (wait > 0L) scheduler.after(wait)(() => paced(b))
    }
  }

  /** The head of `b`'s waiting aggregates may have its quota now (or, `ordered`, the answer it waited for came): sends
    * what the quota and the rule allow, in order; then the records that lingered behind them. A ticket is due while
    * aggregates wait for the quota; none while they wait for an answer (the answer asks again).
    */
  private def paced(b: ShardBuffer): Unit = b.synchronized {
    var wait = 0L
    while (
      !b.waiting.isEmpty && !b.rule.holdsForAnswer && { wait = b.quota.take(b.waiting.peek().quotaBytes); wait == 0L }
    )
      go(b, b.waiting.poll())
    if (!b.waiting.isEmpty) { if (!b.rule.holdsForAnswer) scheduler.after(wait)(() => paced(b)) }
    else if (b.rule.goesAfterQuota(b)) dispatch(b, b.seal())
  }

  private def go(b: ShardBuffer, a: Aggregate): Unit = {
    a.pacedNanos = b.quota.lastTaken
    b.rule.sent()
    if (b.goesAlone) sendAlone(a)
    else send(a)
  }

  /** `a`'s records alone, each key's in order ([[KeyChains]]); `a` is answered (its shard no longer waits for it) once
    * every one of them is.
    */
  def sendAlone(a: Aggregate): Unit = new KeyChains(a.entries, send, () => accepted(a)).start()

  /** Starts `b`'s gather if its [[SealRule]] says the shard is idle: a ticket seals and sends it when the gather ends
    * ([[gatherEnded]]). Called under `b`'s lock after a record is added and after an answer.
    */
  def gatherIfIdle(b: ShardBuffer): Unit =
    if (b.rule.startsGather(b)) scheduler.after(b.rule.gatherNanos)(() => gatherEnded(b))

  private def gatherEnded(b: ShardBuffer): Unit = b.synchronized {
    b.rule.gatherEnded(b, b.quota.waitFor(b.fullBytes)) match {
      case SealRule.Go                => dispatch(b, b.seal())
      case SealRule.WaitForRoom(wait) => scheduler.after(wait)(() => roomCame(b))
      case SealRule.Stay              =>
    }
  }

  private def roomCame(b: ShardBuffer): Unit = b.synchronized {
    b.rule.roomCame()
    gatherIfIdle(b)
  }

  /** Seals `b` and sends (or queues) the aggregate, if `when` holds. */
  def sealAndSend(b: ShardBuffer, when: ShardBuffer => Boolean): Unit = b.synchronized {
    if (when(b)) dispatch(b, b.seal())
  }

  /** `b`'s linger ended: seals it now if no aggregate waits for its quota, else once they have gone (fewer, fuller
    * aggregates for a shard its quota holds back).
    */
  def sealLingered(b: ShardBuffer, when: ShardBuffer => Boolean): Unit = b.synchronized {
    if (when(b) && b.rule.lingerEnded(b)) dispatch(b, b.seal())
  }

  /** Kinesis accepted `a`: its shard's share of `RateLimit` may grow back ([[RateShare]]); the records that gathered
    * while it was in flight go.
    */
  def accepted(a: Aggregate): Unit = {
    val b = a.buffer
    b.synchronized {
      b.quota.accepted()
      answered(b)
    }
  }

  /** `a` failed for good (its records fail): the records that gathered while it was in flight go. */
  def failed(a: Aggregate): Unit = {
    val b = a.buffer
    b.synchronized(answered(b))
  }

  /** One of `b`'s aggregates was answered: it is no longer in flight, and what gathered behind it may go; a reshard's
    * new buffers waiting for `b` to drain are asked again, off its lock ([[Handover]]).
    */
  private def answered(b: ShardBuffer): Unit = {
    b.rule.answered()
    if (b.rule.waitsForAnswers && !b.waiting.isEmpty) paced(b)
    gatherIfIdle(b)
    val h = b.handover
    if (h != null) scheduler.after(0L)(() => h.check())
  }

  /** The old map's buffers drained ([[Handover]]): `b`, a buffer of the new map, sends what it holds. */
  def released(b: ShardBuffer): Unit = b.synchronized {
    b.rule.ungate()
    paced(b)
    gatherIfIdle(b)
  }

  /** Kinesis throttled `a`: its shard's quota was not there, so `a` waits again, first in line, until the quota holds
    * it.
    */
  def throttled(a: Aggregate): Unit = {
    val b = a.buffer
    b.synchronized {
      b.rule.answered()
      if (b.quota.spent(a.pacedNanos)) metrics.shareLowered()
      // A ticket is due while others wait for the quota; none while they wait for this answer (`ordered`).
      val ticketDue = !b.waiting.isEmpty && !b.rule.waitsForAnswers
      b.waiting.addFirst(a)
      if (!ticketDue) scheduler.after(0L)(() => paced(b))
    }
  }
}
