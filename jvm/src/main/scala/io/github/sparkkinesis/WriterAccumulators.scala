package io.github.sparkkinesis

import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.util.LongAccumulator

/** Driver-side totals of one writer: named accumulators, so they also show on the Spark UI's stage pages. Tasks add
  * their totals once, in `close`, from the task thread. Failed task attempts' updates are discarded by Spark, so these
  * count confirmed records of successful tasks.
  */
private[sparkkinesis] final class WriterAccumulators private (
    val recordsSent: LongAccumulator,
    val recordsFailed: LongAccumulator,
    val bytesSent: LongAccumulator,
    val backpressureCycles: LongAccumulator,
    val backpressureWaitMs: LongAccumulator
) extends Serializable {

  private[sparkkinesis] def add(s: WriterState): Unit =
    all.zip(WriterAccumulators.values(s)).foreach { case (a, v) => a.add(v) }

  /** In the order of [[WriterAccumulators.Names]]. */
  private def all = Seq(recordsSent, recordsFailed, bytesSent, backpressureCycles, backpressureWaitMs)

  /** The totals of every finished task so far, by name. */
  def totals: Seq[(String, Long)] = WriterAccumulators.Names.zip(all.map(_.sum))

  def json: String = totals.map { case (k, v) => s""""$k": $v""" }.mkString("{", ", ", "}")
}

private[sparkkinesis] object WriterAccumulators {

  /** The accumulators' names, in constructor order (`kinesis.<label>.<name>`; docs/metrics.md is checked against it).
    */
  val Names: Seq[String] = Seq("recordsSent", "recordsFailed", "bytesSent", "backpressureCycles", "backpressureWaitMs")

  /** One task's counts, in the order of [[Names]] (what it adds to the accumulators and reports as DSv2 metrics). */
  private[sparkkinesis] def values(s: WriterState): Seq[Long] =
    Seq(s.sent.sum, s.failedCount.sum, s.bytesSent.sum, s.cycles, s.blockedNanos / 1000000L)

  /** Registers the accumulators `kinesis.<label>.<name>` with the driver's SparkContext, if any. py4j calls arrive on a
    * gateway thread, where the thread-local active session may be unset.
    */
  def register(label: String): Option[WriterAccumulators] =
    SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession).map(s => register(s.sparkContext, label))

  def register(sc: SparkContext, label: String): WriterAccumulators = {
    val a = Names.map(name => sc.longAccumulator(s"kinesis.$label.$name"))
    new WriterAccumulators(a(0), a(1), a(2), a(3), a(4))
  }
}
