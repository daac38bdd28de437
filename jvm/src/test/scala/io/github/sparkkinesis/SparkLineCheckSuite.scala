package io.github.sparkkinesis

import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.compat.CollectionConverters._

class SparkLineCheckSuite extends AnyFunSuite {
  private def marker(line: String, scala: String, at: String = "file:/jars/x.jar") =
    new SparkLineCheck.Marker(line, scala, "io.github.spark-kinesis", "1.0.0", at)
  private def problem(spark: String, scala: String, markers: SparkLineCheck.Marker*): String =
    SparkLineCheck.problem(spark, scala, markers.asJava)

  test("the matching line jar passes: 3.5 with either Scala, every 4.x") {
    assert(problem("3.5.9", "2.12.18", marker("3.5", "2.12")) == null)
    assert(problem("3.5.6-amzn-2", "2.13.8", marker("3.5", "2.13")) == null)
    assert(problem("4.0.1", "2.13.16", marker("4", "2.13")) == null)
    assert(problem("4.3.0", "2.13.18", marker("4", "2.13")) == null)
  }

  test("a Scala mismatch names both versions and the artifact to use") {
    val p = problem("3.5.9", "2.12.18", marker("3.5", "2.13", "file:/x/spark-kinesis-3.5_2.13.jar"))
    assert(p.contains("This JVM runs Spark 3.5.9 with Scala 2.12."))
    assert(p.contains("io.github.spark-kinesis:spark-kinesis-3.5_2.13:1.0.0, at file:/x/spark-kinesis-3.5_2.13.jar"))
    assert(p.contains("Use io.github.spark-kinesis:spark-kinesis-3.5_2.12:1.0.0 instead"))
  }

  test("a jar of another Spark line names the line it was built for") {
    val p = problem("4.1.0", "2.13.16", marker("3.5", "2.13"))
    assert(p.contains("is built for Spark 3.5 with Scala 2.13") && p.contains("spark-kinesis-4_2.13:1.0.0 instead"))
  }

  test("Spark older than 3.5, and Spark 5, are refused with the supported lines") {
    for (spark <- Seq("3.4.1", "3.3.0", "2.4.8", "5.0.0")) {
      val p = problem(spark, "2.12.17", marker("3.5", "2.12"))
      assert(p.contains(s"This JVM runs Spark $spark with Scala 2.12."), p)
      assert(p.contains("supports Spark 3.5 (Scala 2.12 or 2.13) and Spark 4.x (Scala 2.13)"), p)
      assert(p.contains("spark-kinesis-3.5_2.12:1.0.0") && p.contains("spark-kinesis-4_2.13:1.0.0"), p)
    }
  }

  test("two line jars, or none, are named") {
    val two = problem("3.5.9", "2.12.18", marker("3.5", "2.12", "file:/a.jar"), marker("4", "2.13", "file:/b.jar"))
    assert(two.contains("More than one") && two.contains("file:/a.jar") && two.contains("file:/b.jar"))
    assert(two.contains("Keep only io.github.spark-kinesis:spark-kinesis-3.5_2.12:1.0.0."))
    assert(problem("3.5.9", "2.12.18").contains("no Spark-line jar is"))
  }

  test("the supported lines come from the bundle's lines.properties (project/SparkLines.scala)") {
    val lines = SparkLineCheck.lines()
    assert(lines.scalas.get("3.5").asScala == Seq("2.12", "2.13") && lines.scalas.get("4").asScala == Seq("2.13"))
    assert(lines.supported() == "Spark 3.5 (Scala 2.12 or 2.13) and Spark 4.x (Scala 2.13)")
    assert(SparkLineCheck.lineOf("3.5.6-amzn-2") == "3.5" && SparkLineCheck.lineOf("3.50.0") == null)
  }

  test("a line jar of a line this bundle does not know is named by its own marker") {
    val other = marker("5", "2.13", "file:/x/spark-kinesis-5_2.13.jar")
    other.artifact = "spark-kinesis-5_2.13"
    val p = problem("4.0.1", "2.13.16", other)
    assert(p.contains("(io.github.spark-kinesis:spark-kinesis-5_2.13:1.0.0, at file:/x/spark-kinesis-5_2.13.jar)"), p)
  }
}
