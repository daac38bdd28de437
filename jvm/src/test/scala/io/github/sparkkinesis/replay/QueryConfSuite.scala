package io.github.sparkkinesis.replay

import java.io.{ByteArrayInputStream, ByteArrayOutputStream, ObjectInputStream, ObjectOutputStream}

import org.apache.hadoop.conf.Configuration
import org.apache.spark.{SparkConf, SparkContext}
import org.scalatest.funsuite.AnyFunSuite

/** The Hadoop configuration format("kinesis")'s plans carry to tasks: broadcast once per run of a query. */
class QueryConfSuite extends AnyFunSuite {

  private def roundTrip(c: QueryConf): (Int, QueryConf) = {
    val bytes = new ByteArrayOutputStream()
    val out = new ObjectOutputStream(bytes)
    out.writeObject(c)
    out.close()
    val in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray))
    (bytes.size(), in.readObject().asInstanceOf[QueryConf])
  }

  test("a plan carries a reference to its run's configuration, not the configuration; a new run copies it again") {
    // Spark 3.5's SparkContext needs the JVM's module flags (its launcher adds them; sbt's forked test JVM does not).
    val sc =
      try new SparkContext(new SparkConf().setMaster("local[1]").setAppName("QueryConfSuite"))
      catch {
        case e: IllegalAccessError => cancel(s"no local SparkContext in this test JVM (the Spark 4 line runs it): $e")
      }
    try {
      sc.hadoopConfiguration.set("fs.s3a.endpoint", "http://127.0.0.1:1")
      sc.setLocalProperty(ReplayPlan.RunProperty, "run-1")
      val (size, batch1) = roundTrip(QueryConf(sc, "q"))
      val (_, batch2) = roundTrip(QueryConf(sc, "q"))
      val (wholeSize, whole) = roundTrip(QueryConf(new Configuration(sc.hadoopConfiguration)))
      assert(batch1.value.get("fs.s3a.endpoint") == "http://127.0.0.1:1", "the settings reach the tasks")
      assert(whole.value.get("fs.s3a.endpoint") == "http://127.0.0.1:1")
      assert(size * 10 < wholeSize, s"each batch's tasks get $size bytes, not the configuration's $wholeSize")
      assert(batch1.value eq batch2.value, "one broadcast for the run's batches")
      assert(batch1.value ne sc.hadoopConfiguration, "a copy: the tasks never share the driver's")

      sc.hadoopConfiguration.set("fs.s3a.endpoint", "http://127.0.0.1:2")
      assert(roundTrip(QueryConf(sc, "q"))._2.value.get("fs.s3a.endpoint") == "http://127.0.0.1:1", "the same run")
      sc.setLocalProperty(ReplayPlan.RunProperty, "run-2")
      val (_, run2) = roundTrip(QueryConf(sc, "q"))
      assert(run2.value.get("fs.s3a.endpoint") == "http://127.0.0.1:2", "a restarted query sees the change")
      assert(QueryConf(sc, "q").value eq sc.hadoopConfiguration, "the driver's own plan uses the SparkContext's")

      sc.setLocalProperty(ReplayPlan.RunProperty, null)
      val (directSize, direct) = roundTrip(QueryConf(sc, "other"))
      assert(directSize > size * 10 && direct.value.get("fs.s3a.endpoint") == "http://127.0.0.1:2", "no run: whole")
    } finally sc.stop()
  }
}
