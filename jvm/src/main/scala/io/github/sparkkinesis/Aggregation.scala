package io.github.sparkkinesis

/** Who builds the aggregates: the writer, per shard before the daemon (one record per aggregate reaches the daemon), or
  * the KPL daemon from the user records it gets one by one.
  */
private[sparkkinesis] sealed abstract class Aggregation(val name: String) extends Serializable

private[sparkkinesis] object Aggregation {
  case object Writer extends Aggregation("writer")
  case object Kpl extends Aggregation("kpl")
  val all: Seq[Aggregation] = Seq(Writer, Kpl)

  /** The daemon's RecordMaxBufferedTime when the writer aggregates (at most the user's). */
  val DaemonBufferMs = 1L

  /** How often a daemon told its stream places by key re-reads the stream's strategy, when the writer aggregates: once
    * a day, not every `DescribeStreamSummaryIntervalMs`. Such a daemon places nothing itself (its aggregation is off),
    * so what the strategy says changes nothing it sends (an AUTO stream ignores the keys it passes on); the driver
    * re-reads each stream for every executor ([[DriverLayouts]]). Every daemon asking each interval would be one call
    * per executor and stream against the account's 20 a second (docs/configuration.md, "Large fleets").
    */
  val DaemonStrategyRereadMs: Long = 24L * 60 * 60 * 1000
}
