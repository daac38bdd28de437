package io.github.sparkkinesis

import org.apache.spark.TaskContext
import org.apache.spark.sql.{ForeachWriter, Row}

import io.github.sparkkinesis.aggregation.ShippedLayout
import io.github.sparkkinesis.replay.{ForeachReplay, TaskReplay}

/** The `foreach` entry point: `df.writeStream.foreach(KinesisWriter.create(...))`, or Python's
  * `foreach(KinesisWriter(...))`. A thin adapter over [[KinesisTaskWriter]]: Spark calls `open`/`process`/`close` per
  * partition and epoch, and `close` is the epoch's commit.
  *
  * Built on the driver by `KinesisWriter.create` (options and schema already checked) and serialized to tasks; each
  * task gets its own copy. A `ForeachWriter` has no driver-side hook per batch, but the driver serializes it for each
  * batch's tasks: that is when it takes the stream's layout to ship ([[DriverLayouts]]), read again first if due.
  */
class KinesisForeachWriter private[sparkkinesis] (
    private[sparkkinesis] val options: KinesisWriterOptions,
    converter: RowConverter,
    private[sparkkinesis] val accumulators: Option[WriterAccumulators] = None,
    private[sparkkinesis] val replay: Option[ForeachReplay] = None,
    writers: Int = 0,
    @transient private val layouts: DriverLayouts = null // the driver's; null in a task's copy
) extends ForeachWriter[Row] {
  @transient private var task: KinesisTaskWriter = _
  private var shipped: Seq[ShippedLayout] = Nil

  @throws[java.io.IOException]
  private def writeObject(out: java.io.ObjectOutputStream): Unit = {
    if (layouts != null) shipped = layouts.forWrite()
    out.defaultWriteObject()
  }

  /** The pool to use: the JVM's real one. The seam for tests and the hot-path benchmark, which override it (in their
    * own sources) with a pool of stand-in producers; not part of the public API.
    */
  private[sparkkinesis] def pool: ProducerPool = ProducerPool.default

  override def open(partitionId: Long, epochId: Long): Boolean = {
    // Skip on replay: each task plans from its local properties (a ForeachWriter has no driver-side hook per batch).
    val r = replay.map { f =>
      val ctx = TaskContext.get()
      new TaskReplay(
        f.plan(ctx.getLocalProperty, epochId),
        partitionId,
        epochId,
        ctx.taskAttemptId(),
        TaskReplay.retried,
        options.flushTimeoutMs
      )
    }
    task =
      try new KinesisTaskWriter(options, pool, accumulators, partitionId, epochId, r.orNull, writers, shipped)
      catch { case e: Throwable => r.foreach(_.abort()); throw e }
    true
  }

  override def process(row: Row): Unit = task.write(converter.convert(row, task.partitionId))

  override def close(errorOrNull: Throwable): Unit = if (task != null) {
    var committed = false
    try if (errorOrNull == null) { task.commit(); committed = true }
    finally {
      task.close(committed)
      task = null
    }
  }

  /** Driver side: the accumulated totals of every finished task, as JSON (Python's `writer.metrics()`). */
  def metricsJson(): String = accumulators.map(_.json).getOrElse("{}")

  /** Shown in the query plan and progress: never a secret. */
  override def toString: String =
    s"KinesisWriter(${options.streamName.getOrElse("<per-row streams>")}, queueLimit=${options.queueLimit})"
}
