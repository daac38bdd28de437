package io.github.sparkkinesis.replay

import java.io.{ObjectInputStream, ObjectOutputStream}
import java.util.UUID

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.SparkContext
import org.apache.spark.broadcast.Broadcast
import org.slf4j.LoggerFactory

import io.github.sparkkinesis.aggregation.Clock

/** What was decided for one micro-batch's write, shipped to its tasks: where fingerprints go, the query's stable id and
  * the batch id, and how a task may skip.
  *
  *   - `format("kinesis")` (the driver plans each batch, [[ReplayPlan.plan]]): only a replay (fingerprints of an
  *     earlier attempt exist) skips, and only a replay asks Spark to cluster equal records into one task (see
  *     `KinesisWrite`), which is what makes a task's own use of the whole batch's confirmations exact.
  *   - `foreach` (`perPartition`; each task plans, [[ForeachReplay]]): a task skips only against what earlier attempts
  *     of its own partition confirmed, which loses nothing whatever the replay's partitioning (docs/reliability.md).
  *
  * @param keyed
  *   whether the partition key is part of a record's content (it comes from the row); a generated one (`partitioner`)
  *   is not, so a replay that generates other keys still finds its records.
  * @param planId
  *   one planning of the batch: the driver's random id (format), the query's run id (foreach); files of one plan are
  *   told apart from another's by it.
  */
private[sparkkinesis] final case class ReplayPlan(
    location: String,
    queryId: String,
    batchId: Long,
    replay: Boolean,
    keyed: Boolean,
    flushIntervalMs: Long,
    planId: String,
    conf: QueryConf,
    perPartition: Boolean = false
) {
  @transient lazy val store: FingerprintStore = new FingerprintStore(new Path(location), conf.value)

  /** This plan in file names (its letters and digits): its files are told apart from an earlier run's of the batch. */
  def planTag: String = planId.filter(_.isLetterOrDigit)

  override def toString: String =
    s"ReplayPlan($location, query=$queryId, batch=$batchId, replay=$replay, perPartition=$perPartition)"
}

private[sparkkinesis] object ReplayPlan {
  private val log = LoggerFactory.getLogger(classOf[ReplayPlan])

  // Spark's local properties for the batch being planned (MicroBatchExecution.BATCH_ID_KEY, StreamExecution's
  // IS_CONTINUOUS_PROCESSING and QUERY_ID_KEY), set on the query's thread before it plans the batch's write, and seen
  // by the batch's tasks; the job group, which StreamExecution sets to the run id (Spark 3.5 and 4.x).
  val BatchIdProperty = "streaming.sql.batchId"
  val ContinuousProperty = "__is_continuous_processing"
  val QueryIdProperty = "sql.streaming.queryId"
  val RunProperty = "spark.jobGroup.id"

  /** On the driver, when Spark builds the write of a micro-batch: removes the fingerprints of the query's committed
    * batches (those before this one) and looks for this batch's. Refuses writes that have no replayable batch id.
    */
  def plan(
      option: String,
      location: String,
      flushIntervalMs: Long,
      keyed: Boolean,
      queryId: String,
      settleMs: Long = 0L
  ): ReplayPlan = {
    val sc = SparkContext.getOrCreate()
    val batchId = Option(sc.getLocalProperty(BatchIdProperty))
    // A batch write inside foreachBatch sees the batch id too, but Spark gives its write a random query id.
    val ownQuery = sc.getLocalProperty(QueryIdProperty) == queryId
    if (batchId.isEmpty || !ownQuery || sc.getLocalProperty(ContinuousProperty) == "true") throw notMicroBatch(option)
    val id = batchId.get.toLong
    val conf = QueryConf(sc, queryId)
    val first = ReplayPlan(location, queryId, id, false, keyed, flushIntervalMs, UUID.randomUUID().toString, conf)
    // A run stopped mid-batch in this JVM (local mode: the driver's) may still be writing what it had in flight: whether
    // this batch is a replay is decided once those confirmations are in (TaskReplay waits the same way in each task).
    ReplayCache.awaitEarlier(queryId, id, first.planId, settleMs, Clock.system)
    val deleted = first.store.deleteBefore(queryId, id)
    val again = first.store.exists(queryId, id)
    if (again || deleted > 0)
      log.info(
        s"Query $queryId batch $id: ${if (again) "a replay: records Kinesis confirmed in an earlier attempt are skipped"
          else "a first attempt"}; fingerprints of $deleted committed batches removed from $location"
      )
    first.copy(replay = again)
  }

  def notMicroBatch(option: String): IllegalArgumentException = new IllegalArgumentException(
    s"Option $option works with micro-batch streaming queries only (writeStream with the default, processingTime, " +
      "availableNow or once trigger): a batch write (save(), also inside foreachBatch) and continuous processing " +
      s"(trigger(continuous=...)) have no batch id that a restart replays. Remove $option, or use a micro-batch trigger."
  )
}

/** `foreach`'s side of skip on replay, built on the driver with the writer (no batch is known yet); each task makes its
  * own [[ReplayPlan]] from Spark's local properties, which the driver sets for every micro-batch's jobs: a
  * `ForeachWriter` has no driver-side hook per batch, nor can it ask Spark for a distribution.
  */
private[sparkkinesis] final case class ForeachReplay(
    option: String,
    location: String,
    flushIntervalMs: Long,
    keyed: Boolean,
    conf: QueryConf
) {

  /** In a task of batch `epochId` (`property`: the task's local properties): its plan, or a clear failure where the
    * epoch is no replayable batch. Also removes, once per JVM per batch, the query's fingerprints of the batches before
    * this one: a task of batch N runs only once Spark has planned N, which it does only after N−1's commit is logged.
    */
  def plan(property: String => String, epochId: Long): ReplayPlan = {
    val queryId = Option(property(ReplayPlan.QueryIdProperty))
    // Micro-batch execution sets the batch id (the epoch); continuous processing does not (its epochs replay by offset).
    if (
      property(ReplayPlan.ContinuousProperty) == "true" || queryId.isEmpty ||
      !Option(property(ReplayPlan.BatchIdProperty)).contains(epochId.toString)
    ) throw ReplayPlan.notMicroBatch(option)
    // The run id (Spark's job group for a streaming query's jobs): equal for every task of one run, so a JVM lists a
    // batch once per run. Without it each task lists for itself, which is only slower; a listing older than the run
    // only skips less.
    val run = Option(property(ReplayPlan.RunProperty)).getOrElse(UUID.randomUUID().toString)
    val plan =
      ReplayPlan(location, queryId.get, epochId, false, keyed, flushIntervalMs, run, conf, perPartition = true)
    ReplayCache.cleanBefore(plan)
    plan
  }

  override def toString: String = s"ForeachReplay($location)"
}

/** The Hadoop configuration a plan's store uses. `format("kinesis")`: on the driver the SparkContext's, in tasks a copy
  * broadcast once per run of the query, not serialized into every batch's tasks (a configuration holds every Hadoop
  * default, and each task would read it all again). The copy is the SparkContext's configuration when the run planned
  * its first batch: s3a settings and credentials providers reach the executors as they are; a later change to the
  * SparkContext's configuration reaches the query's next run. `foreach` (and a thread that names no run) ships it
  * whole.
  */
private[sparkkinesis] final class QueryConf private (
    @transient private val driver: Configuration,
    shared: Broadcast[HadoopConf],
    direct: HadoopConf
) extends Serializable {
  def value: Configuration =
    if (driver != null) driver else if (shared != null) shared.value.value else direct.value
}

private[sparkkinesis] object QueryConf {
  // Per query: the run whose broadcast it is, and the broadcast (the previous run's is left to Spark's cleaner).
  private val runs = new java.util.HashMap[String, (String, Broadcast[HadoopConf])]()

  /** Shipped whole with the plan (tests, and a planning thread that names no run). */
  def apply(conf: Configuration): QueryConf = new QueryConf(null, null, new HadoopConf(conf))

  /** On the driver, planning a batch of `queryId`: the run's broadcast, made at its first batch. */
  def apply(sc: SparkContext, queryId: String): QueryConf = {
    val conf = sc.hadoopConfiguration
    Option(sc.getLocalProperty(ReplayPlan.RunProperty)) match {
      case None => QueryConf(conf)
      case Some(run) =>
        val b = runs.synchronized {
          val cur = runs.get(queryId)
          if (cur != null && cur._1 == run) cur._2
          else {
            val n = sc.broadcast(new HadoopConf(new Configuration(conf)))
            runs.put(queryId, (run, n))
            n
          }
        }
        new QueryConf(conf, b, null)
    }
  }
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
