package io.github.sparkkinesis

import java.util.concurrent.ConcurrentLinkedQueue

import io.github.sparkkinesis.shaded.guava.util.concurrent.{ListenableFuture, SettableFuture}
import software.amazon.kinesis.producer.{Attempt, UserRecordFailedException, UserRecordResult}

import io.github.sparkkinesis.compat.CollectionConverters._

/** A controllable stand-in for the KPL: puts stay outstanding until the test completes them. */
final class FakeProducer extends ProducerClient {
  private val inFlight = new ConcurrentLinkedQueue[(KinesisRecord, SettableFuture[UserRecordResult])]()
  @volatile var flushes = 0
  @volatile var destroyed = false
  @volatile var failPutWith: Option[RuntimeException] = None
  val sent = new ConcurrentLinkedQueue[KinesisRecord]()

  def put(record: KinesisRecord): ListenableFuture[UserRecordResult] = {
    failPutWith.foreach(e => throw e)
    val f = SettableFuture.create[UserRecordResult]()
    inFlight.add(record -> f)
    sent.add(record)
    f
  }
  def outstandingRecords: Long = inFlight.size.toLong
  def flush(): Unit = flushes += 1
  def destroy(): Unit = destroyed = true

  /** Completes the oldest `n` outstanding records successfully. */
  def succeed(n: Int): Unit = (1 to n).foreach { _ =>
    Option(inFlight.poll())
      .foreach(_._2.set(new UserRecordResult(List(new Attempt(0, 5, null, null, true)).asJava, "1", "shardId-0", true)))
  }

  /** Completes the n-th (0-based) outstanding record successfully. */
  def succeedNth(n: Int): Unit = {
    val entry = inFlight.asScala.drop(n).head
    inFlight.remove(entry)
    entry._2.set(new UserRecordResult(List(new Attempt(0, 5, null, null, true)).asJava, "1", "shardId-0", true))
  }

  /** Fails every outstanding record as the KPL does when its daemon dies. */
  def daemonDied(): Unit = while (!inFlight.isEmpty) {
    Option(inFlight.poll()).foreach(_._2.setException(new RuntimeException("Child process exited with code 137")))
  }

  /** Fails the oldest outstanding record as the KPL does after its retries. */
  def failOne(code: String, message: String): Unit = Option(inFlight.poll()).foreach { case (_, f) =>
    val result = new UserRecordResult(List(new Attempt(0, 5, message, code, false)).asJava, null, null, false)
    f.setException(new UserRecordFailedException(result, null))
  }
}

/** A pool of fake producers with a hand-driven clock. */
final class FakePool {
  @volatile var nowMs = 0L
  val created = new ConcurrentLinkedQueue[FakeProducer]()
  val pool = new ProducerPool(
    _ => { val p = new FakeProducer; created.add(p); p },
    () => nowMs,
    _ => () => ()
  )
  def last: FakeProducer = created.asScala.last
}
