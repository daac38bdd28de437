package io.github.sparkkinesis.aggregation

import java.util.concurrent.TimeUnit

import scala.util.control.NonFatal

import org.slf4j.LoggerFactory

/** Work due later, on `clock`: a buffer's linger ending, an aggregate's turn in its shard's quota, a throttled record's
  * re-send. [[runDue]] runs what is due, earliest first (in the order it was asked for when due at once); the linger
  * thread ([[Scheduler.onThread]]) runs it as it falls due, and unit tests call it after moving their clock.
  */
private[sparkkinesis] class Scheduler(val clock: Clock, name: String) {
  import Scheduler._

  private val tickets = new java.util.PriorityQueue[Ticket]()
  private var seq = 0L
  @volatile protected var closed = false

  /** Runs `work` `delayNanos` from now. */
  def after(delayNanos: Long)(work: () => Unit): Unit = synchronized {
    seq += 1
    tickets.add(new Ticket(clock.nanoTime() + delayNanos, seq, work))
    notifyAll()
  }

  /** Runs the work due now, then what fell due meanwhile; a failure is logged and the rest runs. */
  def runDue(): Unit = {
    var t = nextDue()
    while (t != null) {
      try t.work()
      catch { case NonFatal(e) => log.warn(s"Sealing or sending a waiting aggregate failed ($name)", e) }
      t = nextDue()
    }
  }

  private def nextDue(): Ticket = synchronized {
    val t = tickets.peek()
    if (t != null && t.at - clock.nanoTime() <= 0) tickets.poll() else null
  }

  /** Waits (at most a second, so a close is seen) until the earliest work is due or new work comes. */
  protected def awaitWork(): Unit = synchronized {
    val t = tickets.peek()
    val wait = if (t == null) MaxWaitNanos else math.min(t.at - clock.nanoTime(), MaxWaitNanos)
    if (wait > 0 && !closed) TimeUnit.NANOSECONDS.timedWait(this, wait)
  }

  def close(): Unit = synchronized {
    closed = true
    notifyAll()
  }
}

private[sparkkinesis] object Scheduler {
  private val log = LoggerFactory.getLogger(classOf[Scheduler])
  private val MaxWaitNanos = TimeUnit.SECONDS.toNanos(1)

  private final class Ticket(val at: Long, val seq: Long, val work: () => Unit) extends Comparable[Ticket] {
    def compareTo(o: Ticket): Int = {
      val c = java.lang.Long.compare(at - o.at, 0L) // nanoTime values compare by difference
      if (c != 0) c else java.lang.Long.compare(seq, o.seq)
    }
  }

  /** A scheduler run by its own thread, the linger thread of producer `name`. */
  def onThread(clock: Clock, newThread: NewThread, name: String): Scheduler = {
    val s = new Scheduler(clock, name) {
      private val thread = newThread(
        s"spark-kinesis-linger-$name",
        () =>
          while (!closed) {
            try { runDue(); awaitWork() }
            catch { case _: InterruptedException => () }
          }
      )
      thread.start()
      override def close(): Unit = { super.close(); thread.interrupt() }
    }
    s
  }
}
