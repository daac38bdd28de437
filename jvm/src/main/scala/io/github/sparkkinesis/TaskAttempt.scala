package io.github.sparkkinesis

/** Which task attempt writes: its Spark partition, epoch (a micro-batch's id, or -1 for a batch job), task attempt id
  * (-1: unknown) and whether Spark retries it (skip on replay then uses the partition's earlier confirmations).
  */
private[sparkkinesis] final case class TaskAttempt(
    partitionId: Long,
    epochId: Long,
    taskId: Long = -1L,
    retried: Boolean = false
)
