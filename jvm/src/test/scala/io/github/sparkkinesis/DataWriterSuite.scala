package io.github.sparkkinesis

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.compat.CollectionConverters._

/** The DataSource V2 adapter over the task core, with fake producers: the same contract as `foreach`. */
class DataWriterSuite extends AnyFunSuite {
  import TestWriters._

  private def dataWriter(fakes: FakePool, extra: Map[String, String] = Map.empty): KinesisDataWriter = {
    val opts = options(perRecord ++ extra)
    val prepared = KinesisWriter.Prepared(opts, RowConverter.forSchema(schema, opts), None)
    new KinesisDataWriter(prepared, WritePlan(), TaskAttempt(3, 7L), fakes.pool)
  }
  private def irow(key: String, data: String): InternalRow =
    InternalRow(UTF8String.fromString(key), UTF8String.fromString(data))

  test("batch - commit returns once the task's own records are confirmed, with its counts as task metrics") {
    val fakes = new FakePool
    val w = dataWriter(fakes)
    w.write(irow("a", "12345"))
    w.write(irow("b", "123"))
    val p = fakes.last
    assert(p.sent.asScala.map(r => (r.partitionKey, r.data.remaining())).toList == List(("a", 5), ("b", 3)))
    val beforeCommit = w.currentMetricsValues().map(m => m.name() -> m.value()).toMap
    assert(beforeCommit("recordsSent") == 2 && beforeCommit("bytesSent") == 8, "pending records count as sent")
    val committer = new Thread(() => w.commit())
    committer.start()
    committer.join(300)
    assert(committer.isAlive, "commit waits for the records")
    p.succeed(2)
    committer.join(10000)
    assert(!committer.isAlive)
    val values = w.currentMetricsValues().map(m => m.name() -> m.value()).toMap
    assert(values("recordsSent") == 2 && values("bytesSent") == 8 && values("recordsFailed") == 0)
    w.close()
    assert(fakes.pool.live.head.refs == 0, "commit then close releases the producer once")
  }

  test("the producer's control-plane calls are counted once, by the task that reports next") {
    val fakes = new FakePool
    val first = dataWriter(fakes)
    first.write(irow("a", "1"))
    val calls = fakes.pool.live.head.metrics.controlPlane
    def call(): Unit = calls.interceptor.beforeTransmission(null, null)
    def metrics(w: KinesisDataWriter) = w.currentMetricsValues().map(m => m.name() -> m.value()).toMap
    call(); call(); calls.throttled()
    val second = dataWriter(fakes) // the same producer: the JVM's calls are its tasks' to share
    second.write(irow("b", "2"))
    assert(fakes.pool.live.size == 1)
    assert(metrics(first)("controlPlaneCalls") == 2 && metrics(first)("controlPlaneThrottles") == 1)
    call() // say, a background read while both run
    assert(metrics(second)("controlPlaneCalls") == 1 && metrics(second)("controlPlaneThrottles") == 0)
    assert(metrics(first)("controlPlaneCalls") == 2, "a task's count only grows by calls no task reported")
    assert(calls.calls.getCount == 3 && calls.throttles.getCount == 1, "the producer's metrics count them all")
    first.abort(); second.abort()
  }

  test("streaming - abort gives the producer back without waiting; a failure surfaces in commit") {
    val fakes = new FakePool
    val w = dataWriter(fakes)
    w.write(irow("a", "1"))
    w.abort()
    assert(fakes.pool.live.head.refs == 0)
    w.close()
    assert(fakes.pool.live.head.refs == 0, "close after abort is a no-op")

    fakes.last.succeed(1) // the aborted task's record completes later, to nobody's commit
    val w2 = dataWriter(fakes)
    w2.write(irow("a", "1"))
    fakes.last.failOne("InternalFailure", "boom")
    intercept[KinesisWriteException](w2.commit())
    assert(fakes.pool.live.head.refs == 0, "a failed commit releases too")
  }

  test("InternalRow and Row give the same record, string data as its UTF-8 bytes") {
    val opts = options(Map.empty)
    val c = RowConverter.forSchema(schema, opts)
    val viaRow = c.convert(row("ключ", "zażółć"), 0)
    val viaInternal = c.convertInternal(irow("ключ", "zażółć"), 0)
    assert(viaRow.partitionKey == viaInternal.partitionKey && viaRow.data == viaInternal.data)
    assert(viaInternal.data.remaining() == "zażółć".getBytes("UTF-8").length)
  }

  test("sink options: Spark's own keys are left out, the user's keys keep their case") {
    val m = new CaseInsensitiveStringMap(
      Map("stream_name" -> "s", "kpl.RecordTtl" -> "5000", "checkpointLocation" -> "/c", "path" -> "/p").asJava
    )
    assert(KinesisSink.writerOptions(m) == Map("stream_name" -> "s", "kpl.RecordTtl" -> "5000"))
    val parsed = KinesisWriterOptions.parse(KinesisSink.writerOptions(m) + ("region" -> "us-east-1"))
    assert(parsed.producer.kpl.get("RecordTtl").contains("5000"))
  }
}
