package io.github.sparkkinesis

/** A record write failed after the KPL's retries (or the daemon died). The message names the cause and the fix. Public:
  * it is what a failed query's cause chain shows users.
  */
final class KinesisWriteException(message: String, cause: Throwable) extends RuntimeException(message, cause)
