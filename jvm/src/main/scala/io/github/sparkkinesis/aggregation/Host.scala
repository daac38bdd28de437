package io.github.sparkkinesis.aggregation

import java.nio.ByteBuffer

import io.github.sparkkinesis.shaded.guava.util.concurrent.ListenableFuture
import io.github.sparkkinesis.shaded.kpl.UserRecordResult
import org.slf4j.Logger

// What the aggregation needs from the writer that hosts it. The writer adapts its own types to these; the aggregation
// knows nothing of the writer, so it can be read, tested and changed on its own.

/** What Kinesis records go out through: the producer (one call per aggregate, or per record sent alone). */
private[sparkkinesis] trait Sender {

  /** Hands one Kinesis record to the producer; the future completes with the KPL's answer. */
  def put(
      stream: String,
      partitionKey: String,
      explicitHashKey: String,
      data: ByteBuffer
  ): ListenableFuture[UserRecordResult]
}

/** The task a user record belongs to: told how its records ended, several at once (a run of one task's records in one
  * Kinesis record). Compared by identity: a commit seals the buffers holding its task's records.
  */
private[sparkkinesis] trait RecordOwner {
  def succeeded(result: UserRecordResult, n: Int, bytes: Long): Unit
  def failed(t: Throwable, n: Int, bytes: Long): Unit

  /** A confirmed record's latency from `startNanos` (0: not sampled), on the owner's clock. */
  def latency(startNanos: Long): Unit

  /** Kinesis confirmed the user records `entries(from until until)`, a run of this owner's (one call per run, before
    * its `succeeded`).
    */
  def confirmed(entries: Array[Pending], from: Int, until: Int): Unit = ()
}

/** What the aggregation counts. */
private[sparkkinesis] trait AggregationMetrics {

  /** An aggregate of `records` user records went to the producer (the first time). */
  def aggregateSent(records: Int): Unit

  /** An aggregate waited for its shard's quota. */
  def aggregatePaced(): Unit

  /** An aggregate was confirmed in another shard than the one it was built for. */
  def aggregateMisplaced(): Unit

  /** `n` user records were routed again after their aggregate landed in another shard. */
  def recordsResent(n: Int): Unit

  /** `n` user records were sent again after Kinesis throttled them. */
  def recordsRetried(n: Int): Unit

  /** Kinesis throttled a shard and this producer's share of its quota went down ([[RateShare]]). */
  def shareLowered(): Unit
}

/** Warnings that may repeat (a layout that cannot be read): logged at most once per interval per key. */
private[sparkkinesis] trait Warnings {
  def warn(log: Logger, key: String, message: String): Unit
}

/** Makes the aggregation's threads (named: `body` runs on it once started); the writer's own daemon threads. */
private[sparkkinesis] trait NewThread {
  def apply(name: String, body: Runnable): Thread
}
