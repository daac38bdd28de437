package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.aggregation.StreamLayout
import io.github.sparkkinesis.compat.CollectionConverters._

class RecordLimitSuite extends AnyFunSuite {
  import TestWriters._

  private val MiB = 1024 * 1024

  /** A string of `n` bytes in UTF-8. */
  private def payload(n: Int): String = "x" * n

  private def metadata(p: FakeProducer): FakeMetadata = p.metadata.asInstanceOf[FakeMetadata]

  for (mode <- Seq("writer", "kpl"))
    test(s"each record is held to its stream's limit, key included, read again before one fails ($mode)") {
      val fakes = new FakePool
      val w = writer(fakes, Map("aggregation" -> mode))
      w.open(0, 0)
      val p = fakes.last
      w.process(row("k", payload(MiB - 1))) // 1 MiB with its one-byte key: exactly the limit
      assert(p.sent.size == 1)
      val e = intercept[IllegalArgumentException](w.process(row("k", payload(MiB))))
      for (
        part <- Seq("1048577 bytes", "partition key 1", "stream s", "MaxRecordSizeInKiB 1024", "update-max-record-size")
      )
        assert(e.getMessage.contains(part), s"'$part' missing from: ${e.getMessage}")
      assert(p.sent.size == 1, "a record over the limit reached the producer")

      // The stream is raised to 10 MiB: a record over the limit last read has the stream read again before it fails.
      val raised = metadata(p).current.copy(maxRecordBytes = StreamLayout.LargestRecordBytes)
      metadata(p).current = raised
      val reads = metadata(p).reads
      w.process(row("k", payload(10 * MiB - 1)))
      assert(metadata(p).reads == reads + 1)
      fakes.tick(1000) // aggregation='writer': the shard's burst refills the 1 MiB the first record took
      assert(p.sent.asScala.exists(_.data.remaining() == 10 * MiB - 1), "the 10 MiB record did not go")
      intercept[IllegalArgumentException](w.process(row("k", payload(10 * MiB))))
      p.succeedAllIn(raised)
      w.close(null)
    }

  test(
    "a record larger than max_outstanding_bytes fails with the option named; on the driver when the KPL's bound is"
  ) {
    val fakes = new FakePool
    val w = writer(fakes, Map("max_outstanding_bytes" -> "1000"))
    w.open(0, 0)
    val e = intercept[IllegalArgumentException](w.process(row("k", payload(1001))))
    assert(e.getMessage.contains("larger than max_outstanding_bytes=1000"), e.getMessage)
    w.process(row("k", payload(1000)))
    fakes.last.succeedAll(_ => "s")
    w.close(null)
    val d = intercept[IllegalArgumentException](
      options(Map("max_outstanding_bytes" -> "1000", "kpl.MaxUserRecordSize" -> "2000"))
    )
    assert(d.getMessage.contains("kpl.MaxUserRecordSize=2000 is larger than max_outstanding_bytes=1000"), d.getMessage)
  }
}
