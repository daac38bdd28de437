"""make demo: why the writer needs a bound, on the embedded Kinesis (README.md says how long it runs).

The same query runs twice, side by side, on one Spark session: text files of ids -> ~1 KiB JSON
records -> KinesisWriter -> the fault front (per-shard quotas, as real Kinesis enforces them) ->
kinesis-mock. Input arrives several times faster than the streams' shards accept it.

- "no bound": the writer with its limits off, as the KPL is used alone. Each micro-batch is taken
  whole, the query falls behind and batches grow. The writer aggregates before the KPL and sends
  each shard no more than its quota, so the backlog waits in the writer's shard buffers, on the
  executor's (here the driver's) JVM heap, while the KPL daemon holds about half a second of it: the
  memory that grows is the bytes held in the writer and the KPL, not the daemon's RSS. A record's
  RecordTtl runs from its hand-off to the daemon (docs/reliability.md, "Where a backlog waits"), so
  none expires while the emulator keeps up with the quota; the run sets fail_on_error=False so that
  it can count any that do (on a machine too busy for the emulator to keep up).
- "queue_limit": the writer blocks while QUEUE_LIMIT records are outstanding: the backlog stays in
  the source (the input files), the link stays full and the memory held flat.

A live line per run shows records confirmed, outstanding against the limit, the record bytes held in
the writer and the KPL, the daemon's memory and the confirmed rate. Both queries end on a batch
boundary (the input ends; processAllAvailable() before stop()). Both streams are then read back
record by record, a PNG of outstanding records, bytes held, daemon RSS and the JVM's heap over time
is written (its path is printed), and the last line is machine-readable, for the bounded run:
  demo: sent=<n> delivered=<n> missing=0 duplicates=<n> backpressure_cycles=<n> records_per_s=<x>
Exits non-zero if the bounded run misses any record.

Knobs (environment): DEMO_FEED_SECONDS [10], DEMO_ROWS_PER_S [3000], DEMO_SHARD_KIB_PER_S [256]. The
defaults keep both streams together at ~1 MiB/s, what kinesis-mock ingests comfortably; the writer's
RateLimit is scaled to the shards' quota, so it paces them as it paces real shards.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Before the JVM starts (the KPL daemon inherits its environment): no EC2 metadata probes.
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from rich.console import Console
from rich.live import Live
from rich.text import Text
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit import procs
from spark_kinesis_testkit.emulator import (
    KinesisMock,
    loopback_session_builder,
    loopback_writer_options,
    producer_snapshot,
    read_stream,
)
from spark_kinesis_testkit.faults import FaultFront

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / ".cache" / "demo"
SHARDS = 2
SHARD_BYTES_PER_S = int(os.environ.get("DEMO_SHARD_KIB_PER_S", "256")) * 1024
ROWS_PER_S = int(os.environ.get("DEMO_ROWS_PER_S", "3000"))
FEED_SECONDS = float(os.environ.get("DEMO_FEED_SECONDS", "10"))
PAYLOAD = 1000  # bytes of padding per record: ~1 KiB records, so the shards' byte quota is the limit
PARTITIONS = 2  # tasks per micro-batch and query
QUEUE_LIMIT = 500  # ~1 s of this link (docs/configuration.md, "Sizing queue_limit")
SAMPLE_S = 0.5
# The writer paces each shard to RateLimit percent of a real shard's 1 MiB/s (its default 100). Scaled to the front's
# quota, as bench/scale.py does, it holds itself to these shards as it would to real ones, within their quota.
RATE_LIMIT = max(1, round(100 * SHARD_BYTES_PER_S / 2**20))
NO_BOUND = {"queue_limit": 2**31 - 1, "max_outstanding_bytes": 2**62, "fail_on_error": False}


@dataclass
class Run:
    label: str
    stream: str
    limits: dict[str, Any]
    writer: KinesisWriter | None = None
    query: Any = None
    daemon: int = 0
    start: float = 0.0
    samples: list[dict[str, float]] = field(default_factory=list)
    # The JVM's heap after its last GC is both runs' at once: sampled on the first run's clock (time, MiB).
    heap: list[tuple[float, float]] = field(default_factory=list)

    @property
    def limit_text(self) -> str:
        return f"/{self.limits['queue_limit']:,}" if self.limits["queue_limit"] < 2**31 - 1 else ""


def feed(directory: Path, stop: threading.Event) -> int:
    """Writes ROWS_PER_S ids a second for FEED_SECONDS as small text files; returns how many."""
    step, n, k = 0.25, 0, 0
    per_file = int(ROWS_PER_S * step)
    t0 = time.monotonic()
    while time.monotonic() - t0 < FEED_SECONDS and not stop.is_set():
        tmp = directory / f".part-{k:05d}.tmp"  # hidden: Spark lists only the renamed file
        tmp.write_text("".join(f"{i}\n" for i in range(n, n + per_file)))
        tmp.rename(directory / f"part-{k:05d}.txt")
        n, k = n + per_file, k + 1
        stop.wait(max(0.0, t0 + k * step - time.monotonic()))
    return n


def records(spark: SparkSession, directory: Path) -> DataFrame:
    ids = spark.readStream.text(str(directory)).select(F.col("value").cast("long").alias("id"))
    return ids.select(
        F.col("id").cast("string").alias("partitionKey"),
        F.to_json(F.struct("id", F.repeat(F.lit("x"), PAYLOAD).alias("pad"))).alias("data"),
    ).coalesce(PARTITIONS)


def wait_for_daemon(jvm_pid: int, known: set[int], query: Any, timeout_s: float = 60.0) -> int:
    """The KPL daemon a query's first task started: the one not in ``known``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if query.exception() is not None:
            raise SystemExit(f"demo: query failed: {query.exception()}")
        new = set(procs.kpl_daemons(jvm_pid)) - known
        if new:
            return int(min(new))
        time.sleep(0.1)
    raise SystemExit(f"demo: no KPL daemon started within {timeout_s:.0f} s")


def sample_until(spark: SparkSession, runs: list[Run], stop: threading.Event) -> None:
    """Every SAMPLE_S: each run's producer (by stream) and its daemon's RSS, on the run's own clock; the JVM's heap."""
    jvm = spark._jvm
    assert jvm is not None  # a classic session
    collectors = list(jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans())
    pools = heap_pools(spark)
    while not stop.wait(SAMPLE_S):
        live = {p.source.rsplit(".", 1)[-1]: p for p in producer_snapshot(spark)}
        heap_mib = heap_after_gc(collectors, pools)
        now = time.monotonic()
        if runs[0].start and heap_mib is not None:
            runs[0].heap.append((now - runs[0].start, heap_mib))
        for r in runs:
            p = live.get(r.stream)
            if p is None or not r.daemon:
                continue
            r.samples.append(
                {
                    "t": now - r.start,
                    # User records and their bytes from write() to confirmation: in the writer's shard buffers and
                    # queues, and in the KPL (what queue_limit and max_outstanding_bytes bound).
                    "outstanding": p.in_flight_records,
                    "held_mib": p.outstanding_bytes / 2**20,
                    # Kinesis records (aggregates) the KPL daemon holds, with the sender's queue before it.
                    "in_kpl": p.outstanding_records,
                    "confirmed": p.records_sent,
                    "expired": p.records_failed,
                    "rss_mib": procs.rss_bytes(r.daemon) / 2**20,
                }
            )


def heap_pools(spark: Any) -> list[str]:
    """The names of the JVM's heap memory pools (G1: eden, survivor, old)."""
    pools = spark._jvm.java.lang.management.ManagementFactory.getMemoryPoolMXBeans()
    return [str(p.getName()) for p in pools if p.getType().toString() == "Heap memory"]


def heap_after_gc(collectors: list[Any], heap_pools: list[str]) -> float | None:
    """The JVM's heap in use after its latest GC, in MiB (None before the first): what the JVM holds, garbage aside,
    without forcing a GC, which would pause both runs."""
    infos = [i for i in (c.getLastGcInfo() for c in collectors) if i is not None]
    if not infos:
        return None
    after = max(infos, key=lambda i: i.getEndTime()).getMemoryUsageAfterGc()
    return float(sum(after.get(name).getUsed() for name in heap_pools if after.containsKey(name))) / 2**20


def show(console: Console, runs: list[Run], waiter: threading.Thread) -> None:
    """The live lines until ``waiter`` ends: redrawn in place on a terminal, printed every 5 s otherwise."""
    if console.is_terminal:
        with Live(display(runs), console=console, refresh_per_second=4) as live:
            while waiter.is_alive():
                live.update(display(runs))
                waiter.join(0.25)
            live.update(display(runs))
        return
    while waiter.is_alive():
        print(display(runs).plain, flush=True)
        waiter.join(5.0)
    print(display(runs).plain, flush=True)


def line(r: Run) -> Text:
    if not r.samples:
        return Text(f"{r.label:>11}  starting")
    s = r.samples[-1]
    back = [x for x in r.samples if x["t"] >= s["t"] - 2.0]
    rate = (s["confirmed"] - back[0]["confirmed"]) / max(1e-9, s["t"] - back[0]["t"])
    text = Text(f"{r.label:>11}  ", style="bold")
    text.append(f"confirmed {int(s['confirmed']):>6,}  outstanding {int(s['outstanding']):>6,}{r.limit_text:<5}  ")
    text.append(f"held in the writer and the KPL {s['held_mib']:5.1f} MiB  KPL RSS {s['rss_mib']:4.0f} MiB  ")
    text.append(f"{rate:5.0f} rec/s")
    if s["expired"]:
        text.append(f"  expired {int(s['expired']):,}", style="red")
    return text


def display(runs: list[Run]) -> Text:
    return Text("\n").join(line(r) for r in runs)


def plot(runs: list[Run], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(9, 7.5), sharex=True)
    for r, color in zip(runs, ("tab:red", "tab:blue")):
        t = [s["t"] for s in r.samples]
        ax1.plot(t, [s["outstanding"] for s in r.samples], color=color, label=r.label)
        ax2.plot(t, [s["held_mib"] for s in r.samples], color=color, label=f"{r.label}: held in the writer and the KPL")
        ax2.plot(t, [s["rss_mib"] for s in r.samples], color=color, linestyle="--", label=f"{r.label}: KPL daemon RSS")
    heap = runs[0].heap
    ax2.plot(
        [h[0] for h in heap],
        [h[1] for h in heap],
        color="0.55",
        drawstyle="steps-post",
        linewidth=0.8,
        label="JVM heap after its latest GC, both runs (the writer's and Spark's)",
    )
    ax1.axhline(QUEUE_LIMIT, color="tab:blue", linestyle=":", linewidth=1, label=f"queue_limit={QUEUE_LIMIT}")
    ax1.set_ylabel("records outstanding\nin the writer and the KPL")
    ax2.set_ylabel("MiB")
    ax2.set_xlabel("seconds since the query started")
    # Headroom above the highest line for the legend (five entries).
    ax2.set_ylim(0, 1.6 * max([h[1] for h in heap] + [s["rss_mib"] for r in runs for s in r.samples], default=1.0))
    ax1.set_title(
        f"The same query, {ROWS_PER_S:,} records/s of ~1 KiB into {SHARDS} shards x {SHARD_BYTES_PER_S // 1024} KiB/s"
    )
    for ax in (ax1, ax2):
        ax.grid(alpha=0.3)
        ax.legend(loc="upper right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def sending_rate(r: Run) -> float:
    """Records confirmed per second from the first confirmation to 90 % of the run's total: the link's use."""
    total = r.samples[-1]["confirmed"]
    window = [s for s in r.samples if 0 < s["confirmed"] <= 0.9 * total]
    if len(window) < 2:
        return 0.0
    return (window[-1]["confirmed"] - window[0]["confirmed"]) / (window[-1]["t"] - window[0]["t"])


def account(km: KinesisMock, stream: str, sent: int) -> tuple[int, int]:
    """(delivered, duplicates) of ids 0..sent-1, read back record by record."""
    seen: dict[int, int] = {}
    for rec in read_stream(km.client(), stream):
        body = json.loads(rec.data)
        if rec.partition_key != str(body["id"]) or body["pad"] != "x" * PAYLOAD:
            raise SystemExit(f"demo: record {body['id']} of {stream} came back altered")
        seen[body["id"]] = seen.get(body["id"], 0) + 1
    delivered = sum(1 for i in range(sent) if i in seen)
    return delivered, sum(seen[i] - 1 for i in range(sent) if i in seen)


def main() -> int:
    console = Console()
    runs = [
        Run("no bound", "demo-no-bound", NO_BOUND),
        Run("queue_limit", "demo-queue-limit", {"queue_limit": QUEUE_LIMIT}),
    ]
    work = Path(tempfile.mkdtemp(prefix="spark-kinesis-demo-"))
    inputs = work / "input"
    inputs.mkdir()
    with (
        KinesisMock(streams={r.stream: SHARDS for r in runs}) as km,
        FaultFront(f"http://127.0.0.1:{km.plain_port}") as front,
    ):
        front.enforce_shard_limits(bytes_per_s=SHARD_BYTES_PER_S, records_per_s=1000)
        link = SHARDS * SHARD_BYTES_PER_S / (PAYLOAD + 20)
        print(
            f"demo: kinesis-mock behind the fault front's shard quotas: {SHARDS} shards x "
            f"{SHARD_BYTES_PER_S // 1024} KiB/s per stream (~{link:.0f} records/s); "
            f"input {ROWS_PER_S:,} records/s of ~1 KiB for {FEED_SECONDS:.0f} s; RateLimit={RATE_LIMIT} (the writer's "
            "100 scaled to these shards)",
            flush=True,
        )
        # A task slot for each task of both queries: their tasks wait on Kinesis most of the time, and a query
        # whose tasks held every slot would stall the other.
        spark = loopback_session_builder(f"local[{2 * PARTITIONS}]", "spark-kinesis-demo").getOrCreate()
        jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        stop_feed, stop_sampling = threading.Event(), threading.Event()
        fed: list[int] = []
        feeder = threading.Thread(target=lambda: fed.append(feed(inputs, stop_feed)), name="feeder", daemon=True)
        sampler = threading.Thread(target=sample_until, args=(spark, runs, stop_sampling), name="sampler", daemon=True)
        sampler.start()
        feeder.start()
        try:
            for r in runs:
                # The KPL's defaults (RecordTtl 30 s) except what loopback needs, and RateLimit scaled to the quota.
                opts = {**loopback_writer_options(front.endpoint, LogLevel="warning", RateLimit=RATE_LIMIT), **r.limits}
                r.writer = KinesisWriter(stream_name=r.stream, **opts)
                r.query = (
                    records(spark, inputs)
                    .writeStream.queryName(r.stream)
                    .foreach(r.writer)
                    .option("checkpointLocation", str(work / f"ckpt-{r.stream}"))
                    .start()
                )
                r.start = time.monotonic()
                r.daemon = wait_for_daemon(jvm_pid, {x.daemon for x in runs if x.daemon}, r.query)
            # Once the input has ended, each query is ended on a batch boundary (processAllAvailable, then stop).
            waiter = threading.Thread(target=_finish_all, args=(feeder, runs), name="finish", daemon=True)
            waiter.start()
            show(console, runs, waiter)
            failed = [r for r in runs if r.query.exception() is not None]
            if failed:
                raise SystemExit(f"demo: query {failed[0].label} failed: {failed[0].query.exception()}")
        finally:
            stop_feed.set()
            stop_sampling.set()
            sampler.join()
            for r in runs:
                if r.query is not None and r.query.isActive:
                    r.query.stop()
        metrics = {r.label: r.writer.metrics() for r in runs if r.writer is not None}
        # One GC once both queries have ended (none during the runs: it would pause them), so the heap's line ends on
        # what the JVM holds then rather than on the last GC the runs happened to cause.
        spark._jvm.java.lang.System.gc()
        final_heap = heap_after_gc(
            list(spark._jvm.java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()), heap_pools(spark)
        )
        if final_heap is not None and runs[0].start:
            runs[0].heap.append((time.monotonic() - runs[0].start, final_heap))
        spark.stop()

        sent = fed[0]
        OUT.mkdir(parents=True, exist_ok=True)
        png = OUT / "demo.png"
        plot(runs, png)
        results: dict[str, tuple[int, int]] = {}
        peaks: dict[str, dict[str, float]] = {}
        for r in runs:
            delivered, dups = account(km, r.stream, sent)
            results[r.label] = (delivered, dups)
            peak = {k: max(s[k] for s in r.samples) for k in ("outstanding", "held_mib", "in_kpl", "rss_mib")}
            peaks[r.label] = peak
            expired = metrics[r.label]["recordsFailed"]
            print(
                f"demo: {r.label:>11}: delivered {delivered:,}/{sent:,}, expired {expired:,}; "
                f"in the writer and the KPL at the peak {peak['outstanding']:,.0f}{r.limit_text} records, "
                f"{peak['held_mib']:.1f} MiB; in the KPL daemon at most {peak['in_kpl']:,.0f} aggregates, "
                f"RSS max {peak['rss_mib']:.0f} MiB; {sending_rate(r):.0f} rec/s confirmed while sending "
                f"(link ~{link:.0f})",
                flush=True,
            )
        free, bounded_peak = peaks[runs[0].label], peaks[runs[1].label]
        heap_from, heap_max = runs[0].heap[0][1], max(h[1] for h in runs[0].heap)
        print(
            f"demo: without a bound the writer took whole micro-batches: "
            f"{free['outstanding'] / max(1, bounded_peak['outstanding']):.0f}x the records and "
            f"{free['held_mib'] / max(0.1, bounded_peak['held_mib']):.0f}x the bytes held in the writer and the KPL. "
            f"The writer sends a shard only its quota: the rest waited in its shard buffers, on the JVM heap (after GC "
            f"{heap_from:.0f} MiB at the start, {heap_max:.0f} MiB at most, both runs); the KPL daemon held at most "
            f"{free['in_kpl']:,.0f} aggregates (RSS max {free['rss_mib']:.0f} against "
            f"{bounded_peak['rss_mib']:.0f} MiB)",
            flush=True,
        )
        expired = metrics[runs[0].label]["recordsFailed"]
        if expired:
            print(
                f"demo: and {expired:,} records failed: by default (fail_on_error=True) the query fails there; a sink "
                "that ignored them would lose them",
                flush=True,
            )
        else:
            print(
                "demo: none expired (RecordTtl runs from the hand-off to the KPL): unbounded, that backlog grows until "
                "the executor's heap runs out",
                flush=True,
            )
        print("demo: with queue_limit the backlog stayed in the input, the link full, every record arrived", flush=True)
        print(f"demo: plot of both runs: {png}", flush=True)
        bounded = runs[1]
        delivered, dups = results[bounded.label]
        elapsed = bounded.samples[-1]["t"]
        print(
            f"demo: sent={sent} delivered={delivered} missing={sent - delivered} duplicates={dups} "
            f"backpressure_cycles={metrics[bounded.label]['backpressureCycles']} records_per_s={sent / elapsed:.1f}",
            flush=True,
        )
        return 1 if sent - delivered else 0


def _finish_all(feeder: threading.Thread, runs: list[Run]) -> None:
    feeder.join()
    for r in runs:
        _finish(r)


def _finish(r: Run) -> None:
    """Ends ``r`` on a batch boundary: the input has ended, so once every batch is committed no task runs."""
    try:
        r.query.processAllAvailable()
    except Exception:  # the caller reports query.exception()
        return
    r.query.stop()


if __name__ == "__main__":
    sys.exit(main())
