package io.github.sparkkinesis

import org.apache.spark.sql.connector.metric.CustomMetric
import org.apache.spark.sql.connector.write.{
  BatchWrite,
  DataWriterFactory,
  PhysicalWriteInfo,
  Write,
  WriterCommitMessage
}
import org.apache.spark.sql.connector.distributions.{Distribution, Distributions}
import org.apache.spark.sql.connector.expressions.{Expression, Expressions, SortDirection, SortOrder}
import org.apache.spark.sql.connector.write.RequiresDistributionAndOrdering
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.connector.write.streaming.{StreamingDataWriterFactory, StreamingWrite}
import io.github.sparkkinesis.replay.ReplayPlan

/** The logical write of the `kinesis` sink: options and schema checked, ready for a batch or a streaming query. */
private[sparkkinesis] final class KinesisWrite(
    prepared: KinesisWriter.Prepared,
    truncate: Boolean,
    contentColumns: Seq[String] = Nil,
    layouts: Option[DriverLayouts] = None,
    replay: Option[ReplayPlan] = None
) extends Write
    with RequiresDistributionAndOrdering {
  override def description(): String = s"Kinesis(${prepared.options.label}, queueLimit=${prepared.options.queueLimit})"

  override def toBatch: BatchWrite = {
    if (truncate) throw KinesisSink.unsupportedMode("overwrite")
    new KinesisBatchWrite(prepared, planner)
  }

  override def toStreaming: StreamingWrite = new KinesisStreamingWrite(prepared, planner)

  private def planner = new WritePlanner(layouts, replay)

  override def supportedCustomMetrics(): Array[CustomMetric] = KinesisSinkMetric.all.toArray

  /** With `order_by`, rows are clustered by their partition key and sorted by those columns, so one task writes each
    * key's records in that order (the writer keeps it: `ordered`). A replayed batch (skip on replay) clusters rows by
    * their record's content, so equal records meet in one task and each task's use of the earlier confirmations is
    * exact; by the partition key alone when the writer keeps order and the key is part of the content (equal records
    * still meet, and a key's rows are not spread over tasks). Any other write leaves the rows where they are.
    */
  override def requiredDistribution(): Distribution = {
    val byKey = prepared.options.ordered && DedupeOptions.keyed(prepared.options)
    replay match {
      case _ if prepared.options.orderBy.nonEmpty => KinesisWrite.clustered(Seq(RowConverter.PartitionKey))
      case Some(p) if p.replay && byKey           => KinesisWrite.clustered(Seq(RowConverter.PartitionKey))
      case Some(p) if p.replay                    => KinesisWrite.clustered(contentColumns)
      case _                                      => Distributions.unspecified()
    }
  }
  override def requiredOrdering(): Array[SortOrder] =
    prepared.options.orderBy.map(c => Expressions.sort(Expressions.column(c), SortDirection.ASCENDING)).toArray
}

private[sparkkinesis] object KinesisWrite {

  private def clustered(columns: Seq[String]): Distribution =
    Distributions.clustered(columns.map(c => Expressions.column(c): Expression).toArray)

  /** Skip on replay's plan for the micro-batch Spark is planning (None when the mode is off). */
  def replayPlan(prepared: KinesisWriter.Prepared, queryId: String): Option[ReplayPlan] =
    prepared.options.dedupe.map { d =>
      val keyed = DedupeOptions.keyed(prepared.options)
      val name = KinesisWriterOptions.DedupeLocation.name
      ReplayPlan.plan(name, d.location, d.flushIntervalMs, keyed, queryId, prepared.options.flushTimeoutMs)
    }

  /** The columns a record's content comes from (fingerprinted on replay: stream, partition key, hash key, data). */
  def contentColumns(prepared: KinesisWriter.Prepared, schema: StructType): Seq[String] = {
    val names = schema.fieldNames.toSet
    Seq(RowConverter.Data) ++
      Seq(RowConverter.StreamName, RowConverter.ExplicitHashKey).filter(names.contains) ++
      Seq(RowConverter.PartitionKey).filter(c => DedupeOptions.keyed(prepared.options) && names.contains(c))
  }
}

/** Commits need no coordination: every task's records are confirmed before its commit returns, and Kinesis has nothing
  * to finalise. An aborted epoch or job leaves what its tasks wrote (at-least-once, as the `foreach` path).
  */
private[sparkkinesis] final class KinesisBatchWrite(prepared: KinesisWriter.Prepared, planner: WritePlanner)
    extends BatchWrite {
  override def createBatchWriterFactory(info: PhysicalWriteInfo): DataWriterFactory =
    new KinesisDataWriterFactory(prepared, planner.plan(info))
  override def useCommitCoordinator(): Boolean = false
  override def commit(messages: Array[WriterCommitMessage]): Unit = planner.committed(messages)
  override def abort(messages: Array[WriterCommitMessage]): Unit = ()
}

private[sparkkinesis] final class KinesisStreamingWrite(prepared: KinesisWriter.Prepared, planner: WritePlanner)
    extends StreamingWrite {
  override def createStreamingWriterFactory(info: PhysicalWriteInfo): StreamingDataWriterFactory =
    new KinesisDataWriterFactory(prepared, planner.plan(info))
  override def useCommitCoordinator(): Boolean = false
  override def commit(epochId: Long, messages: Array[WriterCommitMessage]): Unit = planner.committed(messages)
  override def abort(epochId: Long, messages: Array[WriterCommitMessage]): Unit = ()
}
