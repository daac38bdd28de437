package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite
import io.github.sparkkinesis.shaded.awssdk.auth.credentials.{
  AwsBasicCredentials,
  AwsCredentials,
  AwsCredentialsProvider
}

/** The KPL (1.1) resolves the provider to send the daemon its first credentials over the pipe, then again on its
  * refresh loop; [[ReportingCredentials]] reports how the first resolution went.
  */
class CredentialsSuite extends AnyFunSuite {
  private val real = AwsBasicCredentials.create("AKIAREAL", "real-secret")
  private val source = Credentials.Static("AKIAREAL", "real-secret", None)

  private final class Counting(fail: Int => Boolean) extends AwsCredentialsProvider {
    @volatile var calls = 0
    def resolveCredentials(): AwsCredentials = {
      calls += 1
      if (fail(calls)) throw new IllegalStateException(s"refused call $calls") else real
    }
  }

  test("the KPL's calls get the real credentials, and the wait returns once the first one has") {
    val inner = new Counting(_ => false)
    val p = new ReportingCredentials(inner, source)
    assert(p.resolveCredentials() == real)
    p.awaitFirst(10)
    assert(p.resolveCredentials() == real)
    assert(inner.calls == 2)
  }

  test("a failing first resolution fails the wait at once, naming the source and the fix, without secrets") {
    val p = new ReportingCredentials(new Counting(_ => true), source)
    intercept[IllegalStateException](p.resolveCredentials())
    val e = intercept[KinesisWriteException](p.awaitFirst(10000))
    assert(
      e.getMessage.contains("No AWS credentials for the KPL from Static(") && e.getMessage.contains("refused call 1")
    )
    assert(e.getMessage.contains(source.fix))
    assert(!e.getMessage.contains("real-secret") && !e.getMessage.contains("AKIAREAL"))
  }

  test("after a first success, a failing refresh is the KPL's to log and retry: the wait still returns") {
    val p = new ReportingCredentials(new Counting(n => n == 2), source)
    p.resolveCredentials()
    intercept[IllegalStateException](p.resolveCredentials())
    p.awaitFirst(10)
  }

  test("no resolution within the timeout: the daemon never connected, and the error says so") {
    val p = new ReportingCredentials(new Counting(_ => false), source)
    val e = intercept[KinesisWriteException](p.awaitFirst(50))
    assert(e.getMessage.contains("did not connect"))
  }

  test("the bundled KPL sends the first credentials over the pipe (1.0.8+), so none is ever on a command line") {
    val daemon = classOf[io.github.sparkkinesis.shaded.kpl.Daemon]
    assert(daemon.getDeclaredMethods.exists(_.getName == "sendInitialCredentials"), "a KPL older than 1.1 is bundled")
  }
}
