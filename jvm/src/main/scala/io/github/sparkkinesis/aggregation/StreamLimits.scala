package io.github.sparkkinesis.aggregation

import java.util.concurrent.Executors

/** Each stream's largest record for a producer whose writers do not aggregate (aggregation='kpl'): stream layouts of
  * its own, read on a stream's first record and re-read as the aggregator's are ([[StreamLayouts]]; their buffers stay
  * unused). With writer aggregation the aggregator's layouts answer ([[WriterAggregator.maxRecordBytes]]), so a stream
  * is never described twice by one producer.
  */
private[sparkkinesis] final class StreamLimits(
    metadata: StreamMetadata,
    settings: AggregationSettings,
    clock: Clock,
    warnings: Warnings,
    newThread: NewThread,
    name: String
) {
  private val background = Executors.newSingleThreadExecutor(r => newThread(s"spark-kinesis-shard-map-$name", r))
  private val layouts = new StreamLayouts(metadata, settings, clock, background, warnings, _ => ())

  def maxRecordBytes(stream: String, readNow: Boolean): Long = layouts.maxRecordBytes(stream, readNow)

  def adopt(shipped: Seq[ShippedLayout]): Unit = shipped.foreach(layouts.adopt)
  def readOwn(stream: String): Boolean = layouts.readOwn(stream)

  def close(): Unit = {
    background.shutdownNow()
    layouts.close()
  }
}
