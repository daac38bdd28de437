package io.github.sparkkinesis.aggregation

import java.util.concurrent.atomic.AtomicInteger

/** With `ordered`, the records of an aggregate that landed in a shard not holding all of them, sent again alone: each
  * key's records one at a time, in their order (the next goes at the answer of the one before, so the daemon's retries
  * cannot reorder them), different keys side by side. `onDone` runs once every record was answered; until then the
  * aggregate's shard counts it in flight, so nothing later of the shard goes first.
  */
private[aggregation] final class KeyChains(entries: Array[Pending], send: Alone => Unit, onDone: () => Unit) {
  private val chains: Array[Array[Pending]] = {
    val byKey = new java.util.LinkedHashMap[(String, String), scala.collection.mutable.ArrayBuffer[Pending]]()
    entries.foreach { p =>
      byKey.computeIfAbsent((p.partitionKey, p.explicitHashKey), _ => new scala.collection.mutable.ArrayBuffer).+=(p)
    }
    val out = new Array[Array[Pending]](byKey.size)
    var i = 0
    byKey.values.forEach { c => out(i) = c.toArray; i += 1 }
    out
  }
  private val left = new AtomicInteger(entries.length)

  /** Sends the first record of every key. */
  def start(): Unit = chains.foreach(c => next(c, 0))

  private def next(chain: Array[Pending], i: Int): Unit =
    send(
      new Alone(
        chain(i),
        () => { if (i + 1 < chain.length) next(chain, i + 1); if (left.decrementAndGet() == 0) onDone() }
      )
    )
}
