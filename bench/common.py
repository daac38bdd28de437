"""What every part of make bench shares: its log line, the warm-up ids, and the record-by-record read-back."""

from __future__ import annotations

import statistics
from typing import Any

import backends
from spark_kinesis_testkit.kcl import KclDeaggregator, read_stream_kcl

WARM_START = 10**12  # warm-up ids never collide with measured ones
#: The record sizes the parts write, as the docs and charts name them.
SIZES = {100: "100 B", 1024: "1 KiB", 4096: "4 KiB", 10240: "10 KiB", 20480: "20 KiB", 102400: "100 KiB"}


def say(msg: str) -> None:
    print(f"bench: {msg}", flush=True)


def verify(
    b: backends.Kinesalite, stream: str, rows: int, reps: int, warm_rows: int, payload: int, keyed: bool = True
) -> dict[str, Any]:
    """Every measured id (0..rows-1) came back ``reps`` times, and each warm-up id (from WARM_START) at least once,
    as a KCL consumer gets them (the KCL's own deaggregation, `make kcl`), with the bytes BareKplLoop and the
    Spark side both generate (the id, zero-padded, then 'x's); ``keyed``: the partition key is the id
    (``partitioner="fixed"`` sets its own)."""
    counts: dict[int, int] = {}
    bad = 0
    with KclDeaggregator() as kcl:
        records = read_stream_kcl(b.client(), stream, kcl)
    for r in records:
        i = int(r.data[:20])
        if r.data != f"{i:020d}".encode() + b"x" * (payload - 20) or (keyed and r.partition_key != str(i)):
            bad += 1
        counts[i] = counts.get(i, 0) + 1
    missing = sum(1 for i in range(rows) if counts.get(i, 0) < reps)
    warm_missing = sum(1 for i in range(WARM_START, WARM_START + warm_rows) if i not in counts)
    dups = sum(c - reps for i, c in counts.items() if i < WARM_START and c > reps)
    out = {"records": sum(counts.values()), "missing": missing + warm_missing, "duplicates": dups, "bad_bytes": bad}
    say(f"  {stream}: {out}")
    return out


def pct(xs: list[float], p: float) -> float:
    """The ``p``-th percentile of ``xs``, nearest rank."""
    s = sorted(xs)
    return s[min(len(s) - 1, int(p / 100 * len(s)))]


def spread(xs: list[float]) -> dict[str, float]:
    """The median of ``xs`` with its range and count: how every ratio and figure of make bench is reported."""
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs)}
