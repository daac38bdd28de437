package io.github.sparkkinesis.bench

import java.nio.ByteBuffer
import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Paths}
import java.util.concurrent.atomic.{AtomicLong, AtomicReference}

import com.fasterxml.jackson.databind.ObjectMapper
import io.github.sparkkinesis.shaded.guava.util.concurrent.{FutureCallback, Futures, MoreExecutors}
import io.github.sparkkinesis.{KinesisWriterOptions, KplProducerClient, WriterState}
import io.github.sparkkinesis.shaded.kpl.{KinesisProducer, UserRecordResult}

import scala.jdk.CollectionConverters._
import scala.jdk.OptionConverters._

/** The baseline for the writer: the same records pushed straight into a `KinesisProducer`, as a plain KPL user would
  * (the KPL samples' backpressure idiom), with no Spark. The producer is built by the writer's own code path
  * (`KinesisWriterOptions.parse` → `ProducerConfig` → `KplProducerClient`), so both sides run identical KPL settings.
  *
  * {{{
  * java -cp <classpath> io.github.sparkkinesis.bench.BareKplLoop --options-file opts.json --records N --warmup W --payload-bytes B
  * }}}
  * `opts.json`: the option map the Python facade passes to `KinesisWriter.create` (snake_case keys, `kpl.<Name>`).
  * Progress goes to stderr; the last stdout line is the result as JSON. Exits 1 if any record failed.
  */
object BareKplLoop {
  private val WarmupIdOffset = 1000000000000L
  private val DeadlineMs = 10 * 60 * 1000L

  final case class Args(optionsFile: String, records: Long, warmup: Long, payloadBytes: Int)

  def parseArgs(args: Array[String]): Args = {
    val usage = "usage: BareKplLoop --options-file opts.json --records N --warmup W --payload-bytes B"
    if (args.length % 2 != 0) throw new IllegalArgumentException(usage)
    val m = args.grouped(2).map(a => a(0) -> a(1)).toMap
    val unknown = m.keySet -- Set("--options-file", "--records", "--warmup", "--payload-bytes")
    if (unknown.nonEmpty) throw new IllegalArgumentException(s"unknown argument(s) ${unknown.mkString(", ")}; $usage")
    def need(k: String) = m.getOrElse(k, throw new IllegalArgumentException(s"missing $k; $usage"))
    val a = Args(
      need("--options-file"),
      need("--records").toLong,
      m.get("--warmup").map(_.toLong).getOrElse(0L),
      m.get("--payload-bytes").map(_.toInt).getOrElse(100)
    )
    require(a.records > 0, "--records must be positive")
    require(a.warmup >= 0, "--warmup must be non-negative")
    require(a.payloadBytes >= BenchRecords.IdDigits, s"--payload-bytes must be at least ${BenchRecords.IdDigits}")
    a
  }

  /** A flat JSON object; scalar values become strings as the Python facade writes them (booleans as true/false). */
  def readOptions(path: String): Map[String, String] = {
    val node = new ObjectMapper().readTree(Files.readAllBytes(Paths.get(path)))
    if (!node.isObject) throw new IllegalArgumentException(s"$path: expected a JSON object of option -> value")
    node
      .fields()
      .asScala
      .map { e =>
        val v = e.getValue
        if (!v.isValueNode || v.isNull)
          throw new IllegalArgumentException(s"$path: option ${e.getKey} must be a string, number or boolean")
        e.getKey -> v.asText
      }
      .toMap
  }

  /** Completions, counted on the KPL's callback thread. */
  final class Tally(options: KinesisWriterOptions) extends FutureCallback[UserRecordResult] {
    val succeeded = new AtomicLong()
    val failed = new AtomicLong()
    val firstFailure = new AtomicReference[Throwable]()
    def onSuccess(r: UserRecordResult): Unit = succeeded.incrementAndGet()
    def onFailure(t: Throwable): Unit = {
      failed.incrementAndGet()
      if (firstFailure.compareAndSet(null, t))
        System.err.println(s"BareKplLoop: first failure: ${WriterState.describe(options, t).getMessage}")
    }
    def completed: Long = succeeded.get + failed.get
  }

  /** utime + stime of a process, in seconds. */
  def cpuSeconds(pid: String, ticksPerSecond: Double): Double = {
    val stat = new String(Files.readAllBytes(Paths.get(s"/proc/$pid/stat")), StandardCharsets.US_ASCII)
    val fields = stat.substring(stat.lastIndexOf(')') + 2).split(' ') // fields(0) is field 3 (state)
    (fields(11).toLong + fields(12).toLong) / ticksPerSecond
  }

  def clockTicks(): Double =
    try {
      val p = new ProcessBuilder("getconf", "CLK_TCK").redirectErrorStream(true).start()
      val out = new String(p.getInputStream.readAllBytes(), StandardCharsets.US_ASCII).trim
      if (p.waitFor() == 0) out.toDouble else 100.0
    } catch { case scala.util.control.NonFatal(_) => 100.0 }

  /** The KPL daemon: the descendant of this JVM whose command is `kinesis_producer_<hash>`. */
  def findDaemon(): ProcessHandle = {
    def find() = ProcessHandle.current().descendants().iterator().asScala.find { p =>
      val info = p.info()
      (info.command().toScala ++ info.commandLine().toScala).exists(_.contains("kinesis_producer"))
    }
    val deadline = System.currentTimeMillis() + 30000L
    var found = find()
    while (found.isEmpty) {
      if (System.currentTimeMillis() > deadline)
        throw new IllegalStateException("No kinesis_producer child process found 30 s after the KPL started")
      Thread.sleep(50)
      found = find()
    }
    found.get
  }

  def main(argv: Array[String]): Unit = {
    val args = parseArgs(argv)
    val options = KinesisWriterOptions.parse(readOptions(args.optionsFile))
    val stream = options.streamName.getOrElse(
      throw new IllegalArgumentException("the options need stream_name (BareKplLoop has no streamName column)")
    )
    val queueLimit = options.queueLimit
    if (!sys.env.get("AWS_EC2_METADATA_DISABLED").contains("true"))
      System.err.println("BareKplLoop: AWS_EC2_METADATA_DISABLED is not true; the KPL daemon may probe EC2 metadata")
    System.err.println(s"BareKplLoop: $options")
    val ticks = clockTicks()
    val producer = KplProducerClient.start(options.producer, KplProducerClient.credentials(options.producer))
    val tally = new Tally(options)
    var exit = 1
    try {
      val daemon = findDaemon()
      val daemonPid = daemon.pid().toString

      def send(firstId: Long, n: Long): Unit = {
        var i = 0L
        while (i < n) {
          while (producer.getOutstandingRecordsCount() >= queueLimit) Thread.sleep(1)
          val id = firstId + i
          val f = producer.addUserRecord(
            stream,
            BenchRecords.partitionKey(id),
            null,
            ByteBuffer.wrap(BenchRecords.data(id, args.payloadBytes))
          )
          Futures.addCallback(f, tally, MoreExecutors.directExecutor())
          i += 1
        }
      }
      def awaitCompleted(target: Long, what: String): Unit = {
        producer.flush()
        val deadline = System.currentTimeMillis() + DeadlineMs
        while (tally.completed < target) {
          if (System.currentTimeMillis() > deadline)
            throw new IllegalStateException(
              s"$what: only ${tally.completed} of $target records completed after ${DeadlineMs / 1000} s"
            )
          Thread.sleep(5)
        }
      }

      if (args.warmup > 0) {
        System.err.println(s"BareKplLoop: warm-up, ${args.warmup} records")
        send(WarmupIdOffset, args.warmup)
        awaitCompleted(args.warmup, "warm-up")
      }
      val warmupFailed = tally.failed.get
      System.err.println(s"BareKplLoop: measuring ${args.records} records (queue_limit=$queueLimit)")
      val wall0 = System.nanoTime()
      val jvm0 = cpuSeconds("self", ticks)
      val daemon0 = cpuSeconds(daemonPid, ticks)
      send(0L, args.records)
      awaitCompleted(args.warmup + args.records, "measured window")
      val wall = (System.nanoTime() - wall0) / 1e9
      val jvm = cpuSeconds("self", ticks) - jvm0
      val daemonCpu = cpuSeconds(daemonPid, ticks) - daemon0
      val failed = tally.failed.get - warmupFailed
      def round(x: Double, digits: Int) = BigDecimal(x).setScale(digits, BigDecimal.RoundingMode.HALF_UP).toDouble
      val result = new ObjectMapper().createObjectNode()
      result.put("records", args.records)
      result.put("failed", failed)
      result.put("wall_s", round(wall, 3))
      result.put("jvm_cpu_s", round(jvm, 2))
      result.put("daemon_cpu_s", round(daemonCpu, 2))
      result.put("daemon_pid", daemon.pid())
      result.put("records_per_s", round(args.records / wall, 1))
      println(result.toString)
      System.out.flush()
      if (tally.failed.get == 0) exit = 0
      else System.err.println(s"BareKplLoop: ${tally.failed.get} records failed (${warmupFailed} in the warm-up)")
    } catch {
      case e: Throwable =>
        System.err.println(s"BareKplLoop: failed: $e")
        e.printStackTrace()
        exit = 2
    } finally producer.destroy()
    System.exit(exit)
  }
}
