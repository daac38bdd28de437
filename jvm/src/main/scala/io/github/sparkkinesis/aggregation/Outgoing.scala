package io.github.sparkkinesis.aggregation

import java.nio.ByteBuffer

/** One Kinesis record the writer hands the producer: an [[Aggregate]] of user records, or a user record [[Alone]]. */
private[sparkkinesis] sealed trait Outgoing {
  def stream: String

  /** The user records it carries, completed together when it is confirmed. */
  def entries: Array[Pending]
  def records: Int = entries.length

  /** The Kinesis record's partition key, explicit hash key (null: none) and data. */
  def partitionKey: String
  def explicitHashKey: String
  def data: ByteBuffer

  /** When it was first handed to the producer (set once, before that put's answer can arrive): a throttled one is sent
    * again until `RecordTtl` after that.
    */
  @volatile private var firstSent = Long.MinValue
  @volatile private var sent = false

  /** Notes the first send at `now`; false if it was sent before. */
  def sending(now: Long): Boolean = !sent && { firstSent = now; sent = true; true }
  def firstSentNanos: Long = firstSent
}

/** User records of one shard, sealed by its buffer, in the KPL's aggregated format under its first record's keys: the
  * explicit hash key (its first record's, explicit or not) lies in the shard the aggregate was built for.
  */
private[sparkkinesis] final class Aggregate(
    val buffer: ShardBuffer,
    val entries: Array[Pending],
    val encoded: Array[Byte]
) extends Outgoing {
  def stream: String = buffer.stream
  def shard: ShardRange = buffer.shard
  def partitionKey: String = entries(0).partitionKey
  def explicitHashKey: String = entries(0).key.toString
  def data: ByteBuffer = ByteBuffer.wrap(encoded)

  /** What Kinesis counts against the shard's quota: the data and the partition key. */
  def quotaBytes: Int = encoded.length + entries(0).keyBytes

  /** When its shard's quota last let it go (set under the buffer's lock). */
  @volatile var pacedNanos = 0L
}

/** A user record sent as it is: without a partition key, too big for an aggregate, or for a stream that gets no
  * aggregates (RecordDistributionStrategy AUTO, or a layout not read yet). `answered` (null: nothing) runs once its
  * final answer completed it ([[KeyChains]]).
  */
private[sparkkinesis] final class Alone(val pending: Pending, val answered: () => Unit = null) extends Outgoing {
  val entries: Array[Pending] = Array(pending)
  def stream: String = pending.stream
  def partitionKey: String = pending.partitionKey
  def explicitHashKey: String = pending.explicitHashKey
  def data: ByteBuffer = pending.data.duplicate()

  /** What Kinesis counts against the shard's quota: the data and the partition key. */
  def quotaBytes: Int = pending.bytes + pending.keyBytes
}
