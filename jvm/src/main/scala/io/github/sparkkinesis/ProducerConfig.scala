package io.github.sparkkinesis

import scala.collection.immutable.SortedMap

/** The driver's default region from its environment or profile; never EC2 metadata (slow or absent off EC2, and the
  * executors' answer may differ anyway).
  */
private[sparkkinesis] object DriverRegion {
  import io.github.sparkkinesis.shaded.awssdk.regions.providers.{AwsProfileRegionProvider, SystemSettingsRegionProvider}

  def lookup(profile: Option[String]): Option[String] = {
    def attempt(f: => io.github.sparkkinesis.shaded.awssdk.regions.Region) =
      try Option(f).map(_.id())
      catch { case scala.util.control.NonFatal(_) => None }
    attempt(new SystemSettingsRegionProvider().getRegion)
      .orElse(attempt(new AwsProfileRegionProvider(null, profile.orNull).getRegion))
  }
}

/** The KPL endpoint: always TLS, a bare host and a port. */
private[sparkkinesis] final case class Endpoint(host: String, port: Int) {
  override def toString: String = s"https://$host:$port"
}

private[sparkkinesis] object Endpoint {
  private val HostPattern = "^[A-Za-z0-9.-]+$".r

  /** Accepts `host`, `host:port` and `https://host[:port][/]`; the KPL wants a bare host and a port. */
  def parse(value: String): Endpoint = {
    val v = value.trim
    def fail(why: String) = new IllegalArgumentException(
      s"Option ${KinesisWriterOptions.EndpointKey}='$v' is invalid: $why. Use a host, host:port or https://host:port " +
        "(the KPL always speaks TLS; against an emulator use its TLS port and kpl.VerifyCertificate=false)."
    )
    val rest =
      if (v.regionMatches(true, 0, "https://", 0, 8)) v.substring(8)
      else if (v.contains("://")) throw fail(s"scheme '${v.takeWhile(_ != ':')}' is not supported")
      else v
    val hostPort = rest.stripSuffix("/")
    if (hostPort.contains("/") || hostPort.contains("?")) throw fail("it has a path")
    val (host, port) = hostPort.lastIndexOf(':') match {
      case -1 => (hostPort, 443)
      case i =>
        val p = Parse.longOption(hostPort.substring(i + 1)).filter(p => p >= 1 && p <= 65535).map(_.toInt)
        (hostPort.substring(0, i), p.getOrElse(throw fail("the port is not a number in 1..65535")))
    }
    if (host.isEmpty) throw fail("the host is empty")
    if (host.contains("_")) throw fail("the KPL rejects underscores in host names (use an alias or IP)")
    if (HostPattern.findFirstIn(host).isEmpty)
      throw fail("the host has characters other than letters, digits, '.' and '-'")
    new Endpoint(host, port)
  }
}

/** Who builds the aggregates: the writer, per shard before the daemon (one record per aggregate reaches the daemon), or
  * the KPL daemon from the user records it gets one by one.
  */
private[sparkkinesis] sealed abstract class Aggregation(val name: String) extends Serializable
private[sparkkinesis] object Aggregation {
  case object Writer extends Aggregation("writer")
  case object Kpl extends Aggregation("kpl")
  val all: Seq[Aggregation] = Seq(Writer, Kpl)

  /** The daemon's RecordMaxBufferedTime when the writer aggregates (at most the user's). */
  val DaemonBufferMs = 1L

  /** How often a daemon told its stream places by key re-reads the stream's strategy, when the writer aggregates: once
    * a day, not every `DescribeStreamSummaryIntervalMs`. Such a daemon places nothing itself (its aggregation is off),
    * so what the strategy says changes nothing it sends (an AUTO stream ignores the keys it passes on); the driver
    * re-reads each stream for every executor ([[DriverLayouts]]). Every daemon asking each interval would be one call
    * per executor and stream against the account's 20 a second (docs/configuration.md, "Large fleets").
    */
  val DaemonStrategyRereadMs: Long = 24L * 60 * 60 * 1000
}

/** The KPL-facing part of the options: two writers with equal configs share one KPL daemon. */
private[sparkkinesis] final case class ProducerConfig(
    region: Option[String],
    endpoint: Option[Endpoint],
    credentials: Credentials,
    kpl: SortedMap[String, String],
    aggregation: Aggregation, // its default is the option table's (KinesisWriterOptions), the one place it is set
    gatherMs: Long, // the writer's idle gather (gather_ms), its default the option table's too
    ordered: Boolean = false // per-key order (ordered): one Kinesis record in flight per shard
) {

  /** The final KPL settings as the user sees them: writer defaults, then the user's, then region and endpoint. */
  def kplSettings: Map[String, String] =
    KplSettings.writerDefaults ++ kpl ++ region.map("Region" -> _) ++ endpoint.toSeq.flatMap { e =>
      Seq("KinesisEndpoint" -> e.host, "KinesisPort" -> e.port.toString)
    }

  /** The user's KPL settings as the KPL reads them: its own defaults where none is set. */
  def kpc: io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration =
    KplSettings.applyTo(new io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration(), kplSettings)

  /** Whether the writer builds the aggregates (aggregation='writer', unless the user turned aggregation off). */
  def aggregatesInWriter: Boolean =
    aggregation == Aggregation.Writer && kplSettings.get("AggregationEnabled").forall(_.trim.toBoolean)

  /** What the daemon is started with. When the writer aggregates, the daemon gets one record per aggregate and places
    * none itself: its aggregation is off, so it reads no shard map (one `ListShards` per executor and stream) and makes
    * no "Wrong Shard" re-sends (the writer reads the map, checks where each aggregate landed and routes again what a
    * reshard misplaced: [[aggregation.RetryPolicy]]); it waits at most [[Aggregation.DaemonBufferMs]] to collect them
    * into a PutRecords, as the writer's linger already took the user's RecordMaxBufferedTime. It fails what Kinesis
    * throttles back to the writer, which holds each shard to `RateLimit` and re-sends (the daemon would re-send after
    * half its buffer time: at once).
    */
  def daemonSettings: Map[String, String] = {
    val s = kplSettings
    if (!aggregatesInWriter) s
    else
      s ++ Map(
        "AggregationEnabled" -> "false",
        "FailIfThrottled" -> "true",
        "RecordMaxBufferedTime" -> math.min(Aggregation.DaemonBufferMs, kpc.getRecordMaxBufferedTime).toString
      ) ++ (if (s.get(KplSettings.StrategyDefault).contains("USER_PARTITION_KEY"))
              Map("DescribeStreamSummaryIntervalMs" -> Aggregation.DaemonStrategyRereadMs.toString)
            else Map.empty)
  }

  override def toString: String = {
    val shownKpl = kpl.map { case (k, v) =>
      if (KplSettings.byName.get(k).exists(_.secret)) k -> Redact.secret else k -> v
    }
    s"ProducerConfig(region=${region.getOrElse("<default>")}, endpoint=${endpoint.getOrElse("<default>")}, " +
      s"credentials=$credentials, aggregation=${aggregation.name}, gatherMs=$gatherMs, ordered=$ordered, kpl=${shownKpl
          .map { case (k, v) => s"$k=$v" }
          .mkString("{", ", ", "}")})"
  }
}
