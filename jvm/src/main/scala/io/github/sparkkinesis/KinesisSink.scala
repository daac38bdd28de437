package io.github.sparkkinesis

import java.util

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.catalog.{SupportsWrite, Table, TableCapability}
import org.apache.spark.sql.connector.read.streaming.ReportsSinkMetrics
import org.apache.spark.sql.connector.write.{LogicalWriteInfo, SupportsTruncate, Write, WriteBuilder}
import org.apache.spark.sql.internal.connector.SupportsStreamingUpdateAsAppend
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

import io.github.sparkkinesis.aggregation.StreamLayout
import io.github.sparkkinesis.compat.CollectionConverters._

/** The `kinesis` sink behind [[KinesisSourceProvider]] (Java, for the reason it gives): its table and options. */
private[sparkkinesis] object KinesisSink {

  /** The table for one query's sink options (the writer options are parsed here, in `start()` or `save()`). */
  def table(properties: util.Map[String, String]): Table = {
    SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession).foreach(OptionRedaction.register)
    new KinesisTable(writerOptions(properties))
  }

  /** Keys Spark itself puts in a sink's options: `checkpointLocation` set with `.option`, `path` with `save(path)`,
    * `queryName` from a Spark Connect client.
    */
  private val SparkOwned = Set("path", "checkpointlocation", "queryname")

  /** The writer options among a sink's options, with their keys as the user wrote them: Spark's case-insensitive map
    * keeps the original case in `asCaseSensitiveMap`, and KPL settings need it (`kpl.RecordTtl`).
    */
  def writerOptions(properties: util.Map[String, String]): Map[String, String] = {
    val original = properties match {
      case m: CaseInsensitiveStringMap => m.asCaseSensitiveMap().asScala
      case m                           => m.asScala
    }
    original.toMap.filter { case (k, _) => !SparkOwned.contains(k.toLowerCase(java.util.Locale.ROOT)) }
  }

  /** Batch Overwrite reaches the sink (as a truncate); ErrorIfExists (the default) and Ignore are refused by Spark
    * itself for a DataSource V2 table, with a message that names Append.
    */
  def unsupportedMode(mode: String): IllegalArgumentException = new IllegalArgumentException(
    s"format('kinesis') writes with mode('append') only; got mode('$mode'). " +
      "Kinesis streams are append-only: records cannot be overwritten."
  )
}

/** The sink as a table: any schema (checked by the writer, as Spark's Kafka sink does), streaming and batch appends. */
private[sparkkinesis] final class KinesisTable(options: Map[String, String])
    extends Table
    with SupportsWrite
    with ReportsSinkMetrics {
  // Parsed when the query starts (start() or save()): an option mistake fails there, before any task.
  private val parsed = KinesisWriterOptions.parse(options)
  private val driverCalls = ControlPlaneCalls() // the driver's control-plane calls for this query (its totals)
  // Once per query, when its first write is planned (after the schema's checks): KinesisWriter.checkBeforeStart, whose
  // read of the stream is the first its writes ship (DriverLayouts).
  private lazy val checked: Option[StreamLayout] = KinesisWriter.checkBeforeStart(parsed, driverCalls)
  private lazy val layouts: DriverLayouts = DriverLayouts(parsed, checked, driverCalls, accumulators)
  // One set per query: the streaming engine builds a new Write for every micro-batch.
  private lazy val accumulators: Option[WriterAccumulators] = WriterAccumulators.register(parsed.label)

  override def name(): String = s"kinesis:${parsed.label}"
  override def schema(): StructType = new StructType()
  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(
    TableCapability.BATCH_WRITE,
    TableCapability.STREAMING_WRITE,
    TableCapability.ACCEPT_ANY_SCHEMA,
    TableCapability.TRUNCATE
  )

  // Update mode (SupportsStreamingUpdateAsAppend) and Complete mode (truncate) append each epoch's rows as records,
  // as Spark's Kafka sink does: a stream has no rows to update or replace.
  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder = new WriteBuilder
    with SupportsTruncate
    with SupportsStreamingUpdateAsAppend {
    private var truncated = false

    override def truncate(): WriteBuilder = { truncated = true; this }

    override def build(): Write = {
      val schemaChecked = KinesisWriter.prepare(parsed, info.schema(), accumulators)
      val prepared = KinesisWriter.tellingDaemonsTheStrategy(schemaChecked, checked)
      val replay = KinesisWrite.replayPlan(prepared, info.queryId())
      val columns = KinesisWrite.contentColumns(prepared, info.schema())
      new KinesisWrite(prepared, truncated, columns, Some(layouts), replay)
    }
  }

  /** The query's totals so far (`lastProgress["sink"]["metrics"]`), from the driver's accumulators. */
  override def metrics(): util.Map[String, String] =
    accumulators.map(_.totals.map { case (k, v) => k -> v.toString }.toMap).getOrElse(Map.empty[String, String]).asJava

  /** The sink description in progress and plans: never a secret. */
  override def toString: String = name()
}

/** Spark prints a sink's options in plans (`explain`, the SQL tab) with the keys its redaction regexes match hidden;
  * its defaults miss `aws_access_key_id` and `role_external_id` (Spark 3.5 printed the key id in `explain`). The sink
  * adds every secret option key to the session's `spark.sql.redaction.options.regex` when a query first uses it: a
  * change to the user's session conf, so it is logged and documented (docs/configuration.md, "Credentials").
  */
private[sparkkinesis] object OptionRedaction {
  val Key = "spark.sql.redaction.options.regex"
  val Pattern: String =
    KinesisWriterOptions.SecretKeys.map(_.replace(".", "\\.")).mkString("(?i:", "|", ")")

  def register(session: SparkSession): Unit = {
    val current = session.conf.get(Key, "(?i)url") // Spark's default
    if (!current.contains(Pattern)) {
      session.conf.set(Key, s"$current|$Pattern")
      log.info(s"Added the kinesis sink's secret option keys to this session's $Key so plans hide them: $Pattern")
    }
  }

  private val log = org.slf4j.LoggerFactory.getLogger(getClass)
}
