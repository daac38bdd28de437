package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.auth.credentials.{AwsBasicCredentials, AwsCredentials, AwsCredentialsProvider}

/** The call order of the KPL's `Daemon` (1.0.x), replayed: `-k`, `-w`, then per refresh the Kinesis credentials and the
  * metrics ones, each queued for the daemon as soon as it is resolved.
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

  private def delivered(p: PipeOnlyCredentials): Boolean =
    try { p.awaitDelivered(50); true }
    catch { case _: KinesisWriteException => false }

  test("the command line's two calls get a placeholder, without asking the real source") {
    val inner = new Counting(_ => false)
    val p = new PipeOnlyCredentials(inner, source)
    assert(p.resolveCredentials() eq PipeOnlyCredentials.Placeholder) // -k
    assert(p.resolveCredentials() eq PipeOnlyCredentials.Placeholder) // -w
    assert(inner.calls == 0)
    assert(!PipeOnlyCredentials.Placeholder.secretAccessKey().contains("real"))
  }

  test("delivered once a call starts after a successful real one: its SetCredentials is queued") {
    val p = new PipeOnlyCredentials(new Counting(_ => false), source)
    p.resolveCredentials(); p.resolveCredentials()
    assert(p.resolveCredentials() == real) // the first refresh: Kinesis credentials, not yet queued
    assert(!delivered(p))
    p.resolveCredentials() // the metrics call: the Kinesis message is in the queue
    assert(delivered(p))
  }

  test("a failing first refresh fails the wait at once, naming the source and the fix, without secrets") {
    val p = new PipeOnlyCredentials(new Counting(_ => true), source)
    p.resolveCredentials(); p.resolveCredentials()
    intercept[IllegalStateException](p.resolveCredentials())
    val e = intercept[KinesisWriteException](p.awaitDelivered(10000))
    assert(
      e.getMessage.contains("No AWS credentials for the KPL from Static(") && e.getMessage.contains("refused call 1")
    )
    assert(e.getMessage.contains(source.fix))
    assert(!e.getMessage.contains("real-secret") && !e.getMessage.contains("AKIAREAL"))
  }

  test("after delivery, a failing refresh is the KPL's to log and retry: the wait still returns") {
    val p = new PipeOnlyCredentials(new Counting(n => n == 3), source) // the real source's 3rd call
    (1 to 4).foreach(_ => p.resolveCredentials())
    intercept[IllegalStateException](p.resolveCredentials())
    assert(delivered(p))
  }

  test("no call after the command line's: the daemon never connected, and the error says so") {
    val p = new PipeOnlyCredentials(new Counting(_ => false), source)
    p.resolveCredentials(); p.resolveCredentials()
    val e = intercept[KinesisWriteException](p.awaitDelivered(100))
    assert(e.getMessage.contains("did not connect"))
  }
}
