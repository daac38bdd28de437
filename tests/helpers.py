"""Test helpers: exact input sets, queries that end by themselves, record-by-record checks."""

from __future__ import annotations

import base64
import contextlib
import filecmp
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
import spark_kinesis
from spark_kinesis._platforms import Platform, platforms
from spark_kinesis_testkit.emulator import UserRecord

ROOT = Path(__file__).resolve().parents[1]


def _here() -> Platform:
    machine = platform.machine().replace("arm64", "aarch64")
    return next(p for p in platforms() if p.folder == ("osx" if sys.platform == "darwin" else f"linux-{machine}"))


#: This machine's platform: its daemon in the bundle, its wheel (tools/release.py builds one per platform).
HERE = _here()


def session_jars() -> str:
    """The jars for the installed pyspark's Spark line (``spark.jars`` form), as bundled by ``make jar``;
    ``SPARK_KINESIS_JARS`` overrides. Stops the run if sbt built a jar that differs from its bundled copy."""
    override = os.environ.get("SPARK_KINESIS_JARS")
    if override:
        return override
    jars = spark_kinesis.jar_paths()
    for jar in map(Path, jars):
        for built in [*ROOT.glob(f"jvm/kpl/target/{jar.name}"), *ROOT.glob(f"jvm/lines/*/target/scala-*/{jar.name}")]:
            if built.stat().st_mtime > jar.stat().st_mtime + 1 and not filecmp.cmp(built, jar, shallow=False):
                pytest.exit(f"the bundled {jar} is older than {built}: run `make jar`", returncode=3)
    return ",".join(jars)


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


#: The two ways a streaming query reaches the writer: the ForeachWriter, and the `kinesis` DataSource V2 sink.
ENTRIES = ["foreach", "format"]


def entries(every_line: str | None = None, variant: str | None = None) -> list[Any]:
    """ENTRIES as pytest params; `every_line` names the one the Spark 3.5 leg runs too, `variant` the one left to
    `make test-extended` (both entries share the task writer below them; `make test` runs the scenario once)."""
    marks = {every_line: pytest.mark.every_line, variant: pytest.mark.variant}
    return [pytest.param(e, marks=marks[e]) if e in marks else e for e in ENTRIES]


def attach(stream_writer: Any, writer: Any, entry: str) -> Any:
    """``foreach(writer)``, or ``format("kinesis")`` with the same options."""
    if entry == "foreach":
        return stream_writer.foreach(writer)
    return stream_writer.format("kinesis").options(**writer.options())


def sink_totals(query: Any) -> dict[str, int]:
    """The `kinesis` sink's totals as the query's last progress reports them."""
    return {k: int(v) for k, v in query.lastProgress["sink"]["metrics"].items()}


def file_stream(spark: Any, source_dir: Path, select: Callable[[Any], Any] | None = None) -> Any:
    """`write_input`'s files as a stream, one file per micro-batch: `partitionKey` and `data`, or `select`'s."""
    from pyspark.sql import functions as F

    df = (
        spark.readStream.schema("id LONG, pk STRING, b64 STRING, stream STRING, ehk STRING")
        .option("maxFilesPerTrigger", 1)
        .json(str(source_dir))
    )
    if select is None:
        return df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    return select(df)


def start_per_file(
    spark: Any, source_dir: Path, checkpoint: Path, writer: Any, every: str, entry: str = "foreach"
) -> Any:
    """Starts `file_stream` through `writer` (attached by `entry`) on a processing-time trigger of `every`: a query
    that keeps running, taking each file added to `source_dir` in a batch of its own."""
    return (
        attach(file_stream(spark, source_dir).writeStream, writer, entry)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=every)
        .start()
    )


def run_available_now(
    spark: Any,
    source_dir: Path,
    checkpoint: Path,
    writer: Any,
    select: Callable[[Any], Any] | None = None,
    timeout_s: float = 600,
    entry: str = "foreach",
) -> Any:
    """Stream every input file once (availableNow) through `writer` attached by `entry`; returns the finished query."""
    df = file_stream(spark, source_dir, select)
    q = attach(df.writeStream, writer, entry).option("checkpointLocation", str(checkpoint))
    q = q.trigger(availableNow=True).start()
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


#: (sent, delivered) of each read-back a test accounted for; conftest's read_back fixture puts them in the junit report.
READ_BACKS: list[tuple[int, int]] = []


def account(expected_ids: Iterable[int], records: list[UserRecord]) -> Delivery:
    expected = set(expected_ids)
    by_id: dict[int, UserRecord] = {}
    dups = 0
    for r in records:
        i = id_of(r.data)
        if i in by_id:
            dups += 1
        by_id[i] = r
    d = Delivery(len(expected), len(set(by_id) & expected), sorted(expected - set(by_id)), dups, by_id)
    READ_BACKS.append((d.sent, d.delivered))
    return d


def poll(what: str, check: Callable[[], Any], timeout_s: float = 90.0, step_s: float = 0.05) -> Any:
    """``check()``'s first truthy value, polled every ``step_s``; TimeoutError naming ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s}s waiting for {what}")
        time.sleep(step_s)


def wait_for(cond: Callable[[], bool], timeout_s: float, what: str, step_s: float = 0.05) -> None:
    poll(what, cond, timeout_s, step_s)


def live_producer(spark: Any, stream: str) -> Any:
    """The driver JVM's one live producer for ``stream`` (a ProducerSample), or None."""
    from spark_kinesis_testkit.emulator import producer_snapshot

    live = [p for p in producer_snapshot(spark) if p.source.endswith(f".{stream}")]
    return live[0] if len(live) == 1 else None


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


#: A JVM log line as a probe's JVM log has it (tests/probe.py), and the loggers that are ours (the writer's, the KPL's).
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d [\d:,.]+ (?P<level>[A-Z]+) (?P<logger>\S+): (?P<msg>.*)$")
OURS = ("io.github.sparkkinesis",)  # the KPL's loggers too: its classes are relocated under it (docs/bundle.md)


@contextlib.contextmanager
def fresh_stream(kinesis: Any, base: str) -> Iterator[str]:
    """A fresh 4-shard stream named after ``base`` (kinesis-mock slows down as shards fill), deleted after it."""
    name = f"t-{re.sub(r'[^A-Za-z0-9.-]+', '-', base)[:40]}-{uuid.uuid4().hex[:6]}"
    kinesis.create_stream(name, 4)
    try:
        yield name
    finally:
        try:
            kinesis.client().delete_stream(StreamName=name, EnforceConsumerDeletion=True)
        except Exception:  # the emulator may be gone (a probe's) or the stream already deleted: nothing to free
            pass


def log_parts(log: str, logger: str) -> dict[str, str]:
    """``log`` cut where ``logger`` logs: each of its messages to the lines after it, up to its next message."""
    parts: dict[str, str] = {}
    current = None
    for line in log.splitlines(keepends=True):
        m = LOG_LINE.match(line.rstrip("\n"))
        if m and m["logger"] == logger:
            current = m["msg"]
            parts[current] = ""
        elif current is not None:
            parts[current] += line
    return parts


def assert_quiet_interruption(log: str, what: str) -> list[Any]:
    """The stop guard's rules for a write interrupted by ``what``: no ERROR from the writer's loggers or the KPL's,
    no writer failure, and the interrupted task's writer closed uncommitted. Returns the log's parsed lines."""
    lines = [m for m in map(LOG_LINE.match, log.splitlines()) if m]
    assert any(m["logger"].startswith("io.github.sparkkinesis") for m in lines), "the writer's INFO lines are missing"
    ours = [m.group(0) for m in lines if m["level"] == "ERROR" and m["logger"].startswith(OURS)]
    assert not ours, f"the writer or the KPL logged an ERROR when {what}: {ours}"
    assert "KinesisWriteException" not in log, f"{what} surfaced as a writer failure"
    assert re.search(r"KinesisTaskWriter aborted partition=\d+", log), f"the writer did not close when {what}"
    return lines


@contextlib.contextmanager
def mounted(kind: str, options: str, where: Path) -> Iterator[Path]:
    """A tmpfs mounted at ``where`` with ``options`` (needs root and mount rights: skip otherwise)."""
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"{options},size=256m", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a {kind} tmpfs here: {done.stderr.decode().strip()[:200]}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", str(where)], check=True)  # lazy: a JVM may still hold a file there


def read_only(where: Path) -> Any:
    """A directory no process here may write to: a read-only tmpfs for root (which writes through permission bits),
    else mode 555."""
    if os.geteuid() == 0:
        return mounted("read-only", "ro", where)
    where.mkdir(mode=0o555)
    return contextlib.nullcontext(where)


def csv_last(metrics_dir: Path, stream: str, metric: str, executor: str = "*") -> dict[str, float]:
    """Last value per executor id of `kinesisProducer.<stream>.<metric>` in a CsvSink directory."""
    out: dict[str, float] = {}
    for f in metrics_dir.glob(f"*.{executor}.kinesisProducer.{stream}.{metric}.csv"):
        rows = [r for r in f.read_text().splitlines()[1:] if r]
        if rows:
            executor_id = f.name.split(".kinesisProducer.")[0].rsplit(".", 1)[-1]
            out[executor_id] = float(rows[-1].split(",")[1])
    return out


def csv_total(metrics_dir: Path, stream: str, metric: str) -> float:
    return sum(csv_last(metrics_dir, stream, metric).values())
