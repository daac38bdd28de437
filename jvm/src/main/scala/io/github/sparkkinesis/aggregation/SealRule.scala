package io.github.sparkkinesis.aggregation

/** When a shard's buffer goes, and why: the one rule of sealing, one per [[ShardBuffer]]. It answers; [[Pacing]] acts
  * on the answer (tickets on the scheduler, the shard's quota, the order of its aggregates). A buffer is sealed:
  *   - '''full''': the next record would take it past the PUT unit it ends in, and it is where it should close
  *     ([[closesBefore]]: past `AggregationMaxSize`, or, unless the user set that, the end of a unit that it fills
  *     well), or it holds `AggregationMaxCount` records ([[full]]; both asked by [[ShardBuffer.add]]);
  *   - '''idle''': its shard has fewer than [[SealRule.IdleInFlight]] aggregates in flight and none waiting for its
  *     quota, and does not fill an aggregate within its pace window ([[fillsWithinLinger]]): it gathers for `gather_ms`
  *     ([[gatherNanos]]; [[SealRule.DefaultGatherMs]]), then goes if the quota has room for a full aggregate, else when
  *     it has ([[startsGather]], [[gatherEnded]]). That is Nagle's rule (TCP sends at once when nothing is
  *     unacknowledged) and Kafka's producer's (a batch goes, after `linger.ms`, when its connection has fewer than
  *     `max.in.flight.requests.per.connection` requests out): a record at a trickle leaves within a millisecond, not
  *     after a linger, and while aggregates are in flight the next ones gather, so under load they fill by themselves;
  *   - '''linger''': its first record waited `RecordMaxBufferedTime`, or a buffer of the same stream's did (all of a
  *     stream's buffers holding records go together then, so the daemon sends them in one `PutRecords`: the trigger is
  *     [[WriterAggregator]]'s linger ticket): at once, or, while aggregates wait for the shard's quota, once they have
  *     gone ([[lingerEnded]], [[goesAfterQuota]]);
  *   - '''commit''': a task with a record in it commits ([[WriterAggregator.flushFor]]: not a decision of the rule).
  * The linger stays the bound on any record's wait. With `ordered`, a sealed aggregate goes only once the shard has
  * none in flight and, after a reshard, once the old map's buffers have drained ([[holdsForAnswer]], [[Handover]]), and
  * a shard is idle only with none in flight: Kinesis stores a request's records independently and the KPL re-sends a
  * failed one after later ones went, so two aggregates of a shard in flight can land in either order. One in flight
  * keeps the order of the shard's aggregates, and so of every key's records, through throttling (re-sent first in
  * line), failures and the daemon's retries (docs/reliability.md). Every method runs under the buffer's lock.
  */
private[aggregation] final class SealRule(settings: AggregationSettings, clock: Clock, gatedAtStart: Boolean) {
  import SealRule._

  /** How long an idle shard's buffer gathers before it goes (`gather_ms`). */
  val gatherNanos: Long = settings.gatherMs * 1000000L

  /** The shard's aggregates handed to the producer and not answered yet ([[sent]], [[answered]]). */
  private var inFlight = 0

  /** Fewer in flight than this and the shard is idle: one with `ordered` (nothing may go before the answer anyway). */
  private val idleInFlight = if (settings.ordered) 1 else IdleInFlight

  /** With `ordered`, a buffer of a reshard's new map holds what it seals until the old map's buffers have drained
    * ([[Handover]]): a key's later records must not reach its new shard before its earlier ones reached the old.
    */
  private var gated = gatedAtStart

  /** The old map's buffers drained: this one's aggregates may go. */
  def ungate(): Unit = gated = false

  /** With `ordered`: the shard's next aggregate waits for the answer of the one in flight (or for the handover). */
  def holdsForAnswer: Boolean = settings.ordered && (inFlight > 0 || gated)

  /** Whether any of the shard's aggregates is in flight (an answer, or a misplaced one's re-sends, still to come). */
  def anyInFlight: Boolean = inFlight > 0

  /** Whether an answer of the shard may let a waiting aggregate go (`ordered`: they wait for it, not for a ticket). */
  def waitsForAnswers: Boolean = settings.ordered

  /** A ticket will ask the idle rule again: a gather ends, or the quota will have room for a full aggregate. */
  private var ticketDue = false

  /** The linger ended while aggregates waited for the shard's quota: the buffer goes once they have gone, so a shard
    * held back by its quota gets fewer, fuller aggregates rather than a queue of small ones.
    */
  private var lingered = false

  /** Full by size: whether the open aggregate, of `bytes` now (its data and partition key, as Kinesis bills them),
    * closes before a record that would take it to `withNext` bytes, `bucket` the most its shard's quota holds now
    * ([[ShardQuota.burst]]). Kinesis bills each record in PUT units of 25 KiB, rounded up ([[SealRule.PutUnitBytes]]),
    * so where an aggregate closes decides what its bytes cost: one that closes a little way into a unit pays the whole
    * unit. It closes when the record would take it past [[AggregationSettings.growBytes]], or past `bucket` (half a
    * second of the producer's share of the shard: 512 KiB for a writer alone at `RateLimit=100`; a bigger one would
    * leave the quota that paces the shard in debt) but not below [[AggregationSettings.fullBytes]], or, from its third
    * unit on, when the record would start a unit and the units it has are full within [[SealRule.UnitSlack]], or no
    * later unit's end within that size would be fuller, records like this one coming ([[fillLater]]). From the third
    * unit on: an aggregate of small records closes near two units, as the KPL's default `AggregationMaxSize` does,
    * rather than at every unit (twice the Kinesis records to build, send and confirm). At a shard's pace the linger, an
    * idle shard's gather and a commit close aggregates where they stand, as before.
    */
  def closesBefore(bytes: Long, withNext: Long, bucket: => Long): Boolean =
    withNext > settings.fullBytes && (!settings.sizedByWriter || {
      // Only past two units (`fullBytes` is at most `AggregationMaxSize`'s default then): the per-record path below
      // that reads neither the quota nor the units.
      val max = math.max(settings.fullBytes, math.min(settings.growBytes, bucket))
      withNext > max || withNext > MinUnits * PutUnitBytes && units(withNext) > units(bytes) && {
        val now = fill(bytes)
        now <= 1.0 + UnitSlack || now <= fillLater(bytes, withNext - bytes, max)
      }
    })

  /** Full by count: `records` reached `AggregationMaxCount`. */
  def full(records: Int): Boolean = records >= settings.maxCount

  // The bytes records brought since `windowStart`, and the last window's pace in bytes per window (the linger, at most
  // PaceHorizonMs) ([[fillsWithinLinger]]); rolled when asked. Adding a record reads the clock only when it opens an
  // aggregate.
  private val windowNanos = math.max(1L, math.min(settings.lingerMs, PaceHorizonMs)) * 1000000L
  private var windowStart = clock.nanoTime()
  private var windowBytes = 0L
  private var lastPace = 0.0
  private var openedAt = 0L // when the open aggregate got its first record

  /** A record of `bytes` (data and key) joined the buffer; `opened`: it is the first of a new aggregate. */
  def added(bytes: Long, opened: Boolean): Unit = {
    if (opened) openedAt = clock.nanoTime()
    windowBytes += bytes
  }

  /** The buffer was sealed. */
  def wasSealed(): Unit = lingered = false

  /** One of the shard's aggregates went to the producer. */
  def sent(): Unit = inFlight += 1

  /** One of the shard's aggregates was answered (accepted, failed or throttled): it is no longer in flight. */
  def answered(): Unit = inFlight -= 1

  private def roll(now: Long): Unit = {
    val elapsed = now - windowStart
    if (elapsed >= windowNanos) {
      lastPace = if (elapsed < 4 * windowNanos) windowBytes.toDouble * windowNanos / elapsed else 0.0
      windowBytes = 0L
      windowStart = now
    }
  }

  /** Whether records come to this shard fast enough to fill an aggregate within `RecordMaxBufferedTime` (at most
    * [[SealRule.PaceHorizonMs]]): a full aggregate's bytes came within the last such window, or come at that pace in
    * the current one (once a tenth of it has passed: a burst at its start is not a pace), or the open aggregate
    * (`records`, `size` bytes), at the pace it filled so far, would be full within one. Such a shard is not idle: its
    * aggregates fill within their linger anyway, and sending at each answer would only cut them into pieces of one
    * round trip's records, each a Kinesis record to build, send and confirm.
    */
  def fillsWithinLinger(records: Int, size: Long): Boolean = {
    val now = clock.nanoTime()
    roll(now)
    val max = settings.fullBytes
    val elapsed = now - windowStart
    val open = now - openedAt
    windowBytes >= max || lastPace >= max ||
    elapsed * 10 >= windowNanos && windowBytes.toDouble * windowNanos >= max * elapsed.toDouble ||
    records >= PaceRecords && open >= PaceNanos && size.toDouble * windowNanos >= max * open.toDouble
  }

  /** Idle: fewer than [[SealRule.IdleInFlight]] of the shard's aggregates in flight (`ordered`: none), none waiting for
    * its quota, and records to send.
    */
  private def idle(b: ShardBuffer): Boolean = inFlight < idleInFlight && b.waiting.isEmpty && !b.isEmpty

  /** Whether `b` should start gathering now, to go when the gather ends (idle, no ticket due, not filling within its
    * linger); if so, a gather ticket is due from now. Asked after a record is added and after an answer.
    */
  def startsGather(b: ShardBuffer): Boolean = {
    val starts = idle(b) && !ticketDue && !b.fillsWithinLinger
    if (starts) ticketDue = true
    starts
  }

  /** `b`'s gather ended: [[Go]] if the shard is still idle and its quota has room for a full aggregate now (`roomIn`:
    * nanoseconds until it has); [[WaitForRoom]] (a ticket is due then) if it has not; else [[Stay]]. Its pace is not
    * asked again: records that came together within the gather are a burst, not a rate. A shard its quota holds back
    * gets full aggregates, as before, not one part-full aggregate each time a little room comes back.
    */
  def gatherEnded(b: ShardBuffer, roomIn: => Long): AtGatherEnd = {
    ticketDue = false
    if (!idle(b)) Stay
    else {
      val wait = roomIn
      if (wait == 0L) Go
      else { ticketDue = true; WaitForRoom(wait) }
    }
  }

  /** The quota has room again: the idle rule may be asked. */
  def roomCame(): Unit = ticketDue = false

  /** The linger ended for `b`: whether it goes now (no aggregate waits for the quota); else it goes once they have
    * ([[goesAfterQuota]]).
    */
  def lingerEnded(b: ShardBuffer): Boolean =
    if (b.waiting.isEmpty) true
    else { lingered = true; false }

  /** The aggregates that waited for the quota have gone: whether the buffer goes now (its linger ended meanwhile). */
  def goesAfterQuota(b: ShardBuffer): Boolean = lingered && !b.isEmpty
}

private[sparkkinesis] object SealRule {

  /** A PUT payload unit: Kinesis bills each record's data and partition key in 25 KiB units, rounded up. */
  val PutUnitBytes = 25600L

  /** An aggregate grows past two units only to fill them: below that it closes as the KPL's default size does. */
  val MinUnits = 2

  /** An aggregate whose units are full within this share of its bytes closes at the next unit's start: 2 %, well within
    * the 5 % over the floor (the records' bytes in units) an aggregate is allowed to cost.
    */
  val UnitSlack = 0.02

  private def units(bytes: Long): Long = (bytes + PutUnitBytes - 1) / PutUnitBytes

  /** What an aggregate of `bytes` costs over its bytes: its units' bytes over them (1.0 when it ends at a unit's end).
    */
  private def fill(bytes: Long): Double = units(bytes).toDouble * PutUnitBytes / bytes

  /** The best [[fill]] the aggregate of `bytes` would reach at a later unit's end, growing by `next` bytes a record up
    * to `max`: the records that fit before each later unit's end, and those that fit before `max`.
    */
  private[aggregation] def fillLater(bytes: Long, next: Long, max: Long): Double = {
    var best = Double.MaxValue
    var end = (units(bytes) + 1) * PutUnitBytes
    var last = false
    while (!last) {
      last = end >= max
      val k = (math.min(end, max) - bytes) / next // records of `next` bytes that fit before this unit's end
      if (k > 0) best = math.min(best, fill(bytes + k * next))
      end += PutUnitBytes
    }
    best
  }

  /** What a gather's end decides. */
  sealed trait AtGatherEnd
  case object Go extends AtGatherEnd
  case object Stay extends AtGatherEnd
  final case class WaitForRoom(nanos: Long) extends AtGatherEnd

  /** A shard with fewer of its aggregates in flight than this is idle: what its buffer holds goes after the gather.
    * Two, not one as in Nagle's rule: the KPL daemon answers a record only after its pipes' polls, even on loopback
    * (from the JVM it drains its pipe after sleeps that double from 0.1 to 10 ms while none comes, and it writes
    * answers back after 5 ms sleeps while it has none), so input that comes in bursts (a real-time query's Kafka polls)
    * would wait for that answer, burst after burst. More than two cost aggregates at a steady rate, each a Kinesis
    * record to build, send and confirm (docs/configuration.md, "Low latency", has the figures).
    */
  val IdleInFlight = 2

  /** `gather_ms`'s default, how long an idle shard's buffer gathers before it is sealed: records that come together (a
    * burst of a real-time query's input) go as one aggregate, not one Kinesis record each. A millisecond, as the
    * daemon's own collection ([[io.github.sparkkinesis.Aggregation.DaemonBufferMs]]): the latency of real-time mode.
    * More trades latency for PUT payload units at a trickle (docs/configuration.md, "What a record costs").
    */
  val DefaultGatherMs = 1L

  /** What an open aggregate must hold, and for how long, before its pace counts ([[SealRule.fillsWithinLinger]]): a few
    * records in an instant say nothing of a rate, and a shard that had a record or two waiting for an answer is not
    * busy.
    */
  val PaceRecords = 8
  val PaceNanos: Long = 1000000L

  /** The window a busy shard's pace is judged over, whatever `RecordMaxBufferedTime` is (the KPL's default): a busy
    * shard is one that fills an aggregate within it, about 5,000 records/s of 100 B. A longer linger must not make a
    * trickle count as busy and wait for it.
    */
  val PaceHorizonMs = 100L
}
