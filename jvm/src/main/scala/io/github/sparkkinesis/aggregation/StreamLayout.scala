package io.github.sparkkinesis.aggregation

/** What the writer needs to know of a stream: whether Kinesis places its records itself (AUTO: no aggregates there, KCL
  * consumers drop them), its open shards, and the largest record it takes (`MaxRecordSizeInKiB`, data and partition
  * key; 1 MiB unless the stream was raised).
  */
private[sparkkinesis] final case class StreamLayout(
    auto: Boolean,
    shards: ShardMap,
    maxRecordBytes: Long = StreamLayout.DefaultMaxRecordBytes
)

private[sparkkinesis] object StreamLayout {

  /** Kinesis' limit for a stream never raised, and the writer's while a stream's limit cannot be read. */
  val DefaultMaxRecordBytes: Long = 1024L * 1024

  /** The most any stream takes (`MaxRecordSizeInKiB` 10240). */
  val LargestRecordBytes: Long = 10L * 1024 * 1024
}

/** A stream's layout as the driver read it for a write, `ageMs` before the write's factory was made, shipped with it to
  * the executors ([[StreamLayouts.adopt]]): the parts of a [[StreamLayout]], serializable.
  */
private[sparkkinesis] final case class ShippedLayout(
    stream: String,
    auto: Boolean,
    shards: IndexedSeq[ShardRange],
    maxRecordBytes: Long,
    ageMs: Long
) {
  def layout: StreamLayout = StreamLayout(auto, ShardMap(shards), maxRecordBytes)
}

private[sparkkinesis] object ShippedLayout {
  def apply(stream: String, layout: StreamLayout, ageMs: Long): ShippedLayout =
    ShippedLayout(stream, layout.auto, layout.shards.shards, layout.maxRecordBytes, ageMs)
}
