package org.apache.spark.metrics.source

import scala.collection.mutable

import com.codahale.metrics.MetricRegistry
import org.apache.spark.SparkEnv

/** Spark's `Source` is `private[spark]`, so spark-kinesis's metrics source lives in its package. */
final class KinesisProducerSource(override val sourceName: String, override val metricRegistry: MetricRegistry)
    extends Source

object KinesisProducerSource {

  /** The sources registered with each metrics system and not yet removed. */
  private val registered = mutable.LinkedHashSet.empty[(SparkEnv, KinesisProducerSource)]

  def register(env: SparkEnv, source: KinesisProducerSource): Unit = synchronized {
    env.metricsSystem.registerSource(source)
    registered += env -> source
  }

  /** Spark's `removeSource` drops every metric whose name starts with the source's (removing `kinesisProducer.orders`
    * takes the live `kinesisProducer.orders.2` and `kinesisProducer.orders-eu` with it), so the live sources it hit are
    * registered again, shorter names first (a longer one's metrics are hit by each shorter one's removal).
    */
  def remove(env: SparkEnv, source: KinesisProducerSource): Unit = synchronized {
    registered -= env -> source
    env.metricsSystem.removeSource(source)
    val hit = registered.toSeq.collect {
      case (e, s) if (e eq env) && s.sourceName.startsWith(source.sourceName) => s
    }
    hit.sortBy(_.sourceName.length).foreach { s =>
      env.metricsSystem.removeSource(s)
      env.metricsSystem.registerSource(s)
    }
  }
}
