package io.github.sparkkinesis

import java.util.concurrent.ConcurrentLinkedQueue

import io.github.sparkkinesis.shaded.guava.util.concurrent.{ListenableFuture, SettableFuture}
import io.github.sparkkinesis.shaded.kpl.{Attempt, UserRecordFailedException, UserRecordResult}

import io.github.sparkkinesis.aggregation.{
  Clock,
  HashKey,
  Scheduler,
  ShardMap,
  ShardRange,
  StreamLayout,
  StreamMetadata
}
import io.github.sparkkinesis.compat.CollectionConverters._

/** A controllable stand-in for the KPL: puts stay outstanding until the test completes them. */
class FakeProducer extends ProducerClient {
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

  /** What the writer's own aggregation reads: one stream of `shards` equal shards unless a test sets another. */
  @volatile var metadata: StreamMetadata = new FakeMetadata(FakeMetadata.even(2))
  def streamMetadata(calls: ControlPlaneCalls): StreamMetadata = metadata

  /** Completes every outstanding record in the shard of `layout` that holds its hash key. */
  def succeedAllIn(layout: StreamLayout): Unit = succeedAll { r =>
    layout.shards.shards(layout.shards.indexOf(HashKey.of(r.partitionKey, r.explicitHashKey))).id
  }

  /** Completes the oldest outstanding record in the shard of `layout` that holds its hash key. */
  def succeedOldestIn(layout: StreamLayout): Unit = Option(inFlight.poll()).foreach { case (r, f) =>
    val shard = layout.shards.shards(layout.shards.indexOf(HashKey.of(r.partitionKey, r.explicitHashKey))).id
    f.set(new UserRecordResult(List(new Attempt(0, 5, null, null, true)).asJava, "1", shard, true))
  }

  /** Completes every outstanding record, each in the shard `shardOf` names. */
  def succeedAll(shardOf: KinesisRecord => String): Unit = while (!inFlight.isEmpty) {
    Option(inFlight.poll()).foreach { case (r, f) =>
      f.set(new UserRecordResult(List(new Attempt(0, 5, null, null, true)).asJava, "1", shardOf(r), true))
    }
  }
  def flush(): Unit = flushes += 1

  /** What the daemon's error metrics say: (stream, code) of permanent errors met lately. */
  @volatile var errors: Seq[(String, String)] = Nil
  override def permanentErrors(): Seq[(String, String)] = errors

  /** Runs inside `destroy`, before it is marked: a test makes destroying block or fail. */
  @volatile var onDestroy: () => Unit = () => ()
  def destroy(): Unit = { onDestroy(); destroyed = true }

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

/** Stream layouts a test controls; counts reads. */
final class FakeMetadata(@volatile var current: StreamLayout) extends StreamMetadata {
  @volatile var reads = 0
  def layout(stream: String): StreamLayout = { reads += 1; current }
}

object FakeMetadata {

  /** `n` shards splitting the hash-key space evenly, ids shardId-<n>-<i> (a reshard gives new ids, as Kinesis does). */
  def even(n: Int, auto: Boolean = false): StreamLayout = {
    val space = java.math.BigInteger.ONE.shiftLeft(128)
    val step = space.divide(java.math.BigInteger.valueOf(n.toLong))
    val shards = (0 until n).map { i =>
      val start = step.multiply(java.math.BigInteger.valueOf(i.toLong))
      val end =
        if (i == n - 1) space.subtract(java.math.BigInteger.ONE) else start.add(step).subtract(java.math.BigInteger.ONE)
      ShardRange(s"shardId-$n-$i", start, end)
    }
    StreamLayout(auto, ShardMap(shards))
  }
}

/** A clock that moves only when a test moves it. */
final class FakeClock extends Clock {
  @volatile private var now = 1000L * 1000000000L // an arbitrary origin, as System.nanoTime's
  def nanoTime(): Long = now
  def advanceMs(ms: Long): Unit = now += ms * 1000000L
}

/** A pool of fake producers with hand-driven clocks: the pool's (`nowMs`, for eviction) and the aggregation's (`clock`:
  * lingers, quotas and re-sends run on this thread when a test calls [[tick]], never on their own).
  */
final class FakePool {
  @volatile var nowMs = 0L
  val clock = new FakeClock
  val created = new ConcurrentLinkedQueue[FakeProducer]()
  private val schedulers = new ConcurrentLinkedQueue[Scheduler]()
  val pool = new ProducerPool(
    _ => { val p = new FakeProducer; created.add(p); p },
    () => nowMs,
    _ => () => (),
    name => { val s = new Scheduler(clock, name); schedulers.add(s); s }
  )
  def last: FakeProducer = created.asScala.last

  /** Moves the aggregation's clock on by `ms`, a millisecond at a time, running what falls due at each. */
  def tick(ms: Long): Unit = (1L to ms).foreach { _ =>
    clock.advanceMs(1)
    schedulers.forEach(_.runDue())
  }

  /** Runs what is due now, without moving the clock. */
  def runDue(): Unit = schedulers.forEach(_.runDue())
}
