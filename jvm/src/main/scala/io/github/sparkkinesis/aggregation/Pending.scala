package io.github.sparkkinesis.aggregation

import java.nio.ByteBuffer

import io.github.sparkkinesis.shaded.kpl.UserRecordResult

/** A user record from `write` until its confirmation, while the writer aggregates it: the record, what completing it
  * needs (its owner, size and latency start), where Kinesis places it (`key`: null for a record without a partition
  * key, which goes alone), its partition key's UTF-8 bytes (taken for `key`, kept for the aggregate's key table; null
  * without a key) and where it sits in its aggregate (its indices into the aggregate's key tables).
  */
private[sparkkinesis] final class Pending(
    val stream: String,
    val partitionKey: String,
    val explicitHashKey: String,
    val data: ByteBuffer,
    val owner: RecordOwner,
    val bytes: Int,
    val startNanos: Long,
    val key: HashKey,
    val keyUtf8: Array[Byte]
) {
  def keyBytes: Int = if (keyUtf8 == null) 0 else keyUtf8.length

  private[aggregation] var keyIndex = 0
  private[aggregation] var hashKeyIndex = -1
  // The host's 128-bit digest of the record's content, taken while the record is built (its data is read there
  // anyway); the aggregation only carries it to the owner's confirmation. 0 when the host takes none.
  var digest1 = 0L
  var digest2 = 0L
}

private[sparkkinesis] object Pending {

  /** Completes user records that travelled together, owner by owner (a run of one owner's records is one update). */
  def complete(entries: Array[Pending], result: Either[Throwable, UserRecordResult]): Unit = {
    var i = 0
    while (i < entries.length) {
      val owner = entries(i).owner
      var n = 0
      var bytes = 0L
      var j = i
      while (j < entries.length && (entries(j).owner eq owner)) {
        val e = entries(j)
        bytes += e.bytes
        n += 1
        if (result.isRight) owner.latency(e.startNanos)
        j += 1
      }
      result match {
        case Right(r) => owner.confirmed(entries, i, j); owner.succeeded(r, n, bytes)
        case Left(t)  => owner.failed(t, n, bytes)
      }
      i = j
    }
  }
}
