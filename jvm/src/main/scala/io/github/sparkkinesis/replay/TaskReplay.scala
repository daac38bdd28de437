package io.github.sparkkinesis.replay

import java.nio.ByteBuffer
import java.util.concurrent.ThreadLocalRandom

import scala.util.control.NonFatal

import org.apache.hadoop.fs.FileStatus
import org.slf4j.LoggerFactory

import io.github.sparkkinesis.aggregation.{Clock, Pending}

/** One task attempt's part in skipping on replay: it records the fingerprint of every record Kinesis confirms (its
  * [[FingerprintLedger]]), and skips a row while an equal fingerprint confirmed in an earlier attempt is unused by this
  * attempt ([[Claims]] over a [[ConfirmedSet]]). Which earlier confirmations a task may use:
  *
  *   - `format("kinesis")`, a batch the driver planned as a replay (rows clustered by content): every earlier plan's,
  *     the JVM's shared set; a retried attempt also its own partition's earlier attempts' in this plan.
  *   - `foreach` (`perPartition`): only its own partition's, of every earlier attempt and plan. Per content f a
  *     partition skips at most what that partition had confirmed, so the partitions together skip at most what Kinesis
  *     holds: never a loss, whatever the replay's partitioning (docs/reliability.md, "Skip on replay").
  *
  * Before it reads what earlier attempts confirmed, it waits (at most `settleMs`) until no attempt of an earlier plan
  * of the batch in this JVM may still write confirmations ([[ReplayCache.awaitEarlier]]): a query stopped mid-batch and
  * started again at once finds what its stopped tasks had in flight confirmed, not only what they wrote before.
  *
  * @param attempt
  *   Spark's task attempt id (unique within a run); a random nonce makes the file names unique across runs too.
  * @param retry
  *   not the partition's first attempt in this plan ([[TaskReplay.retried]]).
  * @param settleMs
  *   the longest an earlier attempt's records may still take to be confirmed: the writer's `flush_timeout_ms`.
  */
private[sparkkinesis] final class TaskReplay(
    plan: ReplayPlan,
    partitionId: Long,
    epochId: Long,
    attempt: Long,
    retry: Boolean = false,
    settleMs: Long = 0L,
    clock: Clock = Clock.system
) {
  private val store = plan.store
  private val current = epochId == plan.batchId // a stale plan never skips
  if (current && (plan.perPartition || plan.replay))
    ReplayCache.awaitEarlier(plan.queryId, epochId, plan.planId, settleMs, clock)
  private val ledger = new FingerprintLedger(
    store,
    store.batchDir(plan.queryId, epochId),
    s"${TaskReplay.chain(plan, partitionId)}$attempt-${java.lang.Long.toHexString(ThreadLocalRandom.current().nextLong())}",
    plan.flushIntervalMs * 1000000L,
    clock
  )
  // foreach: the partition's own earlier confirmations; a retry lists afresh (its earlier attempts wrote since the
  // JVM's listing), a first attempt uses the listing its JVM made once for this run of the batch.
  private val claims: Claims =
    if (current && plan.perPartition) {
      val files = if (retry) store.list(plan.queryId, epochId) else ReplayCache.listing(plan)
      val mine = s"$partitionId-"
      store.readFiles(files.filter(_.getPath.getName.startsWith(mine))).map(ConfirmedSet.of(_).claims()).orNull
    } else if (current && plan.replay) ReplayCache.confirmed(plan).claims()
    else { if (!plan.perPartition) ReplayCache.forget(plan.queryId); null }
  // format: a retried attempt (same plan, same partition: the same rows) also skips what the partition's earlier
  // attempts in this plan confirmed: those confirmations are its partition's alone, so no other task uses them.
  private val own: Claims =
    if (!retry || !current || plan.perPartition) null
    else {
      val chain = TaskReplay.chain(plan, partitionId)
      store.read(plan.queryId, epochId, _.startsWith(chain)).map(ConfirmedSet.of(_).claims()).orNull
    }
  private val flushing = LedgerFlusher.register(ledger, plan.flushIntervalMs)
  // Last, once nothing above can fail: this attempt's confirmations may arrive until it committed, or aborted and its
  // last record in flight completed; a later run's replay in this JVM waits for it.
  private val attemptToken = ReplayCache.opened(plan.queryId, epochId, plan.planId)
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

  /** A record's fingerprint, to `to`: taken as it is put, and passed to [[confirmed]] once Kinesis confirms it. */
  def fingerprint(
      stream: String,
      partitionKey: String,
      explicitHashKey: String,
      data: ByteBuffer,
      to: Fingerprint.Sink
  ): Unit = Fingerprint.of(stream, if (plan.keyed) partitionKey else null, explicitHashKey, data, to)

  /** Kinesis confirmed the record of this fingerprint (any thread). */
  def confirmed(h1: Long, h2: Long): Unit = ledger.add(h1, h2)

  /** Kinesis confirmed the aggregated records `entries(from until until)`, all this task's (any thread): one ledger
    * update for the run, of the fingerprints [[fingerprint]] took.
    */
  def confirmed(entries: Array[Pending], from: Int, until: Int): Unit =
    ledger.addAll { to =>
      var i = from
      while (i < until) { val p = entries(i); to(p.digest1, p.digest2); i += 1 }
    }

  /** Takes `p`'s fingerprint into its digest (the task thread, as it is built: its data is still in the cache), for
    * [[confirmed]].
    */
  def fingerprint(p: Pending): Unit = {
    digesting = p
    fingerprint(p.stream, p.partitionKey, p.explicitHashKey, p.data, digest)
  }
  private var digesting: Pending = null // task thread only
  private val digest: Fingerprint.Sink = (h1: Long, h2: Long) => { digesting.digest1 = h1; digesting.digest2 = h2 }

  /** After every record of the task is confirmed: writes the rest; a failure fails the task (the directory must be
    * writable for the mode to mean anything).
    */
  def commit(): Unit =
    try {
      flushing.cancel(false)
      ledger.flush()
    } finally settled()

  /** The task ends without commit: writes what was confirmed so far, best effort. Its records still in flight go on
    * (the KPL sends them after the task): [[drained]] writes their confirmations once the last is in. `inFlight`: how
    * many of its records are still unconfirmed (read after the abort is marked, so that a last completion racing it is
    * seen by one of the two).
    */
  def abort(inFlight: () => Long = () => 0L): Unit = {
    aborted = true
    flushing.cancel(false)
    // On the flusher's thread: a task thread Spark interrupted may not write (interruptible I/O), nor should it wait.
    LedgerFlusher.submit { () =>
      quietFlush()
      // None left in flight: their confirmations were all taken before the count reached 0, so one more flush holds
      // every one of them (the first may have run before the last came in).
      if (inFlight() == 0) { quietFlush(); settled() }
    }
  }

  /** The task's last record in flight completed (any thread): after an abort, a last write, off this thread. */
  def drained(): Unit = if (aborted) LedgerFlusher.submit { () => quietFlush(); settled() }

  @volatile private var aborted = false

  /** Nothing more of this attempt will be written (once; any thread). */
  private def settled(): Unit = ReplayCache.settled(attemptToken)

  private def quietFlush(): Unit =
    try ledger.flush()
    catch {
      case NonFatal(e) =>
        TaskReplay.log.warn(s"Could not write the fingerprints of an aborted task (a replay re-sends them): $e")
    }

  def summary: String = s"fingerprints=${ledger.written} files=${ledger.files} skipped=$skipped"
}

private[sparkkinesis] object TaskReplay {
  private[replay] val log = LoggerFactory.getLogger(classOf[TaskReplay])

  /** The start of the names of the files a partition's attempts write under one plan. */
  def chain(plan: ReplayPlan, partitionId: Long): String = s"$partitionId-${plan.planTag}-"

  /** Whether a file is of an earlier plan (run) of the batch: what a replay skips against. */
  def earlier(plan: ReplayPlan, name: String): Boolean = !name.contains(s"-${plan.planTag}-")

  /** Whether this task is not its partition's first attempt in this plan: Spark's attempt number above 0 (a retry, a
    * speculative copy) or a stage attempt above 0 (a resubmitted stage starts its attempt numbers again).
    */
  def retried: Boolean =
    Option(org.apache.spark.TaskContext.get()).exists(c => c.attemptNumber() > 0 || c.stageAttemptNumber() > 0)
}

/** What a JVM keeps per query for skip on replay: the confirmed fingerprints of the batch `format("kinesis")` replays,
  * loaded once per plan (one driver's build of the batch) and shared by its tasks; the listing of the batch a `foreach`
  * task runs, made once per run of the batch; and the last batch before which this JVM removed the query's
  * fingerprints. One entry each per query, replaced by the query's next plan.
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
  private final class Listing(plan: ReplayPlan) {
    val key: (Long, String) = (plan.batchId, plan.planId)
    lazy val files: Seq[FileStatus] = plan.store.list(plan.queryId, plan.batchId)
  }

  /** One task attempt whose confirmations may still be written: [[opened]] until [[settled]]. */
  final class Attempt private[ReplayCache] (val queryId: String, val batchId: Long, val planId: String) {
    @volatile private[ReplayCache] var open = true
  }
  private val open = new java.util.HashSet[Attempt]()
  private val entries = new java.util.HashMap[String, Entry]()
  private val listings = new java.util.HashMap[String, Listing]()
  private val cleaned = new java.util.HashMap[String, java.lang.Long]()

  def confirmed(plan: ReplayPlan): ConfirmedSet = {
    val e = synchronized {
      val cur = entries.get(plan.queryId)
      if (cur != null && cur.planId == plan.planId) cur
      else { val n = new Entry(plan); entries.put(plan.queryId, n); n }
    }
    e.set
  }

  /** A task attempt of the query's batch under `planId` starts writing confirmations in this JVM. */
  def opened(queryId: String, batchId: Long, planId: String): Attempt = synchronized {
    val a = new Attempt(queryId, batchId, planId)
    open.add(a)
    a
  }

  /** The attempt will write no more (idempotent): wakes those waiting in [[awaitEarlier]]. */
  def settled(a: Attempt): Unit = synchronized {
    if (a.open) { a.open = false; open.remove(a); notifyAll() }
  }

  /** Waits until no attempt of the query's batch under another plan than `planId` (an earlier run, or an earlier
    * planning of the batch) may still write confirmations in this JVM, at most `timeoutMs` of `clock`: a stopped
    * query's tasks end before their last records in flight are confirmed, and a query started again at once must find
    * those confirmations. Other JVMs' attempts are not seen here: an executor lost with records in flight is the
    * documented bound (docs/reliability.md). Returns whether they settled; a WARN says so when not.
    */
  def awaitEarlier(queryId: String, batchId: Long, planId: String, timeoutMs: Long, clock: Clock): Boolean =
    synchronized {
      def earlier: Int = {
        var n = 0
        open.forEach(a => if (a.queryId == queryId && a.batchId == batchId && a.planId != planId) n += 1)
        n
      }
      val deadline = clock.nanoTime() + timeoutMs * 1000000L
      var left = earlier
      val waited = left > 0
      while (left > 0 && deadline - clock.nanoTime() > 0) {
        wait(math.max(1L, math.min(100L, (deadline - clock.nanoTime()) / 1000000L)))
        left = earlier
      }
      if (left > 0)
        TaskReplay.log.warn(
          s"Query $queryId batch $batchId: $left earlier task attempts in this JVM still had records in flight after " +
            s"${timeoutMs} ms (flush_timeout_ms); what they confirm later is not skipped, so it may be sent twice"
        )
      else if (waited)
        TaskReplay.log.info(s"Query $queryId batch $batchId: the earlier attempts' records in flight are all in")
      left == 0
    }

  /** The query runs a batch that is no replay: what this JVM held for it is freed. */
  def forget(queryId: String): Unit = synchronized { entries.remove(queryId); () }

  /** The files of the plan's batch, listed once per JVM per plan (the first task to ask lists, the others wait). */
  def listing(plan: ReplayPlan): Seq[FileStatus] = {
    val l = synchronized {
      val cur = listings.get(plan.queryId)
      if (cur != null && cur.key == ((plan.batchId, plan.planId))) cur
      else { val n = new Listing(plan); listings.put(plan.queryId, n); n }
    }
    l.files
  }

  /** Removes the query's fingerprints of the batches before the plan's, once per JVM per batch. Other JVMs may do the
    * same at the same time: a batch already gone is no error.
    */
  def cleanBefore(plan: ReplayPlan): Unit = {
    val first = synchronized {
      val done = cleaned.get(plan.queryId)
      (done == null || done < plan.batchId) && { cleaned.put(plan.queryId, plan.batchId); true }
    }
    if (first) {
      val deleted = plan.store.deleteBefore(plan.queryId, plan.batchId)
      if (deleted > 0)
        TaskReplay.log.info(
          s"Query ${plan.queryId} batch ${plan.batchId}: fingerprints of $deleted committed batches removed from " +
            plan.location
        )
    }
  }
}
