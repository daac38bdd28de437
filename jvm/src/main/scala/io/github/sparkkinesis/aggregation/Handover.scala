package io.github.sparkkinesis.aggregation

import java.util.concurrent.atomic.AtomicBoolean

/** With `ordered`, a reshard's handover from a stream's old buffers (its previous map's) to its new ones: the new ones
  * are made gated ([[SealRule.holdsForAnswer]]) and are released once every old one has drained
  * ([[ShardBuffer.drained]]: each aggregate answered, the re-sends of one that landed in a shard not holding all its
  * records confirmed). A key's records reach its old shard, in order, before any later one reaches its new shard; a
  * reader that reads a parent before its children (the KCL does) meets them in order.
  *
  * [[check]] takes each buffer's lock in turn, never two at once: it runs off any buffer's lock (a scheduler ticket).
  */
private[aggregation] final class Handover(
    old: Array[ShardBuffer],
    next: Array[ShardBuffer],
    release: ShardBuffer => Unit
) {
  private val done = new AtomicBoolean

  /** Releases the new buffers if every old one has drained (once). */
  def check(): Unit =
    if (!done.get && old.forall(b => b.synchronized(b.drained)) && done.compareAndSet(false, true))
      next.foreach(release)
}
