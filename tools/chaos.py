"""make chaos: every fault at once, on a seeded schedule, while two streaming queries write; every id accounted for.

Two queries on ``local-cluster[2,1,1024]`` (two executor JVMs) write a steady stream of ids to two 4-shard streams
behind the fault front's shard quotas, both with skip on replay (``dedupe_location``): ``format("kinesis")`` keeping
each key's order (``order_by``: 64 keys, each id ``i`` under key ``i % 64``) and its fingerprints on S3 (moto's S3
through ``s3a://``, hadoop-aws on the class path as on EMR), and ``foreach(KinesisWriter)`` unordered, each id its own
partition key, keeping them on ``file://``. A schedule drawn from ``CHAOS_SEED`` injects, in lanes
that overlap one another: throttling bursts (the quotas cut to an eighth), HTTP 500s and partial ``PutRecords``
failures, connection resets, latency spikes, full outages shorter than ``RecordTtl``, KPL daemon kills, executor kills,
query stops and restarts from the checkpoint, splits, merges and ``UpdateShardCount`` up and down (each with every
producer's shard map held from before it for a few seconds: the race made on purpose). A query that fails is started
again from its checkpoint, and its error is kept.

At the end every id of every committed batch is read back by a plain reader and by the KCL's own deaggregation
(``tools/kcl``), record by record (id, data, partition key). **Pass:** 0 missing for both readers, for the ordered
query no record of a key after a later one (each reader walking parents before children), duplicates within
the bound docs/reliability.md states (per executor or daemon killed and per query restart, what skip on replay cannot
see; plus the records re-sent after a reshard), heap after GC (driver and executors) and KPL daemon RSS flat as
``make soak`` judges them, and every query running at the end.

Knobs: ``CHAOS_MINUTES`` (20), ``CHAOS_SEED`` (drawn and printed if unset), ``CHAOS_SCHEDULE`` (a schedule file a run
printed: run exactly those faults, e.g. the minimal schedule before a loss). Writes bench/results/chaos.json (one file,
overwritten by each run) and docs/img/chaos.png; logs and samples of the run go to .cache/chaos/.
Last line (p: the plain reader, k: the KCL):
``chaos: seed=<s> minutes=<m> ids=<n> missing=<p>/<k> duplicates=<p>/<k> bound=<p>/<k> inversions=<p>/<k> pass=<bool>``
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # before any JVM starts
ROOT = Path(__file__).resolve().parents[1]

from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis._facts import facts
from spark_kinesis_testkit.emulator import (
    KinesisMock,
    UserRecord,
    java_executable,
    loopback_session_builder,
    loopback_writer_options,
    read_stream,
)
from spark_kinesis_testkit.faults import FaultFront
from spark_kinesis_testkit.kcl import KclDeaggregator, read_stream_kcl
from spark_kinesis_testkit.moto_server import MotoServer, s3a_jars
from spark_kinesis_testkit.ordering import order_of
from spark_kinesis_testkit.procs import find, growth, kill, kpl_daemons, rss_bytes
from spark_kinesis_testkit.provenance import commit, machine

MINUTES = float(os.environ.get("CHAOS_MINUTES", "20"))
SEED = int(os.environ.get("CHAOS_SEED") or random.SystemRandom().randrange(1, 10**6))
SCHEDULE_FILE = os.environ.get("CHAOS_SCHEDULE")
MAX_GROWTH_MB = 64.0  # as make soak
RESULTS = ROOT / "bench" / "results" / "chaos.json"
PLOT = ROOT / "docs" / "img" / "chaos.png"
WORK = ROOT / ".cache" / "chaos"

SHARDS = 4
ORDERED_KEYS = 64  # the ordered query's partition keys: id % 64, so each key has several records a batch
ROWS_PER_BATCH = 200  # per query and trigger (1 s): 200 ids/s per query while batches keep up
PAD = "x" * 64
# Per shard: a fifth of Kinesis' quota in records, a sixty-fourth in bytes; a query's ~19 KB/s fills ~30 % of its
# stream's 64 KiB/s, so a throttling burst (an eighth of the quota) builds a backlog that drains within a minute.
QUOTA = (16 * 1024, 200)
THROTTLED = (QUOTA[0] // 8, QUOTA[1] // 8)
QUEUE_LIMIT = 1000
FLUSH_INTERVAL_MS = 5000  # dedupe_flush_interval_ms (the default)
EXECUTORS = 2
WARMUP_S = 30.0  # no fault before: both queries have committed batches, the executors hold their producers
SETTLE_S = 60.0  # no fault starts in the last minute: what the last faults left behind drains
SAMPLE_S = 1.0
HEAP_EVERY_S = 10.0

#: Lanes of the schedule: faults of one lane never overlap (they share a switch); lanes overlap one another.
#: (kind, events per 20 minutes, duration range in seconds; 0: instant).
LANES: dict[str, list[tuple[str, int, tuple[float, float]]]] = {
    "quota": [("throttle", 6, (10, 40))],
    "errors": [("http500", 4, (3, 15)), ("partial", 4, (5, 20))],
    "connection": [("reset", 4, (1, 4)), ("outage", 2, (5, 15))],
    "latency": [("latency", 5, (5, 30))],
    "daemon": [("daemon-kill", 4, (0, 0))],
    "executor": [("executor-kill", 3, (0, 0))],
    "query": [("query-restart", 4, (0, 0))],
    "reshard": [("split", 2, (3, 10)), ("merge", 2, (3, 10)), ("scale-up", 1, (3, 10)), ("scale-down", 1, (3, 10))],
}


@dataclass
class Fault:
    kind: str
    lane: str
    at: float  # seconds from the start of the run
    duration: float
    params: dict[str, Any] = field(default_factory=dict)
    began: float | None = None  # when it was injected (seconds from the start)
    ended: float | None = None
    outcome: str = ""


def draw_schedule(seed: int, minutes: float) -> list[Fault]:
    """Each lane's events spread over the run, one per slot at a random time within it, of a random duration."""
    rng = random.Random(seed)
    first, last = WARMUP_S, max(WARMUP_S + 30.0, minutes * 60 - SETTLE_S)
    faults: list[Fault] = []
    for lane, kinds in LANES.items():
        events = [k for k, n, _ in kinds for _ in range(max(1, round(n * minutes / 20)))]
        rng.shuffle(events)
        spans = {k: d for k, _, d in kinds}
        slot = (last - first) / len(events)
        for i, kind in enumerate(events):
            lo, hi = spans[kind]
            at = first + i * slot + rng.uniform(0, slot * 0.4)
            duration = min(rng.uniform(lo, hi), slot * 0.55) if hi else 0.0
            params: dict[str, Any] = {}
            if kind == "http500":
                params["fraction"] = round(rng.uniform(0.5, 1.0), 2)
            elif kind == "partial":
                params["fraction"] = round(rng.uniform(0.2, 0.6), 2)
            elif kind == "latency":
                params["ms"] = rng.randrange(100, 2000, 50)  # below the KPL's RequestTimeout (6 s): no resend
            elif kind in ("daemon-kill", "executor-kill", "query-restart", "split", "merge", "scale-up", "scale-down"):
                params["pick"] = rng.random()  # which daemon, executor, query or stream, among those live then
            faults.append(Fault(kind, lane, round(at, 1), round(duration, 1), params))
    return sorted(faults, key=lambda f: f.at)


def load_schedule(path: str) -> list[Fault]:
    """A schedule a run printed (its minimal schedule before a loss, or a whole run's ``faults``), moved so its first
    fault comes right after the warm-up."""
    keep = ("kind", "lane", "at", "duration", "params")
    faults = [Fault(**{k: v for k, v in f.items() if k in keep}) for f in json.loads(Path(path).read_text())["faults"]]
    shift = min((f.at for f in faults), default=WARMUP_S) - WARMUP_S
    for f in faults:
        f.at = round(f.at - shift, 1)
    return sorted(faults, key=lambda f: f.at)


def run_minutes(faults: list[Fault]) -> float:
    """CHAOS_MINUTES, or longer when a loaded schedule needs it: its last fault, then SETTLE_S to drain."""
    last = max((f.at + f.duration for f in faults), default=0.0)
    return max(MINUTES, (last + SETTLE_S) / 60)


class Clock:
    def __init__(self) -> None:
        self.start = time.monotonic()

    def now(self) -> float:
        return round(time.monotonic() - self.start, 1)


class Query:
    """One of the two streaming queries, started again from its checkpoint when it fails or a fault stops it."""

    def __init__(self, spark: Any, tag: str, entry: str, stream: str, options: dict[str, Any], clock: Clock) -> None:
        self.spark, self.tag, self.entry, self.stream, self.clock = spark, tag, entry, stream, clock
        self.writer = KinesisWriter(stream_name=stream, **options)
        self.ordered = "order_by" in options
        self.checkpoint = WORK / "checkpoints" / tag
        self.lock = threading.RLock()
        self.q: Any = None
        self.failures: list[dict[str, Any]] = []
        self.restarts = 0
        self.batch_rows: dict[int, int] = {}  # batch id -> input rows, as progress reported it
        self.batch_time: dict[int, float] = {}  # batch id -> when its progress was first seen

    def start(self) -> None:
        df = (
            self.spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", ROWS_PER_BATCH)
            .option("numPartitions", 2)
            .load()
            .select(
                key_column(self.ordered).alias("partitionKey"),
                F.col("value").alias("seq"),
                F.concat(F.lit(self.tag + ":"), F.col("value").cast("string"), F.lit(":" + PAD)).alias("data"),
            )
        )
        if not self.ordered:
            df = df.drop("seq")
        w = df.writeStream.queryName(self.tag)
        w = w.foreach(self.writer) if self.entry == "foreach" else w.format("kinesis").options(**self.writer.options())
        with self.lock:
            self.q = w.option("checkpointLocation", str(self.checkpoint)).trigger(processingTime="1 second").start()

    def restart(self) -> None:
        with self.lock:
            self.q.stop()
            self.restarts += 1
            self._start_or_keep_failure()

    def _start_or_keep_failure(self) -> None:
        """Starts the query again; a start that fails (the driver's stream check during an outage longer than its
        bound) is kept as a failure, and the next poll tries again."""
        try:
            self.start()
        except Exception as e:
            self.failures.append({"t": self.clock.now(), "error": f"start: {e}"[:2000]})
            log(f"query {self.tag} did not start again (next poll retries): {str(e).splitlines()[0][:300]}")

    def poll(self) -> None:
        """Reads new progress; a query that ended by itself failed: its error is kept and it starts again."""
        with self.lock:
            for p in self.q.recentProgress:
                b = int(p["batchId"])
                if p["numInputRows"] and b not in self.batch_time:
                    self.batch_rows[b] = int(p["numInputRows"])
                    self.batch_time[b] = self.clock.now()
            if not self.q.isActive:
                error = self.q.exception()
                text = str(error) if error is not None else "stopped without an error"
                self.failures.append({"t": self.clock.now(), "error": text[:2000]})
                log(f"query {self.tag} failed, starting it again from its checkpoint: {text.splitlines()[0][:300]}")
                self.restarts += 1
                self._start_or_keep_failure()

    def committed_batches(self) -> list[int]:
        commits = self.checkpoint / "commits"
        return sorted(int(p.name) for p in commits.iterdir() if p.name.isdigit()) if commits.exists() else []


def key_column(ordered: bool) -> Any:
    """The partition key of id ``value``: the ordered query's ``value % ORDERED_KEYS``, else the id itself."""
    return (F.col("value") % ORDERED_KEYS if ordered else F.col("value")).cast("string")


def key_of(i: int, ordered: bool) -> str:
    return str(i % ORDERED_KEYS if ordered else i)


def log(line: str) -> None:
    print(f"chaos {time.strftime('%H:%M:%S')} {line}", flush=True)


class Injector:
    """Runs each lane of the schedule in a thread of its own; every injection is logged with its times."""

    def __init__(
        self, faults: list[Fault], front: FaultFront, kinesis: Any, queries: list[Query], clock: Clock, root_pid: int
    ) -> None:
        self.faults, self.front, self.kinesis, self.queries, self.clock = faults, front, kinesis, queries, clock
        self.root_pid = root_pid
        self.stopping = threading.Event()
        self.threads = [
            threading.Thread(target=self._lane, args=(lane,), name=f"chaos-{lane}", daemon=True) for lane in LANES
        ]
        self.limits_lock = threading.Lock()
        self.limits = QUOTA

    def start(self) -> None:
        for t in self.threads:
            t.start()

    def stop(self) -> None:
        """Ends every fault still on and waits for the lanes."""
        self.stopping.set()
        for t in self.threads:
            t.join(120)
        self.front.fail_requests(0)
        self.front.add_latency(0)
        self.front.end_outage()
        for q in self.queries:
            self.front.release_shard_maps(q.stream)
        self._set_limits(QUOTA)

    def _wait_until(self, t: float) -> bool:
        """False when the run is stopping."""
        return not self.stopping.wait(max(0.0, t - (time.monotonic() - self.clock.start)))

    def _lane(self, lane: str) -> None:
        for f in (f for f in self.faults if f.lane == lane):
            if not self._wait_until(f.at):
                return
            f.began = self.clock.now()
            try:
                end = self._begin(f)
                log(f"t={f.began} +{f.kind} {f.params} {f.outcome}".rstrip())
                if end is not None:
                    self._wait_until(f.at + f.duration)
                    end()
                    f.ended = self.clock.now()
                    log(f"t={f.ended} -{f.kind}")
            except Exception as e:  # a fault that could not be injected is reported, the run goes on
                f.outcome = f"not injected: {e!r}"[:300]
                log(f"t={self.clock.now()} {f.kind}: {f.outcome}")

    def _set_limits(self, limits: tuple[int, int]) -> None:
        with self.limits_lock:
            self.limits = limits
            enforce(self.front, limits)

    def _begin(self, f: Fault) -> Callable[[], None] | None:
        front = self.front
        if f.kind == "throttle":
            self._set_limits(THROTTLED)
            return lambda: self._set_limits(QUOTA)
        if f.kind in ("http500", "partial"):
            front.fail_requests(f.params["fraction"], mode=f.kind)
            return lambda: front.fail_requests(0)
        if f.kind == "latency":
            front.add_latency(f.params["ms"])
            return lambda: front.add_latency(0)
        if f.kind in ("reset", "outage"):
            front.outage(f.duration, mode="reset" if f.kind == "reset" else "refuse")
            return lambda: front.end_outage()
        if f.kind in ("daemon-kill", "executor-kill"):
            what = "daemon" if f.kind == "daemon-kill" else "executor"
            pids = sorted(
                kpl_daemons(self.root_pid) if what == "daemon" else find(self.root_pid, "CoarseGrainedExecutorBackend")
            )
            if not pids:
                raise RuntimeError(f"no {what} running")
            victim = pids[int(f.params["pick"] * len(pids))]
            kill([victim])
            f.outcome = f"killed {what} pid {victim} of {len(pids)}"
            return None
        if f.kind == "query-restart":
            q = self.queries[int(f.params["pick"] * len(self.queries))]
            q.restart()
            f.outcome = f"restarted {q.tag}"
            return None
        return self._reshard(f)

    def _reshard(self, f: Fault) -> Callable[[], None]:
        q = self.queries[int(f.params["pick"] * len(self.queries))]
        client, stream = self.kinesis, q.stream
        shards = open_shards(client, stream)
        self.front.hold_shard_maps(stream)
        n = len(shards)
        if f.kind == "split" and n < 8:
            sid, lo, hi = max(shards, key=lambda s: s[2] - s[1])
            client.split_shard(StreamName=stream, ShardToSplit=sid, NewStartingHashKey=str((lo + hi) // 2 + 1))
        elif f.kind == "merge" and n > 2:
            pairs = list(zip(shards, shards[1:]))
            (a, _, _), (b, _, _) = min(pairs, key=lambda p: p[1][2] - p[0][1])
            client.merge_shards(StreamName=stream, ShardToMerge=a, AdjacentShardToMerge=b)
        elif f.kind in ("scale-up", "scale-down") and (n < 8 if f.kind == "scale-up" else n > 2):
            target = min(8, 2 * n) if f.kind == "scale-up" else max(2, (n + 1) // 2)
            client.update_shard_count(StreamName=stream, TargetShardCount=target, ScalingType="UNIFORM_SCALING")
        else:
            self.front.release_shard_maps(stream)
            f.outcome = f"skipped: {stream} has {n} shards"
            return lambda: None
        deadline = time.monotonic() + 60
        while client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamStatus"] != "ACTIVE":
            if time.monotonic() > deadline:
                raise TimeoutError(f"{stream} not ACTIVE 60 s after a {f.kind}")
            time.sleep(0.1)
        with self.limits_lock:  # the front's quotas follow the new shards
            enforce(self.front, self.limits)
        f.outcome = f"{stream}: {n} -> {len(open_shards(client, stream))} shards, maps held {f.duration} s"
        return lambda: self.front.release_shard_maps(stream)


def enforce(front: FaultFront, limits: tuple[int, int]) -> None:
    """Per-shard quotas scaled down from Kinesis'; a record (an aggregate) larger than a second of the byte quota, which
    Kinesis' 1 MiB/s always holds, is admitted into a full bucket and leaves it in debt, so it is never refused for
    good."""
    front.enforce_shard_limits(bytes_per_s=limits[0], records_per_s=limits[1], oversized="debt")


def open_shards(client: Any, stream: str) -> list[tuple[str, int, int]]:
    shards = client.list_shards(StreamName=stream, ShardFilter={"Type": "AT_LATEST"})["Shards"]
    keys = ("StartingHashKey", "EndingHashKey")
    return sorted(((s["ShardId"], *(int(s["HashKeyRange"][k]) for k in keys)) for s in shards), key=lambda r: r[1])


class Sampler:
    """Once a second: rows committed per query, what the executors hold unconfirmed (the metrics CSV sink), KPL daemon
    RSS; every HEAP_EVERY_S the heap after a full GC of the driver (py4j) and of each executor (jcmd)."""

    def __init__(self, spark: Any, queries: list[Query], metrics_dir: Path, clock: Clock, root_pid: int) -> None:
        self.spark, self.queries, self.metrics_dir, self.clock, self.root_pid = (
            spark,
            queries,
            metrics_dir,
            clock,
            root_pid,
        )
        self.samples: list[dict[str, Any]] = []
        self.heap: list[dict[str, Any]] = []
        self._last_heap = -HEAP_EVERY_S
        java = java_executable()
        self._jcmd = str(Path(java).resolve().parent / "jcmd") if java else "jcmd"

    def sample(self) -> None:
        now = self.clock.now()
        rows = {q.tag: sum(q.batch_rows.values()) for q in self.queries}
        daemons = kpl_daemons(self.root_pid)
        self.samples.append(
            {
                "t": now,
                "rows": rows,
                # Written and not yet confirmed: user records' bytes in the writer's shard buffers and the daemons;
                # the KPL's own count of what it holds (an aggregate counts once).
                "outstanding_kb": round(self._gauge("boundBytes") / 1024, 1),
                "kpl_outstanding": self._gauge("outstandingRecordsCount"),
                "kpl_rss_mb": round(sum(rss_bytes(p) for p in daemons) / 2**20, 1),
                "daemons": len(daemons),
            }
        )
        if now - self._last_heap >= HEAP_EVERY_S:
            self._last_heap = now
            jvm = self.spark._jvm
            jvm.System.gc()
            driver = jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed()
            executors = [h for h in map(self._executor_heap, find(self.root_pid, "CoarseGrainedExecutorBackend")) if h]
            self.heap.append(
                {
                    "t": now,
                    "driver_mb": round(driver / 2**20, 1),
                    "executor_max_mb": round(max(executors, default=0.0), 1),
                }
            )

    def _executor_heap(self, pid: int) -> float | None:
        """MB used after a full GC, by the JDK's jcmd (None when the executor went away meanwhile)."""
        try:
            subprocess.run([self._jcmd, str(pid), "GC.run"], capture_output=True, timeout=30, check=True)
            out = subprocess.run([self._jcmd, str(pid), "GC.heap_info"], capture_output=True, timeout=30, text=True)
        except (subprocess.SubprocessError, OSError):
            return None
        m = re.search(r"used (\d+)K", out.stdout)
        return int(m.group(1)) / 1024 if m else None

    def _gauge(self, name: str) -> int:
        """A gauge summed over live executors (its file written in the last 3 s)."""
        total, fresh = 0, time.time() - 3
        for p in self.metrics_dir.glob(f"*.kinesisProducer.*.{name}.csv"):
            try:
                if p.stat().st_mtime < fresh:
                    continue
                with open(p, "rb") as fh:
                    fh.seek(max(0, p.stat().st_size - 200))
                    last = fh.read().decode(errors="replace").strip().splitlines()[-1]
                total += int(float(last.split(",")[1]))
            except (OSError, IndexError, ValueError):
                continue
        return total

    def counter(self, stream: str, name: str) -> int:
        """A counter's total over every executor that ever reported it (killed ones included, up to their last
        report); a producer started again after its daemon died counts from 0 again, so every rise is added."""
        total = 0
        for p in self.metrics_dir.glob(f"*.kinesisProducer.{stream}.{name}.csv"):
            last = 0
            for line in p.read_text().strip().splitlines()[1:]:
                value = int(float(line.split(",")[1]))
                total += value - last if value >= last else value
                last = value
        return total


def log_levels(app_id: str) -> dict[str, int]:
    """ERROR and WARN lines in the executors' logs (local-cluster keeps them under pyspark's work/<app id>/), by
    logger: Spark logs its own when an executor or a task is lost; the writer's and the KPL's show here."""
    import pyspark

    counts: Counter[str] = Counter()
    for stderr in (Path(pyspark.__file__).parent / "work" / app_id).glob("*/stderr"):
        for line in stderr.read_text(errors="replace").splitlines():
            m = re.match(r"\S+ \S+ (ERROR|WARN) ([\w.$]+):", line)
            if m:
                counts[f"{m.group(1)} {m.group(2)}"] += 1
    return dict(counts.most_common())


#: What the driver's check adds to every error of its own (StreamCheck's DriverHint, from the facts resource).
DRIVER_CHECK = facts()["driverCheckHint"]


def excused(failure: dict[str, Any], faults: list[Fault]) -> bool:
    """Whether a query's failure is the driver's check refusing its start (at start() or at its first batch's planning)
    while an outage or a reset ran, or within the check's 10 s bound after it."""
    t = failure["t"]
    return DRIVER_CHECK in failure["error"] and any(
        f.kind in ("outage", "reset") and f.began is not None and f.began <= t <= (f.ended or t) + 10.0 for f in faults
    )


#: The faults that can write a record twice (skip on replay cannot see what they lose, or a reshard re-sends).
DUPLICATING = ("executor-kill", "daemon-kill", "query-restart", "split", "merge", "scale-up", "scale-down")


def attribute(q: Query, ids: list[int], faults: list[Fault]) -> dict[str, int]:
    """Each duplicated id to the last duplicating fault that began at most 60 s before its batch committed (a batch
    runs at most that long here), else ``unexplained``."""
    on = sorted(
        (f.began, f.kind)
        for f in faults
        if f.kind in DUPLICATING and f.began is not None and "skipped" not in f.outcome
    )
    counts: Counter[str] = Counter()
    for i in ids:
        t = q.batch_time.get(i // ROWS_PER_BATCH)
        cause = next((kind for began, kind in reversed(on) if t is not None and began <= t <= began + 60), None)
        counts[cause or "unexplained"] += 1
    return dict(counts.most_common())


def check(q: Query, records: list[UserRecord], expected: int, faults: list[Fault]) -> dict[str, Any]:
    """Every id below ``expected`` read back with its exact data and partition key; the rest counted apart."""
    counts: Counter[int] = Counter()
    wrong = 0
    for r in records:
        tag, ident, rest = r.data.decode().split(":", 2)
        i = int(ident)
        if tag != q.tag or rest != PAD or r.partition_key != key_of(i, q.ordered):
            wrong += 1
        counts[i] += 1
    missing = [i for i in range(expected) if counts[i] == 0]
    order: dict[str, Any] = {}
    if q.ordered:  # ids of a key are its order: each batch's ids are above the last's, and Spark sorts a batch's
        seen = order_of(records, lambda r: (r.partition_key, int(r.data.decode().split(":", 2)[1])))
        inverted = [seq for _, seq, _ in seen.examples]
        order = {"inversions": seen.inversions, "examples": seen.examples, "by_fault": attribute(q, inverted, faults)}
    return {
        **({"order": order} if order else {}),
        "missing": len(missing),
        "first_missing": missing[:20],
        "duplicates": sum(c - 1 for i, c in counts.items() if i < expected and c > 1),
        "duplicated_ids_by_fault": attribute(q, [i for i, c in counts.items() if i < expected and c > 1], faults),
        "beyond_committed": sum(c for i, c in counts.items() if i >= expected),
        "wrong_content": wrong,
    }


def minimal_schedule(faults: list[Fault], t: float) -> list[Fault]:
    """The faults on in the minute before ``t`` (the time of the first missing id's batch)."""
    return [f for f in faults if f.at <= t and (f.ended or f.began or f.at) + f.duration >= t - 60]


def plot(report: dict[str, Any], samples: list[dict[str, Any]], heap: list[dict[str, Any]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_rate, ax_out, ax_mem, ax_faults) = plt.subplots(
        4, 1, figsize=(12, 9), sharex=True, gridspec_kw={"height_ratios": [2, 2, 2, 2]}
    )
    t = [s["t"] for s in samples]
    for tag in report["queries"]:
        rows = [s["rows"][tag] for s in samples]
        rate = [0.0] + [(b - a) / max(1e-9, tb - ta) for a, b, ta, tb in zip(rows, rows[1:], t, t[1:])]
        window = 5
        smooth = [
            sum(rate[max(0, i - window + 1) : i + 1]) / len(rate[max(0, i - window + 1) : i + 1])
            for i in range(len(rate))
        ]
        ax_rate.plot(t, smooth, label=tag, linewidth=0.8)
    ax_rate.set_ylabel("ids committed/s\n(5 s mean)")
    ax_rate.legend(loc="upper right", fontsize=8)
    ax_out.plot(t, [s["outstanding_kb"] for s in samples], color="tab:purple", linewidth=0.8)
    ax_out.set_ylabel("KB written, not yet\nconfirmed (executors)")
    ax_mem.plot([h["t"] for h in heap], [h["driver_mb"] for h in heap], label="driver heap after GC", linewidth=0.8)
    ax_mem.plot(
        [h["t"] for h in heap],
        [h["executor_max_mb"] for h in heap],
        label="executor heap after GC (max)",
        linewidth=0.8,
    )
    ax_mem.plot(t, [s["kpl_rss_mb"] for s in samples], label="KPL daemons RSS (sum)", linewidth=0.8)
    ax_mem.set_ylabel("MB")
    ax_mem.legend(loc="upper right", fontsize=8)
    lanes = list(LANES)
    colors = plt.get_cmap("tab10")
    for f in report["faults"]:
        if f["began"] is None:
            continue
        y = lanes.index(f["lane"])
        end = f["ended"] if f["ended"] is not None else f["began"]
        width = max(end - f["began"], 3.0)
        ax_faults.broken_barh([(f["began"], width)], (y - 0.4, 0.8), color=colors(y))
        for ax in (ax_rate, ax_out):
            ax.axvline(f["began"], color=colors(y), alpha=0.25, linewidth=0.6)
    ax_faults.set_yticks(range(len(lanes)))
    ax_faults.set_yticklabels(lanes, fontsize=8)
    ax_faults.set_xlabel("seconds from start")
    fig.suptitle(
        f"make chaos: seed {report['seed']}, {report['minutes']:g} min, {report['commit']} "
        f"(missing {report['missing_plain']}/{report['missing_kcl']} plain/KCL)",
        fontsize=10,
    )
    fig.tight_layout()
    PLOT.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(PLOT, dpi=90)
    plt.close(fig)


def main() -> int:
    WORK.mkdir(parents=True, exist_ok=True)
    for old in ("checkpoints", "fingerprints", "metrics"):
        subprocess.run(["rm", "-rf", str(WORK / old)], check=True)
    metrics_dir = WORK / "metrics"
    metrics_dir.mkdir()
    faults = load_schedule(SCHEDULE_FILE) if SCHEDULE_FILE else draw_schedule(SEED, MINUTES)
    minutes = run_minutes(faults)
    log(
        f"seed={SEED} minutes={minutes:g} faults={len(faults)}"
        + (f" schedule={SCHEDULE_FILE}" if SCHEDULE_FILE else "")
    )
    for f in faults:
        log(f"  scheduled t={f.at:>7} {f.lane:<10} {f.kind:<14} {f.duration:>5} s {f.params}")
    streams = {"format": "chaos-format", "foreach": "chaos-foreach"}
    with (
        KinesisMock(streams={s: SHARDS for s in streams.values()}) as km,
        FaultFront(f"http://127.0.0.1:{km.plain_port}", seed=SEED) as front,
        MotoServer() as moto,
        KclDeaggregator() as kcl,
    ):
        enforce(front, QUOTA)
        moto.s3().create_bucket(Bucket="chaos")
        jars = ":".join(s3a_jars())
        builder = loopback_session_builder(
            f"local-cluster[{EXECUTORS},1,1024]", "spark-kinesis-chaos", None, str(metrics_dir)
        )
        builder = builder.config("spark.driver.extraClassPath", jars).config("spark.executor.extraClassPath", jars)
        for k, v in moto.s3a_settings().items():
            builder = builder.config(f"spark.hadoop.{k}", v)
        spark = builder.getOrCreate()
        spark.sparkContext.setLogLevel("WARN")
        clock = Clock()
        base = {**loopback_writer_options(front.endpoint), "queue_limit": QUEUE_LIMIT}
        queries = [
            Query(
                spark,
                "format",
                "format",
                streams["format"],
                {**base, "dedupe_location": "s3a://chaos/fingerprints", "order_by": "seq"},
                clock,
            ),
            Query(
                spark,
                "foreach",
                "foreach",
                streams["foreach"],
                {**base, "dedupe_location": (WORK / "fingerprints").as_uri()},
                clock,
            ),
        ]
        for q in queries:
            q.start()
        root = os.getpid()
        sampler = Sampler(spark, queries, metrics_dir, clock, root)
        injector = Injector(faults, front, km.client(), queries, clock, root)
        injector.start()
        end = minutes * 60
        while clock.now() < end:
            for q in queries:
                q.poll()
            sampler.sample()
            time.sleep(max(0.0, SAMPLE_S - (time.monotonic() - clock.start) % SAMPLE_S))
        injector.stop()
        log("faults over: waiting for 3 batches of each query to commit after them")
        marks = {q.tag: max(q.committed_batches(), default=-1) for q in queries}
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and any(
            max(q.committed_batches(), default=-1) < marks[q.tag] + 3 for q in queries
        ):
            for q in queries:
                q.poll()
            sampler.sample()
            time.sleep(SAMPLE_S)
        healthy = {q.tag: max(q.committed_batches(), default=-1) >= marks[q.tag] + 3 for q in queries}
        for q in queries:
            with q.lock:
                q.q.stop()
        resent = {q.tag: sampler.counter(q.stream, "resentRecords") for q in queries}
        held = {q.tag: front.held_user_records(q.stream) for q in queries}
        app_id = spark.sparkContext.applicationId
        spark.stop()
        executor_log = log_levels(app_id)

        client = km.client()
        stats = front.stats()
        results: dict[str, Any] = {}
        for q in queries:
            committed = q.committed_batches()
            expected = (committed[-1] + 1) * ROWS_PER_BATCH if committed else 0
            log(f"reading {q.stream} back ({expected} ids committed)")
            plain_records = read_stream(client, q.stream)
            kcl_records = read_stream_kcl(client, q.stream, kcl)
            plain, as_kcl = check(q, plain_records, expected, faults), check(q, kcl_records, expected, faults)
            results[q.tag] = {
                "entry": q.entry,
                "stream": q.stream,
                "fingerprints": "s3a" if q.entry == "format" else "file",
                "batches_committed": len(committed),
                "ids": expected,
                "plain": plain,
                "kcl": as_kcl,
                "resent_records": resent[q.tag],
                "dropped_by_kcl": len(plain_records) - len(kcl_records),
                "restarts": q.restarts,
                "failures": q.failures,
                "healthy_at_end": healthy[q.tag],
            }

    # The bound docs/reliability.md states for skip on replay, per query and per fault skip on replay cannot see: an
    # executor killed (what its running tasks confirmed since their batch began, whose fingerprints are written at their
    # commit, and what they had in flight), a daemon killed (what it had in flight: the task fails and its retry sends
    # those again), the query restarted while its records were in flight. Each is part of one batch's rows of that
    # query: the largest batch it ran. Plus what a reshard re-sends: the writer's aggregates that landed in a shard not
    # holding all of them (resentRecords), and the user records written while the stream's maps were held (the KPL sends
    # one that landed in another shard than it predicted again, "Wrong Shard").
    injected = Counter(f.kind for f in faults if f.began is not None and not f.outcome.startswith(("not", "skipped")))
    for q in queries:
        r = results[q.tag]
        restarted = sum(1 for f in faults if f.outcome == f"restarted {q.tag}") + len(r["failures"])
        losses = injected["executor-kill"] + injected["daemon-kill"] + restarted
        r["largest_batch"] = max(q.batch_rows.values(), default=0)
        # A KCL consumer: the faults above and the re-sends. A plain reader also gets the records the KCL drops (every
        # copy of an aggregate in a shard that does not own all of its records: the KPL's own "Wrong Shard" retries of
        # one, while the map it reads lags, put it there again), which the KCL's code counts for it.
        r["held_user_records"] = held[q.tag]
        r["duplicate_bound"] = {"kcl": r["largest_batch"] * losses + r["resent_records"] + held[q.tag]}
        r["duplicate_bound"]["plain"] = r["duplicate_bound"]["kcl"] + r["dropped_by_kcl"]
        # A query may fail only where a fault made it: a start the driver's check refused during an outage (longer than
        # its bound). Any other failure (an error that reached the query) fails the run.
        r["unexcused_failures"] = [x for x in r["failures"] if not excused(x, faults)]
    missing_plain = sum(r["plain"]["missing"] for r in results.values())
    missing_kcl = sum(r["kcl"]["missing"] for r in results.values())
    dup_plain = sum(r["plain"]["duplicates"] for r in results.values())
    dup_kcl = sum(r["kcl"]["duplicates"] for r in results.values())
    heap_growth = {
        "driver_mb": round(growth([h["driver_mb"] for h in sampler.heap]), 1),
        "executor_max_mb": round(growth([h["executor_max_mb"] for h in sampler.heap if h["executor_max_mb"]]), 1),
    }
    rss_growth = round(growth([s["kpl_rss_mb"] for s in sampler.samples if s["daemons"]]), 1)
    within = all(
        r[reader]["duplicates"] <= r["duplicate_bound"][reader] for reader in ("plain", "kcl") for r in results.values()
    )
    wrong = sum(r[k]["wrong_content"] for r in results.values() for k in ("plain", "kcl"))
    inversions = {
        k: sum(r[k].get("order", {}).get("inversions", 0) for r in results.values()) for k in ("plain", "kcl")
    }
    flat = all(g < MAX_GROWTH_MB for g in (*heap_growth.values(), rss_growth))
    ok = (
        missing_plain == 0
        and missing_kcl == 0
        and within
        and flat
        and wrong == 0
        and inversions == {"plain": 0, "kcl": 0}
        and all(r["healthy_at_end"] for r in results.values())
        and not any(r["unexcused_failures"] for r in results.values())
    )
    table: dict[str, dict[str, Any]] = {}
    for f in faults:
        row = table.setdefault(f.kind, {"scheduled": 0, "injected": 0, "skipped": 0, "seconds": 0.0})
        row["scheduled"] += 1
        if f.began is not None and not f.outcome.startswith(("not", "skipped")):
            row["injected"] += 1
            row["seconds"] = round(row["seconds"] + ((f.ended or f.began) - f.began), 1)
        else:
            row["skipped"] += 1
    report = {
        "run": time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()),
        "seed": SEED,
        "minutes": minutes,
        "schedule_file": SCHEDULE_FILE,
        "commit": commit(ROOT),
        "machine": machine(),
        "setup": {
            "executors": EXECUTORS,
            "shards": SHARDS,
            "ids_per_batch_per_query": ROWS_PER_BATCH,
            "quota_per_shard": {"bytes_per_s": QUOTA[0], "records_per_s": QUOTA[1]},
            "throttled_quota_per_shard": {"bytes_per_s": THROTTLED[0], "records_per_s": THROTTLED[1]},
            "queue_limit": QUEUE_LIMIT,
            "dedupe_flush_interval_ms": FLUSH_INTERVAL_MS,
        },
        "fault_table": table,
        "front": {
            k: stats[k]
            for k in (
                "throttled_records",
                "http500",
                "failed_records",
                "reset_connections",
                "refused_periods",
                "held_listings",
                "held_records",
            )
        },
        "queries": results,
        "missing_plain": missing_plain,
        "missing_kcl": missing_kcl,
        "duplicates_plain": dup_plain,
        "duplicates_kcl": dup_kcl,
        "inversions": inversions,
        "heap_growth_mb": heap_growth,
        "kpl_rss_growth_mb": rss_growth,
        "executor_log_lines": executor_log,
        "pass": ok,
        "faults": [asdict(f) for f in faults],
    }
    # Committed: the summary, a fault a line. The samples behind the plot stay with the run's logs in .cache/chaos.
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    each = ",\n".join(f"  {json.dumps(f)}" for f in report["faults"])
    text = json.dumps({**report, "faults": []}, indent=1).replace('"faults": []', f'"faults": [\n{each}\n ]')
    RESULTS.write_text(text + "\n")
    raw = {**report, "samples": sampler.samples, "heap_samples": sampler.heap}
    (WORK / f"{report['run']}-seed{SEED}.json").write_text(json.dumps(raw))
    plot(report, sampler.samples, sampler.heap)
    for tag, r in results.items():
        log(
            f"{tag}: ids={r['ids']} plain={r['plain']} kcl={r['kcl']} resent={r['resent_records']} "
            f"bound={r['duplicate_bound']} restarts={r['restarts']} failures={len(r['failures'])}"
        )
        for failure in r["failures"]:
            log(f"  {tag} failed at t={failure['t']}: {failure['error'].splitlines()[0][:300]}")
    log(f"faults: {json.dumps(table)}")
    log(f"heap growth {heap_growth} MB, KPL RSS growth {rss_growth} MB (limit {MAX_GROWTH_MB:g})")
    if missing_plain or missing_kcl:
        q = next(q for q in queries if results[q.tag]["plain"]["missing"] or results[q.tag]["kcl"]["missing"])
        r = results[q.tag]
        first = min(r["plain"]["first_missing"][:1] + r["kcl"]["first_missing"][:1])
        when = q.batch_time.get(first // ROWS_PER_BATCH, 0.0)
        minimal = minimal_schedule(faults, when)
        repro = WORK / f"repro-seed{SEED}.json"
        repro.write_text(
            json.dumps(
                {"seed": SEED, "first_missing": first, "t": when, "faults": [asdict(f) for f in minimal]}, indent=1
            )
        )
        log(f"LOSS: first missing id {first} of {q.tag} (batch {first // ROWS_PER_BATCH}, t={when}); seed {SEED}")
        log(f"  the faults in the minute before it ({len(minimal)}); to rerun them alone (moved to just after the")
        log(f"  warm-up; the run lasts as long as they need): CHAOS_SCHEDULE={repro} CHAOS_MINUTES=1 make chaos")
        for f in minimal:
            log(f"  t={f.began} {f.kind} {f.duration} s {f.params} {f.outcome}")
    print(
        f"chaos: seed={SEED} minutes={minutes:g} ids={sum(r['ids'] for r in results.values())} "
        f"missing={missing_plain}/{missing_kcl} duplicates={dup_plain}/{dup_kcl} "
        f"bound={'/'.join(str(sum(r['duplicate_bound'][k] for r in results.values())) for k in ('plain', 'kcl'))} "
        f"inversions={inversions['plain']}/{inversions['kcl']} pass={ok}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
