package io.github.sparkkinesis

import java.net.{ConnectException, UnknownHostException}
import java.time.Duration
import javax.net.ssl.SSLException

import scala.util.{Failure, Success, Try}

import org.slf4j.LoggerFactory
import io.github.sparkkinesis.shaded.awssdk.core.exception.{SdkClientException, SdkServiceException}
import io.github.sparkkinesis.shaded.awssdk.services.kinesis.model.{
  DescribeStreamSummaryRequest,
  KinesisException,
  ListShardsRequest,
  StreamStatus
}

/** Kinesis errors that no retry fixes: a stream that is not there, credentials Kinesis refuses, a permission the
  * credentials lack. Each has its fix; everything else (throttling, 500s, timeouts once the stream is known) is
  * transient and retried as before.
  */
private[sparkkinesis] object PermanentErrors {

  /** Error code -> the fix, worded for `where` ("stream s in region r at endpoint e"). */
  private val fixes: Map[String, String => String] = Map(
    "ResourceNotFoundException" -> (w =>
      s"Kinesis has no $w. Check stream_name, region and endpoint (and the account the credentials belong to); " +
        "create the stream first if it is new"
    ),
    "AccessDeniedException" -> (w =>
      s"The credentials are not allowed an action the writer needs on $w. Grant kinesis:PutRecords, " +
        "kinesis:ListShards and kinesis:DescribeStreamSummary on the stream (docs/configuration.md, IAM)"
    ),
    "UnrecognizedClientException" -> (w =>
      s"Kinesis does not know the credentials' access key ($w): check the credentials options (or the default " +
        "chain), and that region and endpoint belong to the credentials' partition"
    ),
    "InvalidSignatureException" -> (w =>
      s"Kinesis refused the requests' signature ($w): check the secret key, and that region matches the endpoint"
    ),
    "IncompleteSignatureException" -> (w => s"Kinesis refused the requests' signature ($w): check the credentials"),
    "MissingAuthenticationTokenException" -> (w => s"Kinesis got requests without credentials ($w)"),
    "KMSAccessDeniedException" -> (w =>
      s"The credentials may not use the KMS key of $w: grant kms:GenerateDataKey on it"
    ),
    "KMSDisabledException" -> (w => s"The KMS key of $w is disabled: enable it, or change the stream's encryption"),
    "KMSNotFoundException" -> (w => s"The KMS key of $w does not exist: change the stream's encryption"),
    "KMSInvalidStateException" -> (w => s"The KMS key of $w is not usable (its state): check it in KMS")
  )

  def isPermanent(code: String): Boolean = fixes.contains(code)

  /** "ResourceNotFoundException: Kinesis has no stream s in region r at endpoint e. Check …". */
  def describe(code: String, where: String, detail: String = ""): String =
    s"$code${if (detail.nonEmpty) s" ($detail)" else ""}: ${fixes.get(code).fold(where)(_(where))}."

  /** "stream s in region r at endpoint e": what every message of these names. */
  def where(stream: String, config: ProducerConfig): String =
    s"stream $stream in region ${config.region.orElse(config.kpl.get("Region")).getOrElse("<default>")} at " +
      s"${config.endpoint.fold("the region's endpoint")(e => s"endpoint $e")}"
}

/** Asks Kinesis about a stream before a query writes to it (on the driver, when the query starts), so a mistake the
  * driver can see fails there, naming its cause and fix, instead of in every task after `RecordTtl` of retries:
  *   - a stream that does not exist (a typo, another region or account) or is being deleted;
  *   - credentials Kinesis refuses, or that may not read the stream (`ListShards`, which the writer needs; a denied
  *     `DescribeStreamSummary` is only a WARN, as on the executors);
  *   - an endpoint that does not answer within [[TimeoutMs]] (a wrong URL or region): named, as Kafka's producer fails
  *     after `max.block.ms` without metadata.
  * What the check cannot decide (no credentials on the driver, throttling, a 500) lets the query start: the executors'
  * own reads and writes still fail permanent errors within seconds ([[ProducerPool]]'s watch).
  */
private[sparkkinesis] object StreamCheck {
  private val log = LoggerFactory.getLogger(getClass)

  /** The whole check's bound: every attempt of both calls, connects included. */
  val TimeoutMs = 10000L

  /** Checks `options`' stream (none for per-row streams: each is checked by the executors on first use). */
  def run(options: KinesisWriterOptions): Unit = options.streamName.foreach(run(_, options.producer))

  private def run(stream: String, config: ProducerConfig): Unit =
    Try(config.credentials.provider(config.region)) match {
      case Failure(e)        => skip(stream, e)
      case Success(provider) =>
        // Credentials the driver cannot resolve say nothing of the executors' (their producers report their own).
        try
          Try(provider.resolveCredentials())
            .flatMap(_ => Try(new SdkStreamMetadata(config, provider, Some(Duration.ofMillis(TimeoutMs))))) match {
            case Failure(e) => skip(stream, e)
            case Success(metadata) =>
              try check(stream, config, metadata)
              finally metadata.close()
          }
        finally
          provider match {
            case c: AutoCloseable => c.close()
            case _                =>
          }
    }

  private def skip(stream: String, e: Throwable): Unit =
    log.info(s"Not checking stream $stream on the driver: no Kinesis client or credentials here (${e.getMessage})")

  private[sparkkinesis] def check(stream: String, config: ProducerConfig, metadata: SdkStreamMetadata): Unit = {
    val where = PermanentErrors.where(stream, config)
    try {
      val status =
        try
          metadata.client
            .describeStreamSummary(DescribeStreamSummaryRequest.builder().streamName(stream).build())
            .streamDescriptionSummary()
            .streamStatus()
        catch {
          case e: KinesisException if code(e) == "AccessDeniedException" =>
            // Optional for the writer (docs): its readers warn. ListShards it needs.
            metadata.client.listShards(ListShardsRequest.builder().streamName(stream).maxResults(1).build())
            StreamStatus.ACTIVE
        }
      if (status == StreamStatus.DELETING)
        throw new IllegalArgumentException(
          s"Kinesis is deleting $where: it takes no more records. Write to another stream, or create it again " +
            "once it is gone."
        )
    } catch {
      case e: KinesisException if PermanentErrors.isPermanent(code(e)) =>
        throw new IllegalArgumentException(PermanentErrors.describe(code(e), where, message(e)), e)
      case e: SdkClientException if unreachable(e) =>
        throw new IllegalArgumentException(
          s"Kinesis did not answer at ${config.endpoint.fold("the region's endpoint")(_.toString)} (region " +
            s"${config.region.getOrElse("<default>")}) within ${TimeoutMs / 1000} s for $where: ${cause(e)}. Check " +
            "endpoint and region, and that the driver reaches Kinesis (proxy, VPC endpoint).",
          e
        )
      case e: SdkServiceException =>
        log.warn(s"Could not check $where on the driver (${e.getMessage}); the query starts, its tasks will tell.")
      case e: SdkClientException =>
        log.warn(s"Could not check $where on the driver (${e.getMessage}); the query starts, its tasks will tell.")
    }
  }

  private def code(e: KinesisException): String =
    Option(e.awsErrorDetails()).flatMap(d => Option(d.errorCode())).getOrElse("")

  private def message(e: KinesisException): String =
    Option(e.awsErrorDetails()).flatMap(d => Option(d.errorMessage())).getOrElse("")

  /** Nothing answered as Kinesis would: refused, no such host, not TLS, or no answer within the bound. Credentials the
    * driver cannot resolve are not among them (the executors resolve their own).
    */
  private def unreachable(e: SdkClientException): Boolean = {
    val chain = Iterator.iterate[Throwable](e)(_.getCause).takeWhile(_ != null).toList
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
