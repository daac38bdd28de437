package io.github.sparkkinesis

import java.util.concurrent.atomic.AtomicLong

/** Blocks the caller until there is room for one more record: fewer than `queue_limit` records and at most
  * `max_outstanding_bytes` bytes outstanding (see [[QueueLimiter.reserve]]). Room is reserved atomically, so concurrent
  * tasks never take the producer past either bound; the caller releases it when the record completes.
  *
  * Each pass counts a backpressure cycle and waits on the latch that KPL callbacks trigger, at most `stepMs`, so a
  * missed wake-up costs one step, never a hang. It never calls `flush()`: that would send half-filled aggregates
  * (FLINK-9374 review).
  *
  * @param tryReserve
  *   reserves room for a record of that many bytes if there is some (returns whether it did)
  * @param onCycle
  *   called once per wait step (the `backpressureCycles` metric)
  */
private[sparkkinesis] final class QueueLimiter(
    tryReserve: Int => Boolean,
    latch: TimeoutLatch,
    onCycle: () => Unit,
    nanoClock: () => Long = () => System.nanoTime(),
    stepMs: Long = QueueLimiter.StepMs,
    warnAfterMs: Long = QueueLimiter.WarnAfterMs
) {

  /** Reserves room for a record of `bytes`, blocking while there is none.
    *
    * @param check
    *   rethrows the writer's first async error, so a failing stream stops the wait
    * @param warn
    *   told (once per blocked call) when one call has waited over `warnAfterMs`
    * @return
    *   nanoseconds spent blocked
    */
  def await(bytes: Int, check: () => Unit, warn: Long => Unit): Long = {
    if (tryReserve(bytes)) return 0L
    val start = nanoClock()
    var warned = false
    while (!tryReserve(bytes)) {
      onCycle()
      check()
      latch.await(stepMs)
      if (!warned) {
        val waitedMs = (nanoClock() - start) / 1000000L
        if (waitedMs >= warnAfterMs) {
          warned = true
          warn(waitedMs)
        }
      }
    }
    nanoClock() - start
  }
}

private[sparkkinesis] object QueueLimiter {
  val StepMs = 100L
  val WarnAfterMs = 1000L

  /** Completions wake a writer blocked on the limits only once 1/32 of the bound is free again (at least one record or
    * byte): waking it for every completed record cost a context switch per record under backpressure, for a single
    * record's room each time. The bound itself is untouched: room is still reserved record by record.
    */
  def resumeAt(bound: Long): Long = bound - math.max(1L, bound / 32)

  /** Reserves one record and `n` bytes in `records`/`bytes` if the result stays below `queueLimit` records and within
    * `maxBytes` bytes (a record larger than `maxBytes` goes alone, when nothing else is outstanding). Compare-and-set
    * on both counters, no lock: concurrent callers can never overshoot a bound together.
    *
    * The writer never reaches "goes alone": [[RecordLimit.checkBound]] fails a record larger than the bound first, with
    * the fix. It stays so that a caller that skips that check waits for the bound to empty, never forever.
    */
  def reserve(queueLimit: Int, maxBytes: Long, records: AtomicLong, bytes: AtomicLong): Int => Boolean = n => {
    var r = records.get
    var got = false
    while (!got && r < queueLimit) {
      got = records.compareAndSet(r, r + 1)
      if (!got) r = records.get
    }
    got && {
      var b = bytes.get
      var ok = false
      while (!ok && (b == 0 || b + n <= maxBytes)) {
        ok = bytes.compareAndSet(b, b + n)
        if (!ok) b = bytes.get
      }
      if (!ok) records.decrementAndGet()
      ok
    }
  }
}
