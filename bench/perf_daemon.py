"""Where the KPL daemon's CPU goes: ``perf record`` (DWARF call graphs) on the daemon of a running bare KPL
loop, each sample put in one bucket by the first of these frames on its stack.

Used by bench/run.py (``profile.kpl_daemon`` in the result; skipped where ``perf`` is missing or not
permitted). By hand, on any running daemon: ``python bench/perf_daemon.py <daemon pid> [seconds]``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from typing import Any

from spark_kinesis_testkit import procs

# (bucket, frames that put a sample in it): the first bucket whose frame is on the stack wins.
BUCKETS: list[tuple[str, tuple[str, ...]]] = [
    ("per-record metrics (Retrier::emit_metrics, Metric::put)", ("emit_metrics", "Metric::put", "MetricsFinder")),
    ("records in: IPC read and parse, UserRecord, aggregation", ("on_ipc_message", "on_put_record", "IpcReader")),
    (
        "results out: per-record result, shard check, IPC write",
        ("Retrier::", "finish_user_record", "IpcWriter", "to_put_record_result"),
    ),
    ("PutRecords: JSON, base64, SigV4, TLS, HTTP", ("PutRecords", "curl", "SSL", "Aws::Client", "Base64", "Sha256")),
    ("batching and limits: reducers, collector, limiter, timers", ("Reducer", "Collector", "Limiter", "SteadyTimer")),
]
OTHER = "other (idle loops, kernel, start-up)"
# Counted across the buckets: a frame anywhere on the stack.
ACROSS = {
    "clock reads (steady_clock::now is a clock_gettime system call in the KPL's build)": (
        "steady_clock::now",
        "clock_gettime",
    ),
    "malloc and free": ("malloc", "_int_free", "cfree", "operator new", "operator delete"),
    # What two upstream changes would take away: no per-record metrics at MetricsLevel=none, and a vDSO clock.
    "per-record metrics or clock reads": ("emit_metrics", "Metric::put", "MetricsFinder", "steady_clock::now"),
}


def available() -> bool:
    if shutil.which("perf") is None:
        return False
    probe = subprocess.run(["perf", "record", "-o", os.devnull, "--", "true"], capture_output=True)
    return probe.returncode == 0


def record(pid: int, seconds: float, out: str) -> None:
    sampling = ["-F", "499", "--call-graph", "dwarf,16384"]
    subprocess.run(
        ["perf", "record", *sampling, "-p", str(pid), "-o", out, "--", "sleep", str(seconds)],
        capture_output=True,
        check=True,
    )


def buckets(data: str) -> dict[str, Any]:
    """Shares of samples per bucket (they add up to 1) and across them."""
    script = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], capture_output=True, text=True).stdout
    stacks = [s for s in script.split("\n\n") if s.strip()]
    shares: Counter[str] = Counter()
    across: Counter[str] = Counter()
    for s in stacks:
        frames = s
        bucket = next((name for name, keys in BUCKETS if any(k in frames for k in keys)), OTHER)
        shares[bucket] += 1
        for name, keys in ACROSS.items():
            if any(k in frames for k in keys):
                across[name] += 1
    n = max(1, len(stacks))
    return {
        "samples": len(stacks),
        "buckets": {k: round(v / n, 3) for k, v in shares.most_common()},
        "across": {k: round(v / n, 3) for k, v in across.items()},
    }


def during(parent: int, warmup_s: float, seconds: float) -> tuple[threading.Thread, dict[str, Any]]:
    """Starts a thread that waits for a new KPL daemon below ``parent`` (one that was not there at the call), lets it
    warm up, records it and fills the returned dict with :func:`buckets` (or ``{"error": ...}``). Join the thread
    after the workload."""
    out: dict[str, Any] = {}
    before = set(procs.kpl_daemons(parent))

    def run() -> None:
        deadline = time.monotonic() + 120
        pid = None
        while pid is None and time.monotonic() < deadline:
            new = [d for d in procs.kpl_daemons(parent) if d not in before]
            pid = new[0] if new else None
            if pid is None:
                time.sleep(0.1)
        if pid is None:
            out["error"] = "no KPL daemon appeared"
            return
        time.sleep(warmup_s)
        with tempfile.TemporaryDirectory() as tmp:
            try:
                record(pid, seconds, f"{tmp}/perf.data")
                out.update(buckets(f"{tmp}/perf.data"))
            except subprocess.CalledProcessError as e:
                out["error"] = f"perf failed: {e.stderr[-300:]!r}"

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t, out


if __name__ == "__main__":
    pid, secs = int(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 6.0
    with tempfile.TemporaryDirectory() as tmp:
        record(pid, secs, f"{tmp}/perf.data")
        r = buckets(f"{tmp}/perf.data")
    for k, v in {**r["buckets"], **r["across"]}.items():
        print(f"{100 * v:5.1f} %  {k}")
