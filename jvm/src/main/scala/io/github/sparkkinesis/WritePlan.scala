package io.github.sparkkinesis

import org.apache.spark.sql.connector.write.{PhysicalWriteInfo, WriterCommitMessage}

import io.github.sparkkinesis.aggregation.ShippedLayout
import io.github.sparkkinesis.replay.ReplayPlan

/** What the driver worked out for one write, built once where the write is planned (a `format("kinesis")` write's
  * factory; the serialized `foreach` writer of a batch) and shipped to each of its tasks as this one value:
  *   - `writers`: the count of producers writing the query ([[WriterCount]]; 0: not counted), where each producer's
  *     share of a stream's quota starts;
  *   - `layouts`: the query's stream as the driver read it ([[DriverLayouts]]), so executors need not read it;
  *   - `replay`: skip on replay's plan for a micro-batch of `format("kinesis")` (a `foreach` task plans its own from
  *     its local properties: a `ForeachWriter` has no driver-side hook per batch).
  * A task's producer takes it in one place ([[SharedProducer.adopt]]); its commit reports which shipped layouts the
  * producer found stale ([[SharedProducer.staleShipped]]).
  */
private[sparkkinesis] final case class WritePlan(
    writers: Int = 0,
    layouts: Seq[ShippedLayout] = Nil,
    replay: Option[ReplayPlan] = None
)

/** Where a `format("kinesis")` write's [[WritePlan]] is made, on the driver, when Spark asks for its writer factory:
  * the driver's layouts of the stream, read again first if due ([[DriverLayouts]]), the count of producers writing and
  * the replay plan; and where the tasks' reports of stale layouts go back to at the commit.
  */
private[sparkkinesis] final class WritePlanner(layouts: Option[DriverLayouts], replay: Option[ReplayPlan]) {
  def plan(info: PhysicalWriteInfo): WritePlan =
    WritePlan(WriterCount.of(info.numPartitions), layouts.fold(Seq.empty[ShippedLayout])(_.toShip()), replay)

  def committed(messages: Array[WriterCommitMessage]): Unit =
    layouts.foreach(_.reported(messages.iterator.collect { case KinesisCommitMessage(s) => s }.flatten.toSeq))
}
