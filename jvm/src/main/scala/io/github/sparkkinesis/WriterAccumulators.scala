package io.github.sparkkinesis

import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.util.LongAccumulator

/** One of a task's totals: its name (the accumulator `kinesis.<label>.<name>`, the DataSource V2 custom metric, the key
  * of `writer.metrics()` and of the progress's sink metrics), its unit, what it counts (the SQL tab shows it) and how
  * it is read from the task's state, on the task's own thread.
  */
private[sparkkinesis] final case class TaskTotal(
    name: String,
    unit: String,
    description: String,
    of: WriterState => Long
)

/** The task totals: the one list behind the accumulators, the DataSource V2 custom metrics and, through the facts
  * resource (`Facts`, build code in jvm/src/facts), Python's `writer.metrics()` docstring and the docs' check.
  */
private[sparkkinesis] object TaskTotals {

  /** Records and bytes count what the task put less what failed. Read at close, after a commit (which waits for every
    * record), that is exactly what Kinesis confirmed. Read just before the commit (the DataSource V2 metrics, which
    * Spark keeps only if that commit succeeds), the records still pending count as sent: the commit then confirms them,
    * or fails the task (with fail_on_error=false, one that fails during the commit's flush counts as sent there). A
    * task that does not commit fails, and Spark drops its accumulator updates.
    */
  val all: Seq[TaskTotal] = Seq(
    TaskTotal("recordsSent", "records", "Kinesis records confirmed", s => s.written - s.failedCount.sum),
    TaskTotal("recordsFailed", "records", "Kinesis records failed", _.failedCount.sum),
    TaskTotal("bytesSent", "bytes", "Kinesis payload bytes confirmed", s => s.writtenBytes - s.failedBytes.sum),
    TaskTotal("backpressureCycles", "wait steps", "Kinesis backpressure wait steps", _.cycles),
    TaskTotal("backpressureWaitMs", "ms", "Kinesis backpressure wait (ms)", _.blockedNanos / 1000000L)
  )

  val names: Seq[String] = all.map(_.name)
}

/** Driver-side totals of one writer: named accumulators, so they also show on the Spark UI's stage pages. Tasks add
  * their totals once, in `close`, from the task thread. Failed task attempts' updates are discarded by Spark, so these
  * count confirmed records of successful tasks.
  */
private[sparkkinesis] final class WriterAccumulators private (
    accumulators: Seq[LongAccumulator] // in the order of TaskTotals.all
) extends Serializable {

  private[sparkkinesis] def add(s: WriterState): Unit =
    TaskTotals.all.zip(accumulators).foreach { case (t, a) => a.add(t.of(s)) }

  /** The totals of every finished task so far, by name. */
  def totals: Seq[(String, Long)] = TaskTotals.names.zip(accumulators.map(_.sum))

  def json: String = totals.map { case (k, v) => s""""$k": $v""" }.mkString("{", ", ", "}")
}

private[sparkkinesis] object WriterAccumulators {

  /** Registers the accumulators `kinesis.<label>.<name>` with the driver's SparkContext, if any. py4j calls arrive on a
    * gateway thread, where the thread-local active session may be unset.
    */
  def register(label: String): Option[WriterAccumulators] =
    SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession).map(s => register(s.sparkContext, label))

  def register(sc: SparkContext, label: String): WriterAccumulators =
    new WriterAccumulators(TaskTotals.names.map(name => sc.longAccumulator(s"kinesis.$label.$name")))
}
