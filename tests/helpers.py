"""Test helpers: exact input sets, queries that end by themselves, record-by-record checks."""

from __future__ import annotations

import base64
import hashlib
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from spark_kinesis.testing import UserRecord


def payload(i: int) -> bytes:
    """Unique, non-UTF-8, variable-length bytes that start with the id."""
    digest = hashlib.sha256(str(i).encode()).digest()
    return f"{i}:".encode() + digest * (1 + i % 4) + bytes([0, 255, i % 256])


def id_of(data: bytes) -> int:
    return int(data.split(b":", 1)[0])


def write_input(directory: Path, rows: Iterable[dict[str, Any]], files: int = 4) -> None:
    """JSON-lines input split over `files` files (each file becomes one micro-batch)."""
    rows = list(rows)
    directory.mkdir(parents=True, exist_ok=True)
    for f in range(files):
        with open(directory / f"part-{f:03d}.json", "w") as fh:
            for r in rows[f::files]:
                fh.write(json.dumps(r) + "\n")


def rows_for(ids: Iterable[int], key: Callable[[int], str] = lambda i: f"user-{i % 97}") -> list[dict[str, Any]]:
    return [{"id": i, "pk": key(i), "b64": base64.b64encode(payload(i)).decode()} for i in ids]


def run_available_now(
    spark: Any,
    source_dir: Path,
    checkpoint: Path,
    writer: Any,
    select: Callable[[Any], Any] | None = None,
    timeout_s: float = 600,
) -> Any:
    """Stream every input file once (availableNow) through `writer`; returns the finished query."""
    from pyspark.sql import functions as F

    df = (
        spark.readStream.schema("id LONG, pk STRING, b64 STRING, stream STRING, ehk STRING")
        .option("maxFilesPerTrigger", 1)
        .json(str(source_dir))
    )
    if select is None:
        df = df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    else:
        df = select(df)
    q = df.writeStream.foreach(writer).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    finished = q.awaitTermination(timeout_s)
    if not finished:
        q.stop()
        raise TimeoutError(f"query did not finish within {timeout_s}s")
    return q


@dataclass
class Delivery:
    sent: int
    delivered: int
    missing: list[int]
    duplicates: int
    by_id: dict[int, UserRecord]


def account(expected_ids: Iterable[int], records: list[UserRecord]) -> Delivery:
    expected = set(expected_ids)
    by_id: dict[int, UserRecord] = {}
    dups = 0
    for r in records:
        i = id_of(r.data)
        if i in by_id:
            dups += 1
        by_id[i] = r
    return Delivery(len(expected), len(set(by_id) & expected), sorted(expected - set(by_id)), dups, by_id)


def wait_for(cond: Callable[[], bool], timeout_s: float, what: str, step_s: float = 0.05) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(step_s)


def shard_ranges(client: Any, stream: str) -> list[tuple[str, int, int]]:
    shards = client.list_shards(StreamName=stream)["Shards"]
    return [
        (s["ShardId"], int(s["HashKeyRange"]["StartingHashKey"]), int(s["HashKeyRange"]["EndingHashKey"]))
        for s in shards
    ]


def sampled_while(probe: Callable[[], int], action: Callable[[], Any], every_s: float = 0.005) -> list[int]:
    """Runs `action` while another thread records `probe()` every `every_s`; returns the samples."""
    import threading

    samples: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(probe())
            time.sleep(every_s)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        action()
    finally:
        stop.set()
        sampler.join(10)
    return samples
