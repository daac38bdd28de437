package io.github.sparkkinesis

import java.util.concurrent.ConcurrentHashMap

import org.slf4j.Logger

/** Logs a given key at most once per interval: per-record problems must not flood executor logs. */
private[sparkkinesis] object RateLimitedLog {
  private val last = new ConcurrentHashMap[String, java.lang.Long]()
  val IntervalMs = 30000L

  /** Returns true (and logs) when `key` was not logged within the interval. */
  def warn(log: Logger, key: String, message: => String, nowMs: Long = System.currentTimeMillis()): Boolean = {
    val prev = last.get(key)
    val due = prev == null || nowMs - prev >= IntervalMs
    // The CAS picks one winner when several tasks hit the same problem at once.
    val won = due && (if (prev == null) last.putIfAbsent(key, nowMs) == null else last.replace(key, prev, nowMs))
    if (won) log.warn(message)
    won
  }
}
