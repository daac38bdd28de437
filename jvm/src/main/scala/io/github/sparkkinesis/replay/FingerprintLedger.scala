package io.github.sparkkinesis.replay

import java.util.concurrent.{Executors, ScheduledExecutorService, ScheduledFuture, TimeUnit}

import scala.util.control.NonFatal

import org.apache.hadoop.fs.Path
import org.slf4j.LoggerFactory

import io.github.sparkkinesis.Threads
import io.github.sparkkinesis.aggregation.Clock

/** One task attempt's confirmed fingerprints on their way to the store: Kinesis' confirmations add to it (on the
  * producer's callback threads), and each flush writes what came since the last one as a new file `<prefix>-<seq>`:
  * every `intervalNanos` while the task runs (a killed executor loses at most that window), at its commit (after every
  * record is confirmed) and at its abort (what was confirmed so far).
  */
private[sparkkinesis] final class FingerprintLedger(
    store: FingerprintStore,
    dir: Path,
    prefix: String,
    intervalNanos: Long,
    clock: Clock
) {
  private val lock = new Object
  private var pending = new LongArrayBuilder // guarded by lock
  private var seq = 0 // guarded by this (the flush)
  @volatile private var nextFlush = clock.nanoTime() + intervalNanos
  @volatile private var recorded = 0L

  /** A confirmed record's fingerprint; any thread. */
  val add: Fingerprint.Sink = (h1: Long, h2: Long) => lock.synchronized(pending.add(h1, h2))

  /** Several confirmed records' fingerprints under one lock: `run` calls its sink once per record; any thread. */
  def addAll(run: Fingerprint.Sink => Unit): Unit = lock.synchronized(run(unlocked))

  private val unlocked: Fingerprint.Sink = (h1: Long, h2: Long) => pending.add(h1, h2) // with the lock held

  /** Flushes if the interval has passed since the last flush. */
  def flushIfDue(): Unit = if (clock.nanoTime() - nextFlush >= 0) flush()

  /** Writes what was confirmed since the last flush (nothing if nothing was); on a failure it stays for the next. */
  def flush(): Unit = synchronized {
    nextFlush = clock.nanoTime() + intervalNanos
    // The next interval's builder starts at this one's size: it rarely grows (copies) while confirmations come in.
    val delta = lock.synchronized { val d = pending; pending = new LongArrayBuilder(d.pairs); d }
    if (delta.pairs > 0) {
      try store.write(dir, s"$prefix-$seq", delta.array, delta.pairs)
      catch {
        case e: Throwable =>
          lock.synchronized { val newer = pending; pending = delta; pending.addAll(newer) }
          throw e
      }
      seq += 1
      recorded += delta.pairs
    }
  }

  /** Fingerprints written so far, and files. */
  def written: Long = recorded
  def files: Int = seq
}

/** The one thread per JVM that flushes running tasks' ledgers on their interval. */
private[sparkkinesis] object LedgerFlusher {
  private val log = LoggerFactory.getLogger(getClass)

  @volatile private var started = false
  private lazy val timer: ScheduledExecutorService = {
    started = true
    Executors.newSingleThreadScheduledExecutor(Threads.factory("spark-kinesis-fingerprint-flusher"))
  }

  /** The JVM's exit: runs the writes already handed over (an aborted task's last ones), at most `timeoutMs`; the
    * interval flushes stop.
    */
  def drain(timeoutMs: Long): Unit = if (started) {
    timer.shutdown()
    if (!timer.awaitTermination(timeoutMs, TimeUnit.MILLISECONDS))
      log.warn(s"Fingerprint writes still running after $timeoutMs ms at exit: a restart may send their records again")
  }

  /** Runs `work` once, on this thread. */
  def submit(work: Runnable): Unit =
    try timer.execute(work)
    catch {
      case _: java.util.concurrent.RejectedExecutionException =>
        log.warn(
          "A fingerprint write came after the JVM's exit drained the writes: a restart may send its records again"
        )
    }

  /** Flushes `ledger` when due, checked a few times per interval, until the returned handle is cancelled. A failed
    * flush is logged once per ledger and tried again at the next interval (the commit's flush throws it).
    */
  def register(ledger: FingerprintLedger, intervalMs: Long): ScheduledFuture[_] = {
    val step = math.max(10L, intervalMs / 4)
    var warned = false
    timer.scheduleWithFixedDelay(
      () =>
        try ledger.flushIfDue()
        catch {
          case NonFatal(e) =>
            if (!warned) log.warn(s"Writing confirmed fingerprints failed; trying again in ${intervalMs} ms: $e")
            warned = true
        },
      step,
      step,
      TimeUnit.MILLISECONDS
    )
  }
}
