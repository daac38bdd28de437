package io.github.sparkkinesis.aggregation

import java.nio.ByteBuffer

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.shaded.kpl.UserRecordResult

class PendingSuite extends AnyFunSuite {

  /** Logs what it is told, in order. */
  private final class Logging(name: String, log: StringBuilder) extends RecordOwner {
    def succeeded(result: UserRecordResult, n: Int, bytes: Long): Unit = log ++= s"$name+$n/$bytes "
    def failed(t: Throwable, n: Int, bytes: Long): Unit = log ++= s"$name-$n/$bytes "
    def latency(startNanos: Long): Unit = ()
    override def confirmed(entries: Array[Pending], from: Int, until: Int): Unit =
      log ++= s"$name[$from,$until)${entries.slice(from, until).map(_.bytes).mkString(",")} "
  }

  private def entry(owner: RecordOwner, bytes: Int) =
    new Pending("s", "k", null, ByteBuffer.allocate(bytes), owner, bytes, 0L, null, Array[Byte](107))

  test("a confirmation reaches each owner once per run of its records, before the run's success; a failure none") {
    val log = new StringBuilder
    val (a, b) = (new Logging("a", log), new Logging("b", log))
    val entries = Array(entry(a, 1), entry(a, 2), entry(b, 3), entry(a, 4))
    Pending.complete(entries, Right(null))
    assert(log.toString == "a[0,2)1,2 a+2/3 b[2,3)3 b+1/3 a[3,4)4 a+1/4 ")
    log.clear()
    Pending.complete(entries, Left(new RuntimeException("throttled")))
    assert(log.toString == "a-2/3 b-1/3 a-1/4 ", "nothing failed is confirmed")
  }
}
