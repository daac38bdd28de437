package io.github.sparkkinesis.aggregation

/** The one backoff of every control-plane reader (the executors' [[StreamLayouts]], the driver's
  * [[io.github.sparkkinesis.DriverLayouts]]): the first wait `firstMs`, each next one half as long again, up to
  * `maxMs`, each jittered ("equal jitter": half of it and up to as much again, by `jitter` in [0, 1)), so readers
  * throttled together (a fleet of executors, the drivers of many queries) do not retry together. Guarded by its owner's
  * lock.
  */
private[sparkkinesis] final class Backoff(firstMs: Long, maxMs: Long, jitter: () => Double) {
  private var currentMs = firstMs

  /** The wait before the next try, in ms; the one after it grows. */
  def nextMs(): Long = {
    val waitMs = Backoff.jittered(currentMs, jitter())
    currentMs = math.min(maxMs, currentMs * 3 / 2)
    waitMs
  }

  /** A read succeeded: the next failure waits `firstMs` again. */
  def reset(): Unit = currentMs = firstMs
}

private[sparkkinesis] object Backoff {

  /** Half of `backoffMs` and up to as much again by `draw` in [0, 1): never less than half the backoff. */
  def jittered(backoffMs: Long, draw: Double): Long = backoffMs / 2 + (draw * (backoffMs / 2)).toLong
}
