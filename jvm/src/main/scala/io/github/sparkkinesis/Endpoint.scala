package io.github.sparkkinesis

/** The KPL endpoint: always TLS, a bare host and a port. */
private[sparkkinesis] final case class Endpoint(host: String, port: Int) {
  override def toString: String = s"https://$host:$port"
}

private[sparkkinesis] object Endpoint {
  private val HostPattern = "^[A-Za-z0-9.-]+$".r

  /** Accepts `host`, `host:port` and `https://host[:port][/]`; the KPL wants a bare host and a port. */
  def parse(value: String): Endpoint = {
    val v = value.trim
    def fail(why: String) = new IllegalArgumentException(
      s"Option ${KinesisWriterOptions.EndpointKey}='$v' is invalid: $why. Use a host, host:port or https://host:port " +
        "(the KPL always speaks TLS; against an emulator use its TLS port and kpl.VerifyCertificate=false)."
    )
    val rest =
      if (v.regionMatches(true, 0, "https://", 0, 8)) v.substring(8)
      else if (v.contains("://")) throw fail(s"scheme '${v.takeWhile(_ != ':')}' is not supported")
      else v
    val hostPort = rest.stripSuffix("/")
    if (hostPort.contains("/") || hostPort.contains("?")) throw fail("it has a path")
    val (host, port) = hostPort.lastIndexOf(':') match {
      case -1 => (hostPort, 443)
      case i =>
        val p = Parse.longOption(hostPort.substring(i + 1)).filter(p => p >= 1 && p <= 65535).map(_.toInt)
        (hostPort.substring(0, i), p.getOrElse(throw fail("the port is not a number in 1..65535")))
    }
    if (host.isEmpty) throw fail("the host is empty")
    if (host.contains("_")) throw fail("the KPL rejects underscores in host names (use an alias or IP)")
    if (HostPattern.findFirstIn(host).isEmpty)
      throw fail("the host has characters other than letters, digits, '.' and '-'")
    new Endpoint(host, port)
  }
}
