package io.github.sparkkinesis

import java.io.InputStream
import java.net.Socket
import java.nio.file.{Files, Path, Paths}
import java.security.KeyStore
import java.security.cert.{CertificateException, CertificateFactory, X509Certificate}
import javax.net.ssl.{SSLEngine, TrustManagerFactory, X509ExtendedTrustManager}

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

import io.github.sparkkinesis.compat.CollectionConverters._

/** The certificates the writer's own TLS connections trust (the driver's check, the executors' shard-map reads): the
  * same as its KPL daemon's, so the writer connects where the daemon connects and refuses what it refuses. The KPL
  * (1.1.1, `KinesisProducer.initEnv`) hands its daemon `kpl.CaCertFile` (a PEM file) and one directory read by
  * OpenSSL's hashed names (`<hash>.0`): `kpl.CaCertPath` when set, else the KPL's own (its bundled roots, Amazon's
  * among them); `kpl.VerifyCertificate=false` trusts any certificate.
  *
  * @param sources
  *   what is trusted, as a message names it ("kpl.CaCertFile /etc/ca.pem and the KPL's bundled roots")
  */
private[sparkkinesis] final class Trust private (
    val verify: Boolean,
    val sources: String,
    certificates: Seq[X509Certificate]
) {

  /** For one client: trusts `certificates` (the JVM's trust store if none could be read) and notes what it refuses. */
  def manager(): RecordingTrustManager = {
    val factory = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm)
    if (certificates.isEmpty) factory.init(null: KeyStore)
    else {
      val store = KeyStore.getInstance(KeyStore.getDefaultType)
      store.load(null, null)
      certificates.zipWithIndex.foreach { case (c, i) => store.setCertificateEntry(s"ca-$i", c) }
      factory.init(store)
    }
    new RecordingTrustManager(factory.getTrustManagers.collectFirst { case m: X509ExtendedTrustManager => m }.get)
  }
}

private[sparkkinesis] object Trust {
  private val log = LoggerFactory.getLogger(getClass)

  /** Where the bundle keeps the KPL's certificates (project/KplResources.scala renames the KPL's `cacerts/`). */
  val ResourceRoot = "spark-kinesis-kpl-cacerts"

  /** What the daemon of `kpc` trusts. A `kpl.CaCertFile` or `kpl.CaCertPath` this host cannot read, or that holds no
    * certificate the daemon would find, is an `IllegalArgumentException` naming it and the fix.
    */
  def of(kpc: io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration): Trust = {
    val file = kpc.getCaCertFile.trim
    val dir = kpc.getCaCertPath.trim
    val fromFile = if (file.isEmpty) Nil else pemFile(Paths.get(file))
    // A directory with nothing OpenSSL finds in it trusts nothing: a mistake, unless the file holds the CA.
    val fromDir = if (dir.nonEmpty) hashedDirectory(Paths.get(dir), required = file.isEmpty) else bundled
    val sources =
      (if (file.nonEmpty) Seq(s"kpl.CaCertFile $file") else Nil) :+
        (if (dir.nonEmpty) s"kpl.CaCertPath $dir" else "the KPL's bundled roots")
    new Trust(kpc.isVerifyCertificate, sources.mkString(" and "), fromFile ++ fromDir)
  }

  private def fix(what: String, why: String): IllegalArgumentException = new IllegalArgumentException(
    s"$what $why. The KPL daemon and the writer trust the certificates there: point it at a PEM file " +
      "(kpl.CaCertFile) or a directory of certificates by OpenSSL's hashed names (kpl.CaCertPath; `openssl rehash " +
      "<dir>` makes them) on every host that runs the writer."
  )

  /** Every certificate of a PEM (or DER) file. */
  private[sparkkinesis] def pemFile(file: Path): Seq[X509Certificate] = {
    val named = s"kpl.CaCertFile $file"
    if (!Files.isRegularFile(file)) throw fix(named, if (Files.exists(file)) "is not a file" else "does not exist")
    val certs =
      try read(Files.newInputStream(file))
      catch { case NonFatal(e) => throw fix(named, s"cannot be read as certificates (${e.getMessage})") }
    if (certs.isEmpty) throw fix(named, "holds no certificate")
    certs
  }

  /** The certificates of `dir` that OpenSSL finds there: files named `<8 hex digits>.<n>`. */
  private[sparkkinesis] def hashedDirectory(dir: Path, required: Boolean): Seq[X509Certificate] = {
    val named = s"kpl.CaCertPath $dir"
    if (!Files.isDirectory(dir)) throw fix(named, if (Files.exists(dir)) "is not a directory" else "does not exist")
    val files =
      try {
        val s = Files.list(dir)
        try s.iterator().asScala.filter(f => Hashed.pattern.matcher(f.getFileName.toString).matches()).toList
        finally s.close()
      } catch { case NonFatal(e) => throw fix(named, s"cannot be listed (${e.getMessage})") }
    val certs = files.sortBy(_.getFileName.toString).flatMap { f =>
      try read(Files.newInputStream(f))
      catch { case NonFatal(e) => throw fix(s"$named: $f", s"cannot be read as certificates (${e.getMessage})") }
    }
    if (certs.isEmpty && required) throw fix(named, "holds no certificate by OpenSSL's hashed names (<hash>.0)")
    certs
  }

  private val Hashed = "^[0-9a-f]{8}\\.r?[0-9]+$".r

  private def read(in: InputStream): Seq[X509Certificate] =
    try
      CertificateFactory.getInstance("X.509").generateCertificates(in).asScala.toSeq.collect {
        case c: X509Certificate => c
      }
    finally in.close()

  /** The KPL's own roots, by the list its extractor writes out (none if this KPL keeps it elsewhere: the JVM's store).
    */
  private lazy val bundled: Seq[X509Certificate] =
    try {
      val kpl = classOf[io.github.sparkkinesis.shaded.kpl.KinesisProducer]
      val f = Class.forName(kpl.getPackage.getName + ".CertificateExtractor").getDeclaredField("CERTIFICATE_FILES")
      f.setAccessible(true)
      f.get(null).asInstanceOf[java.util.List[String]].asScala.toSeq.flatMap { name =>
        Option(kpl.getClassLoader.getResourceAsStream(s"$ResourceRoot/$name")).toSeq.flatMap(read)
      }
    } catch {
      case NonFatal(e) =>
        log.debug(s"The KPL's bundled certificates are not readable here ($e): the JVM's trust store stands in", e)
        Nil
    }
}

/** A trust manager that notes the certificate of the last chain it refused, so a refusal can name it (issuer, subject)
  * instead of only "PKIX path building failed".
  */
private[sparkkinesis] final class RecordingTrustManager(delegate: X509ExtendedTrustManager)
    extends X509ExtendedTrustManager {
  @volatile var refused: Option[X509Certificate] = None

  private def noting(chain: Array[X509Certificate])(check: => Unit): Unit =
    try check
    catch {
      case e: CertificateException =>
        if (chain != null && chain.nonEmpty) refused = Some(chain(0))
        throw e
    }

  override def checkServerTrusted(chain: Array[X509Certificate], authType: String): Unit =
    noting(chain)(delegate.checkServerTrusted(chain, authType))
  override def checkServerTrusted(chain: Array[X509Certificate], authType: String, socket: Socket): Unit =
    noting(chain)(delegate.checkServerTrusted(chain, authType, socket))
  override def checkServerTrusted(chain: Array[X509Certificate], authType: String, engine: SSLEngine): Unit =
    noting(chain)(delegate.checkServerTrusted(chain, authType, engine))
  override def checkClientTrusted(chain: Array[X509Certificate], authType: String): Unit =
    delegate.checkClientTrusted(chain, authType)
  override def checkClientTrusted(chain: Array[X509Certificate], authType: String, socket: Socket): Unit =
    delegate.checkClientTrusted(chain, authType, socket)
  override def checkClientTrusted(chain: Array[X509Certificate], authType: String, engine: SSLEngine): Unit =
    delegate.checkClientTrusted(chain, authType, engine)
  override def getAcceptedIssuers: Array[X509Certificate] = delegate.getAcceptedIssuers
}
