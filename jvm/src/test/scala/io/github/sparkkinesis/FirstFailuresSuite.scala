package io.github.sparkkinesis

import java.nio.file.{Files, Paths}
import java.nio.file.attribute.PosixFilePermissions

import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.expressions.GenericRowWithSchema
import org.apache.spark.sql.types.{StringType, StructField, StructType}
import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.compat.CollectionConverters._

import TestWriters._

/** The first failures' words: a permanent Kinesis error ends the tasks that wrote to its stream at once (or, with
  * fail_on_error=false, drops that stream's records); a daemon that cannot run says why.
  */
class FirstFailuresSuite extends AnyFunSuite {

  /** A writer routing rows by a `streamName` column (aggregation='kpl': one fake put per record). */
  private def perRow(fakes: FakePool, failOnError: Boolean): KinesisForeachWriter = {
    val opts =
      KinesisWriterOptions.parse(Map("region" -> "us-east-1", "fail_on_error" -> failOnError.toString) ++ perRecord)
    new KinesisForeachWriter(KinesisWriter.Prepared(opts, RowConverter.forSchema(perRowSchema, opts), None)) {
      override private[sparkkinesis] def pool: ProducerPool = fakes.pool
    }
  }
  private val perRowSchema =
    StructType(Seq("partitionKey", "data", "streamName").map(StructField(_, StringType)))
  private def to(stream: String, key: String): Row =
    new GenericRowWithSchema(Array[Any](key, key, stream), perRowSchema)

  test("a permanent error the daemon met fails the tasks that wrote to its stream at the next check, not others") {
    val fakes = new FakePool
    val w = writer(fakes)
    w.open(0, 0)
    w.process(row("a", "1"))
    val producer = fakes.pool.live.head
    fakes.last.errors = Seq("other" -> "AccessDeniedException")
    fakes.pool.watchPermanentErrors()
    w.process(row("b", "2")) // another stream's error is not this writer's
    fakes.last.errors = Seq("s" -> "ResourceNotFoundException")
    fakes.pool.watchPermanentErrors()
    assert(!producer.broken, "the daemon is fine: its other streams' records go on")
    val e = intercept[KinesisWriteException](w.close(null))
    assert(
      e.getMessage.contains("ResourceNotFoundException: Kinesis has no stream s in region us-east-1"),
      e.getMessage
    )
    assert(e.getMessage.contains("Check stream_name, region and endpoint"), e.getMessage)
    assert(e.getMessage.contains("fails the task at once"), e.getMessage)
    // A task that starts writing to the stream after the refusal was last seen is not failed by it.
    fakes.last.errors = Nil
    fakes.nowMs += 1
    val next = writer(fakes)
    next.open(1, 0)
    next.process(row("c", "3"))
    fakes.last.succeed(fakes.last.outstandingRecords.toInt)
    next.close(null)
  }

  test("per-row streams: a refused stream fails the strict tasks that wrote to it, never a task of another stream") {
    val fakes = new FakePool
    val typo = perRow(fakes, failOnError = true)
    val other = perRow(fakes, failOnError = true) // another query, the same options: the same producer
    typo.open(0, 0)
    other.open(1, 0)
    typo.process(to("good", "a"))
    typo.process(to("typo-stream", "b"))
    other.process(to("good", "c"))
    assert(fakes.created.size == 1, "both queries share one producer")
    fakes.last.errors = Seq("typo-stream" -> "ResourceNotFoundException")
    fakes.pool.watchPermanentErrors()
    other.process(to("good", "d"))
    fakes.last.succeed(fakes.last.outstandingRecords.toInt)
    other.close(null) // committed: its stream was never refused
    val e = intercept[KinesisWriteException](typo.process(to("good", "e")))
    assert(e.getMessage.contains("Kinesis has no stream typo-stream"), e.getMessage)
    typo.close(e)
  }

  test("fail_on_error=false: a refused stream's records are counted and dropped, other streams' delivered") {
    val fakes = new FakePool
    val w = perRow(fakes, failOnError = false)
    w.open(0, 0)
    (0 until 10).foreach(i => w.process(to(if (i % 5 == 0) "typo-stream" else "good", s"k$i")))
    val fake = fakes.last
    val producer = fakes.pool.live.head
    fake.errors = Seq("typo-stream" -> "ResourceNotFoundException")
    fakes.pool.watchPermanentErrors()
    (10 until 20).foreach(i => w.process(to(if (i % 5 == 0) "typo-stream" else "good", s"k$i")))
    assert(
      fake.sent.asScala.count(_.stream == "typo-stream") == 2,
      "records of a refused stream are not put while the refusal holds"
    )
    // The two put before the refusal: the real client fails them at once (SenderSuite); the fake, as the KPL would.
    fake.errors = Nil
    while (fake.outstandingRecords > 0) {
      val next = fake.sent.asScala.toSeq.takeRight(fake.outstandingRecords.toInt).head
      if (next.stream == "typo-stream") fake.failOne("ResourceNotFoundException", "Stream typo-stream not found")
      else fake.succeed(1)
    }
    w.close(null) // no failure: the task commits
    assert(producer.metrics.recordsFailed.getCount == 4 && producer.metrics.recordsSent.getCount == 16)
    // The refusal holds for HoldMs after it was last seen; then the stream's records are tried again.
    fakes.nowMs += PermanentErrors.HoldMs
    val again = perRow(fakes, failOnError = false)
    again.open(1, 0)
    again.process(to("typo-stream", "x"))
    assert(fake.sent.asScala.count(_.stream == "typo-stream") == 3)
    fake.succeed(1)
    again.close(null)
  }

  test("transient errors are not permanent") {
    Seq("ProvisionedThroughputExceededException", "InternalFailure", "ServiceUnavailable", "Expired", "")
      .foreach(c => assert(!PermanentErrors.isPermanent(c), c))
    Seq("AccessDeniedException", "ResourceNotFoundException", "UnrecognizedClientException")
      .foreach(c => assert(PermanentErrors.isPermanent(c), c))
  }

  test("the KPL's platform folders, by its rule") {
    assert(Platforms.folder("Linux", "amd64") == "linux-x86_64")
    assert(Platforms.folder("Linux", "aarch64") == "linux-aarch64")
    assert(Platforms.folder("Mac OS X", "aarch64") == "osx")
    assert(Platforms.folder("FreeBSD", "amd64") == "FreeBSD-amd64")
    // The bundle's folder name, as the KPL's class loader finds it: this platform's daemon is among those carried.
    val here = Platforms.folder(System.getProperty("os.name"), System.getProperty("os.arch"))
    assert(DaemonCheck.carried.contains(here), DaemonCheck.carried)
    assert(DaemonCheck.carried == Platforms.all.map(_.folder), "the bundle carries every platform of the table")
  }

  test("the driver's words where no carried daemon runs: Windows, Apple silicon without Rosetta 2, another platform") {
    val all = Platforms.all.map(_.folder)
    assert(
      DaemonCheck
        .platformProblem("Windows 11", "amd64", all, rosetta = false)
        .contains(
          "This JVM runs on Windows 11 amd64: the KPL ships no daemon for Windows, so the writer's tasks cannot run " +
            "here. Run Spark in WSL2 (its Linux x86_64 gets the jars: pip install spark-kinesis there), or use this " +
            "machine as a Spark Connect client (SparkSession.builder.remote(...)) of a Spark server on Linux or macOS " +
            "that has the jars"
        )
    )
    assert(
      DaemonCheck
        .platformProblem("Mac OS X", "aarch64", all, rosetta = false)
        .contains(
          "This Mac runs on Apple silicon (aarch64), and the KPL's macOS daemon is an x86_64 program, which macOS runs " +
            "only through Rosetta 2, not installed here. Install it: softwareupdate --install-rosetta --agree-to-license"
        )
    )
    assert(DaemonCheck.platformProblem("Mac OS X", "aarch64", all, rosetta = true).isEmpty)
    assert(DaemonCheck.platformProblem("Mac OS X", "x86_64", all, rosetta = false).isEmpty, "Intel needs no Rosetta")
    assert(
      DaemonCheck
        .platformProblem("Mac OS X", "aarch64", Seq("linux-x86_64"), rosetta = true)
        .contains(
          "This JVM runs on Mac OS X aarch64 (osx), for which spark-kinesis carries no KPL daemon (it carries " +
            "linux-x86_64). Run the executors on one of those, or build the KPL's daemon for this platform and set " +
            "kpl.NativeExecutable to it"
        )
    )
    assert(DaemonCheck.platformProblem("Linux", "riscv64", Nil, rosetta = false).isEmpty, "nothing seen: the KPL tells")
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
    } finally TestDirs.deleteTree(dir)
  }

  test("the daemon's probe writes its output under the KPL's temp directory, not java.io.tmpdir") {
    val dir = Files.createTempDirectory("daemon-probe")
    try {
      val exe = Files.write(dir.resolve("kinesis_producer"), "#!/bin/sh\nreadlink /proc/$$/fd/1\nexit 3\n".getBytes)
      Files.setPosixFilePermissions(exe, PosixFilePermissions.fromString("rwx------"))
      val kplTemp = Files.createDirectory(dir.resolve("kpl-temp"))
      val e = intercept[KinesisWriteException](DaemonCheck.probe(exe, kplTemp))
      assert(
        e.getMessage.contains(s"exited with code 3 as it started ($kplTemp/spark-kinesis-daemon-probe"),
        e.getMessage
      )
      assert(Files.list(kplTemp).count() == 0, "the probe's output is removed")
      val config = options(Map("kpl.TempDirectory" -> kplTemp.toString)).producer
      assert(DaemonCheck.tempDirectoryOf(config) == (kplTemp, "kpl.TempDirectory"))
    } finally TestDirs.deleteTree(dir)
  }
}
