package io.github.sparkkinesis

import java.nio.charset.StandardCharsets

import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema
import org.apache.spark.sql.types._
import org.scalatest.funsuite.AnyFunSuite

class RowConverterSuite extends AnyFunSuite {
  private def opts(extra: (String, String)*) = TestWriters.options(extra.toMap)
  private val full = StructType(
    Seq(
      StructField("id", LongType),
      StructField("data", BinaryType),
      StructField("partitionKey", StringType),
      StructField("explicitHashKey", StringType),
      StructField("streamName", StringType)
    )
  )

  private def row(s: StructType, values: Any*) = new GenericRowWithSchema(values.toArray, s)
  private def bytes(r: KinesisRecord) = { val b = new Array[Byte](r.data.remaining()); r.data.duplicate().get(b); b }

  test("binary data, key, hash key and per-row stream are taken as they are") {
    val c = RowConverter.forSchema(full, opts())
    val r = c.convert(row(full, 1L, Array[Byte](0, 1, -1), "pk", "42", "other"), 7)
    assert(bytes(r).toSeq == Seq[Byte](0, 1, -1))
    assert(r.partitionKey == "pk" && r.explicitHashKey == "42" && r.stream == "other")
  }

  test("a null streamName falls back to stream_name; string data is UTF-8") {
    val s = StructType(
      Seq(
        StructField("data", StringType),
        StructField("partitionKey", StringType),
        StructField("streamName", StringType)
      )
    )
    val r = RowConverter.forSchema(s, opts()).convert(row(s, "héllo", "k", null), 0)
    assert(r.stream == "s" && r.explicitHashKey == null)
    assert(new String(bytes(r), StandardCharsets.UTF_8) == "héllo")
  }

  test("partitioners supply the key") {
    val s = TestWriters.binarySchema
    val fixed = RowConverter.forSchema(s, opts("partitioner" -> "fixed"))
    assert(fixed.convert(row(s, Array[Byte](1)), 3).partitionKey == "3")
    val random = RowConverter.forSchema(s, opts("partitioner" -> "random"))
    val keys = (1 to 50).map(_ => random.convert(row(s, Array[Byte](1)), 3).partitionKey).toSet
    assert(keys.size == 50 && keys.forall(k => k.nonEmpty && k.length <= 256))
  }

  test("partitioner='none' (AUTO streams): no key without the column, the column's key or none where it is null") {
    val s = TestWriters.binarySchema
    assert(
      RowConverter.forSchema(s, opts("partitioner" -> "none")).convert(row(s, Array[Byte](1)), 3).partitionKey == null
    )
    val c = RowConverter.forSchema(full, opts("partitioner" -> "none"))
    assert(c.convert(row(full, 1L, Array[Byte](1), null, null, null), 0).partitionKey == null)
    assert(c.convert(row(full, 1L, Array[Byte](1), "k", null, null), 0).partitionKey == "k")
    assert(
      intercept[IllegalArgumentException](c.convert(row(full, 1L, Array[Byte](1), "", null, null), 0)).getMessage
        .contains("'partitionKey' is empty")
    )
    assert(rowError(1L, Array[Byte](1), null, null, null).contains("partitioner='none' if the stream's"))
  }

  test("an explicitHashKey column tells the KPL the stream places records by key, unless the user said otherwise") {
    def strategy(s: StructType, extra: (String, String)*) =
      KinesisWriter.prepare(opts(extra: _*), s, None).options.producer.kplSettings.get(KplSettings.StrategyDefault)
    assert(strategy(full).contains("USER_PARTITION_KEY"))
    assert(strategy(TestWriters.schema).isEmpty) // the KPL asks the stream first (AUTO streams get no aggregates)
    assert(strategy(full, "kpl.RecordDistributionStrategyDefault" -> "UNSET").contains("UNSET"))
  }

  private def schemaError(s: StructType, extra: (String, String)*): String =
    intercept[IllegalArgumentException](RowConverter.forSchema(s, opts(extra: _*))).getMessage

  test("schema problems are named with the fix") {
    assert(schemaError(StructType(Seq(StructField("value", StringType)))).contains("no 'data' column"))
    assert(
      schemaError(StructType(Seq(StructField("data", IntegerType), StructField("partitionKey", StringType))))
        .contains("to_json")
    )
    assert(schemaError(TestWriters.binarySchema).contains("no 'partitionKey' column"))
    assert(
      schemaError(StructType(Seq(StructField("data", StringType), StructField("partitionKey", IntegerType))))
        .contains("must be string")
    )
    assert(schemaError(TestWriters.schema, "partitioner" -> "random").contains("conflicts"))
    val noStream = intercept[IllegalArgumentException](
      RowConverter.forSchema(TestWriters.schema, KinesisWriterOptions.parse(Map("region" -> "us-east-1")))
    ).getMessage
    assert(noStream.contains("No stream to write to"))
  }

  private def rowError(values: Any*): String =
    intercept[IllegalArgumentException](
      RowConverter.forSchema(full, opts()).convert(row(full, values: _*), 0)
    ).getMessage

  test("bad row values are named") {
    assert(rowError(1L, null, "k", null, null).contains("'data' is null"))
    assert(rowError(1L, Array[Byte](1), null, null, null).contains("'partitionKey' is null"))
    assert(rowError(1L, Array[Byte](1), "", null, null).contains("'partitionKey' is empty"))
    assert(rowError(1L, Array[Byte](1), "x" * 300, null, null).contains("key of 300 characters"))
    assert(rowError(1L, Array[Byte](1), "k", "12a", null).contains("not a decimal integer"))
    assert(rowError(1L, Array[Byte](1), "k", BigInt(2).pow(128).toString, null).contains("0..2^128-1"))
    assert(rowError(1L, Array[Byte](1), "k", null, " ").contains("'streamName' is empty"))
    val big = intercept[IllegalArgumentException](
      RowConverter
        .forSchema(full, opts("kpl.MaxUserRecordSize" -> "64"))
        .convert(row(full, 1L, new Array[Byte](65), "k", null, null), 0)
    ).getMessage
    assert(big.contains("65 bytes") && big.contains("MaxUserRecordSize of 64"))
  }

  test("the largest hash key is accepted") {
    val max = (BigInt(2).pow(128) - 1).toString
    assert(
      RowConverter
        .forSchema(full, opts())
        .convert(row(full, 1L, Array[Byte](1), "k", max, null), 0)
        .explicitHashKey == max
    )
  }
}
