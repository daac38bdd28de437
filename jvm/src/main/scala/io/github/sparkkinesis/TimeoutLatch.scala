package io.github.sparkkinesis

/** A wait that any thread can cut short (FLINK-9374's `TimeoutLatch`): `await` blocks for at most `timeoutMs`;
  * `trigger` wakes every waiter. Cheap to trigger when nobody waits, so KPL callbacks may call it for any completed
  * record.
  */
private[sparkkinesis] class TimeoutLatch {
  private val lock = new Object
  @volatile private var waiting = false

  def await(timeoutMs: Long): Unit = lock.synchronized {
    waiting = true
    lock.wait(timeoutMs)
  }

  def trigger(): Unit =
    if (waiting) lock.synchronized {
      if (waiting) {
        waiting = false
        lock.notifyAll()
      }
    }
}
