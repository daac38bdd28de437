package io.github.sparkkinesis.aggregation

/** Sends each shard's aggregates in order within the shard's quota. `RateLimit` holds in the writer, not in the daemon:
  * the daemon's own limiter starts with seconds of quota in hand, and what it lets past the quota is throttled and
  * re-sent every millisecond. Kinesis' answers move the producer's share of it ([[RateShare]]). Everything here runs
  * under the shard buffer's lock, so a shard's aggregates reach the producer in the order they were sealed.
  *
  * When a shard's buffer is sealed: by size or count, by a task's commit, by its linger, and when the shard is idle
  * ([[sendIfIdle]]): fewer than [[Pacing.IdleInFlight]] of its aggregates are in flight and none waits for its quota;
  * then its records gather for [[Pacing.GatherNanos]] and go. That is Nagle's rule (TCP sends at once when nothing is
  * unacknowledged) and Kafka's producer's (a batch goes, after `linger.ms`, when its connection has fewer than
  * `max.in.flight.requests.per.connection` requests out): a record at a trickle leaves within a millisecond, not after
  * a linger, and while aggregates are in flight the next ones gather, so under load aggregates fill by themselves. The
  * linger stays the bound on any record's wait.
  */
private[sparkkinesis] final class Pacing(scheduler: Scheduler, metrics: AggregationMetrics, send: Outgoing => Unit) {

  /** Sends `a` now if its shard's quota allows and nothing waits before it, else queues it behind them. Called under
    * `b`'s lock.
    */
  def dispatch(b: ShardBuffer, a: Aggregate): Unit = {
    val wait = if (b.waiting.isEmpty) b.quota.take(a.quotaBytes) else -1L
    if (wait == 0L) go(b, a)
    else {
      b.waiting.add(a)
      metrics.aggregatePaced()
      if (wait > 0L) scheduler.after(wait)(() => paced(b))
    }
  }

  /** The head of `b`'s waiting aggregates may have its quota now: sends what the quota allows, in order; then the
    * records that lingered behind them.
    */
  private def paced(b: ShardBuffer): Unit = b.synchronized {
    var wait = 0L
    while (!b.waiting.isEmpty && { wait = b.quota.take(b.waiting.peek().quotaBytes); wait == 0L })
      go(b, b.waiting.poll())
    if (!b.waiting.isEmpty) scheduler.after(wait)(() => paced(b))
    else if (b.lingered && !b.isEmpty) dispatch(b, b.seal())
  }

  private def go(b: ShardBuffer, a: Aggregate): Unit = {
    a.pacedNanos = b.quota.lastTaken
    b.inFlight += 1
    send(a)
  }

  /** Gathers `b`'s records for [[Pacing.GatherNanos]], then seals and sends them ([[gathered]]), if the shard is idle:
    * fewer than [[Pacing.IdleInFlight]] of its aggregates in flight and none waiting for its quota. A shard that fills
    * an aggregate within its pace window ([[ShardBuffer.fillsWithinLinger]]) is never idle: it seals by size, as
    * before. Called under `b`'s lock after a record is added and after an answer.
    */
  def sendIfIdle(b: ShardBuffer): Unit =
    if (idle(b) && !b.gathering && !b.fillsWithinLinger) {
      b.gathering = true
      scheduler.after(Pacing.GatherNanos)(() => gathered(b))
    }

  private def idle(b: ShardBuffer): Boolean =
    b.inFlight < Pacing.IdleInFlight && b.waiting.isEmpty && !b.isEmpty && !b.awaitingRoom

  /** `b`'s gather ended: seals and sends what it holds if the shard is still idle and its quota has room for a full
    * aggregate now. Its pace is not asked again: records that came together within the gather are a burst, not a rate.
    * Without that room the buffer goes on gathering until there is (then it is asked again): a shard its quota holds
    * back gets full aggregates, as before, not one part-full aggregate each time a little room comes back.
    */
  private def gathered(b: ShardBuffer): Unit = b.synchronized {
    b.gathering = false
    if (idle(b)) {
      val wait = b.quota.waitFor(b.maxQuotaBytes)
      if (wait == 0L) dispatch(b, b.seal())
      else {
        b.awaitingRoom = true
        scheduler.after(wait)(() => roomCame(b))
      }
    }
  }

  private def roomCame(b: ShardBuffer): Unit = b.synchronized {
    b.awaitingRoom = false
    sendIfIdle(b)
  }

  /** Seals `b` and sends (or queues) the aggregate, if `when` holds. */
  def sealAndSend(b: ShardBuffer, when: ShardBuffer => Boolean): Unit = b.synchronized {
    if (when(b)) dispatch(b, b.seal())
  }

  /** `b`'s linger ended: seals it now if no aggregate waits for its quota, else once they have gone (fewer, fuller
    * aggregates for a shard its quota holds back).
    */
  def sealLingered(b: ShardBuffer, when: ShardBuffer => Boolean): Unit = b.synchronized {
    if (when(b)) { if (b.waiting.isEmpty) dispatch(b, b.seal()) else b.lingered = true }
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

  /** One of `b`'s aggregates was answered: it is no longer in flight, and what gathered behind it may go. */
  private def answered(b: ShardBuffer): Unit = {
    b.inFlight -= 1
    sendIfIdle(b)
  }

  /** Kinesis throttled `a`: its shard's quota was not there, so `a` waits again, first in line, until the quota holds
    * it.
    */
  def throttled(a: Aggregate): Unit = {
    val b = a.buffer
    b.synchronized {
      b.inFlight -= 1
      if (b.quota.spent(a.pacedNanos)) metrics.shareLowered()
      val idle = b.waiting.isEmpty
      b.waiting.addFirst(a)
      if (idle) scheduler.after(0L)(() => paced(b))
    }
  }
}

private[sparkkinesis] object Pacing {

  /** A shard with fewer of its aggregates in flight than this is idle: what its buffer holds goes after the gather.
    * Two, not one as in Nagle's rule: the KPL daemon answers a record 5 to 15 ms after it is put even on loopback (from
    * the JVM it drains its pipe after sleeps that double from 0.1 to 10 ms while none comes, and it writes answers back
    * after 5 ms sleeps while it has none), so input that comes in bursts (a real-time query's Kafka polls) would wait
    * for that answer, burst after burst. More than two cost aggregates at a steady rate, each a Kinesis record to
    * build, send and confirm (docs/configuration.md, "Low latency", has the figures).
    */
  val IdleInFlight = 2

  /** How long an idle shard's buffer gathers before it is sealed: records that come together (a burst of a real-time
    * query's input) go as one aggregate, not one Kinesis record each. A millisecond, as the daemon's own collection
    * ([[io.github.sparkkinesis.Aggregation.DaemonBufferMs]]).
    */
  val GatherNanos: Long = 1000000L
}
