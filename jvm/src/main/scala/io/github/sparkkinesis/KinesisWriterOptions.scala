package io.github.sparkkinesis

import scala.collection.immutable.SortedMap
import io.github.sparkkinesis.compat.CollectionConverters._

/** The driver's default region from its environment or profile; never EC2 metadata (slow or absent off EC2, and the
  * executors' answer may differ anyway).
  */
private[sparkkinesis] object DriverRegion {
  import software.amazon.awssdk.regions.providers.{AwsProfileRegionProvider, SystemSettingsRegionProvider}

  def lookup(profile: Option[String]): Option[String] = {
    def attempt(f: => software.amazon.awssdk.regions.Region) =
      try Option(f).map(_.id())
      catch { case scala.util.control.NonFatal(_) => None }
    attempt(new SystemSettingsRegionProvider().getRegion)
      .orElse(attempt(new AwsProfileRegionProvider(null, profile.orNull).getRegion))
  }
}

/** How records without a `partitionKey` column get one. */
private[sparkkinesis] sealed abstract class Partitioner(val name: String) extends Serializable
private[sparkkinesis] object Partitioner {

  /** A fresh random key per record: spreads load evenly over all shards. */
  case object Random extends Partitioner("random")

  /** One key per Spark partition: records of a partition land on one shard, in order. */
  case object Fixed extends Partitioner("fixed")

  /** No key needed (streams with `RecordDistributionStrategy=AUTO`, where Kinesis places each record itself): a row
    * without a `partitionKey` column, or with a null in it, goes without one.
    */
  case object NoKey extends Partitioner("none")
  val all: Seq[Partitioner] = Seq(Random, Fixed, NoKey)
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
}

/** The KPL endpoint: always TLS, a bare host and a port. */
private[sparkkinesis] final case class Endpoint(host: String, port: Int) {
  override def toString: String = s"https://$host:$port"
}

/** The KPL-facing part of the options: two writers with equal configs share one KPL daemon. */
private[sparkkinesis] final case class ProducerConfig(
    region: Option[String],
    endpoint: Option[Endpoint],
    credentials: Credentials,
    kpl: SortedMap[String, String],
    aggregation: Aggregation = Aggregation.Kpl
) {

  /** The final KPL settings as the user sees them: writer defaults, then the user's, then region and endpoint. */
  def kplSettings: Map[String, String] =
    KplSettings.writerDefaults ++ kpl ++ region.map("Region" -> _) ++ endpoint.toSeq.flatMap { e =>
      Seq("KinesisEndpoint" -> e.host, "KinesisPort" -> e.port.toString)
    }

  /** Whether the writer builds the aggregates (aggregation='writer', unless the user turned aggregation off). */
  def aggregatesInWriter: Boolean =
    aggregation == Aggregation.Writer && kplSettings.get("AggregationEnabled").forall(_.trim.toBoolean)

  /** What the daemon is started with. When the writer aggregates, the daemon gets one record per aggregate: its own
    * aggregation stays on with one record each (so it still predicts each aggregate's shard, rate-limits that shard and
    * re-sends what lands elsewhere, kpl-notes §8) and it waits at most [[Aggregation.DaemonBufferMs]] to collect them
    * into a PutRecords, as the writer's linger already took the user's RecordMaxBufferedTime.
    */
  def daemonSettings: Map[String, String] = {
    val s = kplSettings
    if (!aggregatesInWriter) s
    else
      s ++ Map(
        "AggregationEnabled" -> "true",
        "AggregationMaxCount" -> "1",
        "RecordMaxBufferedTime" -> math
          .min(Aggregation.DaemonBufferMs, s.get("RecordMaxBufferedTime").map(_.trim.toLong).getOrElse(100L))
          .toString
      )
  }

  override def toString: String = {
    val shownKpl = kpl.map { case (k, v) =>
      if (KplSettings.byName.get(k).exists(_.secret)) k -> Redact.secret else k -> v
    }
    s"ProducerConfig(region=${region.getOrElse("<default>")}, endpoint=${endpoint.getOrElse("<default>")}, " +
      s"credentials=$credentials, aggregation=${aggregation.name}, kpl=${shownKpl.map { case (k, v) => s"$k=$v" }.mkString("{", ", ", "}")})"
  }
}

/** One writer option: its key, its type, its default value (None: no default value) and whether it is a secret. */
private[sparkkinesis] final case class OptionSpec(
    name: String,
    kind: String,
    default: Option[String] = None,
    secret: Boolean = false
)

/** All writer options, parsed once on the driver. Keys are the snake_case names Python uses. */
private[sparkkinesis] final case class KinesisWriterOptions(
    streamName: Option[String],
    queueLimit: Int,
    maxOutstandingBytes: Long,
    failOnError: Boolean,
    partitioner: Option[Partitioner],
    flushTimeoutMs: Long,
    producerIdleTimeoutMs: Long,
    producer: ProducerConfig
) {

  /** Names this writer's metrics source and accumulators: the stream, or `perRowStreams`. */
  def label: String = streamName.getOrElse("perRowStreams")

  /** The largest record the KPL accepts with this config (its `MaxUserRecordSize`, default 1 MiB). */
  def maxRecordBytes: Long = producer.kpl.get("MaxUserRecordSize").map(_.trim.toLong).getOrElse(1048576L)

  override def toString: String =
    s"KinesisWriterOptions(stream=${streamName.getOrElse("<per-row>")}, queueLimit=$queueLimit, " +
      s"maxOutstandingBytes=$maxOutstandingBytes, " +
      s"failOnError=$failOnError, partitioner=${partitioner.map(_.name).getOrElse("<column>")}, " +
      s"flushTimeoutMs=$flushTimeoutMs, $producer)"
}

private[sparkkinesis] object KinesisWriterOptions {
  // Option keys (Python kwargs use the same names).
  val StreamName = "stream_name"
  val Region = "region"
  val EndpointKey = "endpoint"
  val QueueLimit = "queue_limit"
  val MaxOutstandingBytes = "max_outstanding_bytes"
  val FailOnError = "fail_on_error"
  val PartitionerKey = "partitioner"
  val AggregationKey = "aggregation"
  val FlushTimeoutMs = "flush_timeout_ms"
  val ProducerIdleTimeoutMs = "producer_idle_timeout_ms"
  val AccessKeyId = "aws_access_key_id"
  val SecretAccessKey = "aws_secret_access_key"
  val SessionToken = "aws_session_token"
  val ProfileName = "profile_name"
  val RoleArn = "role_arn"
  val RoleSessionName = "role_session_name"
  val RoleExternalId = "role_external_id"
  val StsEndpoint = "sts_endpoint"
  val RoleDurationSeconds = "role_duration_seconds"

  /** KPL settings travel as `kpl.<ExactKplName>`; Python's `kpl={...}` dict becomes these keys. */
  val KplPrefix = "kpl."

  /** Bounded by default: an unbounded KPL queue is the bug this library exists to fix. At 100-byte records this is ~1
    * MB queued; see docs/configuration.md for sizing.
    */
  val DefaultQueueLimit = 10000

  /** 64 MiB of payload per daemon: ~2 s of 32 shards' worth at 1 MiB/s; bounds memory for large records, where a record
    * count alone would not (10,000 x 1 MiB records is 10 GiB).
    */
  val DefaultMaxOutstandingBytes: Long = 64L * 1024 * 1024
  val DefaultFlushTimeoutMs = 300000L
  val DefaultProducerIdleTimeoutMs = 60000L
  val DefaultRoleSessionName = "spark-kinesis"

  /** Every writer option: the one table the parser, Python's keyword table, its docstring and docs/configuration.md are
    * checked against (tests/test_python_api.py).
    */
  val table: Seq[OptionSpec] = Seq(
    OptionSpec(StreamName, "string"), // required unless every row has a streamName column
    OptionSpec(Region, "string"), // the driver's default region
    OptionSpec(EndpointKey, "string"), // the region's Kinesis endpoint
    OptionSpec(QueueLimit, "int", Some(DefaultQueueLimit.toString)),
    OptionSpec(MaxOutstandingBytes, "long", Some(DefaultMaxOutstandingBytes.toString)),
    OptionSpec(FailOnError, "boolean", Some("true")),
    OptionSpec(PartitionerKey, "string"), // the partitionKey column is required
    OptionSpec(AggregationKey, "string", Some(Aggregation.Kpl.name)),
    OptionSpec(FlushTimeoutMs, "long", Some(DefaultFlushTimeoutMs.toString)),
    OptionSpec(ProducerIdleTimeoutMs, "long", Some(DefaultProducerIdleTimeoutMs.toString)),
    OptionSpec(AccessKeyId, "string", secret = true), // none: the default credentials chain
    OptionSpec(SecretAccessKey, "string", secret = true),
    OptionSpec(SessionToken, "string", secret = true),
    OptionSpec(ProfileName, "string"),
    OptionSpec(RoleArn, "string"),
    OptionSpec(RoleSessionName, "string", Some(DefaultRoleSessionName)),
    OptionSpec(RoleExternalId, "string", secret = true),
    OptionSpec(StsEndpoint, "string"), // the region's STS endpoint
    OptionSpec(RoleDurationSeconds, "int") // STS's default (1 hour)
  )
  val optionNames: Seq[String] = table.map(_.name)

  /** Keys whose values are secrets: never logged, printed or put in messages. */
  val SecretKeys: Seq[String] = table.filter(_.secret).map(_.name) :+ (KplPrefix + "ProxyPassword")

  def parse(options: java.util.Map[String, String]): KinesisWriterOptions = parse(options.asScala.toMap)

  def parse(raw: Map[String, String]): KinesisWriterOptions = parse(raw, DriverRegion.lookup)

  /** @param defaultRegion the region to use when none is set, given the profile name (driver env). */
  def parse(raw: Map[String, String], defaultRegion: Option[String] => Option[String]): KinesisWriterOptions = {
    val (kplRaw, own) = raw.partition(_._1.startsWith(KplPrefix))
    own.keys.toSeq.sorted.find(k => !optionNames.contains(k)).foreach { k =>
      val hint = Suggest.closest(k, optionNames).map(s => s" Did you mean '$s'?").getOrElse("")
      throw new IllegalArgumentException(
        s"Unknown option '$k'.$hint Valid options: ${optionNames.mkString(", ")}, and KPL settings as kpl.<Name>."
      )
    }
    def str(key: String): Option[String] = own.get(key).map(_.trim).filter(_.nonEmpty)
    def positiveLong(key: String, default: Long, unit: String = "milliseconds"): Long = str(key)
      .map { v =>
        val n = Parse.long(key, v)
        if (n <= 0) throw Parse.bad(key, v, s"a positive number of $unit")
        n
      }
      .getOrElse(default)

    val queueLimit = str(QueueLimit)
      .map(Parse.positiveInt(QueueLimit, _, "at least 1 (records outstanding in the KPL per executor JVM)"))
      .getOrElse(DefaultQueueLimit)

    val kpl = SortedMap(kplRaw.map { case (k, v) => k.stripPrefix(KplPrefix) -> v }.toSeq: _*)
    val endpoint = str(EndpointKey).map(parseEndpoint)
    if (str(Region).isDefined && kpl.contains("Region"))
      throw new IllegalArgumentException(s"Options $Region and kpl.Region both set the region: keep only '$Region'.")
    // Without a region the KPL daemon asks EC2's metadata service and exits off EC2: resolve it
    // here, once, and ship it to the executors.
    val region = str(Region).orElse(if (kpl.contains("Region")) None else defaultRegion(str(ProfileName)))
    if (region.isEmpty && !kpl.contains("Region"))
      throw new IllegalArgumentException(
        s"Option $Region is not set and the driver has no default region (AWS_REGION, aws.region, or the " +
          s"profile's region in ~/.aws/config). Set $Region='us-east-1' (any region name, also with an endpoint)."
      )
    if (endpoint.isDefined && (kpl.contains("KinesisEndpoint") || kpl.contains("KinesisPort")))
      throw new IllegalArgumentException(
        s"Options $EndpointKey and kpl.KinesisEndpoint/kpl.KinesisPort both set the endpoint: keep only '$EndpointKey'."
      )
    region.foreach { r =>
      if (!RegionPattern.pattern.matcher(r).matches())
        throw Parse.bad(Region, r, "an AWS region name such as us-east-1")
    }

    if (kpl.keys.exists(_.equalsIgnoreCase("ProxyPassword")))
      throw new IllegalArgumentException(
        "kpl.ProxyPassword is refused: the KPL hands its whole configuration to its native daemon on the command " +
          "line, which every local user can read (/proc/<pid>/cmdline). Use a proxy that admits the executors " +
          "without a password (a source-address rule, or a local forwarding proxy that adds the credentials), with " +
          "kpl.ProxyHost and kpl.ProxyPort."
      )
    val aggregation = str(AggregationKey)
      .map { v =>
        Aggregation.all
          .find(_.name.equalsIgnoreCase(v))
          .getOrElse(throw Parse.bad(AggregationKey, v, Aggregation.all.map(a => s"'${a.name}'").mkString(" or ")))
      }
      .getOrElse(Aggregation.Kpl)
    val producer = ProducerConfig(region, endpoint, parseCredentials(str), kpl, aggregation)
    KplSettings.validate(producer.kplSettings)

    KinesisWriterOptions(
      streamName = str(StreamName),
      queueLimit = queueLimit,
      maxOutstandingBytes = positiveLong(MaxOutstandingBytes, DefaultMaxOutstandingBytes, "bytes"),
      failOnError = str(FailOnError).forall(Parse.bool(FailOnError, _)),
      partitioner = str(PartitionerKey).map { v =>
        Partitioner.all
          .find(_.name.equalsIgnoreCase(v))
          .getOrElse(
            throw Parse.bad(PartitionerKey, v, Partitioner.all.map(p => s"'${p.name}'").mkString(", "))
          )
      },
      flushTimeoutMs = positiveLong(FlushTimeoutMs, DefaultFlushTimeoutMs),
      producerIdleTimeoutMs = positiveLong(ProducerIdleTimeoutMs, DefaultProducerIdleTimeoutMs),
      producer = producer
    )
  }

  private val RegionPattern = "^[a-z]+-([a-z]+-)?[a-z]+-[0-9]$".r

  private val HostPattern = "^[A-Za-z0-9.-]+$".r

  /** Accepts `host`, `host:port` and `https://host[:port][/]`; the KPL wants a bare host and a port. */
  def parseEndpoint(value: String): Endpoint = {
    val v = value.trim
    def fail(why: String) = new IllegalArgumentException(
      s"Option $EndpointKey='$v' is invalid: $why. Use a host, host:port or https://host:port " +
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
    Endpoint(host, port)
  }

  private def parseCredentials(str: String => Option[String]): Credentials = {
    val key = str(AccessKeyId)
    val secret = str(SecretAccessKey)
    val token = str(SessionToken)
    val profile = str(ProfileName)
    val role = str(RoleArn)
    (key, secret) match {
      case (Some(_), None) =>
        throw new IllegalArgumentException(
          s"Option $AccessKeyId is set but $SecretAccessKey is not: set both, or neither."
        )
      case (None, Some(_)) =>
        throw new IllegalArgumentException(
          s"Option $SecretAccessKey is set but $AccessKeyId is not: set both, or neither."
        )
      case _ =>
    }
    if (token.isDefined && key.isEmpty)
      throw new IllegalArgumentException(s"Option $SessionToken needs $AccessKeyId and $SecretAccessKey.")
    if (profile.isDefined && key.isDefined)
      throw new IllegalArgumentException(
        s"Options $ProfileName and $AccessKeyId conflict: choose one credentials source."
      )
    if (role.isEmpty) {
      Seq(RoleSessionName, RoleExternalId, StsEndpoint, RoleDurationSeconds).find(k => str(k).isDefined).foreach { k =>
        throw new IllegalArgumentException(s"Option $k only applies to assume-role: set $RoleArn too, or remove $k.")
      }
    }
    val base: Credentials = (key, secret) match {
      case (Some(k), Some(s)) => Credentials.Static(k, s, token)
      case _                  => profile.map(Credentials.Profile).getOrElse(Credentials.DefaultChain)
    }
    role match {
      case Some(arn) =>
        if (!arn.startsWith("arn:"))
          throw new IllegalArgumentException(
            s"Option $RoleArn='$arn' is not an IAM role ARN (arn:aws:iam::<account>:role/<name>)."
          )
        Credentials.AssumeRole(
          arn,
          str(RoleSessionName).getOrElse(DefaultRoleSessionName),
          str(RoleExternalId),
          str(StsEndpoint),
          str(RoleDurationSeconds).map(
            Parse.positiveInt(
              RoleDurationSeconds,
              _,
              "a positive number of seconds (AWS allows 900 up to the role's maximum)"
            )
          ),
          base
        )
      case None => base
    }
  }
}
