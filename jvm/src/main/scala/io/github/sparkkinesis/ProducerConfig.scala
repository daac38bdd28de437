package io.github.sparkkinesis

import scala.collection.immutable.SortedMap

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

/** The KPL endpoint: always TLS, a bare host and a port. */
private[sparkkinesis] final case class Endpoint(host: String, port: Int) {
  override def toString: String = s"https://$host:$port"
}

/** The KPL-facing part of the options: two writers with equal configs share one KPL daemon. */
private[sparkkinesis] final case class ProducerConfig(
    region: Option[String],
    endpoint: Option[Endpoint],
    credentials: Credentials,
    kpl: SortedMap[String, String]
) {

  /** The final KPL settings: writer defaults, then the user's, then region and endpoint. */
  def kplSettings: Map[String, String] =
    KplSettings.writerDefaults ++ kpl ++ region.map("Region" -> _) ++ endpoint.toSeq.flatMap { e =>
      Seq("KinesisEndpoint" -> e.host, "KinesisPort" -> e.port.toString)
    }

  override def toString: String = {
    val shownKpl = kpl.map { case (k, v) =>
      if (KplSettings.byName.get(k).exists(_.secret)) k -> Redact.secret else k -> v
    }
    s"ProducerConfig(region=${region.getOrElse("<default>")}, endpoint=${endpoint.getOrElse("<default>")}, " +
      s"credentials=$credentials, kpl=${shownKpl.map { case (k, v) => s"$k=$v" }.mkString("{", ", ", "}")})"
  }
}
