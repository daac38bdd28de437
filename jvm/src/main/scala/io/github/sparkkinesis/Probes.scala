package io.github.sparkkinesis

/** What tests, benchmarks and tools read from a running JVM through py4j (`jvm.io.github.sparkkinesis.Probes`): not
  * part of the public API. What needs no running JVM (the option table, metric and total names) is in the facts
  * resource instead (`Facts`, build code in jvm/src/facts).
  */
private[sparkkinesis] object Probes {

  /** Where the writer's classes were loaded from: which jar a session is really running. */
  def jarLocation(): String = String.valueOf(getClass.getProtectionDomain.getCodeSource.getLocation)

  /** This JVM's live producers (local-mode probe for tests and benchmarks), as a JSON array of objects whose keys are
    * the testkit's `ProducerSample` fields. `outstanding_records` is the KPL's count, which also holds the pool's own
    * pending `getMetrics` request; `in_flight_records` is what `queue_limit` bounds; `users` is the pool's count of
    * tasks holding the producer.
    */
  def producerSnapshot(): String =
    ProducerPool.default.live
      .map { p =>
        val m = p.metrics
        Seq[(String, Any)](
          "source" -> Json.str(p.sourceName),
          "outstanding_records" -> p.outstanding,
          "backpressure_cycles" -> m.backpressureCycles.getCount,
          "outstanding_bytes" -> p.bound.bytes.get,
          "records_sent" -> m.recordsSent.getCount,
          "records_failed" -> m.recordsFailed.getCount,
          "bytes_sent" -> m.bytesSent.getCount,
          "in_flight_records" -> p.bound.records.get,
          "aggregates_sent" -> m.aggregatesSent.getCount,
          "resent_records" -> m.resentRecords.getCount,
          "misplaced_aggregates" -> m.misplacedAggregates.getCount,
          "users" -> ProducerPool.default.users(p)
        ).map { case (k, v) => s""""$k": $v""" }.mkString("{", ", ", "}")
      }
      .mkString("[", ",\n", "]")
}
