package io.github.sparkkinesis

/** Skip on replay (docs/reliability.md): where fingerprints go and how often a running task writes them. */
private[sparkkinesis] final case class DedupeOptions(location: String, flushIntervalMs: Long)

private[sparkkinesis] object DedupeOptions {
  import KinesisWriterOptions.DedupeLocation

  /** Whether a record's partition key comes from its row, and so is part of its content (a generated one is not). */
  def keyed(options: KinesisWriterOptions): Boolean = !Partitioner.generatesKeys(options.partitioner)

  /** A directory every executor reaches the same way: a URI with a scheme (a bare path would mean the driver's and each
    * executor's own disk).
    */
  def location(value: String): String = {
    val uri =
      try new java.net.URI(value)
      catch { case _: java.net.URISyntaxException => throw Parse.bad(DedupeLocation.name, value, Expected) }
    if (uri.getScheme == null || uri.getScheme.length < 2) throw Parse.bad(DedupeLocation.name, value, Expected)
    value
  }

  private val Expected =
    "a directory URI with a scheme that every executor reaches: s3a://bucket/prefix, hdfs://namenode/dir, " +
      "file:///shared/dir"
}
