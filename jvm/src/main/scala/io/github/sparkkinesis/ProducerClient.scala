package io.github.sparkkinesis

import com.google.common.util.concurrent.ListenableFuture
import software.amazon.kinesis.producer.{KinesisProducer, UserRecordResult}

/** The slice of `KinesisProducer` the writer uses; unit tests substitute a controllable fake. */
trait ProducerClient {
  def put(record: KinesisRecord): ListenableFuture[UserRecordResult]
  def outstandingRecords: Long
  def flush(): Unit
  def destroy(): Unit
}

/** The real KPL: one native daemon. */
final class KplProducerClient(config: ProducerConfig) extends ProducerClient {
  private val kpl: KinesisProducer = {
    val c = KplSettings.applyTo(new software.amazon.kinesis.producer.KinesisProducerConfiguration(), config.kplSettings)
    c.setCredentialsProvider(config.credentials.provider(config.region))
    new KinesisProducer(c)
  }

  def put(r: KinesisRecord): ListenableFuture[UserRecordResult] =
    kpl.addUserRecord(r.stream, r.partitionKey, r.explicitHashKey, r.data)
  def outstandingRecords: Long = kpl.getOutstandingRecordsCount.toLong
  def flush(): Unit = kpl.flush()
  def destroy(): Unit = kpl.destroy()
}
