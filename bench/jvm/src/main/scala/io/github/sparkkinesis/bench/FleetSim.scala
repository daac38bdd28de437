package io.github.sparkkinesis.bench

import java.util.concurrent.{CountDownLatch, Executors, ThreadLocalRandom, TimeUnit}

import com.codahale.metrics.Counter
import org.slf4j.Logger

import scala.jdk.CollectionConverters._

import io.github.sparkkinesis.{
  ControlPlaneCalls,
  DriverLayouts,
  KinesisWriterOptions,
  KplProducerClient,
  SdkStreamMetadata
}
import io.github.sparkkinesis.aggregation.{
  AggregationSettings,
  Clock,
  StreamLayout,
  StreamLayouts,
  StreamMetadata,
  Warnings
}

/** The fleet simulation (make bench, part "fleet"): the writer's real reading code, [[SdkStreamMetadata]] behind
  * [[StreamLayouts]], once per simulated executor JVM (its own SDK client, count and background thread), all writing
  * the same streams, each (executor, stream)'s first record at a random instant of the first `--start-ms`, against an
  * endpoint that enforces Kinesis' control-plane limits (the fault front's `limit_control_plane`). A record arriving
  * while its stream has no layout goes alone: the simulation polls each pair as a writer with records would (every
  * `--poll-ms`) and times how long it went without one. The KPL daemons' own reads are not simulated (native code).
  *
  * `--mode executors`: each executor reads each stream itself (the writer before the driver shipped layouts, and still
  * where it cannot: per-row streams, `driver_check=false`). `--mode driver`: each stream is a query whose driver reads
  * it ([[DriverLayouts]], its own SDK client) when its first write is planned, at a random instant of `--start-ms`, and
  * its executors take what it ships; their tasks start when it returns (`driver_wait_s`: how long each query's first
  * write waited for its layout). An executor's client is made only if it reads.
  *
  * {{{
  * java -cp <classpath> io.github.sparkkinesis.bench.FleetSim --options-file opts.json --executors N
  *   --streams a,b,c --start-ms 1000 --poll-ms 50 --deadline-ms 600000 --mode executors|driver
  * }}}
  * The last stdout line is the result as JSON: calls, throttles, and the seconds each pair went alone (`alone_s`).
  */
object FleetSim {
  def main(argv: Array[String]): Unit = {
    val m = argv.grouped(2).map(a => a(0) -> a(1)).toMap
    def need(k: String) = m.getOrElse(k, throw new IllegalArgumentException(s"missing $k"))
    val options = KinesisWriterOptions.parse(BareKplLoop.readOptions(need("--options-file")))
    val executors = need("--executors").toInt
    val streams = need("--streams").split(",").toSeq
    val startMs = m.get("--start-ms").map(_.toLong).getOrElse(1000L)
    val pollMs = m.get("--poll-ms").map(_.toLong).getOrElse(50L)
    val deadlineMs = m.get("--deadline-ms").map(_.toLong).getOrElse(600000L)
    val shipped = m.get("--mode").getOrElse("executors") match {
      case "executors" => false
      case "driver"    => true
      case other       => throw new IllegalArgumentException(s"--mode executors|driver, not $other")
    }

    val config = options.producer
    val credentials = KplProducerClient.credentials(config)
    val settings = config.aggregationSettings
    val calls = new Counter
    val throttles = new Counter
    val warned = new Counter
    val quiet: Warnings = (_: Logger, _: String, _: String) => warned.inc()
    val pollers = Executors.newScheduledThreadPool(32)
    val background = Executors.newFixedThreadPool(32)
    def client(): StreamMetadata =
      new SdkStreamMetadata(config, credentials, calls = new ControlPlaneCalls(calls, throttles))
    val fleet = (0 until executors).map(_ =>
      new StreamLayouts(new Lazily(client), settings, Clock.system, background, quiet, (_, _) => ())
    )
    val drivers = streams.map { stream =>
      val metadata = new Lazily(client)
      stream -> (new DriverLayouts(options.copy(streamName = Some(stream)), None, metadata.layout), metadata)
    }.toMap
    val driverWait = new java.util.concurrent.ConcurrentLinkedQueue[java.lang.Long]()

    val pairs = executors * streams.size
    val alone =
      new java.util.concurrent.ConcurrentLinkedQueue[java.lang.Long]() // nanoseconds each pair went without a layout
    val done = new CountDownLatch(pairs)
    val t0 = System.nanoTime()

    /** The pair's first record now, then each `pollMs` until its stream has a layout. */
    def pair(layouts: StreamLayouts, stream: String, firstMs: Long): Unit =
      pollers.schedule(
        new Runnable {
          private var since = 0L // the pair's first record
          def run(): Unit = {
            val now = System.nanoTime()
            if (since == 0L) since = now
            if (layouts(stream).layout != null) {
              alone.add(now - since)
              done.countDown()
            } else pollers.schedule(this, pollMs, TimeUnit.MILLISECONDS)
          }
        },
        firstMs,
        TimeUnit.MILLISECONDS
      )
    if (!shipped)
      for (layouts <- fleet; stream <- streams)
        pair(layouts, stream, ThreadLocalRandom.current().nextLong(startMs max 1))
    else
      for (stream <- streams)
        pollers.schedule(
          new Runnable {
            def run(): Unit = {
              val planned = System.nanoTime()
              val layouts = drivers(stream)._1.toShip() // the first write's factory
              driverWait.add(System.nanoTime() - planned)
              fleet.foreach { l => layouts.foreach(l.adopt); pair(l, stream, 0L) } // each executor's first task
            }
          },
          ThreadLocalRandom.current().nextLong(startMs max 1),
          TimeUnit.MILLISECONDS
        )
    val finished = done.await(deadlineMs, TimeUnit.MILLISECONDS)
    val wallS = (System.nanoTime() - t0) / 1e9
    pollers.shutdownNow()
    background.shutdownNow()
    fleet.foreach(_.close())
    drivers.values.foreach(_._2.close())

    val aloneS = alone.asScala.map(ns => f"${ns / 1e9}%.3f")
    val fields = Seq(
      "executors" -> executors,
      "streams" -> streams.size,
      "pairs" -> pairs,
      "pairs_with_layout" -> aloneS.size,
      "finished" -> finished,
      "wall_s" -> f"$wallS%.2f",
      "calls" -> calls.getCount,
      "throttles" -> throttles.getCount,
      "warnings" -> warned.getCount,
      "alone_s" -> aloneS.mkString("[", ", ", "]"),
      "driver_wait_s" -> driverWait.asScala.map(ns => f"${ns / 1e9}%.3f").mkString("[", ", ", "]")
    )
    println(fields.map { case (k, v) => s""""$k": $v""" }.mkString("{", ", ", "}"))
    if (!finished) sys.exit(1)
  }

  /** A reader whose client is made on its first read (a thousand executors that never read make none). */
  private final class Lazily(make: () => StreamMetadata) extends StreamMetadata {
    @volatile private var made: StreamMetadata = _
    def layout(stream: String): StreamLayout = synchronized {
      if (made == null) made = make()
      made
    }.layout(stream)
    override def close(): Unit = if (made != null) made.close()
  }
}
