package io.github.sparkkinesis

import java.math.BigInteger
import java.net.URI
import java.time.Duration
import javax.net.ssl.TrustManager

import org.slf4j.LoggerFactory
import io.github.sparkkinesis.shaded.awssdk.auth.credentials.AwsCredentialsProvider
import io.github.sparkkinesis.shaded.awssdk.core.client.config.{ClientOverrideConfiguration, SdkAdvancedClientOption}
import io.github.sparkkinesis.shaded.awssdk.core.exception.SdkClientException
import io.github.sparkkinesis.shaded.awssdk.http.SdkHttpConfigurationOption
import io.github.sparkkinesis.shaded.awssdk.http.apache5.{Apache5HttpClient, ProxyConfiguration}
import io.github.sparkkinesis.shaded.awssdk.regions.Region
import io.github.sparkkinesis.shaded.awssdk.services.kinesis.KinesisClient
import io.github.sparkkinesis.shaded.awssdk.services.kinesis.model.{
  DescribeStreamSummaryRequest,
  KinesisException,
  ListShardsRequest,
  RecordDistributionStrategy,
  ShardFilter,
  ShardFilterType,
  StreamDescriptionSummary
}
import io.github.sparkkinesis.shaded.awssdk.utils.AttributeMap

import io.github.sparkkinesis.aggregation.{ShardMap, ShardRange, StreamLayout, StreamMetadata, ThrottledRead}
import io.github.sparkkinesis.compat.CollectionConverters._

/** `ListShards` (paged) and `DescribeStreamSummary` through the AWS SDK's Kinesis client, with the writer's endpoint,
  * region, credentials (the same provider instance the KPL uses), proxy, and the daemon's trust ([[Trust]]:
  * `kpl.CaCertFile`, `kpl.CaCertPath`, `kpl.VerifyCertificate`); `callTimeout` bounds each call, its retries included
  * (the driver's [[StreamCheck]]). A `kpl.CaCertFile` or `kpl.CaCertPath` this host cannot read fails its construction.
  */
private[sparkkinesis] final class SdkStreamMetadata(
    config: ProducerConfig,
    credentials: AwsCredentialsProvider,
    callTimeout: Option[Duration] = None,
    calls: ControlPlaneCalls = ControlPlaneCalls(),
    userAgentSuffix: Option[String] = None
) extends StreamMetadata {
  import SdkStreamMetadata._
  import ControlPlaneCalls.ThrottleCode

  private val c = config.kpc // the settings the daemon gets, with the KPL's defaults
  private[sparkkinesis] val trust: Trust = Trust.of(c)
  private val trustManager = if (trust.verify) Some(trust.manager()) else None // else: trusts all

  /** The certificate the endpoint presented that [[trust]] refused, if a call met one. */
  def refusedCertificate: Option[java.security.cert.X509Certificate] = trustManager.flatMap(_.refused)

  private[sparkkinesis] val client: KinesisClient = {
    val http = Apache5HttpClient.builder()
    trustManager.foreach(m => http.tlsTrustManagersProvider(() => Array[TrustManager](m)))
    if (c.getProxyHost.nonEmpty)
      http.proxyConfiguration(
        ProxyConfiguration
          .builder()
          .endpoint(URI.create(s"http://${c.getProxyHost}:${c.getProxyPort}"))
          .useSystemPropertyValues(false)
          .build()
      )
    val b = KinesisClient
      .builder()
      .credentialsProvider(credentials)
      .httpClient(
        http.buildWithDefaults(
          AttributeMap
            .builder()
            .put(SdkHttpConfigurationOption.TRUST_ALL_CERTIFICATES, java.lang.Boolean.valueOf(!trust.verify))
            .build()
        )
      )
      .overrideConfiguration {
        val o = ClientOverrideConfiguration
          .builder()
          .apiCallAttemptTimeout(Duration.ofMillis(c.getRequestTimeout))
          .addExecutionInterceptor(calls.interceptor)
        userAgentSuffix.foreach(o.putAdvancedOption(SdkAdvancedClientOption.USER_AGENT_SUFFIX, _))
        callTimeout.foreach(o.apiCallTimeout)
        o.build()
      }
    if (c.getRegion.nonEmpty) b.region(Region.of(c.getRegion))
    if (c.getKinesisEndpoint.nonEmpty)
      b.endpointOverride(URI.create(s"https://${c.getKinesisEndpoint}:${c.getKinesisPort}"))
    b.build()
  }

  def layout(stream: String): StreamLayout = readOrExplain {
    val (auto, maxRecordBytes) = summary(stream)
    StreamLayout(auto, shardMap(stream), maxRecordBytes)
  }

  /** The layout of `stream` whose `DescribeStreamSummary` answer the caller holds (the driver's check): one call fewer.
    */
  def layout(stream: String, described: StreamDescriptionSummary): StreamLayout = readOrExplain {
    val (auto, maxRecordBytes) = interpret(stream, described)
    StreamLayout(auto, shardMap(stream), maxRecordBytes)
  }

  private def readOrExplain(read: => StreamLayout): StreamLayout =
    try read
    catch {
      case e: KinesisException if e.awsErrorDetails() != null && e.awsErrorDetails().errorCode() == ThrottleCode =>
        calls.throttled()
        throw new ThrottledRead(s"${e.awsErrorDetails().errorMessage()} ($ThrottleCode)", e)
      case e: SdkClientException if e.getMessage != null && e.getMessage.startsWith("Unable to unmarshall") =>
        throw new IllegalStateException(
          s"${e.getMessage.takeWhile(_ != '(').trim}: the endpoint's answer could not be parsed. The SDK reads " +
            "Kinesis in CBOR; an emulator that answers it badly (kinesalite cuts answers at 16 KiB, so ListShards " +
            "of 64 shards or more) needs it off in the executors' JVMs: -Daws.cborEnabled=false in " +
            "spark.executor.extraJavaOptions (spark.driver.extraJavaOptions in local mode) or CBOR_ENABLED=false " +
            "in their environment",
          e
        )
    }

  private def shardMap(stream: String): ShardMap = {
    val open = Seq.newBuilder[ShardRange]
    var token: String = null
    var first = true
    while (first || token != null) {
      val req =
        if (first)
          ListShardsRequest
            .builder()
            .streamName(stream)
            .shardFilter(ShardFilter.builder().`type`(ShardFilterType.AT_LATEST).build())
        else ListShardsRequest.builder().nextToken(token)
      val page = client.listShards(req.build())
      page.shards().asScala.foreach { s =>
        // Emulators may ignore the filter: a closed shard has an ending sequence number.
        if (s.sequenceNumberRange() == null || s.sequenceNumberRange().endingSequenceNumber() == null)
          open += ShardRange(
            s.shardId(),
            new BigInteger(s.hashKeyRange().startingHashKey()),
            new BigInteger(s.hashKeyRange().endingHashKey())
          )
      }
      token = page.nextToken()
      first = false
    }
    val map = ShardMap(open.result())
    if (map.size == 0) throw new IllegalStateException(s"ListShards of stream $stream returned no open shard")
    map
  }

  /** Whether the stream is AUTO (only when `DescribeStreamSummary` says so) and its largest record
    * (`MaxRecordSizeInKiB`). Without the permission, the stream is taken as partitioned by key (the KPL's own fallback)
    * and at 1 MiB, with a WARN naming the permission; an answer without the field (an endpoint that predates it) means
    * 1 MiB too, with a WARN.
    */
  private def summary(stream: String): (Boolean, Long) =
    try {
      val s = client.describeStreamSummary(DescribeStreamSummaryRequest.builder().streamName(stream).build())
      interpret(stream, s.streamDescriptionSummary())
    } catch {
      case e: KinesisException
          if e.statusCode() == 400 && e.awsErrorDetails() != null &&
            e.awsErrorDetails().errorCode() == "AccessDeniedException" =>
        RateLimitedLog.warn(
          log,
          s"dss-denied-$stream",
          s"DescribeStreamSummary of stream $stream was denied (${e.awsErrorDetails().errorMessage()}): the writer " +
            "cannot tell whether the stream's RecordDistributionStrategy is AUTO and aggregates as for " +
            "USER_PARTITION_KEY, and cannot read its MaxRecordSizeInKiB, so it holds records to " +
            s"${StreamLayout.DefaultMaxRecordBytes} bytes. Grant kinesis:DescribeStreamSummary on the stream " +
            "(docs/configuration.md, IAM)."
        )
        (false, StreamLayout.DefaultMaxRecordBytes)
    }

  private def interpret(stream: String, d: StreamDescriptionSummary): (Boolean, Long) = {
    val kib = d.maxRecordSizeInKiB()
    if (kib == null)
      RateLimitedLog.warn(
        log,
        s"dss-no-size-$stream",
        s"DescribeStreamSummary of stream $stream names no MaxRecordSizeInKiB: the writer holds its records to " +
          s"${StreamLayout.DefaultMaxRecordBytes} bytes (data and partition key), Kinesis' default."
      )
    (
      d.recordDistributionStrategy() == RecordDistributionStrategy.AUTO,
      if (kib == null) StreamLayout.DefaultMaxRecordBytes else kib.longValue * 1024L
    )
  }

  override def close(): Unit = client.close()
}

private[sparkkinesis] object SdkStreamMetadata {
  private val log = LoggerFactory.getLogger(classOf[SdkStreamMetadata])
}
