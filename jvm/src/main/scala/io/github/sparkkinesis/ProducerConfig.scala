package io.github.sparkkinesis

import scala.collection.immutable.SortedMap

import io.github.sparkkinesis.aggregation.AggregationSettings

/** The KPL-facing part of the options: two writers with equal configs share one KPL daemon. */
private[sparkkinesis] final case class ProducerConfig(
    region: Option[String],
    endpoint: Option[Endpoint],
    credentials: Credentials,
    kpl: SortedMap[String, String],
    aggregation: Aggregation, // its default is the option table's (KinesisWriterOptions), the one place it is set
    gatherMs: Long, // the writer's idle gather (gather_ms), its default the option table's too
    ordered: Boolean = false // per-key order (ordered): one Kinesis record in flight per shard
) {

  /** The final KPL settings as the user sees them: writer defaults, then the user's, then region and endpoint. */
  def kplSettings: Map[String, String] =
    KplSettings.writerDefaults ++ kpl ++ region.map("Region" -> _) ++ endpoint.toSeq.flatMap { e =>
      Seq("KinesisEndpoint" -> e.host, "KinesisPort" -> e.port.toString)
    }

  /** The user's KPL settings as the KPL reads them: its own defaults where none is set. */
  def kpc: io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration =
    KplSettings.applyTo(new io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration(), kplSettings)

  /** How the writer aggregates: the user's KPL settings as the KPL reads them, `gather_ms` and `ordered`; with no
    * `AggregationMaxSize` set, the writer sizes its aggregates to PUT units.
    */
  def aggregationSettings: AggregationSettings =
    AggregationSettings.of(kpc, !kpl.contains("AggregationMaxSize"), gatherMs, ordered)

  /** Whether the writer builds the aggregates (aggregation='writer', unless the user turned aggregation off). */
  def aggregatesInWriter: Boolean =
    aggregation == Aggregation.Writer && kplSettings.get("AggregationEnabled").forall(_.trim.toBoolean)

  /** What the daemon is started with. When the writer aggregates, the daemon gets one record per aggregate and places
    * none itself: its aggregation is off, so it reads no shard map (one `ListShards` per executor and stream) and makes
    * no "Wrong Shard" re-sends (the writer reads the map, checks where each aggregate landed and routes again what a
    * reshard misplaced: [[aggregation.RetryPolicy]]); it waits at most [[Aggregation.DaemonBufferMs]] to collect them
    * into a PutRecords, as the writer's linger already took the user's RecordMaxBufferedTime. It fails what Kinesis
    * throttles back to the writer, which holds each shard to `RateLimit` and re-sends (the daemon would re-send after
    * half its buffer time: at once).
    */
  def daemonSettings: Map[String, String] = {
    val s = kplSettings
    if (!aggregatesInWriter) s
    else
      s ++ Map(
        "AggregationEnabled" -> "false",
        "FailIfThrottled" -> "true",
        "RecordMaxBufferedTime" -> math.min(Aggregation.DaemonBufferMs, kpc.getRecordMaxBufferedTime).toString
      ) ++ (if (s.get(KplSettings.StrategyDefault).contains("USER_PARTITION_KEY"))
              Map("DescribeStreamSummaryIntervalMs" -> Aggregation.DaemonStrategyRereadMs.toString)
            else Map.empty)
  }

  override def toString: String = {
    val shownKpl = kpl.map { case (k, v) =>
      if (KplSettings.byName.get(k).exists(_.secret)) k -> Redact.secret else k -> v
    }
    s"ProducerConfig(region=${region.getOrElse("<default>")}, endpoint=${endpoint.getOrElse("<default>")}, " +
      s"credentials=$credentials, aggregation=${aggregation.name}, gatherMs=$gatherMs, ordered=$ordered, kpl=${shownKpl
          .map { case (k, v) => s"$k=$v" }
          .mkString("{", ", ", "}")})"
  }
}
