package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite

class OptionsSuite extends AnyFunSuite {
  import TestWriters.base

  private def parse(extra: (String, String)*): KinesisWriterOptions = KinesisWriterOptions.parse(base ++ extra)
  private def rejected(extra: (String, String)*): String =
    intercept[IllegalArgumentException](KinesisWriterOptions.parse(base ++ extra)).getMessage

  test("defaults: bounded queue, fail on error, KPL CloudWatch upload off, aggregation in the writer") {
    val o = parse()
    assert(o.producer.aggregation == Aggregation.Writer && o.producer.aggregatesInWriter)
    assert(!parse("aggregation" -> "kpl").producer.aggregatesInWriter)
    assert(o.queueLimit == 10000)
    assert(o.queueLimit < Int.MaxValue)
    assert(o.maxOutstandingBytes == 64L * 1024 * 1024)
    assert(o.failOnError)
    assert(o.producer.kplSettings("MetricsLevel") == "none")
    assert(o.producer.kplSettings("EnableOldestFutureTracker") == "false")
    assert(o.producer.kplSettings("RateLimit") == "100")
    assert(o.producer.kplSettings("Region") == "us-east-1")
  }

  test("gather_ms: 1 ms by default, a producer of its own when set, refused with the KPL's aggregation") {
    assert(parse().producer.gatherMs == 1L)
    val set = parse("gather_ms" -> "50").producer
    assert(set.gatherMs == 50L && set != parse().producer) // two writers share a daemon only with the same gather
    assert(rejected("gather_ms" -> "0").contains("expected a positive number of milliseconds"))
    val kpl = rejected("aggregation" -> "kpl", "gather_ms" -> "50")
    assert(kpl.contains("gather_ms applies to aggregation='writer'") && kpl.contains("kpl.RecordMaxBufferedTime"), kpl)
  }

  test("ordered: off by default, a producer of its own, turned on by order_by, refused with the KPL's aggregation") {
    assert(!parse().ordered && parse().orderBy.isEmpty)
    val on = parse("ordered" -> "true")
    assert(on.ordered && on.producer != parse().producer) // ordered and unordered writers never share an aggregator
    val sorted = parse("order_by" -> " version, seq ")
    assert(sorted.ordered && sorted.orderBy == Seq("version", "seq"))
    assert(rejected("order_by" -> "version,").contains("expected column names separated by commas"))
    val off = rejected("order_by" -> "version", "ordered" -> "false")
    assert(off.contains("order_by and ordered=false conflict"), off)
    for (kpl <- Seq(Seq("aggregation" -> "kpl"), Seq("kpl.AggregationEnabled" -> "false"))) {
      val m = rejected(("ordered" -> "true") +: kpl: _*)
      assert(m.contains("ordered needs aggregation='writer'") && m.contains("reorder"), m)
    }
  }

  test("a user's KPL setting wins over the writer's default") {
    assert(parse("kpl.MetricsLevel" -> "summary").producer.kplSettings("MetricsLevel") == "summary")
    assert(
      parse("kpl.EnableOldestFutureTracker" -> "true").producer.kplSettings("EnableOldestFutureTracker") == "true"
    )
    assert(parse("kpl.RateLimit" -> "150").producer.kplSettings("RateLimit") == "150")
  }

  test("endpoint forms are normalised to the KPL's bare host and port") {
    assert(Endpoint.parse("https://127.0.0.1:4567") == Endpoint("127.0.0.1", 4567))
    assert(
      Endpoint.parse("https://kinesis.us-east-1.amazonaws.com/") == Endpoint(
        "kinesis.us-east-1.amazonaws.com",
        443
      )
    )
    assert(Endpoint.parse("localhost:4567") == Endpoint("localhost", 4567))
    assert(Endpoint.parse("localhost") == Endpoint("localhost", 443))
    val s = parse("endpoint" -> "https://localhost:4567").producer.kplSettings
    assert(s("KinesisEndpoint") == "localhost" && s("KinesisPort") == "4567")
  }

  private val badInputs: Seq[(Seq[(String, String)], Seq[String])] = Seq(
    Seq("stream_nme" -> "x") -> Seq("Unknown option 'stream_nme'", "Did you mean 'stream_name'"),
    Seq("kpl.RecordMaxBuferedTime" -> "100") -> Seq(
      "kpl.RecordMaxBuferedTime is not a KPL setting",
      "Did you mean 'RecordMaxBufferedTime'"
    ),
    Seq("queue_limit" -> "0") -> Seq("queue_limit='0'", "at least 1"),
    Seq("max_outstanding_bytes" -> "0") -> Seq("max_outstanding_bytes='0'", "positive number of bytes"),
    Seq("queue_limit" -> "ten") -> Seq("queue_limit='ten'", "whole number"),
    Seq("fail_on_error" -> "yes") -> Seq("fail_on_error='yes'", "true or false"),
    Seq("flush_timeout_ms" -> "-5") -> Seq("flush_timeout_ms='-5'", "positive"),
    Seq("partitioner" -> "hash") -> Seq("partitioner='hash'", "'random', 'fixed' or 'none'"),
    Seq("stream_name" -> " ") -> Seq("stream_name=' ' is invalid: expected a non-empty string"),
    Seq("kpl.RecordTtl" -> "10") -> Seq("kpl.RecordTtl='10' is rejected by the KPL"),
    Seq("kpl.MaxConnections" -> "0") -> Seq("kpl.MaxConnections='0' is rejected by the KPL"),
    Seq("kpl.MaxConnections" -> "1000") -> Seq("kpl.MaxConnections='1000' is rejected by the KPL"),
    Seq("kpl.AggregationEnabled" -> "yes") -> Seq("kpl.AggregationEnabled='yes'", "true or false"),
    Seq("kpl.ThreadingModel" -> "THREADS") -> Seq("kpl.ThreadingModel='THREADS'", "'PER_REQUEST' or 'POOLED'"),
    Seq("endpoint" -> "http://localhost:4567") -> Seq("scheme 'http' is not supported", "always speaks TLS"),
    Seq("endpoint" -> "kinesis_mock:4567") -> Seq("underscores"),
    Seq("endpoint" -> "localhost:99999") -> Seq("port"),
    Seq("endpoint" -> "https://h:1/path") -> Seq("path"),
    Seq("endpoint" -> "https://h:1", "kpl.KinesisPort" -> "2") -> Seq("keep only 'endpoint'"),
    Seq("kpl.Region" -> "us-west-2") -> Seq("keep only 'region'"),
    Seq("region" -> "US East") -> Seq("region='US East'", "us-east-1"),
    Seq("aws_access_key_id" -> "AKIA") -> Seq("aws_secret_access_key is not"),
    Seq("aws_secret_access_key" -> "x") -> Seq("aws_access_key_id is not"),
    Seq("aws_session_token" -> "t") -> Seq("aws_session_token needs"),
    Seq("role_session_name" -> "n") -> Seq("only applies to assume-role", "role_arn"),
    Seq("role_arn" -> "my-role") -> Seq("not an IAM role ARN"),
    Seq("role_duration_seconds" -> "900") -> Seq("only applies to assume-role", "role_arn"),
    Seq("role_arn" -> "arn:aws:iam::1:role/r", "role_duration_seconds" -> "0") -> Seq(
      "role_duration_seconds='0' is invalid: expected a positive number of seconds"
    ),
    Seq("profile_name" -> "p", "aws_access_key_id" -> "k", "aws_secret_access_key" -> "s") -> Seq("conflict")
  )

  badInputs.foreach { case (opts, expected) =>
    test(s"rejects ${opts.map { case (k, v) => s"$k=$v" }.mkString(", ")}") {
      val msg = rejected(opts: _*)
      expected.foreach(e => assert(msg.contains(e), s"'$msg' should contain '$e'"))
    }
  }

  test("region: explicit, else the driver's default, else a clear error") {
    val noRegion = Map("stream_name" -> "s")
    assert(KinesisWriterOptions.parse(noRegion, _ => Some("eu-west-1")).producer.kplSettings("Region") == "eu-west-1")
    var askedFor: Option[String] = Some("unset")
    KinesisWriterOptions.parse(noRegion + ("profile_name" -> "dev"), p => { askedFor = p; Some("eu-west-1") })
    assert(askedFor == Some("dev"), "the profile's region is looked up")
    val e = intercept[IllegalArgumentException](KinesisWriterOptions.parse(noRegion, _ => None))
    assert(e.getMessage.contains("Option region is not set") && e.getMessage.contains("AWS_REGION"))
    assert(
      KinesisWriterOptions
        .parse(noRegion + ("kpl.Region" -> "us-west-2"), _ => None)
        .producer
        .kplSettings("Region") == "us-west-2"
    )
  }

  test("kpl.ProxyPassword is refused (it would sit on the daemon's command line), without echoing it") {
    val msg = rejected("kpl.ProxyPassword" -> "hunter2")
    assert(msg.contains("kpl.ProxyPassword is refused") && msg.contains("/proc/<pid>/cmdline"))
    assert(!msg.contains("hunter2"))
  }

  test("a secret in a bad KPL value is not echoed") {
    // ProxyPassword has no range check, so use a guaranteed failure path: an unknown secret-looking name
    val msg = rejected("kpl.ProxyPasword" -> "hunter2")
    assert(!msg.contains("hunter2"))
  }

  test("credentials sources") {
    assert(parse().producer.credentials == Credentials.DefaultChain)
    assert(parse("profile_name" -> "dev").producer.credentials == Credentials.Profile("dev"))
    val role = parse("role_arn" -> "arn:aws:iam::123456789012:role/w", "role_external_id" -> "ext").producer.credentials
    assert(role.isInstanceOf[Credentials.AssumeRole])
    assert(!role.toString.contains("ext)") && role.toString.contains("<redacted>"))
  }

  test("every KPL setting is accepted by its exact name with a valid value") {
    val valid = Map("long" -> "1000", "int" -> "4", "boolean" -> "true", "string" -> "")
    val special = Map(
      "ThreadingModel" -> "POOLED",
      "LogLevel" -> "info",
      "MetricsLevel" -> "none",
      "MetricsGranularity" -> "shard",
      "MetricsNamespace" -> "ns",
      "Region" -> "us-east-1",
      "KinesisEndpoint" -> "localhost",
      "CloudwatchEndpoint" -> "localhost",
      "CollectionMaxSize" -> "1048576",
      "MaxConnections" -> "4",
      "MinConnections" -> "1",
      "DaemonHealthCheckTimeoutMs" -> "30000",
      "CollectionMaxCount" -> "500",
      "MaxUserRecordSize" -> "1048576",
      "RecordDistributionStrategyDefault" -> "AUTO"
    )
    KplSettings.all.foreach { s =>
      KplSettings.validate(Map(s.name -> special.getOrElse(s.name, valid(s.kind))))
    }
  }

  test("every setting of the bundled KPL's configuration is offered, or left out for a stated reason") {
    val notOffered = Map(
      "CredentialsProvider" -> "the writer's credentials options",
      "MetricsCredentialsProvider" -> "the KPL falls back to the Kinesis credentials",
      "GlueSchemaRegistryConfiguration" -> "the writer sends no schemas",
      "GlueSchemaRegistryCredentialsProvider" -> "the writer sends no schemas",
      "GlueSchemaRegistryPropertiesFilePath" -> "the writer sends no schemas",
      "StsEndpoint" -> "not in the daemon's configuration since 1.0.5 (no STS in native code)",
      "StsPort" -> "not in the daemon's configuration since 1.0.5 (no STS in native code)"
    )
    val setters = classOf[io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration].getDeclaredMethods.toSeq
      .filter(m => java.lang.reflect.Modifier.isPublic(m.getModifiers) && m.getName.startsWith("set"))
      .map(_.getName.stripPrefix("set"))
      .toSet
    val offered = KplSettings.all.map(_.name).toSet
    assert(setters -- notOffered.keySet -- offered == Set.empty, "settings of the KPL the writer does not offer")
    assert(offered -- setters == Set.empty, "settings the bundled KPL no longer has")
  }

  test("the facts resource in the jar carries every option, KPL setting and task total") {
    val resource = "META-INF/spark-kinesis/spark-kinesis.json" // where the build writes it (build.sbt)
    val in = getClass.getClassLoader.getResourceAsStream(resource)
    assert(in != null, s"$resource is not on the classpath")
    val text =
      try scala.io.Source.fromInputStream(in, "UTF-8").mkString
      finally in.close()
    val names = KinesisWriterOptions.table.map(_.name) ++ KplSettings.all.map(_.name) ++ TaskTotals.every.map(_.name)
    assert(names.filterNot(n => text.contains(s""""$n"""")) == Nil)
    assert(text.contains(""""expected": "at least 1 (records outstanding per executor JVM and stream)", "min": 1"""))
  }
}
