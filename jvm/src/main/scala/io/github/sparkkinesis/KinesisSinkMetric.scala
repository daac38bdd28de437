package io.github.sparkkinesis

import org.apache.spark.sql.connector.metric.{CustomMetric, CustomSumMetric, CustomTaskMetric}

/** The task totals ([[TaskTotals]]) as DataSource V2 custom metrics (the SQL tab of the Spark UI): each task reports
  * its own, Spark sums them.
  */
private[sparkkinesis] final class KinesisSinkMetric(metricName: String) extends CustomSumMetric {
  def this() = this("") // Spark instantiates metric classes on the driver through a no-arg constructor
  override def name(): String = metricName
  override def description(): String =
    TaskTotals.all.find(_.name == metricName).map(_.description).getOrElse(metricName)
}

private[sparkkinesis] object KinesisSinkMetric {
  def all: Seq[CustomMetric] = TaskTotals.names.map(n => new KinesisSinkMetric(n))

  def values(s: WriterState): Array[CustomTaskMetric] =
    TaskTotals.all.map { t =>
      val v = t.of(s)
      new CustomTaskMetric {
        override def name(): String = t.name
        override def value(): Long = v
      }
    }.toArray
}
