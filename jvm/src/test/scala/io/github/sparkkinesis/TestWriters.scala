package io.github.sparkkinesis

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema
import org.apache.spark.sql.types.{BinaryType, StringType, StructField, StructType}

object TestWriters {
  val schema: StructType = StructType(Seq(StructField("partitionKey", StringType), StructField("data", StringType)))

  def row(key: String, data: String): Row = new GenericRowWithSchema(Array[Any](key, data), schema)

  val base: Map[String, String] = Map("stream_name" -> "s", "region" -> "us-east-1")

  def options(extra: Map[String, String]): KinesisWriterOptions = KinesisWriterOptions.parse(base ++ extra)

  /** One user record per KPL record (aggregation='kpl'): what the task-core suites assert on; AggregationSuite drives
    * the writer's own aggregation.
    */
  val perRecord: Map[String, String] = Map("aggregation" -> "kpl")

  /** A writer whose producers come from `fakes` instead of real KPL daemons (`perRecord` unless `extra` says so). */
  def writer(fakes: FakePool, extra: Map[String, String] = Map.empty, s: StructType = schema): KinesisForeachWriter = {
    val opts = options(perRecord ++ extra)
    new KinesisForeachWriter(KinesisWriter.Prepared(opts, RowConverter.forSchema(s, opts), None)) {
      override private[sparkkinesis] def pool: ProducerPool = fakes.pool
    }
  }

  val binarySchema: StructType = StructType(Seq(StructField("data", BinaryType)))
}
