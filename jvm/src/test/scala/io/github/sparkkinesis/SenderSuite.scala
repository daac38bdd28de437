package io.github.sparkkinesis

import java.nio.ByteBuffer
import java.util.concurrent.{ConcurrentLinkedQueue, ExecutionException, TimeUnit}

import org.scalatest.funsuite.AnyFunSuite
import io.github.sparkkinesis.shaded.guava.util.concurrent.ListenableFuture
import io.github.sparkkinesis.shaded.kpl.{DaemonException, UserRecordResult}

import io.github.sparkkinesis.compat.CollectionConverters._

class SenderSuite extends AnyFunSuite {

  /** A FakeProducer that notes, for every call, the calling thread and whether it was interrupted. A put is noted once
    * the fake holds it, so a test that has seen the note sees the record outstanding in the fake.
    */
  final class Recording extends FakeProducer {
    val calls = new ConcurrentLinkedQueue[(String, String, Boolean)]() // (what, thread, interrupted)
    private def note(what: String, interrupted: Boolean): Unit =
      calls.add((what, Thread.currentThread().getName, interrupted))
    override def put(record: KinesisRecord): ListenableFuture[UserRecordResult] = {
      val interrupted = Thread.currentThread().isInterrupted
      try super.put(record)
      finally note(new String(record.data.array(), "UTF-8"), interrupted)
    }
    override def flush(): Unit = { note("flush", Thread.currentThread().isInterrupted); super.flush() }
  }

  private def record(i: Int) = KinesisRecord("s", s"k$i", null, ByteBuffer.wrap(i.toString.getBytes("UTF-8")))

  private def awaitCalls(r: Recording, n: Int): Unit = {
    val deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10)
    while (r.calls.size < n && System.nanoTime() < deadline) Thread.sleep(1)
    assert(r.calls.size == n)
  }

  test("an interrupted task thread's puts and flushes reach the KPL from the sender, in order, uninterrupted") {
    val r = new Recording
    val sender = new SenderClient(r)
    Thread.currentThread().interrupt() // what Spark does to a task it stops
    val futures =
      try {
        val fs = (0 until 100).map(i => sender.put(record(i)))
        sender.flush()
        assert(Thread.currentThread().isInterrupted, "the caller's interrupt is left for Spark to see")
        fs
      } finally Thread.interrupted()
    awaitCalls(r, 101)
    val calls = r.calls.asScala.toSeq
    assert(calls.map(_._1) == (0 until 100).map(_.toString) :+ "flush")
    assert(calls.forall(_._2.startsWith("spark-kinesis-sender-")), calls.map(_._2).distinct)
    assert(!calls.exists(_._3), "a call reached the KPL on an interrupted thread")
    r.succeed(100)
    futures.foreach(f => assert(f.get(10, TimeUnit.SECONDS).isSuccessful))
    sender.destroy()
    assert(r.destroyed)
  }

  test("what the KPL's put throws fails that record's future, and the sender goes on") {
    val r = new Recording
    val sender = new SenderClient(r)
    r.failPutWith = Some(new DaemonException("Child process exited with code 1"))
    val failed = sender.put(record(1))
    val e = intercept[ExecutionException](failed.get(10, TimeUnit.SECONDS))
    assert(e.getCause.isInstanceOf[DaemonException])
    r.failPutWith = None
    val ok = sender.put(record(2))
    awaitCalls(r, 2)
    r.succeed(1)
    assert(ok.get(10, TimeUnit.SECONDS).isSuccessful)
    sender.destroy()
  }

  test("queued records count as outstanding; after destroy a put fails at once, never hangs") {
    val r = new Recording
    val sender = new SenderClient(r)
    val f = sender.put(record(1))
    awaitCalls(r, 1)
    assert(sender.outstandingRecords == 1) // in the KPL (the fake) now, no longer queued
    sender.destroy()
    val late = sender.put(record(2))
    val e = intercept[ExecutionException](late.get(10, TimeUnit.SECONDS))
    assert(e.getCause.isInstanceOf[DaemonException])
    assert(sender.outstandingRecords == 1)
    r.succeed(1)
    assert(f.get(10, TimeUnit.SECONDS).isSuccessful)
  }

  test("a refused stream's records in flight fail at once; the KPL's later answers and other streams are untouched") {
    val r = new Recording
    val sender = new SenderClient(r)
    def to(stream: String, i: Int) = KinesisRecord(stream, s"k$i", null, ByteBuffer.wrap(i.toString.getBytes("UTF-8")))
    val refused = (0 until 3).map(i => sender.put(to("typo", i)))
    val other = sender.put(to("good", 3))
    awaitCalls(r, 4)
    val error = new StreamRefused("typo", "Kinesis refused writes to typo")
    sender.failInFlight("typo", error)
    refused.foreach { f =>
      val e = intercept[ExecutionException](f.get(0, TimeUnit.SECONDS))
      assert(e.getCause eq error)
    }
    assert(!other.isDone)
    r.succeed(4) // the KPL answers them after all (it gave up, or the stream appeared): too late, ignored
    assert(other.get(10, TimeUnit.SECONDS).isSuccessful)
    sender.failInFlight("typo", error) // nothing left of it in flight
    val later = sender.put(to("typo", 5))
    awaitCalls(r, 5)
    r.succeed(1)
    assert(later.get(10, TimeUnit.SECONDS).isSuccessful, "a record put after the failure is the KPL's again")
    sender.destroy()
  }
}
