package io.github.sparkkinesis

import org.apache.spark.SparkEnv
import org.apache.spark.metrics.source.KinesisProducerSource

/** Registers a producer's metrics with the executor's Spark metrics system (when there is one). */
private[sparkkinesis] object SparkMetrics {
  def register(p: SharedProducer): () => Unit = Option(SparkEnv.get) match {
    case Some(env) =>
      val source = new KinesisProducerSource(p.sourceName, p.metrics.registry)
      KinesisProducerSource.register(env, source)
      () => KinesisProducerSource.remove(env, source)
    case None => () => ()
  }
}
