package io.github.sparkkinesis

import org.apache.spark.TaskContext
import org.apache.spark.sql.{ForeachWriter, Row}

import io.github.sparkkinesis.replay.{ForeachReplay, TaskReplay}

/** The `foreach` entry point: `df.writeStream.foreach(KinesisWriter.create(...))`, or Python's
  * `foreach(KinesisWriter(...))`. A thin adapter over [[KinesisTaskWriter]]: Spark calls `open`/`process`/`close` per
  * partition and epoch, and `close` is the epoch's commit.
  *
  * Built on the driver by `KinesisWriter.create` (options and schema already checked) and serialized to tasks; each
  * task gets its own copy. A `ForeachWriter` has no driver-side hook per batch, but the driver serializes it for each
  * batch's tasks: that is when it makes the batch's [[WritePlan]] (see `writeObject`).
  */
class KinesisForeachWriter private[sparkkinesis] (
    private[sparkkinesis] val prepared: KinesisWriter.Prepared,
    private[sparkkinesis] val replay: Option[ForeachReplay] = None,
    writers: Int = 0,
    @transient private val layouts: DriverLayouts = null // the driver's; null in a task's copy
) extends ForeachWriter[Row] {
  @transient private var task: KinesisTaskWriter = _
  private var plan = WritePlan(writers)

  /** The driver serializes this writer for each batch's tasks: the batch's [[WritePlan]] is made then, with the layout
    * the driver holds ([[DriverLayouts.toShipNow]] returns at once; a read that is due runs in the background, never
    * inside serialization, so a slow or throttled Kinesis cannot hold up Spark's scheduling).
    */
  @throws[java.io.IOException]
  private def writeObject(out: java.io.ObjectOutputStream): Unit = {
    if (layouts != null) {
      prepared.accumulators.foreach(a => layouts.reported(a.claimStaleShipped()))
      plan = WritePlan(writers, layouts.toShipNow())
    }
    out.defaultWriteObject()
  }

  private[sparkkinesis] def options: KinesisWriterOptions = prepared.options
  private[sparkkinesis] def accumulators: Option[WriterAccumulators] = prepared.accumulators

  /** The pool to use: the JVM's real one. The seam for tests and the hot-path benchmark, which override it (in their
    * own sources) with a pool of stand-in producers; not part of the public API.
    */
  private[sparkkinesis] def pool: ProducerPool = ProducerPool.default

  override def open(partitionId: Long, epochId: Long): Boolean = {
    val ctx = Option(TaskContext.get())
    val attempt = TaskAttempt(partitionId, epochId, ctx.fold(-1L)(_.taskAttemptId()), TaskReplay.retried)
    // Skip on replay: each task plans from its local properties (a ForeachWriter has no driver-side hook per batch).
    val taskPlan = replay.fold(plan)(f => plan.copy(replay = Some(f.plan(ctx.get.getLocalProperty, epochId))))
    task = new KinesisTaskWriter(prepared, taskPlan, attempt, pool)
    true
  }

  override def process(row: Row): Unit = task.write(prepared.converter.convert(row, task.partitionId))

  override def close(errorOrNull: Throwable): Unit = if (task != null) {
    var committed = false
    try if (errorOrNull == null) { task.commit(); committed = true }
    finally {
      // Layouts the producer found stale go back to the driver with the task's totals, read before the next batch.
      if (committed) prepared.accumulators.foreach(_.addStaleShipped(task.staleShipped))
      task.close(committed)
      task = null
    }
  }

  /** Driver side: the accumulated totals of every finished task, as JSON (Python's `writer.metrics()`). */
  def metricsJson(): String = prepared.accumulators.map(_.json).getOrElse("{}")

  /** Shown in the query plan and progress: never a secret. */
  override def toString: String =
    s"KinesisWriter(${options.streamName.getOrElse("<per-row streams>")}, queueLimit=${options.queueLimit})"
}
