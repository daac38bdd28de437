"""make bench, part "scale": CPU per record and link use as shards, record sizes and executors grow.

Real Kinesis gives each shard 1 MiB/s; 256 full shards are 256 MiB/s, which one machine cannot serve. So
the link is held fixed per record size (``LINK``) and split evenly over the shards: the fault front
enforces ``LINK / shards`` bytes/s per shard (and 1,000 records/s, as Kinesis). The KPL's ``RateLimit``
(a whole percent of a real shard) is scaled by the same factor, so it still holds itself at the share of
the quota it would hold against real shards (the writer's default, 100 %). The writer then spreads the
same rate over 4 to 256 shards: each shard's aggregates shrink as they do for one executor feeding a
wide stream, and every shard is at its quota.

Where the scaling stops being faithful:
- ``RateLimit`` cannot go below 1 % (10 KiB/s, and 10 aggregated records/s) of a real shard: the ~2.56 MiB/s
  link puts a shard's share at exactly that at 256 shards.
- A 100 KiB record is more than a second of a scaled shard's quota at 64 and 256 shards (64 and 16 KiB/s),
  which no real shard sees. The front admits it into a full bucket and the shard then pays it back
  (``oversized="debt"``); with a few records per shard per run, how evenly the ids' keys fall over the
  shards then decides how busy each shard stays.

Each run writes ~``SECONDS`` of the link (``MULTI_SECONDS`` with several executors, whose tasks start up to a second
or two apart, so that their start is not the whole run) from one micro-batch (one input file, so one task, per executor
core) into a fresh stream, read back record by record afterwards. Executors come from ``local-cluster[E,1,1536]`` (one
core each, each with its own KPL daemon): with several, each executor's writer paces the same shards at its share of
their quotas, 1/E at the start, then as Kinesis' throttles move it (docs/configuration.md). ``throttled_share`` is the
Kinesis records the front throttled (an aggregate counts once) over the user records written, as the goal of at
most 0.5 % at 4 executors states it, over the whole run; ``throttled_share_steady`` the same over the steady window
the link is measured on (``WINDOW``), past the start. CPU is the executors' JVMs and daemons, net of a ``noop`` run of
the same rows on the same executors (Spark's reading and row building); the driver is not counted.
Each run also counts the control-plane calls the front saw for its stream, by caller (``control_plane``: the driver, the
executors' writers, their KPL daemons): the executors' per executor over the run (``executor_calls_per_executor``:
start-up included, each run writing a fresh stream) and per executor per minute in the steady window
(``executor_calls_per_min``), which the driver's reads keep from growing with the executors (docs/configuration.md,
"Large fleets").

Then, without quotas (kinesalite at full speed over TLS, nothing throttled or retried): the cost curve of
one executor from 4 to 256 shards, with the id as key and with ``partitioner="fixed"`` (one key per Spark
partition); and two executors against one at 16 shards, for the rate when the link allows it.

Knobs: BENCH_SCALE_SECONDS [12], BENCH_SCALE_MULTI_SECONDS [30], BENCH_SCALE_SHARDS [4,16,64,256],
BENCH_SCALE_SIZES [100,1024,102400], BENCH_SCALE_EXECUTORS [1,2,4], BENCH_SCALE_RATE_LIMIT [100],
BENCH_SCALE_FREE_ROWS [300000],
BENCH_SKIP=scale_free (quotas only), scale_kpl (the writer alone). ``make bench-scale`` runs this part alone.
"""

from __future__ import annotations

import os
import statistics
import threading
import time
from typing import Any

import backends
from common import say, spread, verify
from spark_kinesis_testkit import procs
from spark_kinesis_testkit.emulator import loopback_writer_options
from spark_kinesis_testkit.faults import FaultFront

SHARD_COUNTS = [int(x) for x in os.environ.get("BENCH_SCALE_SHARDS", "4,16,64,256").split(",")]
# Bytes/s of the whole stream per record size: what kinesalite behind the fault front serves on 2 cores with
# room to spare. ~2.56 MiB/s puts a shard's share at 1 % of a real shard's (rounded up to a byte) at 256 shards, the
# finest quota the KPL's RateLimit (a whole percent of a real shard) matches, and at whole percents (4, 16, 64) at
# 64, 16 and 4 shards: RateLimit never holds a shard above its quota. 100 KiB records get 4 MiB/s, at 64 and 256
# shards still less than one record per second a shard (see the module docstring).
ONE_PERCENT = -(-1024 * 1024 // 100)  # bytes/s: 1 % of a real shard's quota, rounded up
LINK = {100: 256 * ONE_PERCENT, 1024: 256 * ONE_PERCENT, 102400: 4 * 1024 * 1024}
LINK = {k: v for k, v in LINK.items() if str(k) in os.environ.get("BENCH_SCALE_SIZES", "100,1024,102400").split(",")}
SECONDS = float(os.environ.get("BENCH_SCALE_SECONDS", "12"))
MULTI_SECONDS = float(os.environ.get("BENCH_SCALE_MULTI_SECONDS", "30"))  # runs with several executors
EXECUTORS = [int(x) for x in os.environ.get("BENCH_SCALE_EXECUTORS", "1,2,4").split(",")]
FREE_ROWS = int(os.environ.get("BENCH_SCALE_FREE_ROWS", "300000"))  # 100 B, no quotas
FREE_SHARDS = 16
MASTER = "local-cluster[{},1,1536]"
# queue_limit ~1 s of the link, and at least 4 records per shard (docs/configuration.md's sizing: with fewer
# outstanding records than shards, shards sit idle); max_outstanding_bytes then never binds first.
QUEUE_LIMIT = {100: 25000, 1024: 2500, 102400: 40}
# The writer with aggregation="writer" (bench/spark_side.py), and beside it at 100 B and 1 KiB aggregation="kpl": what
# the daemon's own aggregation costs where records are small enough for aggregation to matter.
VARIANTS = ["writer", "writer_kpl"]
SKIP = os.environ.get("BENCH_SKIP", "")
AGG_SIZES = (100, 1024)


def queue_limit(size: int, shards: int) -> int:
    return max(QUEUE_LIMIT[size], 4 * shards)


KEY_BYTES = 7  # partition keys are ids below 10^7: what the front counts besides the data


def rows_for(size: int, executors: int) -> int:
    return int(LINK[size] * (SECONDS if executors == 1 else MULTI_SECONDS) / (size + KEY_BYTES))


RATE_LIMIT = int(os.environ.get("BENCH_SCALE_RATE_LIMIT", "100"))  # the writer's default, percent of the quota


def rate_limit(per_shard: int) -> int:
    """The KPL's ``RateLimit`` (percent of a real shard's 1 MiB/s; the writer's default 100) scaled to the per-shard
    quota, so the KPL holds itself at the share of the quota it would hold against real shards (1 is its minimum)."""
    return max(1, round(RATE_LIMIT * per_shard / (1024 * 1024)))


WINDOW = (0.25, 0.9)  # the steady middle of a run, in shares of its admitted bytes


def crossing(samples: list[tuple[float, int]], frac: float) -> float:
    """When the cumulative admitted bytes crossed ``frac`` of their total (interpolated)."""
    target = frac * samples[-1][1]
    for (t0, b0), (t1, b1) in zip(samples, samples[1:]):
        if b1 >= target:
            return t0 + (t1 - t0) * (target - b0) / (b1 - b0) if b1 > b0 > -1 and target > b0 else t1
    return samples[-1][0]


def window_rate(samples: list[tuple[float, int]], lo: float = WINDOW[0], hi: float = WINDOW[1]) -> float | None:
    """Bytes/s between the moments the cumulative count crossed ``lo`` and ``hi`` of its total: the
    steady middle of a run, past the first second's full buckets and before the last records' tail."""
    if len(samples) < 3 or samples[-1][1] <= 0:
        return None
    ta, tb = crossing(samples, lo), crossing(samples, hi)
    total = samples[-1][1]
    return (hi - lo) * total / (tb - ta) if tb > ta else None


def at(series: list[tuple[float, float]], t: float) -> float:
    """``series`` (time, value) read at ``t``, interpolated."""
    for (t0, v0), (t1, v1) in zip(series, series[1:]):
        if t1 >= t:
            return v0 + (v1 - v0) * (t - t0) / (t1 - t0) if t1 > t0 else v1
    return series[-1][1]


class FrontSampler:
    """Admitted bytes at the fault front every 0.1 s, relative to the start; with ``root``, also the CPU seconds of
    the executors' JVMs and KPL daemons below it (for the steady window's CPU per record); with ``stream``, the
    executors' control-plane calls naming it."""

    def __init__(self, front: FaultFront, root: int | None = None, stream: str | None = None) -> None:
        self.front, self.root, self.stream = front, root, stream
        self.samples: list[tuple[float, int]] = []
        self.throttles: list[tuple[float, float]] = []  # throttled Kinesis records so far
        self.calls: list[tuple[float, float]] = []  # the executors' control-plane calls so far
        self.cpu: list[tuple[float, float]] = []
        self.base = front.stats()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)

    def _sample(self) -> None:
        s = self.front.stats()
        now = time.monotonic()
        self.samples.append((now, s["admitted_bytes"] - self.base["admitted_bytes"]))
        self.throttles.append((now, float(s["throttled_records"] - self.base["throttled_records"])))
        if self.stream is not None:
            self.calls.append((now, float(executor_calls(self.front.control_plane_calls(stream=self.stream)))))
        if self.root is not None:
            tree = procs.tree(self.root)
            kinds = ("executor_jvm", "kpl_daemon")
            self.cpu.append((now, sum(p.cpu_s for p in tree.values() if procs.kind(p, self.root) in kinds)))

    def _loop(self) -> None:
        while not self._stop.wait(0.1):
            self._sample()

    def __enter__(self) -> FrontSampler:
        self._sample()
        self._t.start()
        return self

    def __exit__(self, *_: Any) -> None:
        self._stop.set()
        self._t.join()
        self._sample()
        self.throttled = self.front.stats()["throttled_records"] - self.base["throttled_records"]

    def _window(self) -> tuple[float, float]:
        """When the steady window (``WINDOW``) began and ended: it holds ``hi - lo`` of the run's admitted bytes, so
        that share of its records."""
        return crossing(self.samples, WINDOW[0]), crossing(self.samples, WINDOW[1])

    def _steady(self, series: list[tuple[float, float]]) -> float | None:
        """How much ``series`` grew in the steady window; None without enough samples."""
        if len(series) < 3 or self.samples[-1][1] <= 0:
            return None
        ta, tb = self._window()
        return at(series, tb) - at(series, ta)

    def steady_throttled_share(self, rows: int) -> float | None:
        """Throttled Kinesis records over user records in the steady window."""
        throttled = self._steady(self.throttles)
        return None if throttled is None else throttled / ((WINDOW[1] - WINDOW[0]) * rows)

    def steady_calls_per_min(self) -> float | None:
        """The executors' control-plane calls a minute in the steady window (all executors together)."""
        calls = self._steady(self.calls)
        if calls is None:
            return None
        ta, tb = self._window()
        return calls / (tb - ta) * 60 if tb > ta else None

    def steady_cpu_per_m(self, rows: int, noop_s_per_row: float) -> float | None:
        """CPU-s per million records in the steady window (executors' JVMs and daemons, net of Spark's generation)."""
        cpu = self._steady(self.cpu)
        records = (WINDOW[1] - WINDOW[0]) * rows
        return None if cpu is None else (cpu - noop_s_per_row * records) / records * 1e6


def net_cpu(r: dict[str, Any], noop: dict[str, Any]) -> float:
    """CPU-s per million records: executor JVMs + daemons, minus the noop run's executor JVMs."""
    cpu = (
        r["cpu_s"]["executor_jvm"] + r["cpu_s"]["kpl_daemon"] - noop["cpu_s"]["executor_jvm"] * r["rows"] / noop["rows"]
    )
    return float(cpu / r["rows"] * 1e6)


def scale(result: dict[str, Any], spark_side: Any) -> None:
    say(
        f"scale: shards {SHARD_COUNTS} x sizes {list(LINK)} x executors {EXECUTORS}, link per size "
        f"{ {k: f'{v / 2**20:g} MiB/s' for k, v in LINK.items()} } split over the shards, ~{SECONDS:g} s per run "
        f"({MULTI_SECONDS:g} s with several executors)"
    )
    runs: list[dict[str, Any]] = []
    free: list[dict[str, Any]] = []
    with backends.Kinesalite(tls=False) as up, FaultFront(up.url) as front:
        writer_base = loopback_writer_options(front.endpoint, **backends.KPL_BASE)
        for e in EXECUTORS:
            with spark_side(master=MASTER.format(e)) as side:
                for size in LINK:
                    side.call(cmd="input", name=f"s{size}", start=0, rows=rows_for(size, e), files=e)
                side.call(cmd="input", name="warm", start=0, rows=100000, files=e)  # JIT, daemon start
                up.create_stream("warm", 4)
                front.enforce_shard_limits(None)
                opts = {**writer_base, "queue_limit": 10000, "producer_idle_timeout_ms": 3_600_000}
                side.run("writer", "warm", 100, up.pid, stream="warm", writer=opts, per_trigger=e)
                up.delete_stream("warm")
                for size in LINK:
                    noop = side.run("noop", f"s{size}", size, up.pid, per_trigger=e)
                    for shards in SHARD_COUNTS:
                        for variant in VARIANTS if size in AGG_SIZES and "scale_kpl" not in SKIP else VARIANTS[:1]:
                            runs.append(one_run(up, front, side, e, size, shards, noop, writer_base, variant))
    result["scale_runs"] = runs
    if "scale_free" in SKIP:
        return
    # Without quotas: the rate one and two executors reach, and the fixed partitioner, on kinesalite over TLS.
    with backends.Kinesalite() as b:
        opts = {**b.endpoint_options(), "queue_limit": 10000, "producer_idle_timeout_ms": 3_600_000}
        sides = {e: spark_side(master=MASTER.format(e)) for e in EXECUTORS}
        opened = {e: s.__enter__() for e, s in sides.items()}
        try:
            for e, side in opened.items():
                side.call(cmd="input", name="free", start=0, rows=FREE_ROWS, files=e)
                side.call(cmd="input", name="warm", start=0, rows=50000, files=e)
                b.create_stream(f"warm-e{e}", FREE_SHARDS)
                side.run("writer", "warm", 100, b.pid, stream=f"warm-e{e}", writer=opts, per_trigger=e)
                b.delete_stream(f"warm-e{e}")
            noops = {e: side.run("noop", "free", 100, b.pid, per_trigger=e) for e, side in opened.items()}
            # The cost curve without quotas (nothing throttled, nothing retried): one executor, 4 to 256 shards,
            # the id as key against partitioner="fixed"; and two executors against one at FREE_SHARDS.
            plan = [(EXECUTORS[0], v, n) for n in SHARD_COUNTS for v in ("writer", "writer_fixed")]
            plan += [(e, "writer", FREE_SHARDS) for e in EXECUTORS[1:]]  # BENCH_SCALE_EXECUTORS=1: none
            for rep in range(2):
                for e, variant, shards in plan if rep == 0 else plan[::-1]:
                    stream = f"free-{variant}-{shards}-e{e}-r{rep}"
                    b.create_stream(stream, shards)
                    r = opened[e].run(variant, "free", 100, b.pid, stream=stream, writer=opts, per_trigger=e)
                    r.update(executors=e, shards=shards, rep=rep, cpu_s_per_m_net=net_cpu(r, noops[e]))
                    r["verify"] = verify(b, stream, FREE_ROWS, 1, 0, 100, keyed=variant == "writer")
                    b.delete_stream(stream)
                    say(
                        f"  free {variant:12s} e={e} shards={shards:3d}: {r['records_per_s']:>8,.0f} rec/s "
                        f"cpu/M net={r['cpu_s_per_m_net']:5.1f}"
                    )
                    free.append(r)
        finally:
            for s in sides.values():
                s.__exit__(None, None, None)
    result["scale_free_runs"] = free


def one_run(
    up: backends.Kinesalite,
    front: FaultFront,
    side: Any,
    e: int,
    size: int,
    shards: int,
    noop: dict[str, Any],
    writer_base: dict[str, Any],
    variant: str = "writer",
) -> dict[str, Any]:
    stream = f"scale-{variant}-{size}-{shards}-e{e}".replace("_", "-")
    up.create_stream(stream, shards)
    link = LINK[size]
    per_shard = link // shards
    front.enforce_shard_limits(bytes_per_s=per_shard, records_per_s=1000, oversized="debt")
    limit = queue_limit(size, shards)
    opts = {
        **writer_base,
        "queue_limit": limit,
        "max_outstanding_bytes": limit * (size + 1024),
        "producer_idle_timeout_ms": 3_600_000,
    }
    opts["kpl"] = {**opts["kpl"], "RateLimit": rate_limit(per_shard)}
    with FrontSampler(front, root=int(side.hello["jvm_pid"]), stream=stream) as fs:
        r = side.run(variant, f"s{size}", size, up.pid, stream=stream, writer=opts, per_trigger=e)
    calls = front.control_plane_calls(stream=stream)
    steady_calls = fs.steady_calls_per_min()
    rate = window_rate(fs.samples)
    r.update(
        executors=e,
        shards=shards,
        link_bytes_per_s=link,
        kpl_rate_limit=rate_limit(per_shard),
        queue_limit=opts["queue_limit"],
        link_use=rate / link if rate else None,
        throttled=fs.throttled,
        throttled_share=fs.throttled / r["rows"],
        throttled_share_steady=fs.steady_throttled_share(r["rows"]),
        cpu_s_per_m_net=net_cpu(r, noop),
        cpu_s_per_m_steady=fs.steady_cpu_per_m(r["rows"], noop["cpu_s"]["executor_jvm"] / noop["rows"]),
        noop_cpu_s=noop["cpu_s"],
        control_plane=calls,
        executor_calls_per_executor=executor_calls(calls) / e,
        executor_calls_per_min=None if steady_calls is None else steady_calls / e,
        verify=verify(up, stream, r["rows"], 1, 0, size),
    )
    up.delete_stream(stream)
    say(
        f"  {variant:10s} e={e} {size:6d} B shards={shards:3d}: link {r['link_use'] or 0:6.1%} "
        f"CPU-s/M net {r['cpu_s_per_m_net']:7.1f}, steady {r['cpu_s_per_m_steady'] or 0:7.1f}  "
        f"{r['records_per_s']:>8,.0f} rec/s throttled={fs.throttled:,} ({r['throttled_share']:.2%}, "
        f"steady {r['throttled_share_steady'] or 0:.2%}) "
        f"failed={r['failed']} control plane {calls}, steady {r['executor_calls_per_min'] or 0:.2f} a minute each"
    )
    return dict(r)


def executor_calls(calls: dict[str, int], op: str = "") -> int:
    """The executors' calls (writers and daemons) among the front's counts by ``"<operation>/<caller>"``."""
    return sum(v for k, v in calls.items() if not k.endswith("/driver") and k.startswith(op))


def summarise(result: dict[str, Any], sm: dict[str, Any]) -> None:
    all_runs = result.get("scale_runs", [])
    runs = [r for r in all_runs if r.get("variant", "writer") == "writer"]
    kpl = {(r["payload"], r["shards"], r["executors"]): r for r in all_runs if r.get("variant") == "writer_kpl"}
    pairs = [(r, kpl[k]) for r in runs if (k := (r["payload"], r["shards"], r["executors"])) in kpl]
    if pairs:  # the writer against aggregation="kpl", configuration by configuration
        uses = [k["link_use"] for _, k in pairs if k["link_use"] is not None]
        sm["scale_kpl_agg_link_use_min"] = min(uses) if uses else None
        sm["scale_throttled"] = sum(w["throttled"] for w, _ in pairs)
        sm["scale_kpl_agg_throttled"] = sum(k["throttled"] for _, k in pairs)
        sm["scale_cpu_vs_kpl_agg"] = spread([w["cpu_s_per_m_net"] / k["cpu_s_per_m_net"] for w, k in pairs])

    def cpu(size: int, shards: int, e: int, key: str = "cpu_s_per_m_net") -> float | None:
        xs = [r[key] for r in runs if (r["payload"], r["shards"], r["executors"]) == (size, shards, e) and r.get(key)]
        return statistics.median(xs) if xs else None

    # Whole runs (what the machine-readable line reports), and their steady windows (no start, no tail).
    for key, out in (("cpu_s_per_m_net", "scale_cost_ratio"), ("cpu_s_per_m_steady", "scale_cost_ratio_steady")):
        a, b = cpu(100, SHARD_COUNTS[-1], 1, key), cpu(100, SHARD_COUNTS[0], 1, key)
        if a and b:
            sm[out] = a / b
    if runs:
        uses = [r["link_use"] for r in runs if r["link_use"] is not None]
        sm["scale_link_use_min"] = min(uses) if uses else None
        sm["scale_failed"] = sum(r["failed"] for r in runs)
        sm["scale_missing"] = sum(r["verify"]["missing"] for r in runs)
        for e in sorted({r["executors"] for r in runs}):  # throttled records over records written, all runs at e
            at_e = [r for r in runs if r["executors"] == e]
            sm[f"scale_throttled_share_e{e}"] = sum(r["throttled"] for r in at_e) / sum(r["rows"] for r in at_e)
            steady = [r["throttled_share_steady"] for r in at_e if r.get("throttled_share_steady") is not None]
            if steady:  # the same in the steady windows: the runs' median
                sm[f"scale_throttled_share_steady_e{e}"] = statistics.median(steady)
            counted = [r for r in at_e if "control_plane" in r]
            if counted:  # the executors' control-plane calls: per executor in a run, and a minute in the steady window
                each = [r["executor_calls_per_executor"] for r in counted]
                sm[f"scale_calls_per_executor_e{e}"] = statistics.median(each)
                per_min = [r["executor_calls_per_min"] for r in counted if r["executor_calls_per_min"] is not None]
                if per_min:
                    sm[f"scale_calls_per_executor_min_e{e}"] = statistics.median(per_min)
                dss = sum(executor_calls(r["control_plane"], "DescribeStreamSummary") for r in counted)
                sm[f"scale_executor_describe_calls_e{e}"] = dss
    free = result.get("scale_free_runs", [])
    one = [
        r["records_per_s"]
        for r in free
        if r["variant"] == "writer" and r["executors"] == 1 and r["shards"] == FREE_SHARDS
    ]
    two = [r["records_per_s"] for r in free if r["variant"] == "writer" and r["executors"] == 2]
    if one and two:
        sm["two_executors_vs_one"] = statistics.median(two) / statistics.median(one)

    def free_cpu(variant: str, shards: int, e: int = 1) -> float | None:
        xs = [r["cpu_s_per_m_net"] for r in free if (r["variant"], r["shards"], r["executors"]) == (variant, shards, e)]
        return statistics.median(xs) if xs else None

    a, b = free_cpu("writer", SHARD_COUNTS[-1]), free_cpu("writer", SHARD_COUNTS[0])
    if a and b:  # the same ratio without quotas: aggregation alone, no throttling
        sm["scale_cost_ratio_unthrottled"] = a / b
    one_cpu, two_cpu = free_cpu("writer", FREE_SHARDS), free_cpu("writer", FREE_SHARDS, 2)
    if one_cpu and two_cpu:
        sm["two_executors_cpu_vs_one"] = two_cpu / one_cpu
