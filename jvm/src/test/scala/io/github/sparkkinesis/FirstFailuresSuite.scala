package io.github.sparkkinesis

import java.nio.file.{Files, Paths}
import java.nio.file.attribute.PosixFilePermissions

import org.scalatest.funsuite.AnyFunSuite

import TestWriters._

/** The first failures' words: a permanent Kinesis error ends the tasks at once; a daemon that cannot run says why. */
class FirstFailuresSuite extends AnyFunSuite {

  test("a permanent error the daemon met fails the stream's tasks at the next check and retires the producer") {
    val fakes = new FakePool
    val w = writer(fakes)
    w.open(0, 0)
    w.process(row("a", "1"))
    val producer = fakes.pool.live.head
    fakes.last.errors = Seq("other" -> "AccessDeniedException")
    fakes.pool.watchPermanentErrors()
    assert(producer.permanentError(Some("s")) == null, "another stream's error is not this writer's")
    fakes.last.errors = Seq("s" -> "ResourceNotFoundException")
    fakes.pool.watchPermanentErrors()
    assert(producer.broken, "retired: a retried task gets a fresh daemon")
    val e = intercept[KinesisWriteException](w.close(null))
    assert(
      e.getMessage.contains("ResourceNotFoundException: Kinesis has no stream s in region us-east-1"),
      e.getMessage
    )
    assert(e.getMessage.contains("Check stream_name, region and endpoint"), e.getMessage)
    assert(e.getMessage.contains("fails the task at once"), e.getMessage)
  }

  test("transient errors are not permanent") {
    Seq("ProvisionedThroughputExceededException", "InternalFailure", "ServiceUnavailable", "Expired", "")
      .foreach(c => assert(!PermanentErrors.isPermanent(c), c))
    Seq("AccessDeniedException", "ResourceNotFoundException", "UnrecognizedClientException")
      .foreach(c => assert(PermanentErrors.isPermanent(c), c))
  }

  test("the KPL's platform folders, by its rule") {
    assert(DaemonCheck.platform("Linux", "amd64") == "linux-x86_64")
    assert(DaemonCheck.platform("Linux", "aarch64") == "linux-aarch64")
    assert(DaemonCheck.platform("Mac OS X", "aarch64") == "osx")
    assert(DaemonCheck.platform("FreeBSD", "amd64") == "FreeBSD-amd64")
    // The bundle's folder name, as the KPL's class loader finds it: this platform's daemon is among those carried.
    val here = DaemonCheck.platform(System.getProperty("os.name"), System.getProperty("os.arch"))
    assert(DaemonCheck.carried.contains(here), DaemonCheck.carried)
  }

  test("a daemon that prints its usage runs; the loader's words name the library or the glibc") {
    val exe = Paths.get("/opt/kinesis_producer")
    assert(DaemonCheck.explainExit(exe, 1, "Usage: /opt/kinesis_producer -i <input pipe> ...").isEmpty)
    val lib = DaemonCheck.explainExit(
      exe,
      127,
      "/opt/kinesis_producer: error while loading shared libraries: libuuid.so.1: cannot open shared object file"
    )
    assert(lib.exists(m => m.contains("needs the shared library libuuid.so.1") && m.contains("libuuid1")), lib)
    val glibc =
      DaemonCheck.explainExit(exe, 1, "/opt/kinesis_producer: /lib64/libc.so.6: version `GLIBC_2.25' not found")
    assert(glibc.exists(_.contains("needs GLIBC_2.25 or newer")), glibc)
    assert(DaemonCheck.explainExit(exe, 3, "boom").exists(_.contains("exited with code 3 as it started (boom)")))
  }

  test("a temp directory that is missing or a file, and a NativeExecutable without its run bit, are named") {
    val dir = Files.createTempDirectory("first-failures")
    try {
      val missing =
        intercept[KinesisWriteException](DaemonCheck.tempDirectory(dir.resolve("nope"), "kpl.TempDirectory", 0))
      assert(missing.getMessage.contains("does not exist") && missing.getMessage.contains("Set kpl.TempDirectory"))
      val file = Files.createFile(dir.resolve("file"))
      val notDir = intercept[KinesisWriteException](DaemonCheck.tempDirectory(file, "kpl.TempDirectory", 0))
      assert(notDir.getMessage.contains("is not a directory"))
      val full =
        intercept[KinesisWriteException](DaemonCheck.tempDirectory(dir, "kpl.TempDirectory", Long.MaxValue / 2))
      assert(full.getMessage.contains("MiB free"), full.getMessage)
      Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"))
      val noRun = intercept[KinesisWriteException](DaemonCheck.executable(file))
      assert(noRun.getMessage.contains("has no run permission): chmod +x it"), noRun.getMessage)
      val absent = intercept[KinesisWriteException](DaemonCheck.executable(dir.resolve("absent")))
      assert(absent.getMessage.contains("does not exist"))
    } finally {
      Files.list(dir).forEach(f => Files.delete(f))
      Files.delete(dir)
    }
  }
}
