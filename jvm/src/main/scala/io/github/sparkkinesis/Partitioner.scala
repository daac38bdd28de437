package io.github.sparkkinesis

/** How records without a `partitionKey` column get one. */
private[sparkkinesis] sealed abstract class Partitioner(val name: String) extends Serializable
private[sparkkinesis] object Partitioner {

  /** A fresh random key per record: spreads load evenly over all shards. */
  case object Random extends Partitioner("random")

  /** One key per Spark partition: records of a partition land on one shard, in order. */
  case object Fixed extends Partitioner("fixed")

  /** No key needed (streams with `RecordDistributionStrategy=AUTO`, where Kinesis places each record itself): a row
    * without a `partitionKey` column, or with a null in it, goes without one.
    */
  case object NoKey extends Partitioner("none")
  val all: Seq[Partitioner] = Seq(Random, Fixed, NoKey)

  /** Whether `p` makes each record's key (`random`, `fixed`), so a `partitionKey` column is not read. */
  def generatesKeys(p: Option[Partitioner]): Boolean = p.exists(_ != NoKey)
}
