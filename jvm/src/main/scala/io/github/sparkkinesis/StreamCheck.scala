package io.github.sparkkinesis

import java.net.{ConnectException, UnknownHostException}
import java.time.Duration
import javax.net.ssl.{SSLException, SSLPeerUnverifiedException}

import scala.util.{Failure, Success, Try}

import org.slf4j.LoggerFactory

import io.github.sparkkinesis.aggregation.StreamLayout
import io.github.sparkkinesis.shaded.awssdk.core.exception.{SdkClientException, SdkServiceException}
import io.github.sparkkinesis.shaded.awssdk.services.kinesis.model.{
  DescribeStreamSummaryRequest,
  KinesisException,
  ListShardsRequest,
  StreamStatus
}

/** Asks Kinesis about a stream before a query writes to it (on the driver, when the query starts), so a mistake the
  * driver can see fails there, naming its cause and fix, instead of in every task after `RecordTtl` of retries. It
  * decides only what it knows, with the trust of the writer's daemon ([[Trust]]):
  *   - a stream that does not exist (a typo, another region or account) or is being deleted;
  *   - credentials Kinesis refuses;
  *   - an endpoint whose certificate nothing the writer trusts vouches for (named, with its issuer), or that does not
  *     answer within [[TimeoutMs]] (a wrong URL or region): named, as Kafka's producer fails after `max.block.ms`.
  * Reads the credentials may not make (`DescribeStreamSummary`, `ListShards`) are a WARN, in both aggregation modes:
  * neither the writer nor the KPL daemon needs them to send, only to aggregate (without the shard map every record goes
  * to Kinesis alone; docs/configuration.md, IAM). What the check cannot decide lets the query start: no credentials on
  * the driver, a CA file that is not on the driver's host (cluster mode), throttling, a 500, streams named per row;
  * `driver_check=false` skips it, for a driver that cannot reach Kinesis or whose credentials are not the executors'.
  * The executors' own reads and writes still fail permanent errors within seconds ([[ProducerPool]]'s watch).
  */
private[sparkkinesis] object StreamCheck {
  private val log = LoggerFactory.getLogger(getClass)

  /** The whole check's bound: every attempt of both calls, connects included. */
  val TimeoutMs = 10000L

  /** What each refusal adds: where the check ran, and the way out for a driver that is not like its executors. */
  val DriverHint: String =
    s"(Checked on the driver when the query starts, with its own credentials and network; where the executors' " +
      s"differ, set ${KinesisWriterOptions.DriverCheck.name}=false.)"

  /** Checks `options`' stream (none for per-row streams: each is checked by the executors on first use); `local`: the
    * driver's host is the executors' (a CA file it cannot read is then a mistake, not another host's file). Returns the
    * stream's layout when the driver could read it (its `DescribeStreamSummary` is the check's own call), for
    * [[DriverLayouts]] to ship with the first write.
    */
  def run(options: KinesisWriterOptions, local: Boolean, calls: ControlPlaneCalls): Option[StreamLayout] =
    if (!options.driverCheck) None else options.streamName.flatMap(run(_, options.producer, local, calls))

  private def run(
      stream: String,
      config: ProducerConfig,
      local: Boolean,
      calls: ControlPlaneCalls
  ): Option[StreamLayout] =
    Try(config.credentials.provider(config.region)) match {
      case Failure(e)        => skip(stream, e)
      case Success(provider) =>
        // Credentials the driver cannot resolve say nothing of the executors' (their producers report their own).
        try
          Try(provider.resolveCredentials()) match {
            case Failure(e) => skip(stream, e)
            case Success(_) =>
              Try(DriverLayouts.metadata(config, provider, calls)) match {
                case Failure(e: IllegalArgumentException) if local => throw e // the executors' host: their trust too
                case Failure(e: IllegalArgumentException) =>
                  log.info(
                    s"Not checking stream $stream on the driver: ${e.getMessage.takeWhile(_ != '.')}, on the driver's " +
                      "host; the executors read their own."
                  )
                  None
                case Failure(e) => skip(stream, e)
                case Success(metadata) =>
                  try check(stream, config, metadata)
                  finally metadata.close()
              }
          }
        finally Credentials.close(provider)
    }

  private def skip(stream: String, e: Throwable): Option[StreamLayout] = {
    log.info(s"Not checking stream $stream on the driver: no Kinesis client or credentials here (${e.getMessage})")
    None
  }

  /** The check; the stream's layout when it could be read too (not the check's business: a failed read is None). */
  private[sparkkinesis] def check(
      stream: String,
      config: ProducerConfig,
      metadata: SdkStreamMetadata
  ): Option[StreamLayout] = {
    val where = PermanentErrors.where(stream, config)
    try {
      val described =
        try
          Some(
            metadata.client
              .describeStreamSummary(DescribeStreamSummaryRequest.builder().streamName(stream).build())
              .streamDescriptionSummary()
          )
        catch {
          case e: KinesisException if code(e) == "AccessDeniedException" =>
            try metadata.client.listShards(ListShardsRequest.builder().streamName(stream).maxResults(1).build())
            catch {
              case d: KinesisException if code(d) == "AccessDeniedException" => readsDenied(where, config)
            }
            None
        }
      if (described.exists(_.streamStatus() == StreamStatus.DELETING))
        throw new IllegalArgumentException(
          s"Kinesis is deleting $where: it takes no more records. Write to another stream, or create it again " +
            "once it is gone."
        )
      described.flatMap { d =>
        try Some(metadata.layout(stream, d))
        catch {
          case scala.util.control.NonFatal(e) =>
            log.info(s"The driver could not read the shards of $where (${e.getMessage}); the executors read them.")
            None
        }
      }
    } catch {
      case e: KinesisException if PermanentErrors.isPermanent(code(e)) =>
        throw new IllegalArgumentException(s"${PermanentErrors.describe(code(e), where, message(e))} $DriverHint", e)
      case e: SdkClientException if untrusted(e) =>
        throw new IllegalArgumentException(untrustedMessage(metadata, where), e)
      case e: SdkClientException if causes(e).exists(_.isInstanceOf[SSLPeerUnverifiedException]) =>
        throw new IllegalArgumentException(
          s"The certificate Kinesis presented for $where does not name the endpoint's host " +
            s"(${cause(e)}): set endpoint to a host name the certificate holds. $DriverHint",
          e
        )
      case e: SdkClientException if unreachable(e) =>
        throw new IllegalArgumentException(
          s"Kinesis did not answer within ${TimeoutMs / 1000} s for $where: ${cause(e)}. Check " +
            s"endpoint and region, and that the driver reaches Kinesis (proxy, VPC endpoint). $DriverHint",
          e
        )
      case e: SdkServiceException =>
        log.warn(s"Could not check $where on the driver (${e.getMessage}); the query starts, its tasks will tell.")
        None
      case e: SdkClientException =>
        log.warn(s"Could not check $where on the driver (${e.getMessage}); the query starts, its tasks will tell.")
        None
    }
  }

  /** Neither read is allowed: not a refusal, in either mode (only aggregation needs them), but it costs, so it is said.
    */
  private def readsDenied(where: String, config: ProducerConfig): Unit = {
    val who = if (config.aggregatesInWriter) "the writer" else "the KPL daemon"
    log.warn(
      s"The credentials may not read $where (kinesis:DescribeStreamSummary and kinesis:ListShards denied): the driver " +
        s"cannot check it, and $who cannot learn its shards, so every record goes to Kinesis alone, not aggregated " +
        "(a PUT payload unit and one of its shard's 1,000 records/s each, where an aggregate carries up to 25 KiB of " +
        "records per unit). The query starts; its writes tell whether the stream exists. Grant both on the stream " +
        "to aggregate (docs/configuration.md, IAM)."
    )
  }

  private def untrustedMessage(metadata: SdkStreamMetadata, where: String): String = {
    val presented = metadata.refusedCertificate.fold("a certificate") { c =>
      s"a certificate for ${c.getSubjectX500Principal.getName} issued by ${c.getIssuerX500Principal.getName}"
    }
    s"Kinesis presented $presented for $where, which neither the writer nor its KPL daemon trusts " +
      s"(they trust ${metadata.trust.sources}). Set kpl.CaCertFile to a PEM file holding the certificate of the CA " +
      "that issued it (kpl.CaCertPath for a directory of them), on every host that runs the writer; for a test " +
      s"endpoint only, kpl.VerifyCertificate=false. $DriverHint"
  }

  private def causes(e: Throwable): List[Throwable] =
    Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).toList

  /** The endpoint answered with a certificate that the trust refused (no path to a trusted CA). */
  private def untrusted(e: SdkClientException): Boolean = causes(e).exists {
    case _: java.security.cert.CertificateException            => true
    case _: java.security.cert.CertPathBuilderException        => true
    case _: java.security.cert.CertPathValidatorException      => true
    case t if t.getClass.getSimpleName == "ValidatorException" => true
    case _                                                     => false
  }

  private def code(e: KinesisException): String =
    Option(e.awsErrorDetails()).flatMap(d => Option(d.errorCode())).getOrElse("")

  private def message(e: KinesisException): String =
    Option(e.awsErrorDetails()).flatMap(d => Option(d.errorMessage())).getOrElse("")

  /** Nothing answered as Kinesis would: refused, no such host, not TLS, or no answer within the bound. Credentials the
    * driver cannot resolve are not among them (the executors resolve their own).
    */
  private def unreachable(e: SdkClientException): Boolean = {
    val chain = causes(e)
    chain.exists {
      case _: ConnectException | _: UnknownHostException | _: SSLException => true
      case _: java.net.SocketTimeoutException                              => true
      case _                                                               => false
    } || chain.exists(t => t.getClass.getSimpleName == "ApiCallTimeoutException")
  }

  private def cause(e: Throwable): String = {
    val root = Iterator.iterate(e)(_.getCause).takeWhile(_ != null).toList.last
    s"${root.getClass.getSimpleName}: ${root.getMessage}"
  }
}
