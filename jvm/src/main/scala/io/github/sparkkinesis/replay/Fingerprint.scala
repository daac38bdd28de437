package io.github.sparkkinesis.replay

import java.nio.ByteBuffer

import io.github.sparkkinesis.shaded.guava.hash.{Hasher, Hashing}

/** What a record Kinesis confirmed is remembered by: a 128-bit Murmur3 (Guava's, already in the bundle) of its stream,
  * partition key (when it came from the row), explicit hash key and data. Each field is length-prefixed (−1 for null),
  * so no two different records hash the same input. Two equal records have equal fingerprints: that is the point.
  */
private[sparkkinesis] object Fingerprint {
  private val murmur = Hashing.murmur3_128()

  /** Calls `to(h1, h2)` with the fingerprint; `data` is read from its position, which is left as it was. */
  def of(stream: String, partitionKey: String, explicitHashKey: String, data: ByteBuffer, to: Sink): Unit = {
    val h = murmur.newHasher()
    string(h, stream)
    string(h, partitionKey)
    string(h, explicitHashKey)
    h.putInt(data.remaining())
    h.putBytes(data.duplicate())
    val code = h.hash()
    val bytes = code.asBytes()
    to(ByteBuffer.wrap(bytes).getLong(0), ByteBuffer.wrap(bytes).getLong(8))
  }

  private def string(h: Hasher, s: String): Unit =
    if (s == null) h.putInt(-1) else { h.putInt(s.length); h.putUnencodedChars(s) }

  /** Where a fingerprint goes: two longs, no allocation. */
  trait Sink {
    def apply(h1: Long, h2: Long): Unit
  }
}
