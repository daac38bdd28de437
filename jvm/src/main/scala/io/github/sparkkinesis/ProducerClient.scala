package io.github.sparkkinesis

import io.github.sparkkinesis.shaded.guava.util.concurrent.ListenableFuture
import io.github.sparkkinesis.shaded.kpl.{KinesisProducer, UserRecordResult}

import io.github.sparkkinesis.aggregation.StreamMetadata
import io.github.sparkkinesis.compat.CollectionConverters._

/** The slice of `KinesisProducer` the writer uses; unit tests substitute a controllable fake. */
private[sparkkinesis] trait ProducerClient {
  def put(record: KinesisRecord): ListenableFuture[UserRecordResult]
  def outstandingRecords: Long
  def flush(): Unit
  def destroy(): Unit

  /** The KPL daemon's own statistics, by our metric names (a blocking call: never on the hot path). */
  def daemonMetrics(): Map[String, Double] = Map.empty

  /** (stream, error code) of the permanent errors ([[PermanentErrors]]) the daemon met in its last seconds (a blocking
    * call: never on the hot path).
    */
  def permanentErrors(): Seq[(String, String)] = Nil

  /** Fails every record of `stream` put and not yet answered with `error` at once ([[StreamRefusals]]); their answers,
    * when the daemon gives up on them, are ignored.
    */
  def failInFlight(stream: String, error: Throwable): Unit = ()

  /** Reads stream layouts with this producer's endpoint, region and credentials (for aggregation in the writer), each
    * call counted in `calls`.
    */
  def streamMetadata(calls: ControlPlaneCalls): StreamMetadata
}

/** The real KPL: one native daemon. */
private[sparkkinesis] final class KplProducerClient(config: ProducerConfig) extends ProducerClient {
  private val credentials = KplProducerClient.credentials(config)
  private val kpl: KinesisProducer = KplProducerClient.start(config, credentials)

  def put(r: KinesisRecord): ListenableFuture[UserRecordResult] =
    kpl.addUserRecord(r.stream, r.partitionKey, r.explicitHashKey, r.data)
  def outstandingRecords: Long = kpl.getOutstandingRecordsCount.toLong
  def flush(): Unit = kpl.flush()
  def destroy(): Unit = kpl.destroy()
  def streamMetadata(calls: ControlPlaneCalls): StreamMetadata =
    new SdkStreamMetadata(config, credentials, calls = calls)

  override def permanentErrors(): Seq[(String, String)] =
    kpl
      .getMetrics("ErrorsByCode", 2)
      .asScala
      .toSeq
      .flatMap { m =>
        val d = m.getDimensions.asScala
        for {
          code <- d.get("ErrorCode") if m.getSum > 0 && PermanentErrors.isPermanent(code)
          stream <- d.get("StreamName")
        } yield stream -> code
      }
      .distinct

  override def daemonMetrics(): Map[String, Double] = {
    val all = kpl.getMetrics(60).asScala.toSeq
    ProducerMetrics.DaemonMetrics.flatMap { case (ours, (kplName, stat)) =>
      // The entry with the fewest dimensions is the producer-wide aggregate.
      all.filter(_.getName == kplName).sortBy(_.getDimensions.size).headOption.map { m =>
        ours -> (if (stat == "sum") m.getSum else m.getMean)
      }
    }.toMap
  }
}

private[sparkkinesis] object KplProducerClient {

  /** `config`'s credentials, reporting the first resolution (or its failure) to `start`. */
  def credentials(config: ProducerConfig): ReportingCredentials =
    new ReportingCredentials(config.credentials.provider(config.region), config.credentials)

  /** A KPL producer with `config`'s daemon settings, started: returns once its first credentials are resolved (also the
    * metrics credentials: the KPL falls back to them). The writer's client and the benchmarks' bare KPL loop both start
    * theirs here, so both run identical settings. A daemon that cannot run fails here within seconds, saying why
    * ([[DaemonCheck]]), not after the connect timeout.
    */
  def start(config: ProducerConfig, credentials: ReportingCredentials): KinesisProducer = {
    DaemonCheck.environment(config)
    val c =
      KplSettings.applyTo(new io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration(), config.daemonSettings)
    c.setCredentialsProvider(credentials)
    val producer = new KinesisProducer(c)
    try {
      DaemonCheck.executableOf(producer).foreach(DaemonCheck.probe(_, DaemonCheck.tempDirectoryOf(config)._1))
      credentials.awaitFirst(CredentialsTimeoutMs)
    } catch { case e: Throwable => producer.destroy(); throw e }
    producer
  }

  /** Bounds the start: the daemon connects, then its first credentials (an STS call, at most) are resolved. */
  val CredentialsTimeoutMs = 30000L
}
