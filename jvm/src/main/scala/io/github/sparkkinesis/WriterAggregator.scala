package io.github.sparkkinesis

import java.nio.ByteBuffer
import java.util.concurrent.{
  ConcurrentHashMap,
  DelayQueue,
  Delayed,
  ExecutionException,
  Executors,
  ThreadFactory,
  TimeUnit
}
import java.util.concurrent.atomic.AtomicBoolean

import scala.collection.mutable.ArrayBuffer

import io.github.sparkkinesis.shaded.guava.util.concurrent.{Futures, ListenableFuture, MoreExecutors}
import io.github.sparkkinesis.shaded.protobuf.{CodedOutputStream, UnsafeByteOperations}
import org.slf4j.LoggerFactory
import io.github.sparkkinesis.shaded.kpl.{DaemonException, UserRecordFailedException, UserRecordResult}
import io.github.sparkkinesis.shaded.kpl.protobuf.Messages

/** A user record from `write` until its confirmation, while the writer aggregates it: what completing it needs, and
  * where it sits in its aggregate (its indices into the aggregate's key tables).
  */
private[sparkkinesis] final class Pending(
    val record: KinesisRecord,
    val state: WriterState,
    val bytes: Int,
    val startNanos: Long,
    val key: HashKey,
    val keyBytes: Int
) {
  private[sparkkinesis] var keyIndex = 0
  private[sparkkinesis] var hashKeyIndex = -1
}

/** The user's aggregation settings, applied by the writer (the daemon then gets one record per aggregate), how often a
  * stream's layout is read again (`DescribeStreamSummaryIntervalMs`, as the KPL re-reads the strategy), and the share
  * of a shard's quota the writer sends it (`RateLimit`, percent).
  */
private[sparkkinesis] final case class AggregationSettings(
    maxSize: Long,
    maxCount: Long,
    lingerMs: Long,
    recheckMs: Long,
    rateLimit: Long,
    failIfThrottled: Boolean = false,
    recordTtlMs: Long = 30000L
) {

  /** A shard's write quota in bytes and in Kinesis records per second, times `RateLimit`. */
  def bytesPerSecond: Double = 1024.0 * 1024.0 * rateLimit / 100.0
  def aggregatesPerSecond: Double = 1000.0 * rateLimit / 100.0

  /** What a shard's bucket holds at most: [[AggregationSettings.BurstSeconds]] of the quota, in bytes and records. */
  def burstBytes: Double = bytesPerSecond * AggregationSettings.BurstSeconds
  def burstAggregates: Double = math.max(1.0, aggregatesPerSecond * AggregationSettings.BurstSeconds)

  /** `AggregationMaxSize`, and at most a quarter second of the shard's bytes, so one throttled aggregate costs its
    * shard no more than that (binds only below `RateLimit=20`).
    */
  def aggregateMaxBytes: Long = math.min(maxSize, math.max(1024L, (bytesPerSecond / 4).toLong))
}

private[sparkkinesis] object AggregationSettings {

  /** Kinesis lets a shard take about a second of its quota at once. Holding half of that keeps Kinesis' bucket half a
    * second ahead of the writer's, so sends that reach it bunched (one delayed on the way, the next not) still find
    * room; with a full second on both sides, such a pair was throttled now and then.
    */
  val BurstSeconds = 0.5

  /** From the user's settings as the KPL reads them ([[ProducerConfig.kpc]]: its defaults where none). */
  def of(c: io.github.sparkkinesis.shaded.kpl.KinesisProducerConfiguration): AggregationSettings =
    AggregationSettings(
      c.getAggregationMaxSize,
      c.getAggregationMaxCount,
      c.getRecordMaxBufferedTime,
      c.getDescribeStreamSummaryIntervalMs,
      c.getRateLimit,
      c.isFailIfThrottled,
      c.getRecordTtl
    )
}

/** A sealed aggregate: its user records, the buffer (shard) it was built for, and its bytes in the KPL's aggregated
  * format; or, with no buffer, one user record the writer sends alone, as it is.
  */
private[sparkkinesis] final class Aggregate(
    val stream: String,
    val buffer: ShardBuffer,
    val entries: Array[Pending],
    val encoded: Array[Byte]
) {
  def records: Int = entries.length
  def shard: ShardRange = buffer.shard
  def alone: Boolean = buffer == null

  /** When it was first handed to the KPL: throttles are re-sent until `RecordTtl` after that. */
  @volatile var firstSentNanos = 0L

  /** What Kinesis counts against the shard's quota: the data and the partition key. */
  def quotaBytes: Int = encoded.length + entries(0).keyBytes

  /** The Kinesis record the KPL gets: the aggregate under its first record's keys, or the record alone. */
  def toRecord: KinesisRecord = {
    val first = entries(0).record
    if (alone) first.copy(data = first.data.duplicate())
    else KinesisRecord(stream, first.partitionKey, entries(0).key.toString, ByteBuffer.wrap(encoded))
  }
}

private[sparkkinesis] object Aggregate {

  /** The KPL's aggregated-record magic (kpl-notes §6): the format's own constant, ahead of the protobuf and its MD5. */
  val Magic: Array[Byte] = Array(0xf3, 0x89, 0x9a, 0xc2).map(_.toByte)
  val FrameBytes: Int = Magic.length + 16

  /** Serializes `entries` with the KPL's own protobuf classes: magic, `AggregatedRecord`, MD5 of the protobuf. */
  def encode(entries: Array[Pending], keys: Seq[String], hashKeys: Seq[String]): Array[Byte] = {
    val b = Messages.AggregatedRecord.newBuilder()
    keys.foreach(b.addPartitionKeyTable)
    hashKeys.foreach(b.addExplicitHashKeyTable)
    entries.foreach { e =>
      val d = e.record.data
      val data =
        if (d.hasArray) UnsafeByteOperations.unsafeWrap(d.array(), d.arrayOffset() + d.position(), d.remaining())
        else UnsafeByteOperations.unsafeWrap(d.duplicate())
      val r = Messages.Record.newBuilder().setPartitionKeyIndex(e.keyIndex.toLong).setData(data)
      if (e.hashKeyIndex >= 0) r.setExplicitHashKeyIndex(e.hashKeyIndex.toLong)
      b.addRecords(r)
    }
    val message = b.build()
    val n = message.getSerializedSize
    val out = new Array[Byte](FrameBytes + n)
    System.arraycopy(Magic, 0, out, 0, Magic.length)
    val coded = CodedOutputStream.newInstance(out, Magic.length, n)
    message.writeTo(coded)
    coded.checkNoSpaceLeft()
    val digest = HashKey.md5
    digest.update(out, Magic.length, n)
    digest.digest(out, Magic.length + n, 16)
    out
  }

  private def varint(v: Long): Int = CodedOutputStream.computeUInt64SizeNoTag(v)

  /** The bytes a string of `n` UTF-8 bytes adds to a key table. */
  def tableEntryBytes(n: Int): Int = 1 + varint(n.toLong) + n

  /** The bytes one record adds, given its key indices (`hashKeyIndex` -1: none) and data size. */
  def recordBytes(keyIndex: Int, hashKeyIndex: Int, dataBytes: Int): Int = {
    val inner = 1 + varint(keyIndex.toLong) + (if (hashKeyIndex >= 0) 1 + varint(hashKeyIndex.toLong) else 0) +
      1 + varint(dataBytes.toLong) + dataBytes
    1 + varint(inner.toLong) + inner
  }
}

/** The records waiting for one shard of one stream, sealed into an aggregate by size, count or linger. */
private[sparkkinesis] final class ShardBuffer(
    val stream: String,
    val shard: ShardRange,
    settings: AggregationSettings
) {
  private var entries = new ArrayBuffer[Pending]()
  private var keys = new java.util.LinkedHashMap[String, Integer]()
  private var hashKeys = new java.util.LinkedHashMap[String, Integer]()
  private var size = Aggregate.FrameBytes.toLong
  private var states = new ArrayBuffer[WriterState](4)
  private var firstKeyBytes = 0

  /** Bumped by every seal, so a linger ticket for an aggregate sealed meanwhile does nothing. */
  @volatile private[sparkkinesis] var generation = 0L

  /** Sealed aggregates waiting for the shard's quota, oldest first; a pace ticket is due while it is not empty. */
  private[sparkkinesis] val waiting = new java.util.ArrayDeque[Aggregate]()

  /** The linger ended while aggregates waited for the shard's quota: the buffer is sealed when they have gone, so a
    * shard held back by its quota gets fewer, fuller aggregates rather than a queue of small ones.
    */
  private[sparkkinesis] var lingered = false
  private var quotaBytes = settings.burstBytes
  private var quotaRecords = settings.burstAggregates
  private var quotaStamp = System.nanoTime()

  /** Takes `a`'s share of the shard's quota (a token bucket refilled at `RateLimit`, holding half a second of it:
    * [[AggregationSettings.BurstSeconds]]): 0 when taken, else the nanoseconds until it can be. An aggregate bigger
    * than the bucket (a low `RateLimit`) goes once the bucket is full and leaves it in debt. Called under this buffer's
    * lock.
    */
  def takeQuota(a: Aggregate): Long = {
    val now = System.nanoTime()
    val elapsed = (now - quotaStamp) / 1e9
    quotaStamp = now
    val (byteRate, recordRate) = (settings.bytesPerSecond, settings.aggregatesPerSecond)
    quotaBytes = math.min(settings.burstBytes, quotaBytes + elapsed * byteRate)
    quotaRecords = math.min(settings.burstAggregates, quotaRecords + elapsed * recordRate)
    val bytes = a.quotaBytes.toDouble
    val needBytes = math.min(bytes, settings.burstBytes)
    if (quotaBytes >= needBytes && quotaRecords >= 1.0) {
      quotaBytes -= bytes
      quotaRecords -= 1.0
      0L
    } else {
      val s = math.max((needBytes - quotaBytes) / byteRate, (1.0 - quotaRecords) / recordRate)
      math.max(1000000L, (s * 1e9).toLong)
    }
  }

  /** Kinesis throttled this shard: what the bucket held was not there (another producer's, or the daemon's own sends of
    * records alone, took it). Called under this buffer's lock.
    */
  def quotaSpent(): Unit = {
    quotaBytes = math.min(quotaBytes, 0.0)
    quotaRecords = math.min(quotaRecords, 0.0)
  }

  /** Whether `p` alone (as the only record of an aggregate) fits `AggregationMaxSize`. */
  def fitsAlone(p: Pending): Boolean = sizeWith(p, fresh = true) + p.keyBytes <= settings.maxSize

  private def sizeWith(p: Pending, fresh: Boolean): Long = {
    val key = p.record.partitionKey
    val hk = p.record.explicitHashKey
    val knownKey = !fresh && keys.containsKey(key)
    val knownHk = hk == null || (!fresh && hashKeys.containsKey(hk))
    val keyIndex = if (knownKey) keys.get(key).intValue else if (fresh) 0 else keys.size
    val hkIndex = if (hk == null) -1 else if (knownHk) hashKeys.get(hk).intValue else if (fresh) 0 else hashKeys.size
    (if (fresh) Aggregate.FrameBytes.toLong else size) +
      (if (knownKey) 0 else Aggregate.tableEntryBytes(p.keyBytes)) +
      (if (knownHk) 0 else Aggregate.tableEntryBytes(hk.length)) +
      Aggregate.recordBytes(keyIndex, hkIndex, p.bytes)
  }

  /** Adds `p` (the caller checked [[fitsAlone]]); returns the aggregates this sealed (the one `p` did not fit in, and
    * `p`'s own when it reached `AggregationMaxCount`) and whether the buffer went from empty to holding `p` (it then
    * needs a linger ticket). Called under this buffer's lock.
    */
  def add(p: Pending, out: ArrayBuffer[Aggregate]): Boolean = {
    if (entries.nonEmpty && sizeWith(p, fresh = false) + firstKeyBytes > settings.aggregateMaxBytes) out += seal()
    val opened = entries.isEmpty
    p.keyIndex = indexIn(keys, p.record.partitionKey, p.keyBytes)
    val hk = p.record.explicitHashKey
    p.hashKeyIndex = if (hk == null) -1 else indexIn(hashKeys, hk, hk.length)
    size += Aggregate.recordBytes(p.keyIndex, p.hashKeyIndex, p.bytes)
    if (opened) firstKeyBytes = p.keyBytes
    entries += p
    if (states.isEmpty || !(states.last eq p.state) && !states.exists(_ eq p.state)) states += p.state
    if (entries.length >= settings.maxCount) out += seal()
    opened
  }

  /** `s`'s index in a key table, adding it (and its bytes to the size) when new. */
  private def indexIn(table: java.util.LinkedHashMap[String, Integer], s: String, bytes: Int): Int = {
    val known = table.get(s)
    if (known != null) known.intValue
    else {
      val i = table.size
      size += Aggregate.tableEntryBytes(bytes)
      table.put(s, i)
      i
    }
  }

  def isEmpty: Boolean = entries.isEmpty

  def holds(s: WriterState): Boolean = states.exists(_ eq s)

  /** Takes the buffered records out as one aggregate, encoded. Called under this buffer's lock. */
  def seal(): Aggregate = {
    import io.github.sparkkinesis.compat.CollectionConverters._
    val taken = entries.toArray
    val a = new Aggregate(
      stream,
      this,
      taken,
      Aggregate.encode(taken, keys.keySet.asScala.toSeq, hashKeys.keySet.asScala.toSeq)
    )
    entries = new ArrayBuffer[Pending](math.max(16, a.entries.length))
    keys = new java.util.LinkedHashMap[String, Integer]()
    hashKeys = new java.util.LinkedHashMap[String, Integer]()
    states = new ArrayBuffer[WriterState](4)
    size = Aggregate.FrameBytes.toLong
    generation += 1
    lingered = false
    a
  }
}

/** A stream as the aggregator knows it: its layout (null until first read, or while it cannot be read) and one buffer
  * per open shard of that layout.
  */
private[sparkkinesis] final class StreamState(val name: String) {
  @volatile var layout: StreamLayout = _
  @volatile var buffers: Array[ShardBuffer] = Array.empty
  @volatile var checkedAtNanos = 0L
  @volatile var retryAtNanos = 0L
  @volatile var backoffMs = WriterAggregator.FirstBackoffMs
  val refreshing = new AtomicBoolean()
}

/** Aggregation in the writer, before the KPL daemon (one per [[SharedProducer]] whose writers aggregate): per stream
  * and open shard, a buffer shared by every task of the JVM writing through that producer. Each record goes to the
  * shard whose hash-key range holds its explicit hash key or its partition key's MD5, from the stream's shard map
  * (`ListShards`). A buffer is sealed into one KPL-format aggregate by `AggregationMaxSize`, `AggregationMaxCount`, a
  * linger of `RecordMaxBufferedTime` from its first record, or a commit of a task with records in it; the aggregate
  * goes to the KPL as one record whose explicit hash key (its first record's) lies in that shard, so the daemon
  * predicts, rate-limits, collects and retries it as it would its own.
  *
  * Placement is verified: an aggregate confirmed in another shard than the one it was built for (a split or merge raced
  * the map) refreshes the map and re-sends its records that lie outside the shard it landed in (a KCL consumer drops
  * those; duplicates are allowed, loss never). Streams whose RecordDistributionStrategy is AUTO get no aggregates, nor
  * do records without a partition key, records too big for an aggregate, and streams whose map cannot be read yet:
  * those go alone, through `sendAlone`.
  *
  * User records keep their room under the [[RecordBound]] until their aggregate is confirmed.
  */
private[sparkkinesis] final class WriterAggregator(
    client: ProducerClient,
    metadata: StreamMetadata,
    settings: AggregationSettings,
    metrics: ProducerMetrics,
    markBroken: () => Unit,
    name: String
) {
  import WriterAggregator._

  private val streams = new ConcurrentHashMap[String, StreamState]()
  private val due = new DelayQueue[Ticket]()
  @volatile private var closed = false

  /** Ends lingers and sends aggregates that waited for their shard's quota. */
  private val lingerThread = Threads.daemon(s"spark-kinesis-linger-$name") {
    while (!closed) {
      try {
        val t = due.poll(1, TimeUnit.SECONDS)
        if (t != null) t.run()
      } catch {
        case _: InterruptedException        => ()
        case scala.util.control.NonFatal(e) => log.warn(s"Sealing or sending a waiting aggregate failed ($name)", e)
      }
    }
  }
  lingerThread.start()

  /** Map reads after the first, and re-sends: off the writers' and the KPL's callback threads. */
  private val background = Executors.newSingleThreadExecutor(new ThreadFactory {
    def newThread(r: Runnable): Thread = {
      val t = new Thread(r, s"spark-kinesis-shard-map-$name"); t.setDaemon(true); t
    }
  })

  /** Takes `p` (a record with a partition key) into an aggregate, or sends it alone (see the class comment). Runs on
    * the writer's thread; the first record of a stream reads its map there.
    */
  def add(p: Pending): Unit = {
    if (p.key == null) return sendAlone(p)
    val s = stream(p.record.stream)
    val layout = s.layout
    if (layout == null) return sendAlone(p)
    // Re-read now and then: the strategy may change either way (AUTO or back), and a reshard shows here too.
    if (System.nanoTime() - s.checkedAtNanos > settings.recheckMs * 1000000L) refreshLater(s)
    if (layout.auto) return sendAlone(p)
    val i = layout.shards.indexOf(p.key)
    val buffers = s.buffers
    if (i < 0 || i >= buffers.length) { refreshLater(s); return sendAlone(p) }
    val buffer = buffers(i)
    if (!buffer.fitsAlone(p)) return sendAlone(p)
    val done = new ArrayBuffer[Aggregate](1)
    buffer.synchronized {
      if (buffer.add(p, done)) {
        val generation = buffer.generation
        due.put(new Ticket(settings.lingerMs * 1000000L, () => lingerEnded(buffer, generation)))
      }
      done.foreach(dispatch(buffer, _))
    }
  }

  /** A buffer's oldest record waited its linger: every buffer of that stream holding records is sealed with it, so the
    * daemon (collecting for at most 1 ms) sends them in one `PutRecords`, as the KPL sends all it holds once its oldest
    * record's deadline passes. Sealed one by one, a wide stream at a low rate per shard costs a request per shard and
    * linger (docs/benchmarks.md, "Aggregation in the writer").
    */
  private def lingerEnded(buffer: ShardBuffer, generation: Long): Unit = if (buffer.generation == generation) {
    sealLingered(buffer, b => b.generation == generation && !b.isEmpty)
    val s = streams.get(buffer.stream)
    if (s != null) s.buffers.foreach(b => sealLingered(b, !_.isEmpty))
  }

  private def sealLingered(b: ShardBuffer, when: ShardBuffer => Boolean): Unit = b.synchronized {
    if (when(b)) { if (b.waiting.isEmpty) dispatch(b, b.seal()) else b.lingered = true }
  }

  /** Seals and sends every buffer holding a record of `state` (its commit waits for them). */
  def flushFor(state: WriterState): Unit =
    streams.values.forEach(s => s.buffers.foreach(b => sealAndSend(b, x => !x.isEmpty && x.holds(state))))

  def close(): Unit = {
    closed = true
    lingerThread.interrupt()
    background.shutdownNow()
    try metadata.close()
    catch { case scala.util.control.NonFatal(e) => log.debug("Closing the shard-map client failed", e) }
  }

  private def sealAndSend(b: ShardBuffer, when: ShardBuffer => Boolean): Unit = b.synchronized {
    if (when(b)) dispatch(b, b.seal())
  }

  /** Sends `a` now if its shard's quota allows and nothing waits before it, else queues it behind them (`RateLimit`
    * holds in the writer: the daemon's own limiter starts with seconds of quota in hand, and what it lets past the
    * quota is throttled and re-sent every millisecond). Called under `b`'s lock.
    */
  private def dispatch(b: ShardBuffer, a: Aggregate): Unit = {
    val wait = if (b.waiting.isEmpty) b.takeQuota(a) else -1L
    if (wait == 0L) send(a)
    else {
      b.waiting.add(a)
      metrics.pacedAggregates.inc()
      if (wait > 0L) due.put(new Ticket(wait, () => paced(b)))
    }
  }

  /** The head of `b`'s waiting aggregates may have its quota now: send what the quota allows, in order. */
  private def paced(b: ShardBuffer): Unit = b.synchronized {
    var wait = 0L
    while (!b.waiting.isEmpty && { wait = b.takeQuota(b.waiting.peek()); wait == 0L }) send(b.waiting.poll())
    if (!b.waiting.isEmpty) due.put(new Ticket(wait, () => paced(b)))
    else if (b.lingered && !b.isEmpty) dispatch(b, b.seal())
  }

  /** Hands `a` to the KPL; called under its buffer's lock, so a shard's aggregates reach the daemon in order. */
  private def send(a: Aggregate): Unit = {
    val first = a.firstSentNanos == 0L
    if (first) a.firstSentNanos = System.nanoTime() // before the put: its answer may come before the next line
    val future =
      try client.put(a.toRecord)
      catch {
        case e: Throwable =>
          if (e.isInstanceOf[DaemonException]) markBroken()
          complete(a.entries, Left(e))
          return
      }
    if (first && !a.alone) {
      metrics.aggregatesSent.inc()
      metrics.recordsPerAggregate.update(a.records)
    }
    future.addListener(new AggregateCallback(future, a, this), MoreExecutors.directExecutor())
  }

  /** Sends `p` alone, as it is (a record without a partition key, too big for an aggregate, or for a stream that gets
    * none); Kinesis throttling it is re-sent by the writer, as an aggregate's is.
    */
  private def sendAlone(p: Pending): Unit = send(new Aggregate(p.record.stream, null, Array(p), null))

  /** The KPL's answer for `a`: complete its records, re-send those a KCL consumer would drop, or send `a` again when
    * Kinesis throttled it.
    */
  private[sparkkinesis] def completed(a: Aggregate, result: Either[Throwable, UserRecordResult]): Unit = result match {
    case Right(r) if !a.alone && r.getShardId != null && r.getShardId != a.shard.id =>
      metrics.misplacedAggregates.inc()
      background.execute(() => misplaced(a, r))
    case Left(e) if throttled(e) && !settings.failIfThrottled && !expired(a) => throttledAgain(a)
    case other                                                               => complete(a.entries, other)
  }

  private def expired(a: Aggregate): Boolean = System.nanoTime() - a.firstSentNanos > settings.recordTtlMs * 1000000L

  /** Kinesis throttled `a`. The daemon runs with `FailIfThrottled` (it would re-send it every millisecond, its buffer
    * time): an aggregate waits again, first in line, until its shard's quota holds it; a record alone waits half a
    * linger, as the KPL re-sends after half its `RecordMaxBufferedTime`.
    */
  private def throttledAgain(a: Aggregate): Unit = {
    metrics.retries.inc(a.records.toLong)
    if (a.alone) due.put(new Ticket(math.max(1L, settings.lingerMs / 2) * 1000000L, () => send(a)))
    else {
      val b = a.buffer
      b.synchronized {
        b.quotaSpent()
        val idle = b.waiting.isEmpty
        b.waiting.addFirst(a)
        if (idle) due.put(new Ticket(0L, () => paced(b)))
      }
    }
  }

  /** `a` landed in `r.getShardId`: read the map again; its records whose hash key that shard holds are delivered, the
    * others are routed again (counted as re-sent).
    */
  private def misplaced(a: Aggregate, r: UserRecordResult): Unit = {
    val s = stream(a.stream)
    read(s)
    val layout = s.layout
    val (kept, again) =
      if (layout == null) (Array.empty[Pending], a.entries)
      else a.entries.partition(e => layout.shards.contains(r.getShardId, e.key))
    if (kept.nonEmpty) complete(kept, Right(r))
    if (again.nonEmpty) {
      metrics.resentRecords.inc(again.length.toLong)
      log.info(
        s"An aggregate of ${a.records} records for shard ${a.shard.id} of stream ${a.stream} landed in " +
          s"${r.getShardId} (the stream was resharded): ${again.length} of its records are sent again."
      )
      again.foreach { p =>
        try add(p)
        catch { case scala.util.control.NonFatal(e) => complete(Array(p), Left(e)) }
      }
    }
  }

  private def stream(name: String): StreamState = {
    val s = streams.computeIfAbsent(name, n => new StreamState(n))
    if (s.layout == null && System.nanoTime() >= s.retryAtNanos) s.synchronized {
      if (s.layout == null && System.nanoTime() >= s.retryAtNanos) read(s)
    }
    s
  }

  private def refreshLater(s: StreamState): Unit =
    if (s.refreshing.compareAndSet(false, true))
      background.execute { () =>
        try read(s)
        finally s.refreshing.set(false)
      }

  /** Reads `s`'s layout now; on failure keeps the last one (or none: records go alone) and retries after a backoff. */
  private def read(s: StreamState): Unit = s.synchronized {
    val previous = s.buffers
    try {
      val layout = metadata.layout(s.name)
      val old = s.layout
      if (old == null || old.auto != layout.auto || old.shards.shards != layout.shards.shards) {
        s.buffers = layout.shards.shards.map(sh => new ShardBuffer(s.name, sh, settings)).toArray
        s.layout = layout
        // Records already waiting in the old map's buffers go now; their placement is checked as any other's.
        previous.foreach(b => sealAndSend(b, !_.isEmpty))
        log.info(
          s"Stream ${s.name}: ${layout.shards.size} open shards" +
            (if (layout.auto) ", RecordDistributionStrategy AUTO: records go alone, not aggregated" else "")
        )
      }
      s.checkedAtNanos = System.nanoTime()
      s.backoffMs = FirstBackoffMs
    } catch {
      case scala.util.control.NonFatal(e) =>
        s.retryAtNanos = System.nanoTime() + s.backoffMs * 1000000L
        s.checkedAtNanos = System.nanoTime()
        RateLimitedLog.warn(
          log,
          s"shard-map-${s.name}",
          s"Reading the shards of stream ${s.name} failed (${e.getClass.getSimpleName}: ${e.getMessage}); its " +
            s"records go to the KPL one by one until it succeeds (next try in ${s.backoffMs} ms). The writer's " +
            "credentials need kinesis:ListShards and kinesis:DescribeStreamSummary (docs/configuration.md, IAM)."
        )
        s.backoffMs = math.min(MaxBackoffMs, s.backoffMs * 3 / 2)
    }
  }
}

private[sparkkinesis] object WriterAggregator {
  private val log = LoggerFactory.getLogger(classOf[WriterAggregator])

  /** Whether the KPL failed a record because Kinesis throttled its shard (the daemon runs with `FailIfThrottled`). */
  def throttled(e: Throwable): Boolean = e match {
    case u: UserRecordFailedException if u.getResult != null && !u.getResult.getAttempts.isEmpty =>
      val attempts = u.getResult.getAttempts
      attempts.get(attempts.size - 1).getErrorCode == "ProvisionedThroughputExceededException"
    case _ => false
  }
  val FirstBackoffMs = 1000L
  val MaxBackoffMs = 30000L

  /** Completes user records that travelled together, task by task (runs of one task's records are one update). */
  def complete(entries: Array[Pending], result: Either[Throwable, UserRecordResult]): Unit = {
    var i = 0
    while (i < entries.length) {
      val s = entries(i).state
      var n = 0
      var bytes = 0L
      var j = i
      while (j < entries.length && (entries(j).state eq s)) {
        val e = entries(j)
        bytes += e.bytes
        n += 1
        if (result.isRight) s.latency(e.startNanos)
        j += 1
      }
      result match {
        case Right(r) => s.succeeded(r, n, bytes)
        case Left(t)  => s.failed(t, n, bytes)
      }
      i = j
    }
  }

}

/** Work due `delayNanos` from now: a buffer's linger ending, or an aggregate's turn in its shard's quota. */
private[sparkkinesis] final class Ticket(delayNanos: Long, val run: () => Unit) extends Delayed {
  private val at = System.nanoTime() + delayNanos
  def getDelay(unit: TimeUnit): Long = unit.convert(at - System.nanoTime(), TimeUnit.NANOSECONDS)
  def compareTo(o: Delayed): Int =
    java.lang.Long.compare(getDelay(TimeUnit.NANOSECONDS), o.getDelay(TimeUnit.NANOSECONDS))
}

/** Completion of one aggregate, on the KPL's callback thread. */
private[sparkkinesis] final class AggregateCallback(
    future: ListenableFuture[UserRecordResult],
    aggregate: Aggregate,
    aggregator: WriterAggregator
) extends Runnable {
  def run(): Unit = {
    val result =
      try Right(Futures.getDone(future))
      catch {
        case e: ExecutionException => Left(e.getCause)
        case e: Throwable          => Left(e)
      }
    aggregator.completed(aggregate, result)
  }
}
