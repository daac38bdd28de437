package io.github.sparkkinesis

import java.util.concurrent.atomic.AtomicLong

/** The bound a producer's writers share: at most `queueLimit` user records and `maxBytes` payload bytes from `write`
  * until their confirmation (for an aggregate built in the writer, until the aggregate is confirmed). One per
  * [[SharedProducer]], whose pool key carries both limits, so every writer of a producer enforces the same bound.
  *
  * Room is reserved record by record by compare-and-set ([[QueueLimiter.reserve]]): concurrent tasks never overshoot
  * together. Released room wakes blocked writers through `latch` once a batch of it is free
  * ([[QueueLimiter.resumeAt]]), not for every record.
  *
  * @param latch
  *   woken when room frees up, and by tasks whose last record completed or failed; writers wait on it
  */
private[sparkkinesis] final class RecordBound(
    val queueLimit: Int,
    val maxBytes: Long,
    val latch: TimeoutLatch = new TimeoutLatch
) {
  val records = new AtomicLong()
  val bytes = new AtomicLong()

  private val resumeRecords = QueueLimiter.resumeAt(queueLimit.toLong)
  private val resumeBytes = QueueLimiter.resumeAt(maxBytes)

  val tryReserve: Int => Boolean = QueueLimiter.reserve(queueLimit, maxBytes, records, bytes)

  /** Gives back the room `n` records of `size` bytes in all held; wakes writers once both bounds are at their resume
    * mark.
    */
  def release(n: Int, size: Long): Unit = {
    val r = records.addAndGet(-n.toLong)
    val b = bytes.addAndGet(-size)
    if (r <= resumeRecords && b <= resumeBytes) latch.trigger()
  }

  /** The fuller of the two bounds, as a fraction of its limit: 1.0 when writers block on it. */
  def fill: Double = math.max(records.get.toDouble / queueLimit, bytes.get.toDouble / maxBytes)

  override def toString: String = s"RecordBound(queue_limit=$queueLimit, max_outstanding_bytes=$maxBytes)"
}
