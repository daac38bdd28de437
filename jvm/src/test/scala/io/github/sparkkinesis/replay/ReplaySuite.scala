package io.github.sparkkinesis.replay

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.{FakeClock, TestDirs}

/** Skip on replay's pure parts: the multiset and its per-attempt use, the store on the local file system, the flush
  * interval on a fake clock.
  */
class ReplaySuite extends AnyFunSuite with BeforeAndAfterAll {

  /** The stores' directories, all under one, removed when the suite ends. */
  private val root = Files.createTempDirectory("replay-suite")

  override def afterAll(): Unit = TestDirs.deleteTree(root)

  private def fp(stream: String, key: String, hashKey: String, data: String): (Long, Long) = {
    var out = (0L, 0L)
    Fingerprint.of(stream, key, hashKey, ByteBuffer.wrap(data.getBytes(UTF_8)), (a: Long, b: Long) => out = (a, b))
    out
  }
  private def set(fps: (Long, Long)*): ConfirmedSet = ConfirmedSet.of(fps.flatMap { case (a, b) => Seq(a, b) }.toArray)

  test("a fingerprint tells every field apart, and leaves the data's position alone") {
    val all = Seq(
      fp("s", "k", null, "d"),
      fp("s", "k", "1", "d"),
      fp("s", "", null, "d"),
      fp("s", null, null, "d"),
      fp("t", "k", null, "d"),
      fp("s", "kd", null, ""),
      fp("sk", null, null, "d"),
      fp("s", "k", null, "e")
    )
    assert(all.distinct.size == all.size, all)
    assert(fp("s", "k", null, "d") == fp("s", "k", null, "d"))
    val data = ByteBuffer.wrap("xyz".getBytes(UTF_8))
    data.position(1)
    Fingerprint.of("s", "k", null, data, (_: Long, _: Long) => ())
    assert(data.position() == 1 && data.remaining() == 2)
    assert(fp("s", "k", null, "yz") != fp("s", "k", null, "xyz"))
  }

  test("equal rows: each confirmation excuses one row, once per attempt") {
    val a = fp("s", "k", null, "a")
    val b = fp("s", "k", null, "b")
    val c = fp("s", "k", null, "c")
    val confirmed = set(a, b, a, b, b) // a twice, b three times
    val claims = confirmed.claims()
    assert(Seq.fill(3)(claims.take(a._1, a._2)) == Seq(true, true, false), "a confirmed twice: a third a is sent")
    assert(Seq.fill(4)(claims.take(b._1, b._2)) == Seq(true, true, true, false))
    assert(!claims.take(c._1, c._2), "never confirmed: sent")
    val again = confirmed.claims()
    assert(again.take(a._1, a._2) && again.take(a._1, a._2) && !again.take(a._1, a._2), "a new attempt starts afresh")
    val once = set(a).claims()
    assert(once.take(a._1, a._2) && !once.take(a._1, a._2), "two equal rows confirmed once: one is sent")
    assert(!ConfirmedSet.empty.claims().take(a._1, a._2))
  }

  test("the multiset's sort keeps every pair, duplicates included") {
    val rnd = new scala.util.Random(7)
    val pairs = Seq.fill(5000)((rnd.nextInt(50).toLong - 25, rnd.nextLong())) ++ Seq.fill(3000)((3L, 4L))
    val s = set(pairs: _*)
    val claims = s.claims()
    pairs.groupBy(identity).foreach { case ((x, y), occ) =>
      assert(Seq.fill(occ.size)(claims.take(x, y)).forall(identity), s"($x, $y) x${occ.size}")
      assert(!claims.take(x, y), s"($x, $y) used up")
    }
  }

  private def tempStore(): (FingerprintStore, java.io.File) = {
    val dir = Files.createTempDirectory(root, "fingerprints").toFile
    (new FingerprintStore(new Path(dir.toURI), new Configuration()), dir)
  }

  test("the store: files written once, read back whole; committed batches removed, never the current one") {
    val (store, dir) = tempStore()
    assert(store.read("q", 3).isEmpty && !store.exists("q", 3))
    store.write(store.batchDir("q", 3), "0-1-ab-0", Array(1L, 2L, 3L, 4L, 9L, 9L), 2)
    store.write(store.batchDir("q", 3), "1-2-cd-0", Array(1L, 2L), 1)
    intercept[java.io.IOException](store.write(store.batchDir("q", 3), "1-2-cd-0", Array(5L, 6L), 1))
    assert(store.exists("q", 3))
    assert(
      store.read("q", 3).get.grouped(2).map(_.toSeq).toSeq.sortBy(_.head) == Seq(Seq(1L, 2L), Seq(1L, 2L), Seq(3L, 4L))
    )
    val file = new java.io.File(dir, "q/3/0-1-ab-0")
    assert(file.length == FingerprintStore.HeaderBytes + 32, "16 bytes a record and the header")
    // A file cut short by a crash: its whole pairs still count.
    val bytes = Files.readAllBytes(file.toPath)
    Files.write(file.toPath, bytes.take(FingerprintStore.HeaderBytes + 16 + 5))
    new java.io.File(dir, "q/3/.0-1-ab-0.crc").delete()
    assert(store.read("q", 3).get.length == 4)
    // An attempt lost between creating its file and writing it leaves it empty; one lost mid-write, a stale checksum.
    Files.write(new java.io.File(dir, "q/3/2-1-ef-0").toPath, Array.emptyByteArray)
    store.write(store.batchDir("q", 3), "3-1-gh-0", Array(7L, 8L, 9L, 10L), 2)
    val torn = new java.io.File(dir, "q/3/3-1-gh-0").toPath
    Files.write(torn, Files.readAllBytes(torn).take(FingerprintStore.HeaderBytes + 16 + 5))
    assert(store.read("q", 3).get.length == 4, "neither fails the read, nor adds a pair not read whole")
    store.write(store.batchDir("q", 1), "0-1-ab-0", Array(1L, 2L), 1)
    store.write(store.batchDir("q", 2), "0-1-ab-0", Array(1L, 2L), 1)
    store.write(store.batchDir("other", 1), "0-1-ab-0", Array(1L, 2L), 1)
    assert(store.deleteBefore("q", 3) == 2)
    assert(!store.exists("q", 1) && !store.exists("q", 2) && store.exists("q", 3) && store.exists("other", 1))
  }

  test("a ledger writes what was confirmed since its last flush: on its interval, at the end; a failure is kept") {
    val (store, dir) = tempStore()
    val clock = new FakeClock
    val ledger = new FingerprintLedger(store, store.batchDir("q", 0), "5-9-ff", 5000L * 1000000L, clock)
    ledger.add(1L, 1L)
    ledger.flushIfDue()
    assert(store.read("q", 0).isEmpty, "not before the interval")
    clock.advanceMs(4999)
    ledger.flushIfDue()
    assert(store.read("q", 0).isEmpty)
    clock.advanceMs(1)
    ledger.flushIfDue()
    assert(store.read("q", 0).get.toSeq == Seq(1L, 1L) && ledger.files == 1)
    clock.advanceMs(5000)
    ledger.flushIfDue()
    assert(ledger.files == 1, "nothing new: no file")
    ledger.add(2L, 2L)
    ledger.add(3L, 3L)
    ledger.flush()
    assert(new java.io.File(dir, "q/0/5-9-ff-1").isFile && ledger.written == 3)
    // The next file's name is taken (as by an impossible twin): the flush fails and keeps its fingerprints.
    store.write(store.batchDir("q", 0), "5-9-ff-2", Array(7L, 7L), 1)
    ledger.add(4L, 4L)
    intercept[java.io.IOException](ledger.flush())
    ledger.add(5L, 5L)
    new java.io.File(dir, "q/0/5-9-ff-2").delete()
    new java.io.File(dir, "q/0/.5-9-ff-2.crc").delete()
    ledger.flush()
    assert(store.read("q", 0).get.grouped(2).map(_.head).toSeq.sorted == Seq(1L, 2L, 3L, 4L, 5L))
  }

  test("a ledger takes a run of confirmations at once, in order, between flushes") {
    val (store, _) = tempStore()
    val ledger = new FingerprintLedger(store, store.batchDir("q", 0), "1-2-aa", 5000L * 1000000L, new FakeClock)
    ledger.add(1L, 10L)
    ledger.addAll(to => (2L to 4L).foreach(i => to(i, 10L * i)))
    ledger.flush()
    ledger.addAll(to => to(5L, 50L))
    ledger.flush()
    assert(store.read("q", 0).get.toSeq == (1L to 5L).flatMap(i => Seq(i, 10L * i)) && ledger.files == 2)
  }
}
