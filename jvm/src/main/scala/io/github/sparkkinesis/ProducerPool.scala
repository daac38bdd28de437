package io.github.sparkkinesis

import java.util.concurrent.{Executors, ScheduledExecutorService, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable

import org.slf4j.LoggerFactory

import io.github.sparkkinesis.aggregation.Scheduler

/** Reference-counted producers keyed by (stream label, config), closed after an idle timeout and at JVM exit. One
  * daemon per stream keeps each stream's queue bound and metrics its own. The clock and factory are injected so
  * eviction is unit-testable without a daemon.
  */
private[sparkkinesis] final class ProducerPool(
    factory: ProducerConfig => ProducerClient,
    clockMs: () => Long,
    registerMetrics: SharedProducer => () => Unit,
    newScheduler: String => Scheduler = WriterAggregation.scheduler
) {
  private val log = LoggerFactory.getLogger(classOf[ProducerPool])
  private val producers = mutable.Map.empty[ProducerPool.Key, SharedProducer]
  private val retired = mutable.Set.empty[SharedProducer]
  private val ids = new AtomicInteger()

  def acquire(
      config: ProducerConfig,
      label: String,
      idleTimeoutMs: Long,
      queueLimit: Int,
      maxOutstandingBytes: Long
  ): SharedProducer = synchronized {
    val key = ProducerPool.Key(label, config, queueLimit, maxOutstandingBytes)
    producers.get(key) match {
      case Some(p) if !p.broken =>
        p.refs += 1
        p
      case existing =>
        existing.foreach(retire)
        val p = new SharedProducer(
          ids.incrementAndGet(),
          key,
          factory(config),
          idleTimeoutMs,
          sourceNameFor(label),
          newScheduler,
          clockMs
        )
        log.info(s"Started KPL producer #${p.id} (metrics source ${p.sourceName}) for $config")
        p.refs = 1
        p.unregister = registerMetrics(p)
        producers(key) = p
        p
    }
  }

  def release(p: SharedProducer): Unit = synchronized {
    p.refs -= 1
    if (p.refs <= 0) {
      p.idleSinceMs = clockMs()
      if (p.broken || retired.contains(p)) close(p)
    }
  }

  /** Closes producers nobody has used for their idle timeout. */
  def evictIdle(): Unit = synchronized {
    val now = clockMs()
    producers.values.filter(p => p.refs <= 0 && now - p.idleSinceMs >= p.idleTimeoutMs).toSeq.foreach(close)
  }

  /** Asks each producer with records in flight for the permanent errors its daemon met ([[PermanentErrors]]). */
  def watchPermanentErrors(): Unit = live.foreach { p =>
    if (p.outstanding > 0)
      try p.client.permanentErrors().foreach { case (stream, code) => p.refuse(stream, code) }
      catch { case scala.util.control.NonFatal(e) => log.debug(s"Reading the daemon's errors of #${p.id} failed", e) }
  }

  /** Polls each live producer's daemon statistics (blocking calls; run by the reaper thread). */
  def sampleDaemonMetrics(): Unit = live.foreach { p =>
    try p.metrics.updateDaemonMetrics(p.client.daemonMetrics())
    catch { case scala.util.control.NonFatal(e) => log.debug(s"Sampling KPL metrics of producer #${p.id} failed", e) }
  }

  /** Closes every producer (the JVM's shutdown hook). A KPL's `destroy` waits a second for its daemon's threads, so the
    * daemons are destroyed side by side: the JVM's exit waits about a second, not a second per producer.
    */
  def closeAll(): Unit = synchronized {
    val all = (producers.values ++ retired).toList
    val destroyers = all.map { p =>
      detach(p)
      try stop(p)
      catch { case scala.util.control.NonFatal(e) => log.warn(s"Stopping KPL producer #${p.id} failed", e) }
      Threads.daemon(s"spark-kinesis-destroy-${p.id}")(destroy(p))
    }
    destroyers.foreach(_.start())
    destroyers.foreach(_.join())
  }

  /** The JVM's exit: records still in flight (a query stopped just before, say) get up to `settleMs` to be confirmed,
    * then every producer is closed, then skip on replay's last fingerprint writes run ([[replay.LedgerFlusher.drain]]):
    * a query started again in a new JVM skips what Kinesis confirmed here. Returns whether nothing was left in flight.
    */
  def closeAtExit(settleMs: Long): Boolean = {
    val deadline = clockMs() + settleMs
    var busy = live.filter(_.bound.records.get > 0)
    while (busy.nonEmpty && clockMs() < deadline) {
      busy.head.bound.latch.await(QueueLimiter.StepMs)
      busy = busy.filter(_.bound.records.get > 0)
    }
    if (busy.nonEmpty)
      log.warn(
        s"The JVM exits with ${busy.map(_.bound.records.get).sum} records still unconfirmed after $settleMs ms: " +
          "a restart sends them again"
      )
    closeAll()
    replay.LedgerFlusher.drain(settleMs)
    busy.isEmpty
  }

  /** Producers currently alive; a strict copy, safe to use outside the lock. */
  def live: Seq[SharedProducer] = synchronized(producers.values.toList ++ retired.toList)

  /** `kinesisProducer.<label>`, suffixed when another live producer (another config) has it. */
  private def sourceNameFor(label: String): String = {
    val base = s"${ProducerMetrics.SourcePrefix}.$label"
    val taken = live.map(_.sourceName).toSet
    Iterator.from(1).map(i => if (i == 1) base else s"$base.$i").find(!taken.contains(_)).get
  }

  private def retire(p: SharedProducer): Unit = {
    producers.remove(p.key)
    if (p.refs <= 0) close(p) else retired += p
  }

  private def close(p: SharedProducer): Unit = {
    detach(p)
    try stop(p)
    finally destroy(p)
  }

  /** Takes `p` out of the pool: nobody gets it from now on. */
  private def detach(p: SharedProducer): Unit = {
    producers.get(p.key).filter(_ eq p).foreach(_ => producers.remove(p.key))
    retired -= p
  }

  /** Unregisters `p`'s metrics and closes its parts (the sender, the aggregation), under the pool's lock. */
  private def stop(p: SharedProducer): Unit = {
    log.info(s"Closing KPL producer #${p.id} (${if (p.broken) "broken" else "idle"})")
    p.unregister()
    p.closeParts()
  }

  /** Destroys `p`'s KPL; touches nothing of the pool, so several can run side by side. */
  private def destroy(p: SharedProducer): Unit =
    try p.client.destroy()
    catch { case scala.util.control.NonFatal(e) => log.warn(s"Destroying KPL producer #${p.id} failed", e) }
}

private[sparkkinesis] object ProducerPool {

  /** What a producer is shared by: writers with the same stream label, KPL config and bound share a daemon (so each
    * writer's `queue_limit` and `max_outstanding_bytes` hold as set).
    */
  final case class Key(label: String, config: ProducerConfig, queueLimit: Int, maxOutstandingBytes: Long)

  val DaemonMetricsEverySeconds = 10L

  /** How often the daemons' errors are read: a permanent one fails the tasks within about this, plus a task's step. */
  val PermanentErrorsEveryMs = 500L

  private[sparkkinesis] val log = LoggerFactory.getLogger(classOf[ProducerPool])

  /** The executor JVM's pool: real KPL daemons (each fed by its own sender thread: [[SenderClient]]), Spark metrics
    * sources, a reaper and a shutdown hook.
    */
  lazy val default: ProducerPool = {
    val pool = new ProducerPool(
      c => new SenderClient(new KplProducerClient(c)),
      () => System.currentTimeMillis(),
      SparkMetrics.register
    )
    val reaper: ScheduledExecutorService =
      Executors.newSingleThreadScheduledExecutor(Threads.factory("spark-kinesis-producer-reaper"))
    reaper.scheduleWithFixedDelay(
      () =>
        try pool.evictIdle()
        catch { case scala.util.control.NonFatal(e) => log.warn("Evicting idle KPL producers failed", e) },
      1,
      1,
      TimeUnit.SECONDS
    )
    reaper.scheduleWithFixedDelay(() => pool.sampleDaemonMetrics(), 5, DaemonMetricsEverySeconds, TimeUnit.SECONDS)
    // A thread of its own: a daemon slow to answer its metrics request holds up this watch only, not eviction.
    Executors
      .newSingleThreadScheduledExecutor(Threads.factory("spark-kinesis-error-watch"))
      .scheduleWithFixedDelay(
        () => pool.watchPermanentErrors(),
        PermanentErrorsEveryMs,
        PermanentErrorsEveryMs,
        TimeUnit.MILLISECONDS
      )
    // Through Hadoop's hook manager, ahead of its file systems' own hook: the last fingerprint writes need them open.
    org.apache.hadoop.util.ShutdownHookManager
      .get()
      .addShutdownHook(() => pool.closeAtExit(ExitSettleMs), org.apache.hadoop.fs.FileSystem.SHUTDOWN_HOOK_PRIORITY + 1)
    pool
  }

  /** How long a JVM's exit waits for records still in flight ([[ProducerPool.closeAtExit]]). */
  val ExitSettleMs = 5000L
}
