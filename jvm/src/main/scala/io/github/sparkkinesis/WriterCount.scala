package io.github.sparkkinesis

import org.apache.spark.sql.SparkSession

/** How many producers (executor JVMs, one shared producer each) write a query's records at once, as the driver sees it
  * when it plans the write: its live executors (in local mode, the driver's one JVM), at most one per partition of the
  * write. A producer starts its share of each stream's quota at the inverse ([[aggregation.RateShare]]): writers that
  * start together start fair and within the quota, where finding the share from throttles alone overshoots and cuts
  * unevenly. Only where the writing starts: the share then follows Kinesis' answers (other applications on the stream,
  * executors added later). 0 when the driver has no session (the share then finds its start alone).
  */
private[sparkkinesis] object WriterCount {

  /** The live executors (the driver's entry aside); 0 with no session. */
  def executors(): Int =
    SparkSession.getActiveSession
      .orElse(SparkSession.getDefaultSession)
      .map(s => math.max(1, s.sparkContext.statusTracker.getExecutorInfos.length - 1))
      .getOrElse(0)

  /** Of a write of `partitions` tasks (or of as many as there are executors, when the count is not known). */
  def of(partitions: Int = Int.MaxValue): Int = count(partitions, executors())

  /** Of `partitions` tasks on `executors` executors (0: not known). */
  def count(partitions: Int, executors: Int): Int =
    if (executors <= 0) 0 else math.max(1, math.min(partitions, executors))
}
