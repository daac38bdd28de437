package io.github.sparkkinesis

import java.net.URI
import java.util.concurrent.{CountDownLatch, TimeUnit}

import io.github.sparkkinesis.shaded.awssdk.auth.credentials.{
  AwsBasicCredentials,
  AwsCredentials,
  AwsCredentialsProvider,
  AwsSessionCredentials,
  DefaultCredentialsProvider,
  ProfileCredentialsProvider,
  StaticCredentialsProvider
}
import io.github.sparkkinesis.shaded.awssdk.regions.Region
import io.github.sparkkinesis.shaded.awssdk.services.sts.StsClient
import io.github.sparkkinesis.shaded.awssdk.services.sts.auth.StsAssumeRoleCredentialsProvider
import io.github.sparkkinesis.shaded.awssdk.services.sts.model.AssumeRoleRequest

/** Where the KPL's credentials come from. Secrets never appear in `toString`; equality (used as the producer pool's
  * key) still sees them, so different keys never share a producer.
  */
private[sparkkinesis] sealed trait Credentials extends Serializable {
  def provider(region: Option[String]): AwsCredentialsProvider

  /** What to check when this source yields no credentials (the error names the source by its redacted `toString`). */
  def fix: String
}

private[sparkkinesis] object Credentials {

  /** Closes a provider the caller made for its own calls (the driver's check and reads), if it holds anything. */
  def close(provider: AwsCredentialsProvider): Unit = provider match {
    case c: AutoCloseable => c.close()
    case _                =>
  }

  /** The SDK's default chain: env vars, system properties, web identity, profile, container, IMDS. */
  case object DefaultChain extends Credentials {
    // Not the SDK's shared instance (`create()`), which keeps the first source that worked: each producer looks anew,
    // so a web identity token file or profile that appears or changes later is read when the next producer starts.
    def provider(region: Option[String]): AwsCredentialsProvider = DefaultCredentialsProvider.builder().build()
    def fix: String =
      "Give every executor credentials the SDK's default chain finds (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, " +
        "AWS_WEB_IDENTITY_TOKEN_FILE with AWS_ROLE_ARN, a profile, or an instance or container role), or set " +
        "aws_access_key_id/aws_secret_access_key, profile_name or role_arn."
    override def toString: String = "DefaultChain"
  }

  final case class Static(accessKeyId: String, secretAccessKey: String, sessionToken: Option[String])
      extends Credentials {
    def provider(region: Option[String]): AwsCredentialsProvider = StaticCredentialsProvider.create(
      sessionToken match {
        case Some(t) => AwsSessionCredentials.create(accessKeyId, secretAccessKey, t)
        case None    => AwsBasicCredentials.create(accessKeyId, secretAccessKey)
      }
    )
    def fix: String = "Check aws_access_key_id, aws_secret_access_key and aws_session_token."
    override def toString: String =
      s"Static(accessKeyId=${Redact.secret}, secretAccessKey=${Redact.secret}" +
        sessionToken.fold("")(_ => s", sessionToken=${Redact.secret}") + ")"
  }

  final case class Profile(name: String) extends Credentials {
    def provider(region: Option[String]): AwsCredentialsProvider = ProfileCredentialsProvider.create(name)
    def fix: String =
      s"Check that profile '$name' exists, with credentials, in the shared credentials or config file of every " +
        "executor (~/.aws/credentials, or the file AWS_SHARED_CREDENTIALS_FILE / AWS_CONFIG_FILE names)."
    override def toString: String = s"Profile($name)"
  }

  final case class AssumeRole(
      roleArn: String,
      sessionName: String,
      externalId: Option[String],
      stsEndpoint: Option[String],
      durationSeconds: Option[Int],
      base: Credentials
  ) extends Credentials {
    def provider(region: Option[String]): AwsCredentialsProvider = {
      val sts = StsClient.builder().credentialsProvider(base.provider(region))
      region.foreach(r => sts.region(Region.of(r)))
      stsEndpoint.foreach(e => sts.endpointOverride(URI.create(e)))
      val request = AssumeRoleRequest.builder().roleArn(roleArn).roleSessionName(sessionName)
      externalId.foreach(request.externalId)
      durationSeconds.foreach(d => request.durationSeconds(Integer.valueOf(d)))
      StsAssumeRoleCredentialsProvider
        .builder()
        .stsClient(sts.build())
        .refreshRequest(request.build())
        .asyncCredentialUpdateEnabled(true)
        .build()
    }
    def fix: String =
      s"Check role_arn, that the base credentials ($base) may call sts:AssumeRole on it (and role_external_id, if " +
        "its trust policy asks for one), and that the executors reach STS (sts_endpoint, or the region's endpoint)."
    override def toString: String =
      s"AssumeRole(roleArn=$roleArn, sessionName=$sessionName" +
        externalId.fold("")(_ => s", externalId=${Redact.secret}") + durationSeconds.fold("")(d =>
          s", durationSeconds=$d"
        ) +
        s", base=$base)"
  }
}

/** Watches the KPL's first use of the credentials source and reports how it went.
  *
  * The KPL (1.0.8+) starts its daemon with no credentials on the command line and sends the first ones over its pipe
  * before any record (`Daemon.sendInitialCredentials`, on the thread that connects to the daemon). If the source throws
  * there, that thread ends and records would wait in the pipe's queue until `flush_timeout_ms`: [[awaitFirst]] turns
  * that into an error at the producer's start that names the source and the fix.
  */
private[sparkkinesis] final class ReportingCredentials(real: AwsCredentialsProvider, source: Credentials)
    extends AwsCredentialsProvider {
  private val first = new CountDownLatch(1)
  @volatile private var firstFailure: Throwable = _

  override def resolveCredentials(): AwsCredentials =
    try {
      val c = real.resolveCredentials()
      first.countDown()
      c
    } catch {
      case e: Throwable =>
        if (first.getCount > 0) {
          firstFailure = e // later failures are the KPL's refresh loop's to log and retry
          first.countDown()
        }
        throw e
    }

  /** Blocks until the KPL has resolved the source once; fails with the source's error and fix if that failed. */
  def awaitFirst(timeoutMs: Long): Unit = {
    if (!first.await(timeoutMs, TimeUnit.MILLISECONDS))
      throw new KinesisWriteException(
        s"The KPL daemon did not connect within $timeoutMs ms (see the KPL's log lines before this error).",
        null
      )
    val f = firstFailure
    if (f != null)
      throw new KinesisWriteException(
        s"No AWS credentials for the KPL from $source: ${ReportingCredentials.describe(f)}. ${source.fix}",
        f
      )
  }

  override def toString: String = s"ReportingCredentials($source)"
}

private[sparkkinesis] object ReportingCredentials {

  /** The SDK's message, and its cause's when the message alone does not say what failed. */
  private def describe(e: Throwable): String = {
    val own = String.valueOf(e.getMessage)
    Option(e.getCause).map(c => String.valueOf(c.getMessage)).filterNot(own.contains(_)).fold(own)(c => s"$own ($c)")
  }
}

private[sparkkinesis] object Redact {
  val secret = "<redacted>"
}
