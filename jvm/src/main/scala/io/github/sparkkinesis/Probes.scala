package io.github.sparkkinesis

import io.github.sparkkinesis.compat.CollectionConverters._

/** What tests, benchmarks and tools read from a running JVM through py4j (`jvm.io.github.sparkkinesis.Probes`): not
  * part of the public API.
  */
private[sparkkinesis] object Probes {

  /** The writer option table as `[name, type, default or null, secret]` rows (Python's is checked against it). */
  def optionTable(): java.util.List[java.util.List[Any]] =
    KinesisWriterOptions.table.map { o =>
      Seq[Any](o.name, o.kind, o.default.orNull, o.secret).asJava
    }.asJava

  /** Every KPL setting accepted as `kpl.<Name>`. */
  def kplSettingNames(): java.util.List[String] = KplSettings.all.map(_.name).asJava

  /** Where the writer's classes were loaded from: which jar a session is really running. */
  def jarLocation(): String = String.valueOf(getClass.getProtectionDomain.getCodeSource.getLocation)

  /** Every metric name a producer's source registers. */
  def metricNames(): java.util.List[String] = ProducerMetrics.names.asJava

  /** The driver-side totals' names (accumulators `kinesis.<stream>.<name>`, keys of `writer.metrics()`). */
  def accumulatorNames(): java.util.List[String] = TaskTotals.names.asJava

  /** This JVM's live producers as
    * `source,outstanding,backpressureCycles,outstandingBytes,recordsSent,recordsFailed,bytesSent,inFlightRecords,users`
    * lines (local-mode probe for tests and benchmarks). `outstanding` is the KPL's count, which also holds the pool's
    * own pending `getMetrics` request; `inFlightRecords` is what `queue_limit` bounds; `users` is the pool's count of
    * tasks holding the producer.
    */
  def producerSnapshot(): String =
    ProducerPool.default.live
      .map { p =>
        val m = p.metrics
        Seq[Any](
          p.sourceName,
          p.outstanding,
          m.backpressureCycles.getCount,
          m.outstandingBytes.get,
          m.recordsSent.getCount,
          m.recordsFailed.getCount,
          m.bytesSent.getCount,
          m.inFlightRecords.get,
          ProducerPool.default.users(p)
        ).mkString(",")
      }
      .mkString("\n")
}
