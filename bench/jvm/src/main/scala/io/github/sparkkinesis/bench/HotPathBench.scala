package io.github.sparkkinesis.bench

import java.util.concurrent.TimeUnit

import io.github.sparkkinesis.shaded.guava.util.concurrent.{ListenableFuture, SettableFuture}
import io.github.sparkkinesis._
import io.github.sparkkinesis.aggregation.{ShardMap, ShardRange, StreamLayout, StreamMetadata}
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema
import org.apache.spark.sql.types.{BinaryType, StringType, StructField, StructType}
import org.openjdk.jmh.annotations._
import io.github.sparkkinesis.shaded.kpl.{Attempt, UserRecordResult}

import scala.jdk.CollectionConverters._

/** A stand-in for the KPL that completes its futures on the caller's thread, a batch at a time: the oldest batch is
  * completed (running the writer's listeners) when the next put finds it full, and on flush. At most `batch` records
  * are outstanding, so a large queue limit never blocks.
  */
final class BatchCompletingProducer(batch: Int) extends ProducerClient {
  private val inFlight = new Array[SettableFuture[UserRecordResult]](batch)
  private var count = 0 // the benchmark thread only
  var puts = 0L
  private val result =
    new UserRecordResult(List(new Attempt(0, 5, null, null, true)).asJava, "1", "shardId-000000000000", true)

  def put(record: KinesisRecord): ListenableFuture[UserRecordResult] = {
    if (count == batch) completeAll()
    puts += 1
    val f = SettableFuture.create[UserRecordResult]()
    inFlight(count) = f
    count += 1
    f
  }

  private def completeAll(): Unit = {
    var i = 0
    val n = count
    while (i < n) {
      inFlight(i).set(result)
      inFlight(i) = null
      i += 1
    }
    count = 0
  }

  def outstandingRecords: Long = count.toLong
  def flush(): Unit = completeAll()
  def destroy(): Unit = completeAll()

  /** One shard holding every hash key, the one `result` names: no aggregate is misplaced. */
  def streamMetadata(calls: ControlPlaneCalls): StreamMetadata = new StreamMetadata {
    private val all = ShardRange(
      result.getShardId,
      java.math.BigInteger.ZERO,
      java.math.BigInteger.ONE.shiftLeft(128).subtract(java.math.BigInteger.ONE)
    )
    def layout(stream: String): StreamLayout = StreamLayout(auto = false, ShardMap(Seq(all)))
  }
}

/** The writer's per-record cost: `KinesisForeachWriter.process(row)` through row conversion, the queue-limit check, the
  * put (with `aggregation=writer`, the default: into its shard's aggregate), the completion listener and the metrics,
  * with a stub producer in place of the KPL daemon.
  *
  * The production writer, with queue_limit and max_outstanding_bytes so large the check never blocks; what the check
  * itself costs is [[BoundBench]]'s.
  */
class HotPathBench extends NanoBench {
  import HotPathBench._

  @Param(Array("writer", "kpl"))
  var aggregation: String = _

  @Param(Array("100", "10240"))
  var payloadBytes: Int = _

  @Param(Array("1000"))
  var completionBatch: Int = _

  private var writer: KinesisForeachWriter = _
  private var stub: BatchCompletingProducer = _
  private var testPool: ProducerPool = _
  private var rows: Array[Row] = _
  private var next = 0
  private var processed = 0L

  @Setup(Level.Trial)
  def setup(): Unit = {
    val options = KinesisWriterOptions.parse(Options + ("aggregation" -> aggregation))
    val converter = RowConverter.forSchema(Schema, options)
    stub = new BatchCompletingProducer(completionBatch)
    val p = new ProducerPool(_ => stub, () => 0L, _ => () => ())
    testPool = p
    writer = new KinesisForeachWriter(KinesisWriter.Prepared(options, converter, None)) {
      override private[sparkkinesis] def pool: ProducerPool = p
    }
    rows = Array.tabulate(RowCount)(i => row(i.toLong, payloadBytes))
    writer.open(0L, 0L)
  }

  @Benchmark
  def process(): Unit = {
    val i = next
    next = (i + 1) & (RowCount - 1)
    processed += 1
    writer.process(rows(i))
  }

  @TearDown(Level.Trial)
  def tearDown(): Unit = {
    writer.close(null)
    // The benchmark measured real work: every record processed was put and completed through the writer's listener.
    val sent = testPool.live.map(_.metrics.recordsSent.getCount).sum
    if (stub.puts == 0 || sent != processed)
      throw new IllegalStateException(s"$processed records processed but $sent counted sent (${stub.puts} puts)")
    testPool.closeAll()
  }
}

object HotPathBench {
  val Schema: StructType = StructType(Seq(StructField("partitionKey", StringType), StructField("data", BinaryType)))

  /** What the Python facade would pass: a stream, a region, an endpoint nobody listens on (the stub never dials). The
    * stub's one shard gets `RateLimit` far above what a core can write, so the writer never holds its aggregates back
    * for the shard's quota: with the default, unbounded queue limits let the records of a run pile up behind it, and
    * the trial's close waited for them to drain at 1 MiB/s.
    */
  val Options: Map[String, String] = Map(
    "stream_name" -> "bench",
    "region" -> "us-east-1",
    "endpoint" -> "127.0.0.1:1",
    "aws_access_key_id" -> "AKIDBENCH",
    "aws_secret_access_key" -> "bench-secret",
    "kpl.VerifyCertificate" -> "false",
    "kpl.RateLimit" -> "1000000",
    "queue_limit" -> Int.MaxValue.toString,
    "max_outstanding_bytes" -> Long.MaxValue.toString
  )

  /** A power of two: the benchmark cycles through the rows with a mask. */
  val RowCount = 1024

  def row(id: Long, payloadBytes: Int): Row =
    new GenericRowWithSchema(
      Array[Any](BenchRecords.partitionKey(id), BenchRecords.data(id, payloadBytes)),
      Schema
    )
}

/** What the writer's bound costs a record that fits: `QueueLimiter.await` reserving one record and its bytes by
  * compare-and-set on the bound's two counters, and the completion's release of both (the part of
  * [[HotPathBench.process]] that `queue_limit` and `max_outstanding_bytes` add).
  */
@State(Scope.Thread)
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.NANOSECONDS)
class BoundBench { // iterations and forks: bench/run.py's command line, as for HotPathBench
  private val bound = new RecordBound(Int.MaxValue, Long.MaxValue)
  private val limiter = new QueueLimiter(bound.tryReserve, bound.latch, () => ())
  private val noCheck: () => Unit = () => ()
  private val noWarning: Long => Unit = _ => ()

  @Benchmark
  def reserveAndRelease(): Long = {
    val blocked = limiter.await(100, noCheck, noWarning)
    bound.release(1, 100L)
    blocked
  }
}
