package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite
import software.amazon.awssdk.auth.credentials.{AwsBasicCredentials, AwsCredentials, AwsCredentialsProvider}

/** The call order of the KPL's `Daemon` (1.0.x), replayed: `-k`, `-w`, then per refresh (`Daemon.updateCredentials`)
  * the Kinesis credentials and the metrics ones, each queued for the daemon as soon as it is resolved; a daemon the KPL
  * restarts in place builds a new command line from the same provider.
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

  /** Stands in for the stack walk: calls made inside `refresh { ... }` come from the KPL's refresh loop. */
  private final class Caller {
    @volatile var inRefresh = false
    def refresh[T](body: => T): T = {
      inRefresh = true
      try body
      finally inRefresh = false
    }
  }

  private def pipeOnly(inner: AwsCredentialsProvider): (PipeOnlyCredentials, Caller) = {
    val caller = new Caller
    (new PipeOnlyCredentials(inner, source, () => caller.inRefresh), caller)
  }

  private def delivered(p: PipeOnlyCredentials): Boolean =
    try { p.awaitDelivered(50); true }
    catch { case _: KinesisWriteException => false }

  test("command lines get a placeholder, without asking the real source") {
    val inner = new Counting(_ => false)
    val (p, _) = pipeOnly(inner)
    assert(p.resolveCredentials() eq PipeOnlyCredentials.Placeholder) // -k
    assert(p.resolveCredentials() eq PipeOnlyCredentials.Placeholder) // -w
    assert(inner.calls == 0)
    assert(!PipeOnlyCredentials.Placeholder.secretAccessKey().contains("real"))
  }

  test("a daemon restarted in place after refreshes still gets the placeholder on its command line") {
    val inner = new Counting(_ => false)
    val (p, caller) = pipeOnly(inner)
    p.resolveCredentials(); p.resolveCredentials()
    caller.refresh { assert(p.resolveCredentials() == real); assert(p.resolveCredentials() == real) }
    // The daemon died; KinesisProducer.onError starts a new one from the same configuration.
    assert(p.resolveCredentials() eq PipeOnlyCredentials.Placeholder) // its -k
    assert(p.resolveCredentials() eq PipeOnlyCredentials.Placeholder) // its -w
    assert(inner.calls == 2)
    caller.refresh(assert(p.resolveCredentials() == real)) // its own refresh loop
  }

  test("delivered once a refresh call starts after a successful real one: its SetCredentials is queued") {
    val (p, caller) = pipeOnly(new Counting(_ => false))
    p.resolveCredentials(); p.resolveCredentials()
    caller.refresh(assert(p.resolveCredentials() == real)) // the first refresh: Kinesis credentials, not yet queued
    assert(!delivered(p))
    assert(p.resolveCredentials() eq PipeOnlyCredentials.Placeholder) // not the refresh loop: proves nothing
    assert(!delivered(p))
    caller.refresh(p.resolveCredentials()) // the metrics call: the Kinesis message is in the queue
    assert(delivered(p))
  }

  test("a failing first refresh fails the wait at once, naming the source and the fix, without secrets") {
    val (p, caller) = pipeOnly(new Counting(_ => true))
    p.resolveCredentials(); p.resolveCredentials()
    caller.refresh(intercept[IllegalStateException](p.resolveCredentials()))
    val e = intercept[KinesisWriteException](p.awaitDelivered(10000))
    assert(
      e.getMessage.contains("No AWS credentials for the KPL from Static(") && e.getMessage.contains("refused call 1")
    )
    assert(e.getMessage.contains(source.fix))
    assert(!e.getMessage.contains("real-secret") && !e.getMessage.contains("AKIAREAL"))
  }

  test("after delivery, a failing refresh is the KPL's to log and retry: the wait still returns") {
    val (p, caller) = pipeOnly(new Counting(n => n == 3)) // the real source's 3rd call
    p.resolveCredentials(); p.resolveCredentials()
    caller.refresh {
      (1 to 2).foreach(_ => p.resolveCredentials())
      intercept[IllegalStateException](p.resolveCredentials())
    }
    assert(delivered(p))
  }

  test("no refresh after the command line's calls: the daemon never connected, and the error says so") {
    val (p, _) = pipeOnly(new Counting(_ => false))
    p.resolveCredentials(); p.resolveCredentials()
    val e = intercept[KinesisWriteException](p.awaitDelivered(100))
    assert(e.getMessage.contains("did not connect"))
  }

  test("the stack walk finds only the KPL's refresh loop, which the pinned KPL still has") {
    assert(!PipeOnlyCredentials.calledByRefreshLoop) // a test thread is not the KPL's refresh loop
    val (cls, method) = PipeOnlyCredentials.RefreshLoop
    val daemon = Class.forName(cls)
    assert(daemon.getDeclaredMethods.exists(_.getName == method), s"$cls.$method is gone: credentials never arrive")
    // Its callee is the one that asks the provider, as on the command line (startChildProcess).
    assert(daemon.getDeclaredMethods.exists(_.getName == "makeSetCredentialsMessage"))
    assert(daemon.getDeclaredMethods.exists(_.getName == "startChildProcess"))
  }
}
