package io.github.sparkkinesis.aggregation

import java.util.concurrent.{ExecutionException, Executor}

import scala.collection.mutable.ArrayBuffer

import io.github.sparkkinesis.shaded.guava.util.concurrent.{Futures, ListenableFuture, MoreExecutors}
import io.github.sparkkinesis.shaded.kpl.UserRecordResult

/** Aggregation in the writer, before the KPL daemon (one per producer whose writers aggregate): per stream and open
  * shard, a buffer shared by every task of the JVM writing through that producer. Each record goes to the shard whose
  * hash-key range holds its explicit hash key or its partition key's MD5, from the stream's layout ([[StreamLayouts]]).
  * A buffer is sealed into one KPL-format aggregate when its shard is idle (few of its aggregates in flight, none
  * waiting for its quota), a millisecond after its first record ([[SealRule]]), else when full (sized to PUT units,
  * [[SealRule.closesBefore]], or by the user's `AggregationMaxSize`) or at `AggregationMaxCount`, a linger of
  * `RecordMaxBufferedTime` from its first record, or a commit of a task with records in it; the aggregate goes, within
  * its shard's quota ([[Pacing]]), to the producer as one record whose explicit hash key (its first record's) lies in
  * that shard, so the daemon predicts, collects and sends it as it would its own. The answer is checked by the
  * [[RetryPolicy]]: placement, throttling.
  *
  * Streams whose RecordDistributionStrategy is AUTO get no aggregates, nor do records without a partition key, records
  * too big for an aggregate, and streams whose layout cannot be read yet: those go [[Alone]]; records too big for an
  * aggregate within their shard's burst ([[LargeRecords]]).
  *
  * User records keep their room under the writer's bound until their aggregate is confirmed.
  */
private[sparkkinesis] final class WriterAggregator(
    sender: Sender,
    layouts: StreamLayouts,
    settings: AggregationSettings,
    metrics: AggregationMetrics,
    scheduler: Scheduler,
    background: Executor
) {
  private val pacing = new Pacing(scheduler, metrics, send)
  private val large = new LargeRecords(scheduler, send)
  private val retries =
    new RetryPolicy(settings, scheduler, pacing, layouts, metrics, background, send, p => { add(p); () })

  /** A stream's new layout replaced buffers `old` by `next` ([[StreamLayouts]]): the records waiting in the old ones go
    * now, their placement checked as any other's; with `ordered`, `next` (made gated) go once they drained.
    */
  def replaced(old: Array[ShardBuffer], next: Array[ShardBuffer]): Unit = {
    val handover = if (next.exists(_.rule.holdsForAnswer)) new Handover(old, next, pacing.released) else null
    old.foreach { b =>
      b.synchronized {
        b.retired = true
        b.handover = handover
        sealIfAny(b)
      }
    }
    if (handover != null) scheduler.after(0L)(() => handover.check())
  }

  /** Takes `p` into an aggregate, or sends it alone (see the class comment). Runs on the writer's thread; the first
    * record of a stream reads its layout there. A keyed record that goes alone (its stream's layout not known yet or
    * AUTO, its key in no shard, too big for an aggregate) does not pass through its shard's one-in-flight order:
    * `beforeAlone` runs first (with `ordered`, the task writer confirms the task's earlier records there). Returns
    * whether `p` was such a record.
    */
  def add(p: Pending, beforeAlone: () => Unit = WriterAggregator.NoBarrier): Boolean = {
    val buffer = shardOf(p)
    val fits = buffer != null && buffer.fitsAlone(p)
    val keyedAlone = p.key != null && !fits
    if (keyedAlone) beforeAlone()
    if (buffer == null) sendAlone(p)
    else if (!fits) large.dispatch(buffer, new Alone(p))
    else if (!addToBuffer(buffer, p)) return add(p, beforeAlone) // a new map replaced the buffer: `p` goes by it
    keyedAlone
  }

  /** Adds `p` to `buffer`; false if a new map retired the buffer first. */
  private def addToBuffer(buffer: ShardBuffer, p: Pending): Boolean = {
    val done = new ArrayBuffer[Aggregate](1)
    buffer.synchronized {
      !buffer.retired && {
        val opened = buffer.add(p, done)
        done.foreach(pacing.dispatch(buffer, _))
        pacing.gatherIfIdle(buffer)
        if (opened && !buffer.isEmpty) { // `p` waits: for an answer of its shard, its quota, or at most its linger
          val generation = buffer.generation
          scheduler.after(settings.lingerMs * 1000000L)(() => lingerEnded(buffer, generation))
        }
        true
      }
    }
  }

  /** The buffer of `p`'s shard, or null when `p` goes alone (no key, no layout, AUTO, a key in no shard). */
  private def shardOf(p: Pending): ShardBuffer = {
    if (p.key == null) return null
    val s = layouts(p.stream)
    val layout = s.layout
    if (layout == null) return null
    layouts.recheckIfDue(s)
    if (layout.auto) return null
    val i = layout.shards.indexOf(p.key)
    val buffers = s.buffers
    if (i < 0 || i >= buffers.length) { layouts.refreshLater(s); return null }
    // A new map was being installed between the two reads (its buffers first, then its layout): ask again.
    if (buffers(i).shard != layout.shards.shards(i)) return shardOf(p)
    buffers(i)
  }

  /** A buffer's oldest record waited its linger: every buffer of that stream holding records is sealed with it, so the
    * daemon (collecting for at most 1 ms) sends them in one `PutRecords`, as the KPL sends all it holds once its oldest
    * record's deadline passes. Sealed one by one, a wide stream at a low rate per shard would cost a request per shard
    * and linger (docs/benchmarks.md, "Aggregation in the writer").
    */
  private def lingerEnded(buffer: ShardBuffer, generation: Long): Unit = if (buffer.generation == generation) {
    pacing.sealLingered(buffer, b => b.generation == generation && !b.isEmpty)
    val s = layouts.get(buffer.stream)
    if (s != null) s.buffers.foreach(b => pacing.sealLingered(b, !_.isEmpty))
  }

  /** Seals and sends every buffer holding a record of `owner` (its commit waits for them). */
  def flushFor(owner: RecordOwner): Unit =
    layouts.foreach(s => s.buffers.foreach(b => pacing.sealAndSend(b, x => !x.isEmpty && x.holds(owner))))

  /** Stops the linger thread (the layouts and the background thread are the producer's). */
  def close(): Unit = scheduler.close()

  private def sealIfAny(b: ShardBuffer): Unit = pacing.sealAndSend(b, !_.isEmpty)

  /** Hands `o` to the producer. An aggregate is sent under its buffer's lock, so a shard's aggregates reach the daemon
    * in order.
    */
  private def send(o: Outgoing): Unit = {
    val first = o.sending(scheduler.clock.nanoTime()) // before the put: its answer may come before the next line
    val future =
      try sender.put(o.stream, o.partitionKey, o.explicitHashKey, o.data)
      catch {
        case e: Throwable => // answered as a failure: its records fail, and its shard is no longer waiting for it
          retries.completed(o, Left(e))
          return
      }
    if (first) o match {
      case a: Aggregate => metrics.aggregateSent(a.records)
      case _: Alone     =>
    }
    future.addListener(new Answer(future, o, retries), MoreExecutors.directExecutor())
  }

  private def sendAlone(p: Pending): Unit = send(new Alone(p))
}

/** The producer's answer for one Kinesis record, on its callback thread. */
private final class Answer(future: ListenableFuture[UserRecordResult], o: Outgoing, retries: RetryPolicy)
    extends Runnable {
  def run(): Unit = {
    val result =
      try Right(Futures.getDone(future))
      catch {
        case e: ExecutionException => Left(e.getCause)
        case e: Throwable          => Left(e)
      }
    retries.completed(o, result)
  }
}

private[sparkkinesis] object WriterAggregator {

  /** What runs before a keyed record goes alone when the writer does not keep order: nothing. */
  val NoBarrier: () => Unit = () => ()
}
