package io.github.sparkkinesis

import scala.collection.immutable.SortedMap

/** All writer options, parsed once on the driver. Keys are the snake_case names Python uses. */
private[sparkkinesis] final case class KinesisWriterOptions(
    streamName: Option[String],
    queueLimit: Int,
    maxOutstandingBytes: Long,
    failOnError: Boolean,
    partitioner: Option[Partitioner],
    flushTimeoutMs: Long,
    producerIdleTimeoutMs: Long,
    producer: ProducerConfig,
    dedupe: Option[DedupeOptions] = None,
    driverCheck: Boolean = true,
    orderBy: Seq[String] = Nil
) {

  /** Whether the writer keeps each key's order ([[aggregation.SealRule]]: one Kinesis record in flight per shard). */
  def ordered: Boolean = producer.ordered

  /** Names this writer's metrics source and accumulators: the stream, or `perRowStreams`. */
  def label: String = streamName.getOrElse("perRowStreams")

  /** The user's bound on a record's data, the KPL's `MaxUserRecordSize` (the writer's default: 10 MiB, what any stream
    * may take); each record is held to its own stream's limit too ([[RecordLimit]]).
    */
  def maxRecordBytes: Long = producer.kplSettings("MaxUserRecordSize").trim.toLong

  override def toString: String =
    s"KinesisWriterOptions(stream=${streamName.getOrElse("<per-row>")}, queueLimit=$queueLimit, " +
      s"maxOutstandingBytes=$maxOutstandingBytes, " +
      s"failOnError=$failOnError, partitioner=${partitioner.map(_.name).getOrElse("<column>")}, " +
      s"flushTimeoutMs=$flushTimeoutMs, $producer)"
}

private[sparkkinesis] object KinesisWriterOptions {
  // The option table: one row per option, in keyword order (Python's `KinesisWriter(...)`). Each row is also the
  // option's key in the code below; the build writes the table into the facts resource (`Facts`, build code in
  // jvm/src/facts), from which Python takes its keyword check, signature, docstring and types (_writer_options.pyi).
  private val rows = Vector.newBuilder[OptionSpec]
  private def row(
      name: String,
      kind: String,
      doc: String,
      default: Option[String] = None,
      allowed: Option[Allowed] = None,
      secret: Boolean = false
  ): OptionSpec = { val o = OptionSpec(name, kind, doc, default, allowed, secret); rows += o; o }
  private def atLeast1(what: String) = Some(Allowed.AtLeast(1, what))

  val StreamName: OptionSpec = row(
    "stream_name",
    "string",
    "the stream; required unless every row has a ``streamName`` column.",
    allowed = Some(Allowed.NonBlank)
  )
  val Region: OptionSpec =
    row("region", "string", "the AWS region; default: the driver's default region (``AWS_REGION``, profile).")
  val EndpointKey: OptionSpec =
    row("endpoint", "string", "``host[:port]`` or ``https://host[:port]``; default: the region's Kinesis endpoint.")

  /** Bounded by default: an unbounded KPL queue is the bug this library exists to fix (docs/configuration.md, sizing).
    */
  val QueueLimit: OptionSpec = row(
    "queue_limit",
    "int",
    "user records written and not yet confirmed, per executor JVM and stream (the ``boundRecords`` metric).",
    Some("10000"),
    atLeast1("at least 1 (records outstanding per executor JVM and stream)")
  )

  /** 64 MiB: bounds memory for large records, where a record count alone would not. */
  val MaxOutstandingBytes: OptionSpec = row(
    "max_outstanding_bytes",
    "long",
    "payload bytes written and not yet confirmed, per executor JVM and stream (the ``boundBytes`` metric).",
    Some((64L * 1024 * 1024).toString),
    atLeast1("a positive number of bytes")
  )
  val FailOnError: OptionSpec =
    row("fail_on_error", "boolean", "a record the KPL gives up on fails the task.", Some("true"))
  val PartitionerKey: OptionSpec = row(
    "partitioner",
    "string",
    "``'random'`` or ``'fixed'`` (one key per Spark partition) when rows have no ``partitionKey`` column; " +
      "``'none'`` for streams whose RecordDistributionStrategy is AUTO: no key, or a null one, is needed.",
    allowed = Some(Allowed.OneOf(Partitioner.all.map(_.name)))
  )
  val AggregationKey: OptionSpec = row(
    "aggregation",
    "string",
    "who packs user records into Kinesis records: ``'writer'`` (per shard, before the KPL daemon: far less CPU " +
      "per record) or ``'kpl'`` (the daemon, one user record at a time).",
    Some(Aggregation.Writer.name),
    allowed = Some(Allowed.OneOf(Aggregation.all.map(_.name)))
  )
  val GatherMs: OptionSpec = row(
    "gather_ms",
    "long",
    "with ``aggregation='writer'``: how long a record waits for others on a shard with nothing in flight before " +
      "they go as one Kinesis record. The default sends a trickle at once (real-time latency); more fills Kinesis " +
      "records at a trickle, for fewer PUT payload units, at up to that much latency (``kpl.RecordMaxBufferedTime`` " +
      "stays the bound).",
    Some(aggregation.SealRule.DefaultGatherMs.toString),
    atLeast1("a positive number of milliseconds")
  )
  val Ordered: OptionSpec = row(
    "ordered",
    "boolean",
    "keep each key's order: a record never reaches a reader after a record of its partition key (or explicit hash " +
      "key) that the same task wrote after it, through throttling, failures, retries and reshards. " +
      "Each shard then has one Kinesis record in flight at a time (docs/reliability.md, \"Per-key order\"); needs ``aggregation='writer'``.",
    Some("false")
  )
  val OrderBy: OptionSpec = row(
    "order_by",
    "string",
    "``format('kinesis')`` only: the column(s), comma-separated, that order a key's records (a commit version, a " +
      "sequence number): the sink asks Spark to cluster rows by their partition key and sort them by these, so one " +
      "task writes each key in that order. Turns ``ordered`` on.",
    allowed = Some(Allowed.NonBlank)
  )
  val FlushTimeoutMs: OptionSpec = row(
    "flush_timeout_ms",
    "long",
    "how long a task waits for its records at the end.",
    Some("300000"),
    atLeast1("a positive number of milliseconds")
  )
  val ProducerIdleTimeoutMs: OptionSpec = row(
    "producer_idle_timeout_ms",
    "long",
    "an unused KPL daemon is stopped after this.",
    Some("60000"),
    atLeast1("a positive number of milliseconds")
  )
  val DedupeLocation: OptionSpec = row(
    "dedupe_location",
    "string",
    "a directory (``s3a://bucket/prefix``, ``hdfs://…``, ``file:///shared/dir``) for the fingerprints of confirmed " +
      "records: a restarted query's replayed micro-batch skips what Kinesis already confirmed (micro-batch streaming, " +
      "``foreach`` or ``format('kinesis')``; docs/reliability.md).",
    allowed = Some(Allowed.NonBlank)
  )
  val DedupeFlushIntervalMs: OptionSpec = row(
    "dedupe_flush_interval_ms",
    "long",
    "with ``dedupe_location``: how often a running task writes the fingerprints confirmed since its last write (a " +
      "killed executor re-sends at most this window).",
    Some("5000"),
    atLeast1("a positive number of milliseconds")
  )
  val DriverCheck: OptionSpec = row(
    "driver_check",
    "boolean",
    "ask Kinesis about the stream on the driver when the query starts, so a missing stream, refused credentials or an " +
      "untrusted endpoint fail there; ``False`` for a driver that cannot reach Kinesis or whose credentials are not " +
      "the executors' (the executors' writes still fail those within seconds).",
    Some("true")
  )
  val AccessKeyId: OptionSpec = row(
    "aws_access_key_id",
    "string",
    "static credentials, with ``aws_secret_access_key``; default: the AWS default credentials chain.",
    secret = true
  )
  val SecretAccessKey: OptionSpec =
    row("aws_secret_access_key", "string", "the secret of ``aws_access_key_id``.", secret = true)
  val SessionToken: OptionSpec =
    row("aws_session_token", "string", "the session token of temporary static credentials.", secret = true)
  val ProfileName: OptionSpec = row("profile_name", "string", "a named profile instead of static credentials.")
  val RoleArn: OptionSpec =
    row("role_arn", "string", "assume this role (through STS), on top of the credentials above.")
  val RoleSessionName: OptionSpec =
    row("role_session_name", "string", "the assumed role's session name.", Some("spark-kinesis"))
  val RoleExternalId: OptionSpec =
    row("role_external_id", "string", "the external id the role's trust policy asks for.", secret = true)
  val StsEndpoint: OptionSpec =
    row("sts_endpoint", "string", "the STS endpoint to assume the role at; default: the region's.")
  val RoleDurationSeconds: OptionSpec = row(
    "role_duration_seconds",
    "int",
    "how long each assumed-role session lasts (AWS: 900 up to the role's maximum); default: STS's, 1 hour. " +
      "The writer refreshes the credentials before they expire.",
    allowed = atLeast1("a positive number of seconds (AWS allows 900 up to the role's maximum)")
  )

  /** Every writer option, in keyword order. */
  val table: Seq[OptionSpec] = rows.result()
  val optionNames: Seq[String] = table.map(_.name)

  /** KPL settings travel as `kpl.<ExactKplName>`; Python's `kpl={...}` dict becomes these keys. */
  val KplPrefix = "kpl."

  /** Keys whose values are secrets: never logged, printed or put in messages. */
  val SecretKeys: Seq[String] = table.filter(_.secret).map(_.name) :+ (KplPrefix + "ProxyPassword")

  /** The options as given, read through their rows: trimmed, blank is unset (unless the row allows no blank), else the
    * row's default; a value of the wrong type or outside the row's rule fails with the row's wording.
    */
  private final class Given(own: Map[String, String]) {
    def str(o: OptionSpec): Option[String] = own.get(o.name).map(_.trim) match {
      case Some("") if o.allowed.contains(Allowed.NonBlank) =>
        throw Parse.bad(o.name, own(o.name), o.allowed.get.expected)
      case v => v.filter(_.nonEmpty)
    }
    private def valueOf(o: OptionSpec): Option[String] = str(o).orElse(o.default)
    private def atLeast(o: OptionSpec, v: String, n: Long): Unit = o.allowed.foreach {
      case Allowed.AtLeast(min, what) if n < min => throw Parse.bad(o.name, v, what)
      case _                                     =>
    }
    def long(o: OptionSpec): Option[Long] = valueOf(o).map { v =>
      val n = Parse.long(o.name, v); atLeast(o, v, n); n
    }
    def int(o: OptionSpec): Option[Int] = valueOf(o).map { v =>
      val n = Parse.int(o.name, v); atLeast(o, v, n); n
    }
    def bool(o: OptionSpec): Option[Boolean] = valueOf(o).map(Parse.bool(o.name, _))
    def word(o: OptionSpec): Option[String] = valueOf(o).map { v =>
      o.allowed match {
        case Some(a: Allowed.OneOf) => Parse.oneOf(o.name, v, a)
        case _                      => v
      }
    }
  }

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
    val in = new Given(own)
    import in.str

    val kpl = SortedMap(kplRaw.map { case (k, v) => k.stripPrefix(KplPrefix) -> v }.toSeq: _*)
    val endpoint = str(EndpointKey).map(Endpoint.parse)
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
        throw Parse.bad(Region.name, r, "an AWS region name such as us-east-1")
    }

    if (kpl.keys.exists(_.equalsIgnoreCase("ProxyPassword")))
      throw new IllegalArgumentException(
        "kpl.ProxyPassword is refused: the KPL hands its whole configuration to its native daemon on the command " +
          "line, which every local user can read (/proc/<pid>/cmdline). Use a proxy that admits the executors " +
          "without a password (a source-address rule, or a local forwarding proxy that adds the credentials), with " +
          "kpl.ProxyHost and kpl.ProxyPort."
      )
    val aggregation = in.word(AggregationKey).map(w => Aggregation.all.find(_.name == w).get).get
    if (aggregation == Aggregation.Kpl && own.contains(GatherMs.name))
      throw new IllegalArgumentException(
        s"Option ${GatherMs.name} applies to ${AggregationKey.name}='writer'; with ${AggregationKey.name}='kpl' the " +
          "daemon aggregates and kpl.RecordMaxBufferedTime is how long its records wait: set that, or remove " +
          s"${GatherMs.name}."
      )
    val orderBy = str(OrderBy).map(orderColumns)
    if (orderBy.isDefined && own.get(Ordered.name).exists(v => !Parse.bool(Ordered.name, v.trim)))
      throw new IllegalArgumentException(
        s"Options ${OrderBy.name} and ${Ordered.name}=false conflict: ${OrderBy.name} sorts each key's records for a " +
          s"writer that keeps their order. Remove ${Ordered.name}=false (or ${OrderBy.name})."
      )
    val ordered = orderBy.isDefined || in.bool(Ordered).get
    val producer =
      ProducerConfig(region, endpoint, parseCredentials(in), kpl, aggregation, in.long(GatherMs).get, ordered)
    if (ordered && !producer.aggregatesInWriter)
      throw new IllegalArgumentException(
        s"Option ${Ordered.name} needs ${AggregationKey.name}='writer' (and kpl.AggregationEnabled not false): the " +
          "KPL daemon's own aggregation and retries reorder a key's records, and it cannot hold a shard's next " +
          s"record until the previous one is answered. Remove ${AggregationKey.name}='kpl' (or ${Ordered.name})."
      )
    KplSettings.validate(producer.kplSettings)
    val maxOutstandingBytes = in.long(MaxOutstandingBytes).get
    kpl.get("MaxUserRecordSize").map(_.trim.toLong).filter(_ > maxOutstandingBytes).foreach { m =>
      throw new IllegalArgumentException(
        s"kpl.MaxUserRecordSize=$m is larger than ${MaxOutstandingBytes.name}=$maxOutstandingBytes, the bytes a " +
          s"producer may hold at once, so such a record could never be written: raise ${MaxOutstandingBytes.name} to " +
          "at least the largest record, or lower kpl.MaxUserRecordSize."
      )
    }

    KinesisWriterOptions(
      streamName = str(StreamName),
      queueLimit = in.int(QueueLimit).get,
      maxOutstandingBytes = maxOutstandingBytes,
      failOnError = in.bool(FailOnError).get,
      partitioner = in.word(PartitionerKey).map(w => Partitioner.all.find(_.name == w).get),
      flushTimeoutMs = in.long(FlushTimeoutMs).get,
      producerIdleTimeoutMs = in.long(ProducerIdleTimeoutMs).get,
      producer = producer,
      dedupe =
        str(DedupeLocation).map(l => DedupeOptions(DedupeOptions.location(l), in.long(DedupeFlushIntervalMs).get)),
      driverCheck = in.bool(DriverCheck).get,
      orderBy = orderBy.getOrElse(Nil)
    )
  }

  private val RegionPattern = "^[a-z]+-([a-z]+-)?[a-z]+-[0-9]$".r

  /** `order_by`'s columns: comma-separated names, none blank (the schema's check names a missing one). */
  private def orderColumns(value: String): Seq[String] = {
    val columns = value.split(",", -1).map(_.trim).toSeq
    if (columns.exists(_.isEmpty)) throw Parse.bad(OrderBy.name, value, "column names separated by commas")
    columns
  }

  private def parseCredentials(in: Given): Credentials = {
    import in.str
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
          str(RoleSessionName).orElse(RoleSessionName.default).get,
          str(RoleExternalId),
          str(StsEndpoint),
          in.int(RoleDurationSeconds),
          base
        )
      case None => base
    }
  }
}
