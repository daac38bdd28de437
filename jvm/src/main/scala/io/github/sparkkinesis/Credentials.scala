package io.github.sparkkinesis

import java.net.URI
import java.util.concurrent.{CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import software.amazon.awssdk.auth.credentials.{
  AwsBasicCredentials,
  AwsCredentials,
  AwsCredentialsProvider,
  AwsSessionCredentials,
  DefaultCredentialsProvider,
  ProfileCredentialsProvider,
  StaticCredentialsProvider
}
import software.amazon.awssdk.regions.Region
import software.amazon.awssdk.services.sts.StsClient
import software.amazon.awssdk.services.sts.auth.StsAssumeRoleCredentialsProvider
import software.amazon.awssdk.services.sts.model.AssumeRoleRequest

/** Where the KPL's credentials come from. Secrets never appear in `toString`; equality (used as the producer pool's
  * key) still sees them, so different keys never share a producer.
  */
private[sparkkinesis] sealed trait Credentials extends Serializable {
  def provider(region: Option[String]): AwsCredentialsProvider

  /** What to check when this source yields no credentials (the error names the source by its redacted `toString`). */
  def fix: String
}

private[sparkkinesis] object Credentials {

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

/** Keeps credentials off the KPL daemon's command line, where every local user can read them (/proc/<pid>/cmdline).
  *
  * The KPL's `Daemon` (1.0.x) resolves its provider twice to build each daemon's `-k` and `-w` arguments, hex-encoded
  * in clear, before it starts the process, and again whenever `KinesisProducer` restarts a dead daemon in place; and,
  * once connected, on a loop every `CredentialsRefreshDelay` (`Daemon.updateCredentials`): the Kinesis credentials,
  * then the metrics ones (the same provider when no metrics provider is set), each sent as a `SetCredentials` message
  * through the pipe that also carries records, in order. This provider answers the refresh loop with the real
  * credentials and every other caller (the command line of the first daemon and of any restarted one) with a
  * placeholder. A refresh call that starts after a successful real one means that one's message is queued for the
  * daemon: [[awaitDelivered]] returns then, so a record put afterwards can only reach the daemon behind real
  * credentials.
  */
private[sparkkinesis] final class PipeOnlyCredentials(
    real: AwsCredentialsProvider,
    source: Credentials,
    fromRefreshLoop: () => Boolean = () => PipeOnlyCredentials.calledByRefreshLoop
) extends AwsCredentialsProvider {
  private val refreshes = new AtomicInteger()
  private val delivered = new CountDownLatch(1)
  @volatile private var lastSucceeded = false
  @volatile private var failure: Throwable = _

  override def resolveCredentials(): AwsCredentials =
    if (!fromRefreshLoop()) PipeOnlyCredentials.Placeholder
    else {
      refreshes.incrementAndGet()
      if (lastSucceeded) delivered.countDown()
      try {
        val c = real.resolveCredentials()
        lastSucceeded = true
        c
      } catch {
        case e: Throwable =>
          if (delivered.getCount > 0) failure = e // later refresh failures are the KPL's to log and retry
          lastSucceeded = false
          throw e
      }
    }

  /** Blocks until the daemon has real credentials queued; fails with the source's error and fix if it cannot. */
  def awaitDelivered(timeoutMs: Long): Unit = {
    val deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs)
    while (!delivered.await(PipeOnlyCredentials.PollMs, TimeUnit.MILLISECONDS)) {
      val f = failure
      if (f != null)
        throw new KinesisWriteException(
          s"No AWS credentials for the KPL from $source: ${PipeOnlyCredentials.describe(f)}. ${source.fix}",
          f
        )
      if (System.nanoTime() > deadline)
        throw new KinesisWriteException(
          if (refreshes.get == 0)
            s"The KPL daemon did not connect within $timeoutMs ms (see the KPL's log lines before this error)."
          else s"No AWS credentials for the KPL from $source within $timeoutMs ms. ${source.fix}",
          null
        )
    }
  }

  override def toString: String = s"PipeOnlyCredentials($source)"
}

private[sparkkinesis] object PipeOnlyCredentials {
  private val PollMs = 20L

  /** The KPL's credentials refresh loop: the only caller whose answer goes through the pipe, not a command line. */
  private[sparkkinesis] val RefreshLoop =
    (classOf[software.amazon.kinesis.producer.Daemon].getName, "updateCredentials")

  /** True on the KPL's refresh loop (every 5 s by default, so walking the stack costs nothing that matters). */
  def calledByRefreshLoop: Boolean =
    Thread.currentThread.getStackTrace.exists(f => (f.getClassName, f.getMethodName) == RefreshLoop)

  /** What the daemon's command line carries: no secret, and a key id that names why if it ever shows up. */
  val Placeholder: AwsCredentials =
    AwsBasicCredentials.create("SPARK-KINESIS-PLACEHOLDER", "credentials-arrive-over-the-pipe")

  /** The SDK's message, and its cause's when the message alone does not say what failed. */
  private def describe(e: Throwable): String = {
    val own = String.valueOf(e.getMessage)
    Option(e.getCause).map(c => String.valueOf(c.getMessage)).filterNot(own.contains(_)).fold(own)(c => s"$own ($c)")
  }
}

private[sparkkinesis] object Redact {
  val secret = "<redacted>"
}
