package io.github.sparkkinesis.bench

import java.util.concurrent.{CountDownLatch, Executors, ThreadLocalRandom, TimeUnit}

import com.codahale.metrics.Counter
import org.slf4j.Logger

import scala.jdk.CollectionConverters._

import io.github.sparkkinesis.{ControlPlaneCalls, KinesisWriterOptions, KplProducerClient, SdkStreamMetadata}
import io.github.sparkkinesis.aggregation.{AggregationSettings, Clock, StreamLayouts, Warnings}

/** The fleet simulation (make bench, part "fleet"): the writer's real reading code, [[SdkStreamMetadata]] behind
  * [[StreamLayouts]], once per simulated executor JVM (its own SDK client, count and background thread), all writing
  * the same streams, each (executor, stream)'s first record at a random instant of the first `--start-ms`, against an
  * endpoint that enforces Kinesis' control-plane limits (the fault front's `limit_control_plane`). A record arriving
  * while its stream has no layout goes alone: the simulation polls each pair as a writer with records would (every
  * `--poll-ms`) and times how long it went without one. The KPL daemons' own reads are not simulated (native code).
  *
  * {{{
  * java -cp <classpath> io.github.sparkkinesis.bench.FleetSim --options-file opts.json --executors N
  *   --streams a,b,c --start-ms 1000 --poll-ms 50 --deadline-ms 600000
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

    val config = options.producer
    val credentials = KplProducerClient.credentials(config)
    val settings = AggregationSettings.of(config.kpc, config.gatherMs)
    val calls = new Counter
    val throttles = new Counter
    val warned = new Counter
    val quiet: Warnings = (_: Logger, _: String, _: String) => warned.inc()
    val pollers = Executors.newScheduledThreadPool(32)
    val background = Executors.newFixedThreadPool(32)
    val fleet = (0 until executors).map { _ =>
      val count = new ControlPlaneCalls(calls, throttles)
      val metadata = new SdkStreamMetadata(config, credentials, calls = count)
      new StreamLayouts(metadata, settings, Clock.system, background, quiet, _ => ())
    }

    val pairs = executors * streams.size
    val alone =
      new java.util.concurrent.ConcurrentLinkedQueue[java.lang.Long]() // nanoseconds each pair went without a layout
    val done = new CountDownLatch(pairs)
    val t0 = System.nanoTime()
    for (layouts <- fleet; stream <- streams) {
      val first = ThreadLocalRandom.current().nextLong(startMs max 1)
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
        first,
        TimeUnit.MILLISECONDS
      )
    }
    val finished = done.await(deadlineMs, TimeUnit.MILLISECONDS)
    val wallS = (System.nanoTime() - t0) / 1e9
    pollers.shutdownNow()
    background.shutdownNow()
    fleet.foreach(_.close())

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
      "alone_s" -> aloneS.mkString("[", ", ", "]")
    )
    println(fields.map { case (k, v) => s""""$k": $v""" }.mkString("{", ", ", "}"))
    if (!finished) sys.exit(1)
  }
}
