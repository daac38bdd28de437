"""make bench, part "tuning": each candidate KPL setting against the writer's defaults, one change at a time.

Every variant is the `foreach` writer with the writer's defaults plus one change; the variants alternate
(the order rotates every repetition) in one SparkSession on one backend, so their ratios to ``defaults``
come from neighbouring runs. Each variant writes to its own stream through its own pooled KPL daemon,
started by an unmeasured warm-up.

1. **Unthrottled** (the figure the CPU goal is about): 100-byte records, 8 shards of kinesalite over TLS,
   queue_limit=10000, as in part 1. CPU per record is the JVM's and the variant's daemon's, net of a
   ``noop`` run of the same rows in the same repetition.
2. **Behind shard quotas**: 1 KiB records into 4 shards behind the fault front at Kinesis's real quotas
   (1 MiB/s and 1,000 records/s per shard), where the KPL's own rate limit and its retries of throttled
   records come into play. Link use is the front's admitted bytes per second in the steady middle of the
   run (bench/scale.py's window).

The ``vDSO clock`` variant is an experiment, not a setting: the same KPL daemon started through a wrapper
that preloads bench/native/vdso_clock.c (built with the machine's C compiler; skipped without one), which
answers the daemon's clock reads from user space instead of a system call. It measures how much of the
daemon's cost is its release build's clock, a floor no KPL setting moves.

Every record of every variant's stream is read back afterwards (ids, bytes, keys).

Knobs: BENCH_TUNE_ROWS [300000], BENCH_TUNE_ROWS_LIMITED [40000], BENCH_REPS (shared, [3]).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any, Callable

import backends
import scale
from common import WARM_START, say, verify
from spark_kinesis_testkit import procs
from spark_kinesis_testkit.emulator import loopback_writer_options
from spark_kinesis_testkit.faults import FaultFront

HERE = Path(__file__).resolve().parent
ROWS = int(os.environ.get("BENCH_TUNE_ROWS", "300000"))
ROWS_LIMITED = int(os.environ.get("BENCH_TUNE_ROWS_LIMITED", "40000"))
SHARDS = 8
LIMITED_SHARDS = 4
LIMITED_PAYLOAD = 1024
WRITER = {"queue_limit": 10000, "producer_idle_timeout_ms": 3_600_000}
VDSO = "vDSO clock (experiment)"

# One change each against the writer's defaults (KplSettings.writerDefaults). None = the vDSO wrapper.
VARIANTS: dict[str, dict[str, Any] | None] = {
    "defaults": {},
    "defaults again (A/A control)": {},
    "ThreadingModel=POOLED": {"ThreadingModel": "POOLED"},
    "POOLED, ThreadPoolSize=8": {"ThreadingModel": "POOLED", "ThreadPoolSize": 8},
    "RecordMaxBufferedTime=250": {"RecordMaxBufferedTime": 250},
    "AggregationMaxSize=262144": {"AggregationMaxSize": 262144},
    "MaxConnections=4": {"MaxConnections": 4},
    "EnableOldestFutureTracker=true": {"EnableOldestFutureTracker": True},
    VDSO: None,
}
LIMITED_VARIANTS: dict[str, dict[str, Any]] = {
    "defaults": {},
    "RateLimit=150 (the KPL's default)": {"RateLimit": 150},
    "ThreadingModel=POOLED": {"ThreadingModel": "POOLED"},
}


def rotate(xs: list[str], k: int) -> list[str]:
    k %= len(xs)
    return xs[k:] + xs[:k]


def vdso_wrapper(daemon_pid: int, into: Path) -> str | None:
    """A script that starts the running daemon's binary with bench/native/vdso_clock.c preloaded, or None
    (no C compiler)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        say("  no C compiler: the vDSO clock experiment is skipped")
        return None
    lib = into / "vdso_clock.so"
    subprocess.run(
        [cc, "-O2", "-shared", "-fPIC", "-o", str(lib), str(HERE / "native" / "vdso_clock.c"), "-ldl"], check=True
    )
    binary = os.readlink(f"/proc/{daemon_pid}/exe")
    script = into / "kinesis_producer_vdso.sh"
    script.write_text(f'#!/bin/sh\nLD_PRELOAD="{lib}" exec "{binary}" "$@"\n')
    script.chmod(0o755)
    return str(script)


def net_cpu_per_m(r: dict[str, Any], noop: dict[str, Any]) -> float:
    """CPU-s per million records: the JVM and the variant's daemon, minus Spark's generation (noop)."""
    daemon = sum(r["daemon_cpu_s"].values())
    return float((r["cpu_s"]["jvm"] + daemon - noop["cpu_s"]["jvm"] * r["rows"] / noop["rows"]) / r["rows"] * 1e6)


def tuning(result: dict[str, Any], spark_side: Callable[..., Any], reps: int) -> None:
    say(f"tuning: {len(VARIANTS)} variants x {reps} repetitions, 100 B x {ROWS:,}, {SHARDS} shards, unthrottled")
    runs: list[dict[str, Any]] = []
    limited: list[dict[str, Any]] = []
    checks: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-tuning-") as tmp, spark_side() as side:
        with backends.Kinesalite() as b:
            side.call(cmd="input", name="tune", start=0, rows=ROWS, files=8)
            side.call(cmd="input", name="tune-warm", start=WARM_START, rows=ROWS // 10, files=2)
            base = {**b.endpoint_options(), **WRITER}
            options: dict[str, tuple[str, dict[str, Any]]] = {}
            for i, (name, kpl) in enumerate(VARIANTS.items()):
                stream = f"tune-{i}"
                b.create_stream(stream, SHARDS)
                if kpl is None:  # the daemon binary the defaults' warm-up started
                    daemons = [p for p in procs.tree(side.proc.pid).values() if p.comm.startswith(procs.KPL_COMM)]
                    wrapper = vdso_wrapper(daemons[0].pid, Path(tmp)) if daemons else None
                    if wrapper is None:
                        continue
                    kpl = {"NativeExecutable": wrapper}
                options[name] = (stream, {**base, "kpl": {**base["kpl"], **kpl}})
                side.run("writer", "tune-warm", 100, b.pid, stream=options[name][0], writer=options[name][1])
            for rep in range(reps):
                noop = side.run("noop", "tune", 100, b.pid)
                for name in rotate(list(options), rep):
                    r = side.run("writer", "tune", 100, b.pid, stream=options[name][0], writer=options[name][1])
                    r.update(name=name, rep=rep, cpu_s_per_m_net=net_cpu_per_m(r, noop), noop_cpu_s=noop["cpu_s"])
                    r["daemon_cpu_s_per_m"] = sum(r["daemon_cpu_s"].values()) / r["rows"] * 1e6
                    say(
                        f"  rep {rep} {name:32s} {r['records_per_s']:>9,.0f} rec/s  "
                        f"CPU-s/M net {r['cpu_s_per_m_net']:5.1f} (daemon {r['daemon_cpu_s_per_m']:4.1f})  "
                        f"failed={r['failed']}"
                    )
                    runs.append(r)
            for name, (stream, _) in options.items():
                checks[name] = verify(b, stream, ROWS, reps, ROWS // 10, 100)
        limited = behind_quotas(side, reps, checks)
    config = {"rows": ROWS, "shards": SHARDS, "rows_limited": ROWS_LIMITED, "limited_shards": LIMITED_SHARDS}
    result["tuning"] = {
        "runs": runs,
        "limited_runs": limited,
        "verify": checks,
        "variants": list(VARIANTS),
        "config": config,
    }


def behind_quotas(side: Any, reps: int, checks: dict[str, Any]) -> list[dict[str, Any]]:
    link = LIMITED_SHARDS * 1024 * 1024
    say(
        f"tuning behind shard quotas: {LIMITED_SHARDS} shards x (1 MiB/s, 1,000 records/s), "
        f"{LIMITED_PAYLOAD} B x {ROWS_LIMITED:,}"
    )
    out: list[dict[str, Any]] = []
    with backends.Kinesalite(tls=False) as up, FaultFront(up.url) as front:
        base = {**loopback_writer_options(front.endpoint, **backends.KPL_BASE), **WRITER}
        side.call(cmd="input", name="tune-lim", start=0, rows=ROWS_LIMITED, files=2)
        side.call(cmd="input", name="tune-lim-warm", start=WARM_START, rows=ROWS_LIMITED // 10, files=2)
        options: dict[str, tuple[str, dict[str, Any]]] = {}
        for i, (name, kpl) in enumerate(LIMITED_VARIANTS.items()):
            stream = f"tune-lim-{i}"
            up.create_stream(stream, LIMITED_SHARDS)
            options[name] = (stream, {**base, "kpl": {**base["kpl"], **kpl}})
        front.enforce_shard_limits(bytes_per_s=1024 * 1024, records_per_s=1000)
        for name in options:
            side.run(
                "writer", "tune-lim-warm", LIMITED_PAYLOAD, up.pid, stream=options[name][0], writer=options[name][1]
            )
        for rep in range(reps):
            noop = side.run("noop", "tune-lim", LIMITED_PAYLOAD, up.pid)
            for name in rotate(list(options), rep):
                with scale.FrontSampler(front) as fs:
                    r = side.run(
                        "writer", "tune-lim", LIMITED_PAYLOAD, up.pid, stream=options[name][0], writer=options[name][1]
                    )
                rate = scale.window_rate(fs.samples)
                r.update(
                    name=name,
                    rep=rep,
                    cpu_s_per_m_net=net_cpu_per_m(r, noop),
                    daemon_cpu_s_per_m=sum(r["daemon_cpu_s"].values()) / r["rows"] * 1e6,
                    link_use=rate / link if rate else None,
                    throttled=fs.throttled,
                )
                say(
                    f"  rep {rep} {name:28s} link {r['link_use'] or 0:6.1%}  CPU-s/M net {r['cpu_s_per_m_net']:6.1f}"
                    f"  throttled={fs.throttled:,} failed={r['failed']}"
                )
                out.append(r)
        for name, (stream, _) in options.items():
            checks[f"limited {name}"] = verify(up, stream, ROWS_LIMITED, reps, ROWS_LIMITED // 10, 1024)
    return out


def summarise(result: dict[str, Any], sm: dict[str, Any]) -> None:
    t = result.get("tuning")
    if not t:
        return

    def table(runs: list[dict[str, Any]], keys: tuple[str, ...]) -> dict[str, Any]:
        base = {r["rep"]: r for r in runs if r["name"] == "defaults"}
        out: dict[str, Any] = {}
        for name in dict.fromkeys(r["name"] for r in runs):
            mine = [r for r in runs if r["name"] == name]
            row: dict[str, Any] = {k: statistics.median(r[k] for r in mine if r.get(k) is not None) for k in keys}
            paired = [(r, base[r["rep"]]) for r in mine if r["rep"] in base]
            if paired and name != "defaults":
                cpu = [a["cpu_s_per_m_net"] / d["cpu_s_per_m_net"] for a, d in paired]
                row["cpu_vs_defaults"] = statistics.median(cpu)
                row["rate_vs_defaults"] = statistics.median(a["records_per_s"] / d["records_per_s"] for a, d in paired)
            row["n"] = len(mine)
            out[name] = row
        return out

    sm["tuning"] = table(t["runs"], ("cpu_s_per_m_net", "daemon_cpu_s_per_m", "records_per_s"))
    if t["limited_runs"]:
        keys = ("cpu_s_per_m_net", "daemon_cpu_s_per_m", "records_per_s", "link_use", "throttled")
        sm["tuning_limited"] = table(t["limited_runs"], keys)
