package io.github.sparkkinesis

import org.apache.spark.SparkContext
import org.apache.spark.sql.SparkSession
import org.apache.spark.util.{CollectionAccumulator, LongAccumulator}

import io.github.sparkkinesis.compat.CollectionConverters._

/** One of a writer's totals: its name (the accumulator `kinesis.<label>.<name>`, the key of `writer.metrics()` and of
  * the progress's sink metrics), its unit and what it counts. A [[TaskTotal]] is each task's, a [[DriverTotal]] the
  * driver's own.
  */
private[sparkkinesis] sealed trait Total {
  def name: String
  def unit: String
  def description: String
}

/** A task's total, also a DataSource V2 custom metric (the SQL tab shows its description), read from the task's state
  * on the task's own thread.
  */
private[sparkkinesis] final case class TaskTotal(
    name: String,
    unit: String,
    description: String,
    of: WriterState => Long
) extends Total

/** A total of the driver's own work for a writer (no task reports it: not on the SQL tab). */
private[sparkkinesis] final case class DriverTotal(
    name: String,
    unit: String,
    description: String,
    of: ControlPlaneCount => Long
) extends Total

/** The totals: the one list behind the accumulators, the DataSource V2 custom metrics (the task totals) and, through
  * the facts resource (`Facts`, build code in jvm/src/facts), Python's `writer.metrics()` docstring and the docs'
  * check.
  */
private[sparkkinesis] object TaskTotals {

  /** Records and bytes count what the task put less what failed. Read at close, after a commit (which waits for every
    * record), that is exactly what Kinesis confirmed. Read just before the commit (the DataSource V2 metrics, which
    * Spark keeps only if that commit succeeds), the records still pending count as sent: the commit then confirms them,
    * or fails the task (with fail_on_error=false, one that fails during the commit's flush counts as sent there). A
    * task that does not commit fails, and Spark drops its accumulator updates. The control-plane calls are its
    * producer's (its executor JVM's writer), each counted by one task ([[ControlPlaneCalls.claim]]).
    */
  val all: Seq[TaskTotal] = Seq(
    TaskTotal("recordsSent", "records", "Kinesis records confirmed", s => s.written - s.failedCount.sum),
    TaskTotal("recordsFailed", "records", "Kinesis records failed", _.failedCount.sum),
    TaskTotal("bytesSent", "bytes", "Kinesis payload bytes confirmed", s => s.writtenBytes - s.failedBytes.sum),
    TaskTotal("backpressureCycles", "wait steps", "Kinesis backpressure wait steps", _.cycles),
    TaskTotal("backpressureWaitMs", "ms", "Kinesis backpressure wait (ms)", _.blockedNanos / 1000000L),
    TaskTotal("controlPlaneCalls", "calls", "Kinesis control-plane calls (executors)", _.controlPlane().calls),
    TaskTotal("controlPlaneThrottles", "calls", "Kinesis control-plane calls throttled", _.controlPlane().throttles)
  )

  /** The driver's calls for the writer: its start check and the layouts it ships ([[DriverLayouts]]). */
  val driver: Seq[DriverTotal] = Seq(
    DriverTotal("driverControlPlaneCalls", "calls", "Kinesis control-plane calls (driver)", _.calls),
    DriverTotal("driverControlPlaneThrottles", "calls", "Kinesis control-plane calls throttled (driver)", _.throttles)
  )

  /** Every total, the tasks' first. */
  val every: Seq[Total] = all ++ driver

  val names: Seq[String] = all.map(_.name)
}

/** Driver-side totals of one writer: named accumulators, so they also show on the Spark UI's stage pages. Tasks add
  * their totals once, in `close`, from the task thread. Failed task attempts' updates are discarded by Spark, so these
  * count confirmed records of successful tasks.
  */
private[sparkkinesis] final class WriterAccumulators private (
    accumulators: Seq[LongAccumulator], // in the order of TaskTotals.every
    staleShipped: CollectionAccumulator[String]
) extends Serializable {

  /** Task side (`foreach`, whose tasks send the driver no commit message): the streams whose shipped layouts the task's
    * producer found stale ([[DriverLayouts]] reads them again for the next batch).
    */
  private[sparkkinesis] def addStaleShipped(streams: Seq[String]): Unit = streams.foreach(staleShipped.add)

  /** Driver side: the streams tasks reported stale since the last call. */
  private[sparkkinesis] def claimStaleShipped(): Seq[String] = synchronized {
    val reported = staleShipped.value.asScala.toList
    if (reported.nonEmpty) staleShipped.reset()
    reported
  }

  private[sparkkinesis] def add(s: WriterState): Unit =
    TaskTotals.all.zip(accumulators).foreach { case (t, a) => a.add(t.of(s)) }

  /** Driver side: the driver's own calls for the writer. */
  private[sparkkinesis] def addDriver(c: ControlPlaneCount): Unit =
    TaskTotals.driver.zip(accumulators.drop(TaskTotals.all.size)).foreach { case (t, a) => a.add(t.of(c)) }

  /** The totals of every finished task so far, and the driver's, by name. */
  def totals: Seq[(String, Long)] = TaskTotals.every.map(_.name).zip(accumulators.map(_.sum))

  def json: String = totals.map { case (k, v) => s""""$k": $v""" }.mkString("{", ", ", "}")
}

private[sparkkinesis] object WriterAccumulators {

  /** Registers the accumulators `kinesis.<label>.<name>` with the driver's SparkContext, if any. py4j calls arrive on a
    * gateway thread, where the thread-local active session may be unset.
    */
  def register(label: String): Option[WriterAccumulators] =
    SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession).map(s => register(s.sparkContext, label))

  def register(sc: SparkContext, label: String): WriterAccumulators =
    new WriterAccumulators(
      TaskTotals.every.map(t => sc.longAccumulator(s"kinesis.$label.${t.name}")),
      sc.collectionAccumulator[String]
    )
}
