package io.github.sparkkinesis

/** Blocks the caller while the KPL is full: `queue_limit` records or `max_outstanding_bytes` bytes outstanding (see
  * [[QueueLimiter.full]]).
  *
  * Each pass counts a backpressure cycle and waits on the latch that KPL callbacks trigger, at most `stepMs`, so a
  * missed wake-up costs one step, never a hang. It never calls `flush()`: that would send half-filled aggregates
  * (FLINK-9374 review).
  *
  * @param onCycle
  *   called once per wait step (the `backpressureCycles` metric)
  * @param check
  *   rethrows the writer's first async error, so a failing stream stops the wait
  * @param warn
  *   told (once per blocked call) when one call has waited over `warnAfterMs`
  * @return
  *   nanoseconds spent blocked
  */
final class QueueLimiter(
    isFull: () => Boolean,
    latch: TimeoutLatch,
    onCycle: () => Unit,
    nanoClock: () => Long = () => System.nanoTime(),
    stepMs: Long = QueueLimiter.StepMs,
    warnAfterMs: Long = QueueLimiter.WarnAfterMs
) {
  def await(check: () => Unit, warn: Long => Unit): Long = {
    if (!isFull()) return 0L
    val start = nanoClock()
    var warned = false
    while (isFull()) {
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

object QueueLimiter {
  val StepMs = 100L
  val WarnAfterMs = 1000L

  /** Full while either bound is reached; a record larger than the byte bound still goes alone. */
  def full(queueLimit: Int, maxBytes: Long, records: () => Long, bytes: () => Long): () => Boolean =
    () => records() >= queueLimit || bytes() >= maxBytes
}
