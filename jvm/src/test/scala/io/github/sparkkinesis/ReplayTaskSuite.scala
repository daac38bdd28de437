package io.github.sparkkinesis

import java.nio.charset.StandardCharsets.UTF_8
import java.nio.file.Files

import org.apache.hadoop.conf.Configuration
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.unsafe.types.UTF8String
import org.scalatest.BeforeAndAfterAll
import org.scalatest.funsuite.AnyFunSuite

import io.github.sparkkinesis.compat.CollectionConverters._
import io.github.sparkkinesis.replay.{ForeachReplay, QueryConf, ReplayPlan}

/** Skip on replay through the task core, with fake producers: what a task records when Kinesis confirms (alone or
  * inside the writer's aggregates), what an abort keeps, and what a replay skips.
  */
class ReplayTaskSuite extends AnyFunSuite with BeforeAndAfterAll {
  import TestWriters._

  private val root = Files.createTempDirectory("replay-task")
  private val dir = root.toUri.toString

  override def afterAll(): Unit = TestDirs.deleteTree(root)
  private def plan(batch: Long, replay: Boolean, query: String) =
    ReplayPlan(
      dir,
      query,
      batch,
      replay,
      keyed = true,
      60000L,
      java.util.UUID.randomUUID().toString,
      QueryConf(new Configuration())
    )

  /** foreach's plan of one run of a batch (what [[ForeachReplay.plan]] makes in a task). */
  private def foreachPlan(batch: Long, query: String, run: String = java.util.UUID.randomUUID().toString) =
    plan(batch, replay = false, query).copy(planId = run, perPartition = true)

  private def dataWriter(
      fakes: FakePool,
      p: ReplayPlan,
      partition: Int,
      extra: Map[String, String] = perRecord,
      retried: Boolean = false
  ) = {
    val opts = options(extra)
    val prepared = KinesisWriter.Prepared(opts, RowConverter.forSchema(schema, opts), None)
    val attempt = TaskAttempt(partition.toLong, p.batchId, partition.toLong, retried)
    new KinesisDataWriter(prepared, WritePlan(replay = Some(p)), attempt, fakes.pool)
  }
  private def irow(key: String, data: String): InternalRow =
    InternalRow(UTF8String.fromString(key), UTF8String.fromString(data))
  private def sentData(fakes: FakePool): Seq[String] =
    fakes.last.sent.asScala.toSeq.map { r =>
      val b = new Array[Byte](r.data.remaining()); r.data.duplicate().get(b); new String(b, UTF_8)
    }

  private def eventually(cond: => Boolean): Unit = {
    val deadline = System.nanoTime() + 10000000000L
    while (!cond) { assert(System.nanoTime() < deadline, "timed out"); Thread.`yield`() }
  }

  /** An abort, then the records it left in flight fail (a daemon that died: never confirmed, so a replay sends them),
    * which settles the attempt; its last writes run on the JVM's one flusher thread: a task queued behind them has run
    * once they are done.
    */
  private def abortAndWait(w: KinesisDataWriter, fakes: FakePool): Unit = {
    w.abort()
    fakes.last.daemonDied()
    val done = new java.util.concurrent.CountDownLatch(1)
    io.github.sparkkinesis.replay.LedgerFlusher.submit(() => done.countDown())
    assert(done.await(10, java.util.concurrent.TimeUnit.SECONDS), "the flusher did not run")
  }

  private def commitAsync(w: KinesisDataWriter): Thread = { val t = new Thread(() => w.commit()); t.start(); t }

  test("an aborted attempt keeps what was confirmed; its replay skips each of those once, sends the rest") {
    val fakes = new FakePool
    val first = dataWriter(fakes, plan(4, replay = false, "q1"), 0)
    Seq("a", "a", "b").foreach(d => first.write(irow("k", d)))
    fakes.last.succeed(2) // Kinesis confirmed a and a; b is still out when the query stops
    abortAndWait(first, fakes)
    assert(sentData(fakes) == Seq("a", "a", "b"), "a first attempt skips nothing")

    val fakes2 = new FakePool
    val replay = dataWriter(fakes2, plan(4, replay = true, "q1"), 1)
    Seq("a", "b", "a", "a", "c").foreach(d => replay.write(irow("k", d)))
    assert(sentData(fakes2) == Seq("b", "a", "c"), "a twice confirmed: the third a goes; b was never confirmed")
    val t = commitAsync(replay)
    fakes2.last.succeed(3)
    t.join(10000)
    assert(!t.isAlive)

    // The replay's own confirmations add up: a second replay skips all of them (a x3, b, c), a key apart.
    val fakes3 = new FakePool
    val again = dataWriter(fakes3, plan(4, replay = true, "q1"), 0)
    Seq("a", "a", "a", "a", "b", "c").foreach(d => again.write(irow("k", d)))
    again.write(irow("other-key", "c"))
    assert(sentData(fakes3) == Seq("a", "c"), "a fourth a and c under another partition key are new records")
    abortAndWait(again, fakes3)
  }

  test("records confirmed inside the writer's aggregates are recorded one by one; a plan of another batch skips none") {
    val fakes = new FakePool
    val agg = perRecord ++ Map("aggregation" -> "writer", "kpl.RecordMaxBufferedTime" -> "60000")
    val first = dataWriter(fakes, plan(9, replay = false, "q2"), 0, agg)
    val rows = (0 until 40).map(i => s"r${i % 30}")
    rows.foreach(d => first.write(irow(s"k$d", d)))
    val t = commitAsync(first)
    eventually(t.getState == Thread.State.TIMED_WAITING) // the commit sealed this task's aggregates and waits
    fakes.last.succeedAllIn(FakeMetadata.even(2))
    t.join(10000)
    assert(!t.isAlive)
    assert(fakes.last.sent.size < rows.size, "aggregated")

    val fakes2 = new FakePool
    val replay = dataWriter(fakes2, plan(9, replay = true, "q2"), 0)
    (rows :+ "r0" :+ "new").foreach(d => replay.write(irow(s"k$d", d)))
    assert(sentData(fakes2) == Seq("r0", "new"), "r0 was confirmed twice of three")
    abortAndWait(replay, fakes2)

    val fakes3 = new FakePool
    val stale = dataWriter(fakes3, plan(8, replay = true, "q2"), 0)
    Seq("r1", "r2").foreach(d => stale.write(irow(s"k$d", d)))
    assert(sentData(fakes3) == Seq("r1", "r2"), "batch 8's plan finds nothing of batch 9")
    abortAndWait(stale, fakes3)
  }

  test("records of an aggregate a split's child got are re-sent and recorded once, when their own copy is confirmed") {
    val fakes = new FakePool
    val agg = perRecord ++ Map("aggregation" -> "writer", "kpl.RecordMaxBufferedTime" -> "60000")
    val p = plan(11, replay = false, "q5")
    val first = dataWriter(fakes, p, 0, agg)
    val rows = (0 until 40).map(i => s"r$i")
    rows.foreach(d => first.write(irow(s"k$d", d)))
    val t = commitAsync(first)
    // Per shard of two, one aggregate sealed by the commit: the idle shards' gathers end only when the clock moves.
    eventually(fakes.last.sent.size == 2)
    val meta = fakes.last.metadata.asInstanceOf[FakeMetadata]
    meta.current = FakeMetadata.even(4) // split: each big aggregate lands in a child holding only some of it
    fakes.last.succeedAllIn(meta.current)
    eventually(fakes.last.outstandingRecords > 0 && fakes.last.sent.size > 2) // all 40 sent again, by the new map
    assert(p.store.read("q5", 11).isEmpty, "nothing recorded before the commit")
    eventually { fakes.last.succeedAllIn(meta.current); t.getState == Thread.State.TERMINATED }
    // Each record once: the copy a KCL consumer keeps is the re-sent one, and only its confirmation is recorded.
    val recorded = p.store.read("q5", 11).get.grouped(2).map(x => (x(0), x(1))).toSeq
    assert(recorded.size == 40 && recorded.toSet == rows.map(d => fingerprintOf(d, s"k$d")).toSet)
  }

  test("a retried task skips what its partition's earlier attempts confirmed under the same plan, nothing else") {
    val first = plan(2, replay = false, "q3")
    val fakes = new FakePool
    val a1 = dataWriter(fakes, first, 0)
    Seq("a", "a", "b").foreach(d => a1.write(irow("k", d)))
    fakes.last.succeed(2)
    abortAndWait(a1, fakes)

    def sends(p: ReplayPlan, partition: Int, retried: Boolean, rows: Seq[String]): Seq[String] = {
      val f = new FakePool
      val w = dataWriter(f, p, partition, retried = retried)
      rows.foreach(d => w.write(irow("k", d)))
      val out = sentData(f)
      f.last.succeed(out.size)
      abortAndWait(w, f)
      out
    }
    assert(sends(first, 0, retried = false, Seq("a")) == Seq("a"), "a first attempt reads nothing")
    assert(sends(first, 1, retried = true, Seq("a", "b")) == Seq("a", "b"), "partition 0's confirmations are its own")
    val other = plan(2, replay = false, "q3")
    assert(sends(other, 0, retried = true, Seq("a")) == Seq("a"), "another plan's partition 0 holds other rows")
    // Partition 0 of `first`: a x2 (a1) and a x1 (the first attempt above) confirmed; its retry skips three a.
    assert(sends(first, 0, retried = true, Seq("a", "a", "a", "a", "b")) == Seq("a", "b"))

    // A replay of batch 2 counts every earlier plan's confirmations once, and its own partition's on a retry.
    val replay = plan(2, replay = true, "q3")
    val earlier = 2 + 1 + 1 + 1 + 1 // a confirmed: a1, first's p0, first's p1, other's p0, first's p0 retry
    assert(sends(replay, 0, retried = false, Seq.fill(earlier + 1)("a")) == Seq("a"))
    assert(sends(replay, 0, retried = true, Seq.fill(earlier + 2)("a")) == Seq("a"), "the earlier a, then its own")
  }

  test("only a replayed batch asks Spark to cluster rows by their content") {
    val opts = options(perRecord)
    val prepared = KinesisWriter.Prepared(opts, RowConverter.forSchema(schema, opts), None)
    val columns = KinesisWrite.contentColumns(prepared, schema)
    assert(columns == Seq("data", "partitionKey"))
    val generated = options(Map("partitioner" -> "random"))
    assert(KinesisWrite.contentColumns(prepared.copy(options = generated), binarySchema) == Seq("data"))
    def distribution(p: Option[ReplayPlan]) =
      new KinesisWrite(prepared, truncate = false, columns, replay = p).requiredDistribution()
    assert(distribution(None).isInstanceOf[org.apache.spark.sql.connector.distributions.UnspecifiedDistribution])
    assert(
      distribution(Some(plan(1, replay = false, "q4")))
        .isInstanceOf[org.apache.spark.sql.connector.distributions.UnspecifiedDistribution]
    )
    val clustered = distribution(Some(plan(1, replay = true, "q4")))
      .asInstanceOf[org.apache.spark.sql.connector.distributions.ClusteredDistribution]
    assert(clustered.clustering().map(_.toString).toSeq == Seq("data", "partitionKey"))
  }

  test("order_by asks Spark to cluster rows by key and sort them; ordered replays cluster by key, not content") {
    import org.apache.spark.sql.connector.distributions.{ClusteredDistribution, UnspecifiedDistribution}
    def write(extra: Map[String, String], p: Option[ReplayPlan]) = {
      val opts = options(extra) // the writer's aggregation: ordered needs it
      val prepared = KinesisWriter.Prepared(opts, RowConverter.forSchema(schema, opts), None)
      new KinesisWrite(prepared, truncate = false, KinesisWrite.contentColumns(prepared, schema), replay = p)
    }
    def clustering(w: KinesisWrite) =
      w.requiredDistribution().asInstanceOf[ClusteredDistribution].clustering().map(_.toString).toSeq
    val sorted = write(Map("order_by" -> "data"), None)
    assert(clustering(sorted) == Seq("partitionKey"))
    assert(
      sorted.requiredOrdering().map(o => (o.expression().toString, o.direction().toString)).toSeq == Seq(
        ("data", "ASC")
      )
    )
    // ordered alone leaves a first attempt's rows where they are; a replay clusters them by key (equal records share it)
    assert(write(Map("ordered" -> "true"), None).requiredDistribution().isInstanceOf[UnspecifiedDistribution])
    assert(write(Map("ordered" -> "true"), None).requiredOrdering().isEmpty)
    assert(clustering(write(Map("ordered" -> "true"), Some(plan(1, replay = true, "q5")))) == Seq("partitionKey"))
    assert(clustering(write(Map.empty, Some(plan(1, replay = true, "q5")))) == Seq("data", "partitionKey"))
    val missing = intercept[IllegalArgumentException](write(Map("order_by" -> "version"), None)).getMessage
    assert(missing.contains("names column 'version'"), missing)
  }

  /** One task of `p`: writes `rows` (key "k"), Kinesis confirms those at `confirm` (indices into what it sent), then it
    * aborts (writing what was confirmed). Returns what it sent.
    */
  private def attempt(
      p: ReplayPlan,
      partition: Int,
      rows: Seq[String],
      confirm: Seq[Int] = Nil,
      retried: Boolean = false
  ) = {
    val f = new FakePool
    val w = dataWriter(f, p, partition, retried = retried)
    rows.foreach(d => w.write(irow("k", d)))
    val out = sentData(f)
    confirm.sorted.zipWithIndex.foreach { case (n, done) => f.last.succeedNth(n - done) }
    abortAndWait(w, f)
    out
  }

  test(
    "foreach: a task skips only what its own partition's earlier attempts confirmed; a replay split otherwise loses nothing"
  ) {
    val run1 = foreachPlan(3, "f1")
    attempt(run1, 0, Seq("a", "a", "b"), confirm = Seq(0, 1, 2))
    attempt(run1, 1, Seq("a", "c", "z"), confirm = Seq(0, 2)) // c still in flight when the query stops
    attempt(run1, 10, Seq("y"), confirm = Seq(0))

    val run2 = foreachPlan(3, "f1")
    assert(attempt(run2, 0, Seq("a", "a", "a", "c")) == Seq("a", "c"), "partition 0 confirmed a twice, never c")
    // b was confirmed, but by partition 0: partition 1 may not use it (sent again: a duplicate, never a loss); z and
    // a were partition 1's; partition 10's y is no part of partition 1 (names "1-…" and "10-…").
    assert(attempt(run2, 1, Seq("b", "a", "z", "y", "c")) == Seq("b", "y", "c"))
    assert(attempt(run2, 2, Seq("a")) == Seq("a"), "no earlier attempt of partition 2: nothing skipped")
  }

  test("foreach: a first attempt uses its JVM's one listing of the run; a retry lists afresh") {
    val run = foreachPlan(0, "f2")
    assert(attempt(run, 0, Seq("a"), confirm = Seq(0)) == Seq("a"))
    // The JVM listed batch 0 once for this run (before the attempt above wrote): a second first attempt of partition
    // 0 in the run (a stage of another job) finds nothing, so it sends; a retry lists and skips.
    assert(attempt(run, 0, Seq("a"), confirm = Seq(0)) == Seq("a"))
    assert(
      attempt(run, 0, Seq("a", "a", "a"), confirm = Seq(0), retried = true) == Seq("a"),
      "two attempts confirmed a: the third goes"
    )
    assert(attempt(foreachPlan(0, "f2"), 0, Seq("a", "a", "a", "a")) == Seq("a"), "the next run lists again")
  }

  test(
    "foreach: whatever the replay's partitioning and rows, Kinesis holds every replayed row; the same split sends none twice"
  ) {
    val rnd = new scala.util.Random(41)
    (1 to 12).foreach { round =>
      val query = s"f3-$round"
      val contents = Seq("a", "b", "c", "d")
      val firstParts = 1 + rnd.nextInt(4)
      val first = Seq.fill(firstParts)(Seq.fill(rnd.nextInt(8))(contents(rnd.nextInt(4))))
      val run1 = foreachPlan(7, query)
      first.zipWithIndex.foreach { case (rows, p) =>
        val sent = attempt(run1, p, rows, confirm = rows.indices.filter(_ => rnd.nextBoolean()))
        assert(sent == rows, "a first attempt skips nothing")
      }
      val held = scala.collection.mutable.Map[String, Int]().withDefaultValue(0)
      // What Kinesis holds after the first attempt: read back what the ledgers wrote (each confirmation once).
      val store = run1.store
      val byContent = contents.map(c => fingerprintOf(c) -> c).toMap
      store.read(query, 7).getOrElse(Array.empty[Long]).grouped(2).foreach(p => held(byContent((p(0), p(1)))) += 1)

      val same = rnd.nextBoolean()
      val replay = if (same) first else Seq.fill(1 + rnd.nextInt(5))(Seq.fill(rnd.nextInt(8))(contents(rnd.nextInt(4))))
      val run2 = foreachPlan(7, query)
      val sent = replay.zipWithIndex.flatMap { case (rows, p) => attempt(run2, p, rows) }
      sent.foreach(c => held(c) += 1)
      val wanted = replay.flatten.groupBy(identity).map { case (c, xs) => c -> xs.size }
      wanted.foreach { case (c, n) => assert(held(c) >= n, s"round $round: $c lost (first $first, replay $replay)") }
      if (same) wanted.foreach { case (c, n) => assert(held(c) == n, s"round $round: $c sent twice") }
    }
  }

  test("a restart at once: the replay reads what the stopped attempt confirms after its abort, then skips all of it") {
    for (foreach <- Seq(true, false)) {
      val query = s"r1-$foreach"
      def planOf(run: String) =
        if (foreach) foreachPlan(5, query, run) else plan(5, replay = true, query).copy(planId = run)
      val fakes = new FakePool
      val stopped = dataWriter(fakes, planOf("run-1"), 0)
      Seq("a", "b", "c").foreach(d => stopped.write(irow("k", d)))
      fakes.last.succeed(1) // a confirmed; b and c still in flight when the query stops
      stopped.abort()
      // The query starts again at once, in this JVM: its attempt of the batch waits for b and c before it reads.
      val fakes2 = new FakePool
      var replay: KinesisDataWriter = null
      val starting = new Thread(() => replay = dataWriter(fakes2, planOf("run-2"), 0))
      starting.start()
      eventually(starting.getState == Thread.State.TIMED_WAITING)
      assert(replay == null, "the replay read before the stopped attempt's records were in")
      fakes.last.succeedAll(_ => "shardId-0") // b and c confirmed after the abort
      starting.join(10000)
      assert(replay != null)
      Seq("a", "b", "c", "d").foreach(d => replay.write(irow("k", d)))
      assert(sentData(fakes2) == Seq("d"), s"foreach=$foreach: everything Kinesis confirmed is skipped")
      fakes2.last.succeedAll(_ => "shardId-0")
      replay.commit()
    }
  }

  test("a task writer that cannot start leaves no attempt open: a restart does not wait for it") {
    val noDaemon = new ProducerPool(_ => throw new IllegalStateException("no daemon"), () => 0L, _ => () => ())
    val opts = options(perRecord)
    val p = plan(6, replay = true, "r2")
    val prepared = KinesisWriter.Prepared(opts, RowConverter.forSchema(schema, opts), None)
    val write = WritePlan(replay = Some(p))
    assert(
      intercept[IllegalStateException](
        new KinesisDataWriter(prepared, write, TaskAttempt(0, 6, 0L), noDaemon)
      ).getMessage == "no daemon"
    )
    val barrier = new java.util.concurrent.CountDownLatch(1)
    io.github.sparkkinesis.replay.LedgerFlusher.submit(() => barrier.countDown()) // the abort's write ran before it
    assert(barrier.await(10, java.util.concurrent.TimeUnit.SECONDS))
    // Settled: a restart's wait returns at once (an open attempt would hold it for the whole bound, then say false).
    val clock = io.github.sparkkinesis.aggregation.Clock.system
    assert(io.github.sparkkinesis.replay.ReplayCache.awaitEarlier("r2", 6, "a later run", 200, clock))
  }

  test("the wait for earlier attempts: only other plans' attempts, at most its bound, on its clock") {
    import io.github.sparkkinesis.replay.ReplayCache
    val clock = new FakeClock
    val a = ReplayCache.opened("w1", 3, "plan-a")
    assert(ReplayCache.awaitEarlier("w1", 3, "plan-a", 60000, clock), "an attempt of the same plan is not waited for")
    assert(ReplayCache.awaitEarlier("w1", 4, "plan-b", 60000, clock), "nor one of another batch")
    val timer = new Thread(() => { Thread.sleep(50); clock.advanceMs(60001) })
    timer.start()
    assert(!ReplayCache.awaitEarlier("w1", 3, "plan-b", 60000, clock), "unsettled after the bound")
    timer.join()
    ReplayCache.settled(a)
    ReplayCache.settled(a) // once is enough
    assert(ReplayCache.awaitEarlier("w1", 3, "plan-b", 60000, clock))
  }

  private def fingerprintOf(data: String, key: String = "k"): (Long, Long) = {
    var out = (0L, 0L)
    io.github.sparkkinesis.replay.Fingerprint.of(
      "s",
      key,
      null,
      java.nio.ByteBuffer.wrap(data.getBytes(UTF_8)),
      (a: Long, b: Long) => out = (a, b)
    )
    out
  }

  test("foreach plans only a micro-batch's task, from its local properties, and removes the batches before it once") {
    val f = ForeachReplay("dedupe_location", dir, 5000L, keyed = true, QueryConf(new Configuration()))
    val props = Map("sql.streaming.queryId" -> "f4", "streaming.sql.batchId" -> "5", "spark.jobGroup.id" -> "run-1")
    def refused(p: Map[String, String], epoch: Long = 5L) =
      intercept[IllegalArgumentException](f.plan(p.getOrElse(_, null), epoch)).getMessage
    assert(refused(props + ("__is_continuous_processing" -> "true")).contains("micro-batch streaming queries only"))
    assert(refused(props - "sql.streaming.queryId").contains("Remove dedupe_location"))
    assert(refused(props, epoch = 6L).contains("continuous processing"), "an epoch that is not the batch")
    val store = plan(0, replay = false, "f4").store
    Seq(3L, 4L, 5L).foreach(b => store.write(store.batchDir("f4", b), "0-x-1-ab-0", Array(1L, 2L), 1))
    val p = f.plan(props.getOrElse(_, null), 5L)
    assert(p.perPartition && p.queryId == "f4" && p.batchId == 5L && p.planId == "run-1" && !p.replay)
    assert(!store.exists("f4", 3) && !store.exists("f4", 4) && store.exists("f4", 5), "batches before 5 removed")
    store.write(store.batchDir("f4", 4), "0-x-1-ab-0", Array(1L, 2L), 1) // a zombie's late write
    f.plan(props.getOrElse(_, null), 5L)
    assert(store.exists("f4", 4), "once per JVM per batch")
    f.plan((props + ("streaming.sql.batchId" -> "6")).getOrElse(_, null), 6L)
    assert(!store.exists("f4", 4) && !store.exists("f4", 5))
  }
}
