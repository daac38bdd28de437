package io.github.sparkkinesis

import java.math.BigInteger
import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import java.util.UUID
import java.util.concurrent.ThreadLocalRandom

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.types.{BinaryType, DataType, StringType, StructType}

/** One record for `KinesisProducer.addUserRecord`; `partitionKey` is null only with `partitioner='none'`. */
private[sparkkinesis] final case class KinesisRecord(
    stream: String,
    partitionKey: String,
    explicitHashKey: String,
    data: ByteBuffer
)

/** Row → record, with the column layout resolved once on the driver by [[RowConverter.forSchema]].
  *
  * Columns follow Spark's Kafka sink: `data` (binary or string, required), `partitionKey` (string, unless a partitioner
  * supplies it), `explicitHashKey` (decimal string, optional), `streamName` (string, optional per-row routing). Other
  * columns are ignored. `convert` reads a `Row` (the `foreach` path), `convertInternal` an `InternalRow` (the
  * DataSource V2 path, no conversion to `Row`); both apply the same checks.
  */
private[sparkkinesis] final class RowConverter private (
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
    val bytes =
      if (row.isNullAt(dataIndex)) null
      else if (dataIsString) row.getString(dataIndex).getBytes(StandardCharsets.UTF_8)
      else row.getAs[Array[Byte]](dataIndex)
    record(bytes, string(row, streamNameIndex), key(row, partitionId), string(row, explicitHashKeyIndex))
  }

  def convertInternal(row: InternalRow, partitionId: Long): KinesisRecord = {
    val bytes =
      if (row.isNullAt(dataIndex)) null
      else if (dataIsString) row.getUTF8String(dataIndex).getBytes // UTF-8 already: no decode and re-encode
      else row.getBinary(dataIndex)
    record(
      bytes,
      internalString(row, streamNameIndex),
      internalKey(row, partitionId),
      internalString(row, explicitHashKeyIndex)
    )
  }

  private def string(row: Row, i: Int): String = if (i < 0 || row.isNullAt(i)) null else row.getString(i)
  private def internalString(row: InternalRow, i: Int): String =
    if (i < 0 || row.isNullAt(i)) null else row.getUTF8String(i).toString
  private def key(row: Row, partitionId: Long): String =
    if (generatesKeys) generatedKey(partitionId) else string(row, partitionKeyIndex)
  private def internalKey(row: InternalRow, partitionId: Long): String =
    if (generatesKeys) generatedKey(partitionId) else internalString(row, partitionKeyIndex)
  private def generatesKeys: Boolean = Partitioner.generatesKeys(partitioner)

  private def generatedKey(partitionId: Long): String = partitioner match {
    case Some(Partitioner.Fixed) => java.lang.Long.toString(partitionId)
    case _ => new UUID(ThreadLocalRandom.current().nextLong(), ThreadLocalRandom.current().nextLong()).toString
  }

  /** The checks every entry point applies to a row's values (nulls mean "not set"). */
  private def record(data: Array[Byte], streamName: String, partitionKey: String, hashKey: String): KinesisRecord = {
    if (data == null)
      throw new IllegalArgumentException(
        s"Column '$Data' is null in a row; Kinesis records need data. Filter nulls out or coalesce them."
      )
    if (data.length > maxRecordBytes)
      throw new IllegalArgumentException(
        s"Column '$Data' holds ${data.length} bytes, over the KPL's MaxUserRecordSize of $maxRecordBytes. " +
          "Split the payload, or raise kpl.MaxUserRecordSize if the stream accepts larger records."
      )
    KinesisRecord(stream(streamName), checkKey(partitionKey), checkHashKey(hashKey), ByteBuffer.wrap(data))
  }

  private def stream(s: String): String =
    if (s != null) {
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

  private def checkKey(k: String): String = {
    if (k == null && partitioner.contains(Partitioner.NoKey)) return null
    if (k == null || k.isEmpty)
      throw new IllegalArgumentException(
        s"Column '$PartitionKey' is ${if (k == null) "null" else "empty"} in a row; Kinesis needs 1 to 256 characters. " +
          "Coalesce it, or use partitioner='random' (partitioner='none' if the stream's RecordDistributionStrategy is AUTO)."
      )
    if (k.length > MaxPartitionKeyLength)
      throw new IllegalArgumentException(
        s"Column '$PartitionKey' holds a key of ${k.length} characters (starting '${k.take(16)}...'); Kinesis allows 1 to $MaxPartitionKeyLength. Shorten or hash it."
      )
    k
  }

  private def checkHashKey(h: String): String =
    if (h == null) null
    else {
      val valid =
        h.nonEmpty && h.length <= 39 && h.forall(Character.isDigit) && new BigInteger(h).compareTo(MaxHashKey) <= 0
      if (!valid)
        throw new IllegalArgumentException(
          s"Column '$ExplicitHashKey' holds '${h.take(40)}', not a decimal integer in 0..2^128-1."
        )
      h
    }
}

private[sparkkinesis] object RowConverter {
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
          s"The DataFrame has no '$PartitionKey' column. Add one (string), or set partitioner='random' or 'fixed' " +
            "(or 'none' if the stream's RecordDistributionStrategy is AUTO)."
        )
      case (Some(p), true) if p != Partitioner.NoKey =>
        throw new IllegalArgumentException(
          s"Option partitioner='${p.name}' conflicts with the '$PartitionKey' column: drop the column or the option."
        )
      case _ =>
    }
    if (options.orderBy.nonEmpty && pk < 0)
      throw new IllegalArgumentException(
        s"Option ${KinesisWriterOptions.OrderBy.name} orders each partition key's records, and the DataFrame has no " +
          s"'$PartitionKey' column: add one (the key whose order you need), or remove ${KinesisWriterOptions.OrderBy}."
      )
    options.orderBy.filterNot(schema.fieldNames.contains).foreach { c =>
      throw new IllegalArgumentException(
        s"Option ${KinesisWriterOptions.OrderBy.name} names column '$c', which the DataFrame does not have " +
          s"(columns: ${schema.fieldNames.mkString(", ")}). Name the column(s) that order a key's records."
      )
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
