package io.github.sparkkinesis.aggregation

/** Reads stream layouts (`ListShards`, `DescribeStreamSummary`); unit tests substitute a fake. */
private[sparkkinesis] trait StreamMetadata {

  /** The stream's layout now; throws when it cannot be read (the caller sends records alone meanwhile). */
  def layout(stream: String): StreamLayout
  def close(): Unit = ()
}

/** A layout read Kinesis refused for the account's or the stream's control-plane rate (`LimitExceededException`): never
  * a write's error; the reader tries again after a jittered backoff, the stream's records going alone meanwhile.
  */
private[sparkkinesis] final class ThrottledRead(message: String, cause: Throwable)
    extends RuntimeException(message, cause)
