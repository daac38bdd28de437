package io.github.sparkkinesis.replay

import java.lang.management.ManagementFactory
import java.nio.{ByteBuffer, ByteOrder}

import scala.util.Random

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.shaded.guava.hash.{Hasher, Hashing}

/** The fingerprint is Guava's `murmur3_128` of the length-prefixed fields, as the store's files of every version hold
  * it, computed without allocating.
  */
class FingerprintSuite extends AnyFunSuite {

  /** The definition: Guava's streaming hasher fed each field, the hash's bytes read as two big-endian longs. */
  private def guava(stream: String, key: String, hashKey: String, data: ByteBuffer): (Long, Long) = {
    val h = Hashing.murmur3_128().newHasher()
    def string(s: String): Unit = if (s == null) h.putInt(-1) else { h.putInt(s.length); h.putUnencodedChars(s) }
    string(stream)
    string(key)
    string(hashKey)
    h.putInt(data.remaining())
    h.putBytes(data.duplicate())
    val bytes = ByteBuffer.wrap(h.hash().asBytes())
    (bytes.getLong(0), bytes.getLong(8))
  }

  private def ours(stream: String, key: String, hashKey: String, data: ByteBuffer): (Long, Long) = {
    var out = (0L, 0L)
    Fingerprint.of(stream, key, hashKey, data, (a: Long, b: Long) => out = (a, b))
    out
  }

  private def text(r: Random, max: Int): String =
    r.nextInt(8) match {
      case 0 => null
      case 1 => new String(Array.fill(r.nextInt(max + 1))(r.nextPrintableChar()))
      case 2 => new String(Array.fill(r.nextInt(max + 1))(r.nextInt(0x10000).toChar)) // surrogates and all
      case _ => r.nextLong().abs.toString.take(1 + r.nextInt(max + 1))
    }

  /** `bytes` as a buffer of each kind the writer may hold: heap, at an offset and position, direct, little-endian. */
  private def buffer(r: Random, bytes: Array[Byte]): ByteBuffer = r.nextInt(4) match {
    case 0 => ByteBuffer.wrap(bytes)
    case 1 =>
      val big = new Array[Byte](bytes.length + 13)
      System.arraycopy(bytes, 0, big, 7, bytes.length)
      val b = ByteBuffer.wrap(big, 3, bytes.length + 10).slice() // an array offset of 3
      b.position(4).limit(4 + bytes.length)
      b
    case 2 => ByteBuffer.allocateDirect(bytes.length).put(bytes).flip().asInstanceOf[ByteBuffer]
    case _ => ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN)
  }

  test("equals Guava's murmur3_128 of the same fields, for every length, buffer kind and character") {
    val r = new Random(41)
    var stream = "s"
    for (i <- 0 until 20000) {
      if (r.nextInt(50) == 0) stream = text(r, 130) // mostly the same stream in a row, as the writer sees it
      val size = if (i < 600) i else if (i % 10 == 0) r.nextInt(20000) else r.nextInt(2000)
      val data = Array.fill(size)(r.nextInt().toByte)
      val b = buffer(r, data)
      val (key, hashKey) = (text(r, 300), text(r, 40))
      val position = b.position()
      assert(ours(stream, key, hashKey, b) == guava(stream, key, hashKey, b), (i, stream, key, hashKey, data.length))
      assert(b.position() == position && b.remaining() == data.length, "the data is left as it was")
    }
  }

  test("one stream's bytes are not kept for another: equal text, new string, then another stream and back") {
    val d = ByteBuffer.wrap("payload-0123456789".getBytes("UTF-8"))
    for (s <- Seq("stream-a", new String("stream-a"), "stream-b", "", null, "stream-a", "stream-b"))
      assert(ours(s, "k", "1", d) == guava(s, "k", "1", d), String.valueOf(s))
  }

  test("the bench's record, empty data, a key longer than the thread's buffer") {
    val d = ByteBuffer.wrap(("0" * 19 + "7" + "x" * 80).getBytes("US-ASCII"))
    assert(ours("sink_dedupe-100", "7", null, d) == guava("sink_dedupe-100", "7", null, d))
    assert(ours("s", "k", null, ByteBuffer.allocate(0)) == guava("s", "k", null, ByteBuffer.allocate(0)))
    val long = "k" * 5000 // more than the thread's buffer holds at first
    assert(ours("s", long, null, d) == guava("s", long, null, d))
    assert(ours("s", "k", null, d) == guava("s", "k", null, d))
  }

  test("allocates nothing per record (it runs on every confirmation)") {
    val threads = ManagementFactory.getThreadMXBean.asInstanceOf[com.sun.management.ThreadMXBean]
    val id = Thread.currentThread().getId
    val data = Array.tabulate(64)(i => ByteBuffer.wrap(Array.fill(100 + i)(i.toByte)))
    val keys = Array.tabulate(64)(_.toString)
    var sum = 0L
    val sink: Fingerprint.Sink = (a: Long, b: Long) => sum += a ^ b
    def run(n: Int): Unit = {
      var i = 0; while (i < n) { Fingerprint.of("s", keys(i & 63), null, data(i & 63), sink); i += 1 }
    }
    run(20000) // the thread's buffer, and the JIT
    val before = threads.getThreadAllocatedBytes(id)
    run(100000)
    val allocated = threads.getThreadAllocatedBytes(id) - before
    assert(allocated < 100000L, s"$allocated bytes allocated by 100,000 fingerprints (sum $sum)")
  }
}
