package io.github.sparkkinesis

import java.util.concurrent.{ConcurrentHashMap, LinkedBlockingQueue}
import java.util.concurrent.atomic.{AtomicInteger, AtomicLong}

import scala.util.control.NonFatal

import io.github.sparkkinesis.shaded.guava.util.concurrent.{Futures, ListenableFuture, MoreExecutors, SettableFuture}
import io.github.sparkkinesis.shaded.kpl.{DaemonException, UserRecordResult}
import org.slf4j.LoggerFactory

import io.github.sparkkinesis.aggregation.StreamMetadata

/** Puts and flushes reach the KPL from one thread the writer owns, never from a task's thread.
  *
  * Spark ends tasks by interrupting their threads (`query.stop()`, a cancelled job, a failed sibling task, a losing
  * speculative copy), and the KPL treats an interrupted caller of `Daemon.add` (every put and flush) as fatal: it tears
  * down the daemon every task and query of this producer shares, failing all their records in flight. So a task thread
  * only queues: `offer` on an unbounded queue never blocks and never reads the interrupt flag (the writer's bound
  * before it limits what can wait here), and the answer comes back through the returned future as before. The sender
  * takes the queue in order, so what one thread queues (a shard's aggregates, under its buffer's lock) reaches the
  * daemon in that order, and a flush follows every put queued before it.
  *
  * It holds each stream's records until they are answered, so a stream Kinesis refused for good fails them at once
  * ([[failInFlight]]): a future here is completed by the KPL's answer or by that failure, whichever comes first.
  */
private[sparkkinesis] final class SenderClient(underlying: ProducerClient) extends ProducerClient {
  import SenderClient._

  private val queue = new LinkedBlockingQueue[Op]()
  private val queuedRecords = new AtomicLong()
  @volatile private var closed = false

  private val sender = Threads.daemon(s"spark-kinesis-sender-${ids.incrementAndGet()}") {
    var running = true
    while (running) {
      try
        queue.take() match {
          case p: Put =>
            queuedRecords.decrementAndGet()
            if (!p.future.isDone) // else failed while queued: its stream was refused
              try {
                val answer = underlying.put(p.record)
                answer.addListener(() => p.answered(answer), MoreExecutors.directExecutor())
              } catch { case e: Throwable => p.future.setException(e) }
          case Flush =>
            try underlying.flush()
            catch { case NonFatal(e) => log.debug("A flush did not reach the KPL (its records fail on their own)", e) }
          case Stop => running = false
        }
      catch { case _: InterruptedException => running = !closed }
    }
  }
  sender.start()

  /** Each stream's records put and not answered yet. */
  private val unanswered = new ConcurrentHashMap[String, java.util.Set[SettableFuture[UserRecordResult]]]()

  def put(record: KinesisRecord): ListenableFuture[UserRecordResult] = {
    val f = SettableFuture.create[UserRecordResult]()
    val mine =
      unanswered.computeIfAbsent(record.stream, _ => ConcurrentHashMap.newKeySet[SettableFuture[UserRecordResult]]())
    mine.add(f)
    f.addListener(() => mine.remove(f), MoreExecutors.directExecutor()) // first: before the caller's own listener
    queuedRecords.incrementAndGet()
    queue.offer(new Put(record, f))
    if (closed) failQueued()
    f
  }

  def flush(): Unit = if (!closed) queue.offer(Flush)

  /** Records queued here count as outstanding, as they would in the KPL's own queue. */
  def outstandingRecords: Long = underlying.outstandingRecords + queuedRecords.get

  /** Stops the sender after what is queued, then the KPL. Nothing queues once the pool closes a producer (no task holds
    * it); a put that races the close anyway fails with a `DaemonException`, as a put to a destroyed KPL would.
    */
  def destroy(): Unit = {
    closed = true
    queue.offer(Stop)
    try sender.join(StopTimeoutMs)
    catch { case _: InterruptedException => Thread.currentThread().interrupt() } // a task closing it: go on closing
    failQueued()
    underlying.destroy()
  }

  override def daemonMetrics(): Map[String, Double] = underlying.daemonMetrics()
  override def permanentErrors(): Seq[(String, String)] = underlying.permanentErrors()

  override def failInFlight(stream: String, error: Throwable): Unit = {
    val mine = unanswered.get(stream)
    if (mine != null) mine.forEach(f => f.setException(error))
  }
  def streamMetadata(calls: ControlPlaneCalls): StreamMetadata = underlying.streamMetadata(calls)

  private def failQueued(): Unit = {
    var op = queue.poll()
    while (op != null) {
      op match {
        case p: Put =>
          queuedRecords.decrementAndGet()
          p.future.setException(new DaemonException("The producer was closed before this record reached the KPL"))
        case _ =>
      }
      op = queue.poll()
    }
  }
}

private[sparkkinesis] object SenderClient {
  private val log = LoggerFactory.getLogger(classOf[SenderClient])
  private val ids = new AtomicInteger()

  /** How long a closing producer waits for the sender to hand over what is queued. */
  val StopTimeoutMs = 10000L

  private sealed trait Op
  private final class Put(val record: KinesisRecord, val future: SettableFuture[UserRecordResult]) extends Op {

    /** The KPL's answer, unless the record was failed first. */
    def answered(answer: ListenableFuture[UserRecordResult]): Unit =
      try future.set(Futures.getDone(answer))
      catch {
        case e: java.util.concurrent.ExecutionException => future.setException(e.getCause)
        case e: Throwable                               => future.setException(e)
      }
  }
  private case object Flush extends Op
  private case object Stop extends Op
}
