package io.github.sparkkinesis

import java.time.Duration

import org.slf4j.LoggerFactory
import io.github.sparkkinesis.shaded.awssdk.auth.credentials.AwsCredentialsProvider

import io.github.sparkkinesis.aggregation.{ShippedLayout, StreamLayout}

/** A query's fixed stream as the driver reads it, shipped with each write (each micro-batch's or epoch's writer
  * factory, each serialized `foreach` writer) so that its executors need not read it themselves:
  * `DescribeStreamSummary` has 20 calls a second for the whole account, and a fleet of executors each reading a stream
  * spends it (docs/configuration.md, "Large fleets"). The first layout is the start check's ([[StreamCheck]]); the
  * driver reads again once it is half of `DescribeStreamSummaryIntervalMs` old (an executor re-reads on its own only
  * when none newer came within the whole interval), and at the next write after an executor reported that it read the
  * stream itself (its map was proven stale: an aggregate landed elsewhere, a record over the limit). A failed read
  * ships the last layout, or none (the executors then read their own, as with per-row streams or `driver_check=false`,
  * which ship nothing); reads are at least [[MinReadIntervalMs]] apart. After each, `counted` takes the calls made (the
  * writer's driver totals). `clock` gives nanoseconds.
  */
private[sparkkinesis] final class DriverLayouts(
    options: KinesisWriterOptions,
    first: Option[StreamLayout],
    read: String => StreamLayout,
    counted: () => Unit = () => (),
    clock: () => Long = () => System.nanoTime(),
    sleepMs: Long => Unit = ms => Thread.sleep(ms),
    jitter: () => Double = () => java.util.concurrent.ThreadLocalRandom.current().nextDouble()
) {
  import DriverLayouts._

  private val stream: Option[String] = if (options.driverCheck) options.streamName else None
  private val refreshNanos = options.producer.kpc.getDescribeStreamSummaryIntervalMs * 1000000L / 2
  @volatile private var layout: StreamLayout = first.orNull
  private var readAtNanos = clock()
  private var nextTryNanos = if (layout == null) readAtNanos else readAtNanos + MinReadIntervalMs * 1000000L
  private val backoff = new aggregation.Backoff(MinReadIntervalMs, refreshNanos / 1000000L, jitter)
  private var stale = false

  private val refreshing = new java.util.concurrent.atomic.AtomicBoolean()

  /** What a `format("kinesis")` write ships, when Spark asks for its writer factory: the stream's layout, read again
    * first if due.
    */
  def toShip(): Seq[ShippedLayout] =
    try { readIfDue(); synchronized(held()) }
    finally counted()

  /** What a `foreach` batch ships, at once: the layout held. A read that is due runs on a thread of its own, for the
    * next batch: the driver serializes a `foreach` writer on Spark's scheduling thread, which a read (up to
    * [[FirstReadWaitMs]] while throttled) must not hold up.
    */
  def toShipNow(): Seq[ShippedLayout] = {
    if (synchronized(due(clock())) && refreshing.compareAndSet(false, true))
      Threads
        .daemon("spark-kinesis-driver-layout") {
          try readIfDue()
          finally { refreshing.set(false); counted() }
        }
        .start()
    try synchronized(held())
    finally counted()
  }

  private def due(now: Long): Boolean =
    stream.isDefined && (layout == null || stale || now - readAtNanos >= refreshNanos) && now - nextTryNanos >= 0

  private def held(): Seq[ShippedLayout] =
    stream.toSeq.flatMap(name => Option(layout).map(l => ShippedLayout(name, l, (clock() - readAtNanos) / 1000000L)))

  /** Reads the stream if due: the call outside the lock (what is held stays shippable meanwhile), its result in it. */
  private def readIfDue(): Unit = stream.foreach { name =>
    if (synchronized(due(clock()))) {
      val read =
        try Right(firstOrRead(name))
        catch { case scala.util.control.NonFatal(e) => Left(e) }
      synchronized {
        read match {
          case Right(l) =>
            layout = l
            readAtNanos = clock()
            nextTryNanos = readAtNanos + MinReadIntervalMs * 1000000L
            backoff.reset()
            stale = false
          case Left(e) =>
            nextTryNanos = clock() + backoff.nextMs() * 1000000L
            RateLimitedLog.warn(
              log,
              s"driver-layout-$name",
              s"The driver could not read the shards of stream $name (${e.getClass.getSimpleName}: " +
                s"${e.getMessage}); " +
                (if (layout == null) "the executors read them themselves." else "it ships the layout it read before.")
            )
        }
      }
    }
  }

  /** `read(name)`; while the driver has no layout to ship, a throttled read is tried again after the readers' backoff
    * ([[aggregation.Backoff]]: half a second up to a second, then half as long again each time), for up to
    * [[FirstReadWaitMs]]: a write that ships none has every executor read for itself, which is what throttled the
    * account.
    */
  private def firstOrRead(name: String): StreamLayout = {
    val deadline = clock() + FirstReadWaitMs * 1000000L
    val waits = new aggregation.Backoff(1000L, FirstReadWaitMs, jitter)
    var result: StreamLayout = null
    while (result == null)
      try result = read(name)
      catch {
        case t: aggregation.ThrottledRead if layout == null && clock() - deadline < 0 =>
          val waitMs = math.min(waits.nextMs(), (deadline - clock()) / 1000000L)
          log.info(s"Reading stream $name on the driver was throttled (${t.getMessage}); trying again in $waitMs ms")
          sleepMs(math.max(1L, waitMs))
      }
    result
  }

  /** Streams executors read themselves during a write ([[KinesisCommitMessage]]): the next write reads them first. */
  def reported(streams: Iterable[String]): Unit = synchronized {
    if (stream.exists(s => streams.exists(_ == s))) stale = true
  }
}

private[sparkkinesis] object DriverLayouts {
  private val log = LoggerFactory.getLogger(classOf[DriverLayouts])

  /** How long a write with no layout yet to ship retries throttled reads before its executors read for themselves. */
  val FirstReadWaitMs = 10000L

  /** The driver's reads of one stream are at least this far apart, whatever executors report. */
  val MinReadIntervalMs = 1000L

  /** What the driver's calls add to their User-Agent, so an account's logs (CloudTrail) tell them from executors'. */
  val UserAgent = "spark-kinesis-driver"

  /** The driver's layouts of `options`' stream, the first from the start check (`first`); `calls` counts the driver's
    * calls for the writer (the check's too), added to `accumulators` (the driver totals) after each write's read.
    */
  def apply(
      options: KinesisWriterOptions,
      first: Option[StreamLayout],
      calls: ControlPlaneCalls,
      accumulators: Option[WriterAccumulators]
  ): DriverLayouts =
    new DriverLayouts(
      options,
      first,
      name => readOnce(options.producer, name, calls),
      () => accumulators.foreach(_.addDriver(calls.claim()))
    )

  /** A client for the driver's calls, each bounded by [[StreamCheck.TimeoutMs]] and counted by `calls`. */
  def metadata(
      config: ProducerConfig,
      credentials: AwsCredentialsProvider,
      calls: ControlPlaneCalls
  ): SdkStreamMetadata =
    new SdkStreamMetadata(
      config,
      credentials,
      Some(Duration.ofMillis(StreamCheck.TimeoutMs)),
      calls,
      userAgentSuffix = Some(UserAgent)
    )

  /** One read with a client and credentials of its own, closed after (a read every few minutes keeps nothing open). */
  private def readOnce(config: ProducerConfig, stream: String, calls: ControlPlaneCalls): StreamLayout = {
    val provider = config.credentials.provider(config.region)
    try {
      val m = metadata(config, provider, calls)
      try m.layout(stream)
      finally m.close()
    } finally Credentials.close(provider)
  }
}
