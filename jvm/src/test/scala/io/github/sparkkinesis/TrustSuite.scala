package io.github.sparkkinesis

import java.nio.charset.StandardCharsets
import java.nio.file.{Files, Path}
import java.security.cert.{CertificateException, X509Certificate}
import java.util.Base64

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration

/** What the writer's own TLS connections trust: what its KPL daemon trusts (CaCertFile, CaCertPath or the KPL's roots).
  */
class TrustSuite extends AnyFunSuite {

  private def kpc(settings: (String, String)*): KinesisProducerConfiguration =
    KplSettings.applyTo(new KinesisProducerConfiguration(), settings.toMap)

  private def pem(c: X509Certificate): String =
    "-----BEGIN CERTIFICATE-----\n" + Base64.getMimeEncoder(64, "\n".getBytes).encodeToString(c.getEncoded) +
      "\n-----END CERTIFICATE-----\n"

  private def withDir[T](f: Path => T): T = {
    val dir = Files.createTempDirectory("trust-suite")
    try f(dir)
    finally TestDirs.deleteTree(dir)
  }

  private lazy val roots: Seq[X509Certificate] = Trust.of(kpc()).manager().getAcceptedIssuers.toSeq

  test("unset, the writer trusts the KPL's bundled roots, as its daemon does, and verifies as VerifyCertificate says") {
    val t = Trust.of(kpc())
    assert(t.sources == "the KPL's bundled roots" && t.verify)
    assert(
      roots.exists(_.getSubjectX500Principal.getName.contains("CN=Amazon Root CA 1")),
      roots.map(_.getSubjectX500Principal)
    )
    assert(!Trust.of(kpc("VerifyCertificate" -> "false")).verify)
  }

  test("kpl.CaCertFile is trusted beside the KPL's roots; a chain it does not vouch for is refused and noted") {
    withDir { dir =>
      val (mine, other) = (roots.head, roots.last)
      val file = dir.resolve("ca.pem")
      Files.write(file, ("a comment line\n" + pem(mine)).getBytes(StandardCharsets.US_ASCII))
      val t = Trust.of(kpc("CaCertFile" -> file.toString, "CaCertPath" -> dir.toString, "VerifyCertificate" -> "true"))
      assert(t.sources == s"kpl.CaCertFile $file and kpl.CaCertPath $dir")
      val m = t.manager()
      assert(m.getAcceptedIssuers.toSeq == Seq(mine), "CaCertPath replaces the KPL's roots: it holds none here")
      m.checkServerTrusted(Array(mine), "RSA")
      assert(m.refused.isEmpty)
      intercept[CertificateException](m.checkServerTrusted(Array(other), "RSA"))
      assert(m.refused.contains(other))
    }
  }

  test("kpl.CaCertPath: the certificates OpenSSL finds there, by their hashed names") {
    withDir { dir =>
      Files.write(dir.resolve("ca.pem"), pem(roots.head).getBytes(StandardCharsets.US_ASCII))
      val none = intercept[IllegalArgumentException](Trust.of(kpc("CaCertPath" -> dir.toString)))
      assert(none.getMessage.contains(s"kpl.CaCertPath $dir holds no certificate by OpenSSL's hashed names"))
      assert(none.getMessage.contains("openssl rehash"))
      Files.write(dir.resolve("0123abcd.0"), pem(roots.head).getBytes(StandardCharsets.US_ASCII))
      assert(Trust.of(kpc("CaCertPath" -> dir.toString)).manager().getAcceptedIssuers.toSeq == Seq(roots.head))
    }
  }

  test("a CaCertFile that is missing or holds no certificate is named, with the fix") {
    withDir { dir =>
      val missing = intercept[IllegalArgumentException](Trust.of(kpc("CaCertFile" -> dir.resolve("nope").toString)))
      assert(
        missing.getMessage.startsWith(s"kpl.CaCertFile ${dir.resolve("nope")} does not exist."),
        missing.getMessage
      )
      val empty = Files.write(dir.resolve("empty.pem"), "no certificate here\n".getBytes(StandardCharsets.US_ASCII))
      val none = intercept[IllegalArgumentException](Trust.of(kpc("CaCertFile" -> empty.toString)))
      assert(none.getMessage.contains(s"kpl.CaCertFile $empty"), none.getMessage)
    }
  }
}
