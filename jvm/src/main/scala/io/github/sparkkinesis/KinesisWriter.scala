package io.github.sparkkinesis

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.StructType

import io.github.sparkkinesis.aggregation.StreamLayout
import io.github.sparkkinesis.compat.CollectionConverters._
import io.github.sparkkinesis.replay.{ForeachReplay, QueryConf}

/** The `foreach` entry point (Python's `KinesisWriter` calls `create` through py4j; Scala and Java callers too), and
  * the driver-side build it shares with the `format("kinesis")` entry point ([[KinesisSourceProvider]]).
  *
  * {{{
  * df.writeStream.foreach(KinesisWriter.create(Map("stream_name" -> "events").asJava, df.schema)).start()
  * }}}
  */
object KinesisWriter {

  /** Parses and validates options and the schema on the driver; every mistake is an `IllegalArgumentException` naming
    * the option or column and the fix. A jar built for another Spark line or Scala version fails first, with an
    * `IllegalStateException` naming the artifact to use.
    */
  def create(options: java.util.Map[String, String], schema: StructType): KinesisForeachWriter = {
    val prepared = prepare(options.asScala.toMap, schema)
    if (prepared.options.orderBy.nonEmpty)
      throw new IllegalArgumentException(
        s"Option ${KinesisWriterOptions.OrderBy.name} asks Spark to sort each key's rows for the sink, which only " +
          "format('kinesis') can ask (a streaming query may not sort by itself): write with " +
          s"format('kinesis') and ${KinesisWriterOptions.OrderBy.name}, or keep foreach with " +
          s"${KinesisWriterOptions.Ordered.name}=True, which keeps the order each task reads its rows in."
      )
    val calls = ControlPlaneCalls() // the driver's, for this writer
    val first = checkBeforeStart(prepared.options, calls)
    val p = tellingDaemonsTheStrategy(prepared, first)
    new KinesisForeachWriter(
      p,
      foreachReplay(p.options),
      WriterCount.of(),
      DriverLayouts(p.options, first, calls, p.accumulators)
    )
  }

  /** Skip on replay for `foreach`: what its tasks need from the driver (the Hadoop configuration of the directory). */
  private def foreachReplay(options: KinesisWriterOptions): Option[ForeachReplay] = options.dedupe.map { d =>
    val hadoop = SparkSession.getActiveSession
      .orElse(SparkSession.getDefaultSession)
      .map(_.sparkContext.hadoopConfiguration)
      .getOrElse(new Configuration())
    val name = KinesisWriterOptions.DedupeLocation.name
    ForeachReplay(name, d.location, d.flushIntervalMs, DedupeOptions.keyed(options), QueryConf(hadoop))
  }

  /** What the driver can see of a write's first failures, checked when the query starts (after its options and schema):
    * the stream itself ([[StreamCheck]]) and, in local mode (the KPL daemon then runs on this host), whether the daemon
    * can run here ([[DaemonCheck.environment]]). Mistakes are `IllegalArgumentException`s naming the fix. Returns the
    * stream's layout when the check could read it ([[DriverLayouts]]); `calls` counts the check's calls.
    */
  private[sparkkinesis] def checkBeforeStart(
      options: KinesisWriterOptions,
      calls: ControlPlaneCalls
  ): Option[StreamLayout] = {
    val session = SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession)
    // local[...] runs the tasks in this JVM; local-cluster[...] on this host, in JVMs of their own.
    val local = session.exists(_.sparkContext.master.startsWith("local"))
    if (local)
      try DaemonCheck.environment(options.producer)
      catch { case e: KinesisWriteException => throw new IllegalArgumentException(e.getMessage, e) }
    val layout = StreamCheck.run(options, local, calls)
    if (options.ordered && layout.exists(_.auto))
      throw new IllegalArgumentException(
        s"Option ${KinesisWriterOptions.Ordered.name} keeps each key's order within its shard, and stream " +
          s"${options.label}'s RecordDistributionStrategy is AUTO: Kinesis places its records on any shard, so no " +
          s"writer can keep a key's order there. Remove ${KinesisWriterOptions.Ordered.name}, or write to a stream " +
          "that places records by key (USER_PARTITION_KEY)."
      )
    layout
  }

  /** What every entry point checks and builds on the driver, once per query: options, the row layout, the driver-side
    * totals. What it works out for each write is a [[WritePlan]].
    */
  private[sparkkinesis] final case class Prepared(
      options: KinesisWriterOptions,
      converter: RowConverter,
      accumulators: Option[WriterAccumulators]
  )

  private[sparkkinesis] def prepare(options: Map[String, String], schema: StructType): Prepared = {
    SparkLineCheck.require()
    val parsed = KinesisWriterOptions.parse(options)
    prepare(parsed, schema, WriterAccumulators.register(parsed.label))
  }

  private[sparkkinesis] def prepare(
      options: KinesisWriterOptions,
      schema: StructType,
      accumulators: Option[WriterAccumulators]
  ): Prepared = {
    val forSchema = withExplicitHashKeys(options, schema)
    Prepared(forSchema, RowConverter.forSchema(schema, forSchema), accumulators)
  }

  /** `p` once the driver has read its stream (`layout`): when the writer aggregates for a stream that places records by
    * key (USER_PARTITION_KEY), its daemons are told so (unless the user set the strategy), so that none of them asks
    * the stream with `DescribeStreamSummary` (one call per executor against the account's 20 a second): the writer
    * reads it again for them ([[DriverLayouts]]), and the daemon places nothing itself
    * ([[ProducerConfig.daemonSettings]]). An AUTO stream's daemons still ask (a stream switched from AUTO must reach
    * Kinesis with its hash keys).
    */
  private[sparkkinesis] def tellingDaemonsTheStrategy(p: Prepared, layout: Option[StreamLayout]): Prepared = {
    val key = KplSettings.StrategyDefault
    val o = p.options
    if (!o.producer.aggregatesInWriter || !layout.exists(!_.auto) || o.producer.kpl.contains(key)) p
    else p.copy(options = o.copy(producer = o.producer.copy(kpl = o.producer.kpl + (key -> "USER_PARTITION_KEY"))))
  }

  /** An `explicitHashKey` column places records by hash key, which only a stream whose RecordDistributionStrategy is
    * USER_PARTITION_KEY does: the KPL is told so from the first record (unless the user set the strategy), because
    * until it has asked the stream (`DescribeStreamSummary`) it sends records alone and without their hash keys.
    */
  private def withExplicitHashKeys(options: KinesisWriterOptions, schema: StructType): KinesisWriterOptions = {
    val key = KplSettings.StrategyDefault
    if (!schema.fieldNames.contains(RowConverter.ExplicitHashKey) || options.producer.kpl.contains(key)) options
    else options.copy(producer = options.producer.copy(kpl = options.producer.kpl + (key -> "USER_PARTITION_KEY")))
  }

  def create(options: Map[String, String], schema: StructType): KinesisForeachWriter = create(options.asJava, schema)
}
