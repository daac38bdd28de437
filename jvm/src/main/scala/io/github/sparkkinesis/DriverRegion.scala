package io.github.sparkkinesis

/** The driver's default region from its environment or profile; never EC2 metadata (slow or absent off EC2, and the
  * executors' answer may differ anyway).
  */
private[sparkkinesis] object DriverRegion {
  import io.github.sparkkinesis.shaded.awssdk.regions.providers.{AwsProfileRegionProvider, SystemSettingsRegionProvider}

  def lookup(profile: Option[String]): Option[String] = {
    def attempt(f: => io.github.sparkkinesis.shaded.awssdk.regions.Region) =
      try Option(f).map(_.id())
      catch { case scala.util.control.NonFatal(_) => None }
    attempt(new SystemSettingsRegionProvider().getRegion)
      .orElse(attempt(new AwsProfileRegionProvider(null, profile.orNull).getRegion))
  }
}
