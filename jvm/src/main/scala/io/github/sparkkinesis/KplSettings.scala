package io.github.sparkkinesis

import io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration

/** Every settable `KinesisProducerConfiguration` property, by its exact KPL name.
  *
  * Explicit rather than reflective: `KinesisProducerConfiguration.fromProperties` warns and ignores unknown names (we
  * reject them), accepts `Boolean.valueOf("yes") == false` (we reject it), and `getMethods()` would need the Glue
  * schema-registry classes we exclude.
  */
private[sparkkinesis] object KplSettings {
  type Kpc = KinesisProducerConfiguration

  final case class Setting(name: String, kind: String, secret: Boolean, set: (Kpc, String) => Unit)

  /** What the KPL (1.1) assumes of a stream's RecordDistributionStrategy until it has asked; UNSET: ask first. */
  val StrategyDefault = "RecordDistributionStrategyDefault"

  private def long(name: String)(f: (Kpc, Long) => Any): Setting =
    Setting(name, "long", secret = false, (c, v) => f(c, Parse.long(s"kpl.$name", v)))
  private def int(name: String)(f: (Kpc, Int) => Any): Setting =
    Setting(name, "int", secret = false, (c, v) => f(c, Parse.int(s"kpl.$name", v)))
  private def bool(name: String)(f: (Kpc, Boolean) => Any): Setting =
    Setting(name, "boolean", secret = false, (c, v) => f(c, Parse.bool(s"kpl.$name", v)))
  private def str(name: String, secret: Boolean = false)(f: (Kpc, String) => Any): Setting =
    Setting(name, "string", secret, (c, v) => f(c, v.trim))

  val all: Seq[Setting] = Seq(
    bool("AggregationEnabled")(_.setAggregationEnabled(_)),
    long("AggregationMaxCount")(_.setAggregationMaxCount(_)),
    long("AggregationMaxSize")(_.setAggregationMaxSize(_)),
    str("CaCertFile")(_.setCaCertFile(_)),
    str("CaCertPath")(_.setCaCertPath(_)),
    str("CloudwatchEndpoint")(_.setCloudwatchEndpoint(_)),
    long("CloudwatchPort")(_.setCloudwatchPort(_)),
    long("CollectionMaxCount")(_.setCollectionMaxCount(_)),
    long("CollectionMaxSize")(_.setCollectionMaxSize(_)),
    long("ConnectTimeout")(_.setConnectTimeout(_)),
    long("CredentialsRefreshDelay")(_.setCredentialsRefreshDelay(_)),
    long("DaemonHealthCheckTimeoutMs")(_.setDaemonHealthCheckTimeoutMs(_)),
    long("DescribeStreamSummaryIntervalMs")(_.setDescribeStreamSummaryIntervalMs(_)),
    bool("EnableCoreDumps")(_.setEnableCoreDumps(_)),
    bool("EnableDaemonHealthCheck")(_.setEnableDaemonHealthCheck(_)),
    bool("EnableOldestFutureTracker")(_.setEnableOldestFutureTracker(_)),
    bool("FailIfThrottled")(_.setFailIfThrottled(_)),
    str("KinesisEndpoint")(_.setKinesisEndpoint(_)),
    long("KinesisPort")(_.setKinesisPort(_)),
    str("LogLevel")(_.setLogLevel(_)),
    long("MaxConnections")(_.setMaxConnections(_)),
    long("MaxUserRecordSize")(_.setMaxUserRecordSize(_)),
    str("MetricsGranularity")(_.setMetricsGranularity(_)),
    str("MetricsLevel")(_.setMetricsLevel(_)),
    str("MetricsNamespace")(_.setMetricsNamespace(_)),
    long("MetricsUploadDelay")(_.setMetricsUploadDelay(_)),
    long("MinConnections")(_.setMinConnections(_)),
    str("NativeExecutable")(_.setNativeExecutable(_)),
    str("ProxyHost")(_.setProxyHost(_)),
    str("ProxyPassword", secret = true)(_.setProxyPassword(_)),
    long("ProxyPort")(_.setProxyPort(_)),
    str("ProxyUserName")(_.setProxyUserName(_)),
    long("RateLimit")(_.setRateLimit(_)),
    str(StrategyDefault)((c, v) =>
      c.setRecordDistributionStrategyDefault(
        Parse.oneOf(s"kpl.$StrategyDefault", v, Allowed.OneOf(Seq("UNSET", "AUTO", "USER_PARTITION_KEY")))
      )
    ),
    long("RecordMaxBufferedTime")(_.setRecordMaxBufferedTime(_)),
    long("RecordTtl")(_.setRecordTtl(_)),
    str("Region")(_.setRegion(_)),
    long("RequestTimeout")(_.setRequestTimeout(_)),
    bool("ReturnUserRecordOnFailure")(_.setReturnUserRecordOnFailure(_)),
    str("TempDirectory")(_.setTempDirectory(_)),
    str("ThreadingModel")((c, v) =>
      c.setThreadingModel(Parse.oneOf("kpl.ThreadingModel", v, Allowed.OneOf(Seq("PER_REQUEST", "POOLED"))))
    ),
    int("ThreadPoolSize")(_.setThreadPoolSize(_)),
    long("UserRecordTimeoutInMillis")(_.setUserRecordTimeoutInMillis(_)),
    bool("VerifyCertificate")(_.setVerifyCertificate(_))
  )

  val byName: Map[String, Setting] = all.map(s => s.name -> s).toMap

  /** Defaults the writer applies only where the user set none.
    *   - `MetricsLevel=none`: Spark's metrics replace the KPL's CloudWatch upload, which otherwise needs
    *     `cloudwatch:PutMetricData` and costs money.
    *   - `EnableOldestFutureTracker=false`: the tracker keeps every outstanding future in a `PriorityBlockingQueue`
    *     whose `remove` is a linear scan, once per completed record: a cost per record that grows with `queue_limit`,
    *     for `getOldestRecordTimeInMillis()`, which the writer does not use.
    *   - `RateLimit=100` (the KPL's is 150, as Flink's producer also sets): the KPL then sends a shard no more than its
    *     quota; past it, Kinesis throttles and the KPL sends again, paying each record's work once more.
    *   - `MaxUserRecordSize=10485760` (the KPL's is 1 MiB): the daemon takes what any stream may; the writer holds each
    *     record to its own stream's `MaxRecordSizeInKiB` ([[RecordLimit]]), so a record over it never reaches Kinesis
    *     to be refused and retried.
    */
  val writerDefaults: Map[String, String] =
    Map(
      "MetricsLevel" -> "none",
      "EnableOldestFutureTracker" -> "false",
      "RateLimit" -> "100",
      "MaxUserRecordSize" -> "10485760"
    )

  /** Rejects unknown names (suggesting the closest) and values the KPL itself would refuse. */
  def validate(settings: Map[String, String]): Unit = applyTo(new KinesisProducerConfiguration(), settings)

  def applyTo(config: Kpc, settings: Map[String, String]): Kpc = {
    settings.toSeq.sortBy(_._1).foreach { case (name, value) =>
      val setting = byName.getOrElse(name, throw unknown(name))
      try setting.set(config, value)
      catch {
        case e: IllegalArgumentException if !e.getMessage.startsWith("Option ") =>
          val shown = if (setting.secret) "<redacted>" else s"'$value'"
          throw new IllegalArgumentException(
            s"Option kpl.$name=$shown is rejected by the KPL: ${e.getMessage}. " +
              "Fix the value (see KinesisProducerConfiguration's documented range)."
          )
      }
    }
    config
  }

  private def unknown(name: String): IllegalArgumentException = {
    val hint = Suggest.closest(name, byName.keys).map(s => s" Did you mean '$s'?").getOrElse("")
    new IllegalArgumentException(
      s"Option kpl.$name is not a KPL setting.$hint KPL settings use their exact " +
        s"KinesisProducerConfiguration names: ${all.map(_.name).mkString(", ")}."
    )
  }
}
