package io.github.sparkkinesis

import java.util.concurrent.{Executors, ScheduledExecutorService, ThreadFactory, TimeUnit}
import java.util.concurrent.atomic.AtomicInteger

import scala.collection.mutable

import com.codahale.metrics.{Counter, Gauge, MetricRegistry}
import org.slf4j.LoggerFactory

/** One KPL per distinct [[ProducerConfig]], shared by the tasks of an executor JVM. */
final class SharedProducer private[sparkkinesis] (
    val id: Int,
    val config: ProducerConfig,
    val client: ProducerClient,
    val idleTimeoutMs: Long
) {
  /** Woken by every KPL callback of this producer; writers blocked on the queue limit wait on it. */
  val latch = new TimeoutLatch
  val metrics = new MetricRegistry
  val backpressureCycles: Counter = metrics.counter(SharedProducer.BackpressureCycles)
  metrics.register(SharedProducer.OutstandingRecordsCount, new Gauge[Long] { def getValue: Long = client.outstandingRecords })

  @volatile private[sparkkinesis] var broken = false
  private[sparkkinesis] var refs = 0
  private[sparkkinesis] var idleSinceMs = 0L
  private[sparkkinesis] var unregister: () => Unit = () => ()

  def outstanding: Long = client.outstandingRecords

  /** The daemon died under us: stop handing this producer out; close it when its last user leaves. */
  def markBroken(): Unit = broken = true

  override def toString: String = s"SharedProducer#$id($config)"
}

object SharedProducer {
  val BackpressureCycles = "backpressureCycles"
  val OutstandingRecordsCount = "outstandingRecordsCount"
}

/** Reference-counted producers keyed by config, closed after an idle timeout and at JVM exit.
  * The clock and factory are injected so eviction is unit-testable without a daemon.
  */
final class ProducerPool(
    factory: ProducerConfig => ProducerClient,
    clockMs: () => Long,
    registerMetrics: SharedProducer => () => Unit
) {
  private val log = LoggerFactory.getLogger(classOf[ProducerPool])
  private val producers = mutable.Map.empty[ProducerConfig, SharedProducer]
  private val retired = mutable.Set.empty[SharedProducer]
  private val ids = new AtomicInteger()

  def acquire(config: ProducerConfig, idleTimeoutMs: Long): SharedProducer = synchronized {
    producers.get(config) match {
      case Some(p) if !p.broken =>
        p.refs += 1
        p
      case existing =>
        existing.foreach(retire)
        val p = new SharedProducer(ids.incrementAndGet(), config, factory(config), idleTimeoutMs)
        log.info(s"Started KPL producer #${p.id} for $config")
        p.refs = 1
        p.unregister = registerMetrics(p)
        producers(config) = p
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

  def closeAll(): Unit = synchronized {
    (producers.values ++ retired).toSeq.foreach(close)
  }

  /** Producers currently alive (test and metrics hook). */
  def live: Seq[SharedProducer] = synchronized(producers.values.toSeq ++ retired.toSeq)

  private def retire(p: SharedProducer): Unit = {
    producers.remove(p.config)
    if (p.refs <= 0) close(p) else retired += p
  }

  private def close(p: SharedProducer): Unit = {
    producers.get(p.config).filter(_ eq p).foreach(_ => producers.remove(p.config))
    retired -= p
    log.info(s"Closing KPL producer #${p.id} (${if (p.broken) "broken" else "idle"})")
    try p.unregister()
    finally
      try p.client.destroy()
      catch { case scala.util.control.NonFatal(e) => log.warn(s"Destroying KPL producer #${p.id} failed", e) }
  }
}

object ProducerPool {
  private val log = LoggerFactory.getLogger(classOf[ProducerPool])

  /** The executor JVM's pool: real KPL daemons, Spark metrics sources, a reaper and a shutdown hook. */
  lazy val default: ProducerPool = {
    val pool = new ProducerPool(new KplProducerClient(_), () => System.currentTimeMillis(), SparkMetrics.register)
    val reaper: ScheduledExecutorService = Executors.newSingleThreadScheduledExecutor(new ThreadFactory {
      def newThread(r: Runnable): Thread = {
        val t = new Thread(r, "spark-kinesis-producer-reaper")
        t.setDaemon(true)
        t
      }
    })
    reaper.scheduleWithFixedDelay(
      () =>
        try pool.evictIdle()
        catch { case scala.util.control.NonFatal(e) => log.warn("Evicting idle KPL producers failed", e) },
      1,
      1,
      TimeUnit.SECONDS
    )
    Runtime.getRuntime.addShutdownHook(new Thread(() => pool.closeAll(), "spark-kinesis-producer-shutdown"))
    pool
  }
}
