package io.github.sparkkinesis.aggregation

/** Where the aggregation reads the time (linger deadlines, the shards' quotas, layout re-reads, re-send deadlines): a
  * parameter, so unit tests drive a clock of their own rather than wait.
  */
private[sparkkinesis] trait Clock {

  /** Nanoseconds from an arbitrary origin, as `System.nanoTime`: only differences mean anything. */
  def nanoTime(): Long
}

private[sparkkinesis] object Clock {

  /** The JVM's monotonic clock: the one the writer runs on. */
  val system: Clock = () => System.nanoTime()
}
