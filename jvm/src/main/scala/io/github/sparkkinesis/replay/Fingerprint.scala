package io.github.sparkkinesis.replay

import java.nio.{ByteBuffer, ByteOrder}

/** What a record Kinesis confirmed is remembered by: the 128-bit Murmur3 (x64, seed 0: Guava's `murmur3_128()`) of its
  * stream, partition key (when it came from the row), explicit hash key and data. Each field is length-prefixed (−1 for
  * null), so no two different records hash the same input. Two equal records have equal fingerprints: that is the
  * point.
  *
  * The hashed bytes are what Guava's streaming hasher is fed: each length a little-endian int, each string its UTF-16
  * code units little-endian, then the data; the fingerprint is the hash's 16 bytes read as two big-endian longs (the
  * files of earlier versions hold the same values, `FingerprintSuite` checks against Guava). It runs per confirmed
  * record, so it allocates nothing: the fields are encoded into a per-thread buffer, the data copied behind them a
  * chunk at a time, and the hash's state after the stream is kept while the thread sees the same stream.
  */
private[sparkkinesis] object Fingerprint {

  /** Calls `to(h1, h2)` with the fingerprint; `data` is read from its position, which is left as it was. */
  def of(stream: String, partitionKey: String, explicitHashKey: String, data: ByteBuffer, to: Sink): Unit =
    scratch.get().hash(stream, partitionKey, explicitHashKey, data, to)

  /** Where a fingerprint goes: two longs, no allocation. */
  trait Sink {
    def apply(h1: Long, h2: Long): Unit
  }

  private val scratch = new ThreadLocal[Murmur3] { override def initialValue(): Murmur3 = new Murmur3 }

  private final val C1 = 0x87c37b91114253d5L
  private final val C2 = 0x4cf5ad432745937fL

  /** One thread's Murmur3 x64_128 of the length-prefixed fields, then the data, streamed through `buf` in 16-byte
    * blocks. While the thread sees the same stream, the hash's state after the stream's whole blocks is kept (and the
    * bytes left over), so each record hashes only what follows.
    */
  private final class Murmur3 {
    private var buf = new Array[Byte](MinBuffer)
    private var le = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN)
    private var n = 0 // bytes of buf not yet hashed
    private var h1 = 0L
    private var h2 = 0L
    // The stream whose state is kept: the state after its whole blocks, its other bytes, its encoded length.
    private var cached = false
    private var stream: String = null
    private var streamH1 = 0L
    private var streamH2 = 0L
    private val streamRest = new Array[Byte](16)
    private var streamRestLen = 0
    private var streamLen = 0

    def hash(s: String, partitionKey: String, explicitHashKey: String, data: ByteBuffer, to: Sink): Unit = {
      if (!cached || (s ne stream)) {
        cached = false
        h1 = 0L
        h2 = 0L
        n = 0
        string(s)
        streamLen = n
        consume()
        stream = s
        streamH1 = h1
        streamH2 = h2
        System.arraycopy(buf, 0, streamRest, 0, n)
        streamRestLen = n
        cached = true
      }
      h1 = streamH1
      h2 = streamH2
      System.arraycopy(streamRest, 0, buf, 0, streamRestLen)
      n = streamRestLen
      string(partitionKey)
      string(explicitHashKey)
      val dataLen = data.remaining()
      int(dataLen)
      val length = streamLen.toLong + (n - streamRestLen) + dataLen
      // The data: chunks copied behind what is left of the last block, read where it is (no view of it for an array).
      val src = if (data.hasArray) null else data.duplicate()
      var from = if (data.hasArray) data.arrayOffset() + data.position() else 0
      var left = dataLen
      do {
        val take = math.min(left, buf.length - n)
        if (src == null) System.arraycopy(data.array(), from, buf, n, take) else src.get(buf, n, take)
        from += take
        left -= take
        n += take
        consume()
      } while (left > 0)
      finish(length, to)
    }

    /** Hashes the whole blocks of `buf`'s first `n` bytes and moves the rest (< 16) to its start. */
    private def consume(): Unit = {
      val whole = n & ~15
      blocks(whole)
      System.arraycopy(buf, whole, buf, 0, n - whole)
      n -= whole
    }

    private def blocks(until: Int): Unit = {
      var a = h1
      var b = h2
      var i = 0
      while (i < until) {
        a ^= mixK1(le.getLong(i))
        a = java.lang.Long.rotateLeft(a, 27)
        a += b
        a = a * 5 + 0x52dce729
        b ^= mixK2(le.getLong(i + 8))
        b = java.lang.Long.rotateLeft(b, 31)
        b += a
        b = b * 5 + 0x38495ab5
        i += 16
      }
      h1 = a
      h2 = b
    }

    /** The last `n` (< 16) bytes, then the length. */
    private def finish(length: Long, to: Sink): Unit = {
      var k1 = 0L
      var k2 = 0L
      var j = 0
      while (j < n) {
        val v = (buf(j) & 0xffL)
        if (j < 8) k1 |= v << (8 * j) else k2 |= v << (8 * (j - 8))
        j += 1
      }
      var a = h1 ^ mixK1(k1) ^ length
      var b = h2 ^ mixK2(k2) ^ length
      a += b
      b += a
      a = fmix64(a)
      b = fmix64(b)
      a += b
      b += a
      // Guava's HashCode holds h1 then h2 little-endian; the fingerprint reads those bytes big-endian.
      to(java.lang.Long.reverseBytes(a), java.lang.Long.reverseBytes(b))
    }

    private def string(s: String): Unit =
      if (s == null) int(-1)
      else {
        val len = s.length
        int(len)
        room(2 * len)
        var j = 0
        while (j < len) {
          val c = s.charAt(j)
          buf(n) = c.toByte
          buf(n + 1) = (c >> 8).toByte
          n += 2
          j += 1
        }
      }

    private def int(v: Int): Unit = { room(4); le.putInt(n, v); n += 4 }

    /** Room for `bytes` more, and for a chunk of data behind the fields. */
    private def room(bytes: Int): Unit = if (n + bytes + MinChunk > buf.length) {
      buf = java.util.Arrays.copyOf(buf, math.max(buf.length * 2, n + bytes + MinChunk))
      le = ByteBuffer.wrap(buf).order(ByteOrder.LITTLE_ENDIAN)
    }
  }

  private final val MinBuffer = 4096
  private final val MinChunk = 1024

  private def mixK1(k: Long): Long = java.lang.Long.rotateLeft(k * C1, 31) * C2
  private def mixK2(k: Long): Long = java.lang.Long.rotateLeft(k * C2, 33) * C1

  private def fmix64(k0: Long): Long = {
    var k = k0
    k ^= k >>> 33
    k *= 0xff51afd7ed558ccdL
    k ^= k >>> 33
    k *= 0xc4ceb9fe1a85ec53L
    k ^= k >>> 33
    k
  }
}
