package io.github.sparkkinesis

import java.net.URI

import software.amazon.awssdk.auth.credentials.{
  AwsBasicCredentials,
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
}

private[sparkkinesis] object Credentials {

  /** The SDK's default chain: env vars, system properties, web identity, profile, container, IMDS. */
  case object DefaultChain extends Credentials {
    def provider(region: Option[String]): AwsCredentialsProvider = DefaultCredentialsProvider.create()
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
    override def toString: String =
      s"Static(accessKeyId=${Redact.secret}, secretAccessKey=${Redact.secret}" +
        sessionToken.fold("")(_ => s", sessionToken=${Redact.secret}") + ")"
  }

  final case class Profile(name: String) extends Credentials {
    def provider(region: Option[String]): AwsCredentialsProvider = ProfileCredentialsProvider.create(name)
    override def toString: String = s"Profile($name)"
  }

  final case class AssumeRole(
      roleArn: String,
      sessionName: String,
      externalId: Option[String],
      stsEndpoint: Option[String],
      base: Credentials
  ) extends Credentials {
    def provider(region: Option[String]): AwsCredentialsProvider = {
      val sts = StsClient.builder().credentialsProvider(base.provider(region))
      region.foreach(r => sts.region(Region.of(r)))
      stsEndpoint.foreach(e => sts.endpointOverride(URI.create(e)))
      val request = AssumeRoleRequest.builder().roleArn(roleArn).roleSessionName(sessionName)
      externalId.foreach(request.externalId)
      StsAssumeRoleCredentialsProvider
        .builder()
        .stsClient(sts.build())
        .refreshRequest(request.build())
        .asyncCredentialUpdateEnabled(true)
        .build()
    }
    override def toString: String =
      s"AssumeRole(roleArn=$roleArn, sessionName=$sessionName" +
        externalId.fold("")(_ => s", externalId=${Redact.secret}") + s", base=$base)"
  }
}

private[sparkkinesis] object Redact {
  val secret = "<redacted>"
}
