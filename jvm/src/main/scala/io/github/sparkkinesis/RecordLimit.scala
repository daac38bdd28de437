package io.github.sparkkinesis

import java.nio.charset.StandardCharsets

/** Each record is held to its stream's limit (`MaxRecordSizeInKiB`, read with the stream's layout: data and partition
  * key count), before it takes room under the bound or reaches the KPL: a record over it fails its task at once with
  * the fix, never a `ValidationException` retried by the daemon (KPL 1.0.6, awslabs/amazon-kinesis-producer#680).
  * `kpl.MaxUserRecordSize` stays the user's upper bound ([[RowConverter]]).
  */
private[sparkkinesis] object RecordLimit {

  /** The most bytes a partition key of 256 characters takes in UTF-8: records this far under the limit need no key
    * measured (the hot path).
    */
  private val KeyMargin = RowConverter.MaxPartitionKeyLength * 3

  /** Throws when `record` (`dataBytes` of data) is over its stream's limit as `producer` last read it, and, read again
    * before failing the record, as it is now (a stream raised since takes it at once).
    */
  def check(record: KinesisRecord, dataBytes: Int, producer: SharedProducer): Unit = {
    val limit = producer.maxRecordBytes(record.stream)
    if (dataBytes.toLong + KeyMargin > limit) {
      val keyBytes = if (record.partitionKey == null) 0 else record.partitionKey.getBytes(StandardCharsets.UTF_8).length
      val total = dataBytes.toLong + keyBytes
      if (total > limit) {
        val now = producer.maxRecordBytes(record.stream, readNow = true)
        if (total > now) throw tooLarge(record.stream, dataBytes, keyBytes, now)
      }
    }
  }

  /** Throws when a record of `dataBytes` could never fit under the writer's byte bound. */
  def checkBound(stream: String, dataBytes: Int, maxOutstandingBytes: Long): Unit =
    if (dataBytes > maxOutstandingBytes)
      throw new IllegalArgumentException(
        s"A record of $dataBytes bytes for stream $stream is larger than max_outstanding_bytes=$maxOutstandingBytes, " +
          "the payload bytes a producer may hold at once, on its own: raise max_outstanding_bytes to at least the " +
          "largest record (its default, 64 MiB, holds six of 10 MiB), or split the payload."
      )

  def tooLarge(stream: String, dataBytes: Int, keyBytes: Int, limit: Long): IllegalArgumentException =
    new IllegalArgumentException(
      s"A record of ${dataBytes.toLong + keyBytes} bytes (data $dataBytes, partition key $keyBytes) is over the " +
        s"limit of stream $stream: MaxRecordSizeInKiB ${limit / 1024} ($limit bytes, data and partition key). " +
        "Raise the stream's limit (up to 10240 KiB): aws kinesis update-max-record-size --stream-arn <arn> " +
        "--max-record-size-in-ki-b 10240 (UpdateMaxRecordSize; the writer reads it again every " +
        "kpl.DescribeStreamSummaryIntervalMs, and needs kinesis:DescribeStreamSummary), or split the payload."
    )
}
