package io.github.sparkkinesis.replay

import java.io.{ObjectInputStream, ObjectOutputStream}
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.SparkContext
import org.slf4j.LoggerFactory

/** What the driver decided for one micro-batch's write, shipped to its tasks: where fingerprints go, the query's stable
  * id and the batch id, and whether this batch is a replay (fingerprints of an earlier attempt exist). Only a replay
  * skips, and only a replay asks Spark to cluster equal records into one task (see `KinesisWrite`), which is what makes
  * a task's own use of the confirmations exact.
  *
  * @param keyed
  *   whether the partition key is part of a record's content (it comes from the row); a generated one (`partitioner`)
  *   is not, so a replay that generates other keys still finds its records.
  */
private[sparkkinesis] final case class ReplayPlan(
    location: String,
    queryId: String,
    batchId: Long,
    replay: Boolean,
    keyed: Boolean,
    flushIntervalMs: Long,
    planId: String,
    conf: HadoopConf
) {
  @transient lazy val store: FingerprintStore = new FingerprintStore(new Path(location), conf.value)

  /** This plan in file names: its files are told apart from an earlier run's of the same batch. */
  def planTag: String = planId.replace("-", "")

  override def toString: String = s"ReplayPlan($location, query=$queryId, batch=$batchId, replay=$replay)"
}

private[sparkkinesis] object ReplayPlan {
  private val log = LoggerFactory.getLogger(classOf[ReplayPlan])

  // Spark's local properties for the batch being planned (MicroBatchExecution.BATCH_ID_KEY, StreamExecution's
  // IS_CONTINUOUS_PROCESSING and QUERY_ID_KEY), set on the query's thread before it plans the batch's write.
  val BatchIdProperty = "streaming.sql.batchId"
  val ContinuousProperty = "__is_continuous_processing"
  val QueryIdProperty = "sql.streaming.queryId"

  /** On the driver, when Spark builds the write of a micro-batch: removes the fingerprints of the query's committed
    * batches (those before this one) and looks for this batch's. Refuses writes that have no replayable batch id.
    */
  def plan(option: String, location: String, flushIntervalMs: Long, keyed: Boolean, queryId: String): ReplayPlan = {
    val sc = SparkContext.getOrCreate()
    val batchId = Option(sc.getLocalProperty(BatchIdProperty))
    // A batch write inside foreachBatch sees the batch id too, but Spark gives its write a random query id.
    val ownQuery = sc.getLocalProperty(QueryIdProperty) == queryId
    if (batchId.isEmpty || !ownQuery || sc.getLocalProperty(ContinuousProperty) == "true")
      throw new IllegalArgumentException(
        s"Option $option works with micro-batch streaming queries only (writeStream with the default, processingTime, " +
          "availableNow or once trigger): a batch write (save(), also inside foreachBatch) and continuous processing " +
          s"have no batch id that a restart replays. Remove $option."
      )
    val id = batchId.get.toLong
    val conf = new HadoopConf(sc.hadoopConfiguration)
    val first = ReplayPlan(location, queryId, id, false, keyed, flushIntervalMs, UUID.randomUUID().toString, conf)
    val deleted = first.store.deleteBefore(queryId, id)
    val again = first.store.exists(queryId, id)
    if (again || deleted > 0)
      log.info(
        s"Query $queryId batch $id: ${if (again) "a replay: records Kinesis confirmed in an earlier attempt are skipped"
          else "a first attempt"}; fingerprints of $deleted committed batches removed from $location"
      )
    first.copy(replay = again)
  }

  /** `foreach` cannot ask Spark to bring equal rows together, which skipping needs: the mode is refused there. */
  def foreachRefused(option: String): IllegalArgumentException = new IllegalArgumentException(
    s"Option $option works with format('kinesis') only: df.writeStream.format('kinesis').options(...) (in Python: " +
      s".options(**writer.options())). foreach(...) cannot ask Spark to bring equal rows of a replayed batch into " +
      "one task, so skipping what Kinesis confirmed could skip a row twice against one confirmation."
  )
}

/** A Hadoop configuration that travels to tasks (as Spark's own `SerializableConfiguration`, which is internal). */
private[sparkkinesis] final class HadoopConf(@transient var value: Configuration) extends Serializable {
  private def writeObject(out: ObjectOutputStream): Unit = { out.defaultWriteObject(); value.write(out) }
  private def readObject(in: ObjectInputStream): Unit = {
    in.defaultReadObject()
    value = new Configuration(false)
    value.readFields(in)
  }
}
