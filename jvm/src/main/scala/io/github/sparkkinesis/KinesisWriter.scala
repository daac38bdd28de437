package io.github.sparkkinesis

import org.apache.spark.sql.types.StructType

import io.github.sparkkinesis.compat.CollectionConverters._

/** The one JVM entry point: Python's `KinesisWriter` calls `create` through py4j; Scala users too.
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
    val p = prepare(options.asScala.toMap, schema)
    new KinesisForeachWriter(p.options, p.converter, p.accumulators)
  }

  /** What every entry point checks and builds on the driver: options, the row layout, the driver-side totals. */
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
  ): Prepared = Prepared(options, RowConverter.forSchema(schema, options), accumulators)

  def create(options: Map[String, String], schema: StructType): KinesisForeachWriter = create(options.asJava, schema)
}
