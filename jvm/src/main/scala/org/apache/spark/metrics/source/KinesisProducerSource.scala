package org.apache.spark.metrics.source

import com.codahale.metrics.MetricRegistry
import org.apache.spark.SparkEnv

/** Spark's `Source` is `private[spark]`, so spark-kinesis's metrics source lives in its package. */
final class KinesisProducerSource(override val sourceName: String, override val metricRegistry: MetricRegistry)
    extends Source

object KinesisProducerSource {
  def register(env: SparkEnv, source: KinesisProducerSource): Unit = env.metricsSystem.registerSource(source)
  def remove(env: SparkEnv, source: KinesisProducerSource): Unit = env.metricsSystem.removeSource(source)
}
