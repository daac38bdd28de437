package io.github.sparkkinesis

import org.apache.spark.SparkEnv
import org.apache.spark.metrics.source.KinesisProducerSource

/** Registers a producer's metrics with the executor's Spark metrics system (when there is one). */
private[sparkkinesis] object SparkMetrics {
  val SourceName = "kinesisProducer"

  def register(p: SharedProducer): () => Unit = Option(SparkEnv.get) match {
    case Some(env) =>
      // One source per producer; the producer id keeps two configs in one JVM apart.
      val source = new KinesisProducerSource(s"$SourceName.${p.id}", p.metrics)
      KinesisProducerSource.register(env, source)
      () => KinesisProducerSource.remove(env, source)
    case None => () => ()
  }
}
