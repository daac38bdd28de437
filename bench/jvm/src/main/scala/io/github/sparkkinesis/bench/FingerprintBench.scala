package io.github.sparkkinesis.bench

import java.nio.ByteBuffer
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.openjdk.jmh.annotations._

import io.github.sparkkinesis.aggregation.Clock
import io.github.sparkkinesis.replay.{Fingerprint, FingerprintLedger, FingerprintStore}

/** What skip on replay adds to each confirmed record of a first attempt (`dedupe_location`): its fingerprint alone
  * (`fingerprint`), and the fingerprint into a task's ledger, written to a local directory every 65,536 records
  * (`confirm`: what the writer's completion does per record). The records are the bench's (`BenchRecords`), to stream
  * `sink_dedupe-100`.
  */
class FingerprintBench extends NanoBench {
  import FingerprintBench._

  @Param(Array("100", "1024"))
  var payloadBytes: Int = _

  private var keys: Array[String] = _
  private var data: Array[ByteBuffer] = _
  private var next = 0
  private var dir: java.nio.file.Path = _
  private var ledger: FingerprintLedger = _
  private var sum = 0L
  private val sink: Fingerprint.Sink = (h1: Long, h2: Long) => sum += h1 ^ h2

  @Setup(Level.Trial)
  def setup(): Unit = {
    keys = Array.tabulate(RecordCount)(i => BenchRecords.partitionKey(i.toLong))
    data = Array.tabulate(RecordCount)(i => ByteBuffer.wrap(BenchRecords.data(i.toLong, payloadBytes)))
    dir = Files.createTempDirectory("bench-fingerprints-")
    val store = new FingerprintStore(new Path(dir.toUri), new Configuration())
    ledger = new FingerprintLedger(store, new Path(dir.toUri), "bench", Long.MaxValue / 2, Clock.system)
  }

  @Benchmark
  def fingerprint(): Long = {
    val i = next
    next = (i + 1) & (RecordCount - 1)
    Fingerprint.of(Stream, keys(i), null, data(i), sink)
    sum
  }

  @Benchmark
  def confirm(): Unit = {
    val i = next
    next = (i + 1) & (RecordCount - 1)
    Fingerprint.of(Stream, keys(i), null, data(i), ledger.add)
    if (i == 0 && { flushes += 1; flushes % 64 == 0 }) ledger.flush()
  }
  private var flushes = 0

  @TearDown(Level.Trial)
  def tearDown(): Unit = {
    ledger.flush()
    val files = Files.list(dir)
    try files.forEach(f => Files.delete(f))
    finally files.close()
    Files.delete(dir)
  }
}

object FingerprintBench {
  val Stream = "sink_dedupe-100"

  /** A power of two: the benchmark cycles through the records with a mask. */
  val RecordCount = 1024
}
