package io.github.sparkkinesis.replay

import java.nio.ByteBuffer
import java.util.concurrent.ThreadLocalRandom

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

import io.github.sparkkinesis.aggregation.Clock

/** One task attempt's part in skipping on replay: it records the fingerprint of every record Kinesis confirms (its
  * [[FingerprintLedger]]), and, when the driver planned the batch as a replay, skips a row while an equal confirmed
  * fingerprint of an earlier attempt is unused by this attempt ([[Claims]] over the JVM's [[ConfirmedSet]]).
  *
  * @param attempt
  *   Spark's task attempt id (unique within a run); a random nonce makes the file names unique across runs too.
  * @param retry
  *   not the partition's first attempt in this plan (Spark's attempt number above 0).
  */
private[sparkkinesis] final class TaskReplay(
    plan: ReplayPlan,
    partitionId: Long,
    epochId: Long,
    attempt: Long,
    retry: Boolean = false,
    clock: Clock = Clock.system
) {
  private val store = plan.store
  private val ledger = new FingerprintLedger(
    store,
    store.batchDir(plan.queryId, epochId),
    s"${TaskReplay.chain(plan, partitionId)}$attempt-${java.lang.Long.toHexString(ThreadLocalRandom.current().nextLong())}",
    plan.flushIntervalMs * 1000000L,
    clock
  )
  // Skips only in the batch the driver planned as a replay (a stale plan never skips).
  private val claims: Claims =
    if (plan.replay && epochId == plan.batchId) ReplayCache.confirmed(plan).claims()
    else { ReplayCache.forget(plan.queryId); null }
  // A retried attempt (same plan, same partition: the same rows) also skips what the partition's earlier attempts in
  // this plan confirmed: those confirmations are its partition's alone, so no other task uses them.
  private val own: Claims =
    if (!retry || epochId != plan.batchId) null
    else {
      val chain = TaskReplay.chain(plan, partitionId)
      store.read(plan.queryId, epochId, _.startsWith(chain)).map(ConfirmedSet.of(_).claims()).orNull
    }
  private val flushing = LedgerFlusher.register(ledger, plan.flushIntervalMs)
  private var taken = false
  private val take: Fingerprint.Sink = (h1: Long, h2: Long) =>
    taken = (claims != null && claims.take(h1, h2)) || (own != null && own.take(h1, h2))
  var skipped = 0L

  /** Task thread: true if this row's record was confirmed in an earlier attempt and that confirmation is now used. */
  def skip(stream: String, partitionKey: String, explicitHashKey: String, data: ByteBuffer): Boolean =
    (claims != null || own != null) && {
      Fingerprint.of(stream, if (plan.keyed) partitionKey else null, explicitHashKey, data, take)
      if (taken) skipped += 1
      taken
    }

  /** Kinesis confirmed this record (any thread). */
  def confirmed(stream: String, partitionKey: String, explicitHashKey: String, data: ByteBuffer): Unit =
    Fingerprint.of(stream, if (plan.keyed) partitionKey else null, explicitHashKey, data, ledger.add)

  /** After every record of the task is confirmed: writes the rest; a failure fails the task (the directory must be
    * writable for the mode to mean anything).
    */
  def commit(): Unit = {
    flushing.cancel(false)
    ledger.flush()
  }

  /** The task ends without commit: writes what was confirmed so far, best effort. Its records still in flight go on
    * (the KPL sends them after the task): [[drained]] writes their confirmations once the last is in.
    */
  def abort(): Unit = {
    aborted = true
    flushing.cancel(false)
    // On the flusher's thread: a task thread Spark interrupted may not write (interruptible I/O), nor should it wait.
    LedgerFlusher.submit(() => quietFlush())
  }

  /** The task's last record in flight completed (any thread): after an abort, a last write, off this thread. */
  def drained(): Unit = if (aborted) LedgerFlusher.submit(() => quietFlush())

  @volatile private var aborted = false

  private def quietFlush(): Unit =
    try ledger.flush()
    catch {
      case NonFatal(e) =>
        TaskReplay.log.warn(s"Could not write the fingerprints of an aborted task (a replay re-sends them): $e")
    }

  def summary: String = s"fingerprints=${ledger.written} files=${ledger.files} skipped=$skipped"
}

private[sparkkinesis] object TaskReplay {
  private val log = LoggerFactory.getLogger(classOf[TaskReplay])

  /** The start of the names of the files a partition's attempts write under one plan. */
  def chain(plan: ReplayPlan, partitionId: Long): String = s"$partitionId-${plan.planTag}-"

  /** Whether a file is of an earlier plan (run) of the batch: what a replay skips against. */
  def earlier(plan: ReplayPlan, name: String): Boolean = !name.contains(s"-${plan.planTag}-")
}

/** The confirmed fingerprints of the batch being replayed, loaded once per JVM per plan (one driver's build of the
  * batch) and shared by its tasks; one entry per query, replaced by the query's next plan.
  */
private[sparkkinesis] object ReplayCache {
  private final class Entry(plan: ReplayPlan) {
    val planId: String = plan.planId
    lazy val set: ConfirmedSet =
      plan.store
        .read(plan.queryId, plan.batchId, TaskReplay.earlier(plan, _))
        .map(ConfirmedSet.of)
        .getOrElse(ConfirmedSet.empty)
  }
  private val entries = new java.util.HashMap[String, Entry]()

  def confirmed(plan: ReplayPlan): ConfirmedSet = {
    val e = synchronized {
      val cur = entries.get(plan.queryId)
      if (cur != null && cur.planId == plan.planId) cur
      else { val n = new Entry(plan); entries.put(plan.queryId, n); n }
    }
    e.set
  }

  /** The query runs a batch that is no replay: what this JVM held for it is freed. */
  def forget(queryId: String): Unit = synchronized { entries.remove(queryId); () }
}
