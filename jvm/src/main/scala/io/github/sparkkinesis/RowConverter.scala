package io.github.sparkkinesis

import java.math.BigInteger
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import java.util.UUID
import java.util.concurrent.ThreadLocalRandom

import org.apache.spark.sql.Row
import org.apache.spark.sql.types.{BinaryType, DataType, StringType, StructType}

/** One record for `KinesisProducer.addUserRecord`. */
final case class KinesisRecord(stream: String, partitionKey: String, explicitHashKey: String, data: ByteBuffer)

/** Row → record, with the column layout resolved once on the driver by [[RowConverter.forSchema]].
  *
  * Columns follow Spark's Kafka sink: `data` (binary or string, required), `partitionKey` (string, unless a partitioner
  * supplies it), `explicitHashKey` (decimal string, optional), `streamName` (string, optional per-row routing). Other
  * columns are ignored.
  */
final class RowConverter private (
    dataIndex: Int,
    dataIsString: Boolean,
    partitionKeyIndex: Int,
    explicitHashKeyIndex: Int,
    streamNameIndex: Int,
    defaultStream: Option[String],
    partitioner: Option[Partitioner],
    maxRecordBytes: Long
) extends Serializable {
  import RowConverter._

  def convert(row: Row, partitionId: Long): KinesisRecord = {
    if (row.isNullAt(dataIndex))
      throw new IllegalArgumentException(
        s"Column '$Data' is null in a row; Kinesis records need data. Filter nulls out or coalesce them."
      )
    val bytes =
      if (dataIsString) row.getString(dataIndex).getBytes(StandardCharsets.UTF_8)
      else row.getAs[Array[Byte]](dataIndex)
    if (bytes.length > maxRecordBytes)
      throw new IllegalArgumentException(
        s"Column '$Data' holds ${bytes.length} bytes, over the KPL's MaxUserRecordSize of $maxRecordBytes. " +
          "Split the payload, or raise kpl.MaxUserRecordSize if the stream accepts larger records."
      )
    KinesisRecord(stream(row), partitionKey(row, partitionId), explicitHashKey(row), ByteBuffer.wrap(bytes))
  }

  private def stream(row: Row): String = {
    if (streamNameIndex >= 0 && !row.isNullAt(streamNameIndex)) {
      val s = row.getString(streamNameIndex)
      if (s.trim.isEmpty)
        throw new IllegalArgumentException(
          s"Column '$StreamName' is empty in a row. Give every row a stream, or null to use stream_name."
        )
      s
    } else
      defaultStream.getOrElse(
        throw new IllegalArgumentException(
          s"Column '$StreamName' is null in a row and option stream_name is not set. Set stream_name as the default."
        )
      )
  }

  private def partitionKey(row: Row, partitionId: Long): String = partitioner match {
    case Some(Partitioner.Random) =>
      new UUID(ThreadLocalRandom.current().nextLong(), ThreadLocalRandom.current().nextLong()).toString
    case Some(Partitioner.Fixed) => java.lang.Long.toString(partitionId)
    case None =>
      val k = if (row.isNullAt(partitionKeyIndex)) null else row.getString(partitionKeyIndex)
      if (k == null || k.isEmpty)
        throw new IllegalArgumentException(
          s"Column '$PartitionKey' is ${if (k == null) "null" else "empty"} in a row; Kinesis needs 1 to 256 characters. Coalesce it, or use partitioner='random'."
        )
      if (k.length > MaxPartitionKeyLength)
        throw new IllegalArgumentException(
          s"Column '$PartitionKey' holds a key of ${k.length} characters (starting '${k.take(16)}...'); Kinesis allows 1 to $MaxPartitionKeyLength. Shorten or hash it."
        )
      k
  }

  private def explicitHashKey(row: Row): String =
    if (explicitHashKeyIndex < 0 || row.isNullAt(explicitHashKeyIndex)) null
    else {
      val h = row.getString(explicitHashKeyIndex)
      val valid =
        h.nonEmpty && h.length <= 39 && h.forall(Character.isDigit) && new BigInteger(h).compareTo(MaxHashKey) <= 0
      if (!valid)
        throw new IllegalArgumentException(
          s"Column '$ExplicitHashKey' holds '${h.take(40)}', not a decimal integer in 0..2^128-1."
        )
      h
    }
}

object RowConverter {
  val Data = "data"
  val PartitionKey = "partitionKey"
  val ExplicitHashKey = "explicitHashKey"
  val StreamName = "streamName"
  val MaxPartitionKeyLength = 256
  private val MaxHashKey = BigInteger.ONE.shiftLeft(128).subtract(BigInteger.ONE)

  /** The one schema check: missing or mistyped columns are named with the fix. */
  def forSchema(schema: StructType, options: KinesisWriterOptions): RowConverter = {
    def index(name: String): Int = schema.fieldNames.indexOf(name)
    def requireString(name: String): Int = {
      val i = index(name)
      if (i >= 0 && schema(i).dataType != StringType)
        throw new IllegalArgumentException(
          s"Column '$name' has type ${schema(i).dataType.simpleString}; it must be string. Cast it: col('$name').cast('string')."
        )
      i
    }
    val dataIndex = index(Data)
    if (dataIndex < 0)
      throw new IllegalArgumentException(
        s"The DataFrame has no '$Data' column (columns: ${schema.fieldNames.mkString(", ")}). " +
          "Add one, e.g. to_json(struct(*)).alias('data') or col('payload').cast('binary').alias('data')."
      )
    val dataType: DataType = schema(dataIndex).dataType
    if (dataType != BinaryType && dataType != StringType)
      throw new IllegalArgumentException(
        s"Column '$Data' has type ${dataType.simpleString}; it must be binary or string. " +
          "Serialise it first, e.g. to_json(col('data')) for structs or col('data').cast('string')."
      )
    val pk = requireString(PartitionKey)
    (options.partitioner, pk >= 0) match {
      case (None, false) =>
        throw new IllegalArgumentException(
          s"The DataFrame has no '$PartitionKey' column. Add one (string), or set partitioner='random' or 'fixed'."
        )
      case (Some(p), true) =>
        throw new IllegalArgumentException(
          s"Option partitioner='${p.name}' conflicts with the '$PartitionKey' column: drop the column or the option."
        )
      case _ =>
    }
    val sn = requireString(StreamName)
    if (sn < 0 && options.streamName.isEmpty)
      throw new IllegalArgumentException(
        s"No stream to write to: set option stream_name, or add a '$StreamName' column."
      )
    new RowConverter(
      dataIndex,
      dataType == StringType,
      pk,
      requireString(ExplicitHashKey),
      sn,
      options.streamName,
      options.partitioner,
      options.maxRecordBytes
    )
  }
}
