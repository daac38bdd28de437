"""The README examples run as written: every ```python block of README.md and python/README.md writes to the
embedded Kinesis, and each record it sends is read back, record by record (data bytes and partition key).

The blocks of one README run in file order in one namespace, as a reader runs them (a block may use what an
earlier one of the same README defined), in this process: the examples' ``getOrCreate()`` returns the test
session (the test checks it did), so they run on loopback with the freshly built jars. The test changes
the text of a block in these three ways only (no line is added or removed, so tracebacks name README lines):

- the connection: ``region="..."`` (a ``KinesisWriter`` argument) becomes ``**EMULATOR``, the emulator's
  ``KinesisWriter`` arguments (its endpoint and region, static fake keys, the TLS certificate check off: it is
  self-signed; no CloudWatch upload; KPL timeouts for a slow emulator), and ``.option("region", "...")`` (the
  ``format("kinesis")`` form) becomes ``.options(**EMULATOR_OPTIONS)``, the same as ``format("kinesis")``
  options. A block with neither fails: it would write to AWS;
- the storage: ``s3://my-bucket/`` becomes a temporary local directory, where the test first writes the JSON-lines
  files the examples read (``orders/``, ``events/``); their checkpoints go there too;
- Kafka: ``"broker-1:9092"`` becomes the session's real Kafka broker (the ``kafka`` fixture), where the test first
  creates the topic a block subscribes to (``orders``: one partition) and produces its input rows, keyed as the
  stream's partition keys, each row's JSON as the value.

A block that leaves a query running (a real-time query never ends by itself) is stopped once its stream holds what
it expects, or at the block's deadline.

Before a block runs, the stream it writes to is created fresh (4 shards); after it, the stream must hold exactly
what the block sent: every input row, as many times as the block writes it (``EXPECTED``), and nothing else. A
README python block this table does not list fails the test: a new example needs its expected output here.
"""

from __future__ import annotations

import json
import re
import textwrap
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pytest
from helpers import ROOT
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import read_stream
from spark_kinesis_testkit.kafka import connector_jars


def _orders() -> list[dict[str, Any]]:
    # Field order = the examples' schema order (to_json keeps it); amounts are exact in binary and < 1e7, so
    # Python's and Spark's float formatting agree and the expected bytes are exact.
    return [{"order_id": i, "customer_id": 1000 + i % 37, "amount": i * 1.25} for i in range(300)]


def _events() -> list[dict[str, Any]]:
    return [{"event_id": i, "user_id": f"u-{i % 13}", "action": ("view", "click", "buy")[i % 3]} for i in range(300)]


@dataclass(frozen=True)
class Input:
    """A directory of JSON-lines files under the bucket, and how each row appears in Kinesis."""

    directory: str
    rows: Callable[[], list[dict[str, Any]]]
    partition_key: Callable[[dict[str, Any]], str]


INPUTS = {
    "orders": Input("orders", _orders, lambda r: str(r["customer_id"])),
    "events": Input("events", _events, lambda r: r["user_id"]),
}

#: (README, index of its python block) -> (stream the block writes to, times it writes each input row).
EXPECTED: dict[tuple[str, int], tuple[str, int]] = {
    ("README.md", 0): ("orders", 1),  # foreach(KinesisWriter), streaming
    ("README.md", 1): ("orders", 2),  # format("kinesis"): streaming, then batch
    ("README.md", 2): ("orders", 1),  # Kafka -> foreach(KinesisWriter) in real-time mode, left running
    ("python/README.md", 0): ("events", 1),  # foreach(KinesisWriter), streaming
}

BUCKET = "s3://my-bucket/"
KAFKA = '"broker-1:9092"'
#: The connection substitutions: (pattern, replacement).
CONNECTION = [
    (re.compile(r'\bregion="[^"]*"'), "**EMULATOR"),
    (re.compile(r'\.option\("region", "[^"]*"\)'), ".options(**EMULATOR_OPTIONS)"),
]
#: A block that hangs (a query that never ends) is stopped after this, and fails.
BLOCK_DEADLINE_S = 180


@dataclass(frozen=True)
class Block:
    line: int  # 1-based line of the block's first code line in its README
    code: str  # dedented (blocks in list items are indented)


def python_blocks(readme: Path) -> list[Block]:
    """The ```python fenced blocks of a Markdown file, in order."""
    lines = readme.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        m = re.fullmatch(r"(\s*)```python\s*", lines[i])
        if m is None:
            i += 1
            continue
        indent, start = m.group(1), i + 1
        end = start
        while end < len(lines) and lines[end].rstrip() != f"{indent}```":
            end += 1
        assert end < len(lines), f"{readme}:{i + 1}: unterminated ```python block"
        blocks.append(Block(start + 1, textwrap.dedent("\n".join(lines[start:end]))))
        i = end + 1
    return blocks


def substitute(code: str, bucket: Path, kafka: str) -> tuple[str, int]:
    """The block's code with the connection, storage and Kafka substitutions; how many connection ones applied."""
    applied = 0
    for pattern, replacement in CONNECTION:
        code, n = pattern.subn(replacement, code)
        applied += n
    return code.replace(BUCKET, bucket.as_uri() + "/").replace(KAFKA, repr(kafka)), applied


def expected_records(inp: Input) -> Counter[tuple[str, bytes]]:
    """(partition key, data) of each input row, as the examples send them: data = to_json of the row."""
    return Counter((inp.partition_key(r), json.dumps(r, separators=(",", ":")).encode()) for r in inp.rows())


def stop_queries(spark: Any) -> None:
    for q in spark.streams.active:
        q.stop()


def run_with_deadline(spark: Any, compiled: Any, namespace: dict[str, Any], done: Callable[[], bool]) -> bool:
    """Runs a block; False if it was still running at BLOCK_DEADLINE_S, when its queries are stopped (so an
    ``awaitTermination()`` returns). Queries the block leaves running are stopped once ``done()`` (its stream holds
    what it expects), or at the deadline."""
    expired = threading.Event()

    def expire() -> None:
        expired.set()
        stop_queries(spark)

    watchdog = threading.Timer(BLOCK_DEADLINE_S, expire)
    watchdog.start()
    try:
        exec(compiled, namespace)
        while spark.streams.active and not expired.is_set() and not done():
            time.sleep(0.5)
    finally:
        watchdog.cancel()
        stop_queries(spark)
    return not expired.is_set()


#: The README's first example: its first two blocks, `foreach(KinesisWriter)` and `format("kinesis")`, streaming and
#: batch. It runs on every release of the Makefile's LINES_PYSPARK: the Spark 3.5 leg's here (`every_line`; the Spark 4
#: leg runs README.md whole), the others in `make test-lines`.
FIRST_EXAMPLE = 2


@pytest.mark.e2e
@pytest.mark.parametrize(
    "readme,first",
    [
        pytest.param("README.md", False, id="README.md"),
        pytest.param("python/README.md", False, id="python/README.md"),
        pytest.param(
            "README.md", True, marks=[pytest.mark.lines, pytest.mark.every_line], id="README.md-first-example"
        ),
    ],
)
def test_readme_examples_run_as_written(spark, kinesis, tmp_path, readme, first, request):
    blocks = python_blocks(ROOT / readme)
    listed = sorted(i for name, i in EXPECTED if name == readme)
    assert listed == list(range(len(blocks))), (
        f"{readme} has {len(blocks)} python blocks; EXPECTED lists {listed}: give each block its expected output"
    )
    if first:
        blocks = blocks[:FIRST_EXAMPLE]
    bucket = tmp_path / "my-bucket"
    for name, inp in INPUTS.items():
        rows = inp.rows()
        (bucket / name).mkdir(parents=True)
        for part in range(2):  # two files: the stream reads them as any landing directory
            lines = [json.dumps(r) + "\n" for r in rows[part::2]]
            (bucket / name / f"part-{part}.json").write_text("".join(lines))

    emulator = kinesis.writer_options()
    namespace: dict[str, Any] = {
        "__name__": "__readme__",
        "EMULATOR": emulator,
        "EMULATOR_OPTIONS": KinesisWriter(**emulator).options(),
    }
    client = kinesis.client()
    for index, block in enumerate(blocks):
        stream, times = EXPECTED[(readme, index)]
        where = f"{readme}:{block.line} (python block {index})"
        if KAFKA in block.code:
            connector_jars()  # the session has Spark's Kafka connector only if `make kafka` fetched it: say so
        kafka = request.getfixturevalue("kafka") if KAFKA in block.code else None
        code, connections = substitute(block.code, bucket, kafka.bootstrap if kafka else "")
        assert connections > 0, f"{where}: no region=... to point at the emulator; it would write to AWS"
        kinesis.create_stream(stream, 4)
        want = Counter({k: n * times for k, n in expected_records(INPUTS[stream]).items()})
        if kafka is not None:
            kafka.create_topic(stream, partitions=1)
            kafka.produce(stream, [(pk.encode(), data) for pk, data in want.elements()])
        # Line numbers as in the README, so a traceback points at the example's line.
        compiled = compile("\n" * (block.line - 1) + code, str(ROOT / readme), "exec")
        total = sum(want.values())
        finished = run_with_deadline(
            spark, compiled, namespace, lambda s=stream, n=total: len(read_stream(client, s)) >= n
        )
        assert finished, f"{where}: still running after {BLOCK_DEADLINE_S}s (a query that never ends?)"
        assert namespace.get("spark") is spark, f"{where}: the example did not get the test session"

        records = read_stream(client, stream)
        client.delete_stream(StreamName=stream, EnforceConsumerDeletion=True)
        got = Counter((r.partition_key, r.data) for r in records)
        missing, extra = want - got, got - want
        assert not missing and not extra, (
            f"{where}: {len(records)} records in {stream!r}, want {sum(want.values())}; "
            f"missing {sum(missing.values())} (first {list(missing)[:3]}), unexpected {sum(extra.values())} "
            f"(first {list(extra)[:3]})"
        )
