package io.github.sparkkinesis

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.metric.CustomTaskMetric
import org.apache.spark.sql.connector.write.{DataWriter, DataWriterFactory, WriterCommitMessage}
import org.apache.spark.sql.connector.write.streaming.StreamingDataWriterFactory
import io.github.sparkkinesis.replay.TaskReplay

/** Serialized to the executors: the parsed options, the row layout and the write's [[WritePlan]], nothing per task. */
private[sparkkinesis] final class KinesisDataWriterFactory(prepared: KinesisWriter.Prepared, plan: WritePlan)
    extends DataWriterFactory
    with StreamingDataWriterFactory {
  override def createWriter(partitionId: Int, taskId: Long): DataWriter[InternalRow] =
    createWriter(partitionId, taskId, -1L)

  override def createWriter(partitionId: Int, taskId: Long, epochId: Long): DataWriter[InternalRow] = {
    val attempt = TaskAttempt(partitionId.toLong, epochId, taskId, TaskReplay.retried)
    new KinesisDataWriter(prepared, plan, attempt, ProducerPool.default)
  }
}

/** The DataSource V2 adapter over [[KinesisTaskWriter]]: `commit` returns once every record of the task is confirmed,
  * `abort` gives the producer back without waiting, `close` after either is a no-op.
  */
private[sparkkinesis] final class KinesisDataWriter(
    prepared: KinesisWriter.Prepared,
    plan: WritePlan,
    attempt: TaskAttempt,
    pool: ProducerPool
) extends DataWriter[InternalRow] {
  private val task = new KinesisTaskWriter(prepared, plan, attempt, pool)
  private val converter = prepared.converter
  private val partitionId = attempt.partitionId

  override def write(row: InternalRow): Unit = task.write(converter.convertInternal(row, partitionId))

  override def commit(): WriterCommitMessage = {
    try task.commit()
    catch { case e: Throwable => task.close(committed = false); throw e }
    val stale = task.staleShipped
    task.close(committed = true)
    KinesisCommitMessage(stale)
  }

  override def abort(): Unit = task.close(committed = false)

  override def close(): Unit = task.close(committed = false)

  /** Spark reads these last just before `commit`, on the task thread, and keeps them only if the task commits
    * ([[TaskTotals]] says what each counts then).
    */
  override def currentMetricsValues(): Array[CustomTaskMetric] = KinesisSinkMetric.values(task.state)
}

/** A task's commit: the shipped streams whose layouts its producer found stale and read itself ([[DriverLayouts]]). */
private[sparkkinesis] final case class KinesisCommitMessage(staleShipped: Seq[String]) extends WriterCommitMessage
