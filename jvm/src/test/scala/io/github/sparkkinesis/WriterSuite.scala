package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite
import io.github.sparkkinesis.shaded.kpl.DaemonException

class WriterSuite extends AnyFunSuite {
  import TestWriters._

  test("the first async failure wins and is rethrown by the next process and by close") {
    val fakes = new FakePool
    val w = writer(fakes)
    w.open(0, 0)
    w.process(row("a", "1"))
    w.process(row("b", "2"))
    fakes.last.failOne("ProvisionedThroughputExceededException", "Rate exceeded for shard")
    fakes.last.failOne("InternalFailure", "second error")
    val e = intercept[KinesisWriteException](w.process(row("c", "3")))
    assert(e.getMessage.contains("ProvisionedThroughputExceededException (Rate exceeded for shard)"))
    assert(e.getMessage.contains("stream s"))
    val onClose = intercept[KinesisWriteException](w.close(null))
    assert(onClose.getMessage.contains("ProvisionedThroughputExceededException"))
    assert(fakes.pool.live.head.refs == 0, "close releases the producer even when it fails")
  }

  test("fail_on_error=false counts failures and goes on") {
    val fakes = new FakePool
    val w = writer(fakes, Map("fail_on_error" -> "false"))
    w.open(0, 0)
    w.process(row("a", "1"))
    fakes.last.failOne("InternalFailure", "oops")
    w.process(row("b", "2"))
    fakes.last.succeed(1)
    w.close(null)
    assert(fakes.last.sent.size == 2)
  }

  test("close = check, flush, wait for this writer's own records, check") {
    val fakes = new FakePool
    val w1 = writer(fakes)
    val w2 = writer(fakes)
    w1.open(0, 0)
    w2.open(1, 0)
    assert(fakes.created.size == 1, "equal configs share one producer")
    val p = fakes.last
    w2.process(row("other", "x")) // another task's record stays outstanding throughout
    w1.process(row("a", "1"))
    val closer = new Thread(() => w1.close(null))
    closer.start()
    closer.join(300)
    assert(closer.isAlive, "close waits for its own record")
    assert(p.flushes >= 1)
    // complete only w1's record (the second in flight): w2's stays outstanding
    val (first, second) = (p.sent.toArray.head, p.sent.toArray.last)
    assert(first.asInstanceOf[KinesisRecord].partitionKey == "other")
    p.succeedNth(1)
    closer.join(10000)
    assert(!closer.isAlive, "close returns once its own records are done, whatever other tasks have pending")
    assert(p.outstandingRecords == 1)
    assert(second.asInstanceOf[KinesisRecord].partitionKey == "a")
  }

  test("close fails with the pending count after flush_timeout_ms") {
    val fakes = new FakePool
    val w = writer(fakes, Map("flush_timeout_ms" -> "200"))
    w.open(0, 0)
    w.process(row("a", "1"))
    w.process(row("b", "2"))
    val e = intercept[KinesisWriteException](w.close(null))
    assert(e.getMessage.contains("2 records to s were still unconfirmed after flush_timeout_ms=200"))
  }

  test("close after a task error releases without waiting") {
    val fakes = new FakePool
    val w = writer(fakes)
    w.open(0, 0)
    w.process(row("a", "1"))
    w.close(new RuntimeException("task failed"))
    assert(fakes.pool.live.head.refs == 0)
  }

  test("a dead daemon marks the producer broken; the next writer gets a fresh one") {
    val fakes = new FakePool
    val w = writer(fakes)
    w.open(0, 0)
    val dead = fakes.last
    dead.failPutWith =
      Some(new DaemonException("The child process has been shutdown and can no longer accept messages."))
    val e = intercept[KinesisWriteException](w.process(row("a", "1")))
    assert(e.getMessage.contains("KPL daemon is not running"))
    w.close(e)
    assert(dead.destroyed, "the broken producer is destroyed once released")
    val w2 = writer(fakes)
    w2.open(0, 1)
    assert(fakes.last ne dead)
    w2.process(row("a", "1"))
    fakes.last.succeed(1)
    w2.close(null)
  }

  test("a put that throws gives back the room it reserved under the limits") {
    val fakes = new FakePool
    val w = writer(fakes, Map("queue_limit" -> "1"))
    w.open(0, 0)
    fakes.last.failPutWith = Some(new IllegalArgumentException("rejected by the KPL"))
    intercept[IllegalArgumentException](w.process(row("a", "12345")))
    val b = fakes.pool.live.head.bound
    assert(b.records.get == 0 && b.bytes.get == 0)
    fakes.last.failPutWith = None
    w.process(row("a", "1")) // would block forever at queue_limit=1 had the failed put kept its room
    fakes.last.succeed(1)
    w.close(null)
  }

  test("metrics count confirmed records, bytes, failures, retries and outstanding bytes") {
    val fakes = new FakePool
    val w = writer(fakes, Map("fail_on_error" -> "false"))
    w.open(0, 0)
    val m = fakes.pool.live.head.metrics
    val b = fakes.pool.live.head.bound
    w.process(row("a", "12345"))
    w.process(row("b", "123"))
    w.process(row("c", "1"))
    assert(b.bytes.get == 9)
    fakes.last.succeed(2)
    fakes.last.failOne("InternalFailure", "boom")
    assert(m.recordsSent.getCount == 2 && m.bytesSent.getCount == 8 && m.recordsFailed.getCount == 1)
    assert(b.bytes.get == 0)
    assert(m.putLatency.getCount == 1, "latency is sampled: 1 in 16 records, starting with the first")
    w.close(null)
  }

  test("failure messages list each distinct cause in order") {
    import io.github.sparkkinesis.shaded.kpl.Attempt
    val attempts = Seq(
      new Attempt(0, 5, "Stream x not found", "ResourceNotFoundException", false),
      new Attempt(0, 5, "Stream x not found", "ResourceNotFoundException", false),
      new Attempt(0, 5, "Record has reached expiration", "Expired", false)
    )
    assert(
      WriterState.summarize(attempts) ==
        "ResourceNotFoundException x2 (Stream x not found), then Expired (Record has reached expiration)"
    )
  }

  test("records failed by a dying daemon retire the producer; the retried task gets a fresh one") {
    val fakes = new FakePool
    val w = writer(fakes)
    w.open(0, 0)
    val dead = fakes.last
    w.process(row("a", "1"))
    dead.daemonDied()
    val e = intercept[KinesisWriteException](w.close(null))
    assert(e.getMessage.contains("Child process exited with code 137"))
    assert(dead.destroyed, "released and broken: destroyed, never handed out again")
    val retry = writer(fakes)
    retry.open(0, 0)
    assert(fakes.last ne dead)
    retry.process(row("a", "1"))
    fakes.last.succeed(1)
    retry.close(null)
  }

  test("a record failure (not a daemon failure) keeps the producer") {
    val fakes = new FakePool
    val w = writer(fakes, Map("fail_on_error" -> "false"))
    w.open(0, 0)
    w.process(row("a", "1"))
    fakes.last.failOne("InternalFailure", "x")
    w.close(null)
    assert(!fakes.last.destroyed && !fakes.pool.live.head.broken)
  }

  test("toString carries no secret") {
    val w =
      writer(new FakePool, Map("aws_access_key_id" -> "AKIASECRETKEYID", "aws_secret_access_key" -> "sekrit/Value"))
    for (s <- Seq(w.toString, w.options.toString, w.options.producer.toString)) {
      assert(!s.contains("AKIASECRETKEYID") && !s.contains("sekrit/Value"), s)
    }
  }
}
