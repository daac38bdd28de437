"""Per-key order (``ordered``, ``order_by``): a key's records reach every reader in the order one task wrote them,
through throttling, per-record failures and HTTP 500s at once, read back in shard order by a plain reader and by the
KCL's own code (docs/reliability.md, "Per-key order"). The same write without the option shows what it fixes."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import UserRecord, read_stream
from spark_kinesis_testkit.faults import FaultFront
from spark_kinesis_testkit.kcl import read_stream_kcl
from spark_kinesis_testkit.ordering import Order, order_of

TASKS, KEYS_PER_TASK, PER_KEY = 4, 50, 200  # 40,000 records: each task owns 50 keys, 200 records each


@pytest.fixture
def front(kinesis) -> Iterator[FaultFront]:
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}", seed=3) as f:
        yield f


def body(key: str, seq: int) -> bytes:
    return f"{key}:{seq}:".encode() + b"x" * 40


def key_and_seq(r: UserRecord) -> tuple[str, int]:
    key, seq, _ = r.data.decode().split(":")
    assert key == r.partition_key and r.data == body(key, int(seq)), r  # bytes and key as written
    return key, int(seq)


def rows_by_task() -> list[tuple[str, int, bytes]]:
    """Task p's slice holds its own keys, interleaved, each key's records in order (``parallelize`` keeps slices)."""
    return [
        (f"k{p}-{j}", seq, body(f"k{p}-{j}", seq))
        for p in range(TASKS)
        for seq in range(PER_KEY)
        for j in range(KEYS_PER_TASK)
    ]


def write_through_faults(
    spark: Any, kinesis: Any, front: FaultFront, stream: str, rows: list[Any], **opts: Any
) -> None:
    df = spark.createDataFrame(spark.sparkContext.parallelize(rows, TASKS), "partitionKey string, seq int, data binary")
    options = KinesisWriter(stream_name=stream, **kinesis.writer_options(front.endpoint), **opts).options()
    df.write.format("kinesis").options(**options).mode("append").save()


def read_both(kinesis: Any, kcl: Any, stream: str) -> tuple[Order, Order]:
    client = kinesis.client()
    plain, by_kcl = read_stream(client, stream), read_stream_kcl(client, stream, kcl)
    n = TASKS * KEYS_PER_TASK * PER_KEY
    for records in (plain, by_kcl):
        got = {key_and_seq(r) for r in records}
        assert len(got) == n, f"{n - len(got)} of {n} records missing"
    return order_of(plain, key_and_seq), order_of(by_kcl, key_and_seq)


def faults_on(front: FaultFront) -> None:
    # Shards a tenth of what the writer believes (it learns from the throttles), 3 % of requests answered 500 and 3 %
    # of the records of the rest failed with InternalFailure (the KPL retries both).
    front.enforce_shard_limits(bytes_per_s=100_000, records_per_s=1000)
    front.fail_requests(0.03, mode="both")


def assert_faults_happened(front: FaultFront) -> dict[str, int]:
    stats = front.stats()
    assert stats["throttled_records"] > 0 and stats["http500"] > 0 and stats["failed_records"] > 0, stats
    return stats


@pytest.mark.e2e
def test_order_by_keeps_each_keys_order_through_throttles_failures_and_500s(spark, kinesis, kcl, front, stream):
    """format('kinesis') with order_by: Spark clusters the shuffled rows by key and sorts them by seq; the writer keeps
    that order through every fault at once."""
    rows = rows_by_task()
    random.Random(11).shuffle(rows)  # no task's input is in order: the sort Spark is asked for puts it so
    faults_on(front)
    write_through_faults(spark, kinesis, front, stream, rows, order_by="seq")
    stats = assert_faults_happened(front)
    plain, by_kcl = read_both(kinesis, kcl, stream)
    print(f"\nordered: {stats}; plain reader {plain}; KCL {by_kcl}")
    assert plain.inversions == 0, plain
    assert by_kcl.inversions == 0, by_kcl


def write_files(directory: Path, rows: list[tuple[str, int, bytes]], files: int) -> None:
    directory.mkdir()
    for f in range(files):
        lines = (json.dumps({"pk": k, "seq": q, "data": d.decode()}) for k, q, d in rows[f::files])
        (directory / f"part-{f}.json").write_text("\n".join(lines) + "\n")


def stream_once(spark: Any, directory: Path, checkpoint: Path, attach: Any) -> None:
    df = spark.readStream.schema("pk string, seq int, data string").json(str(directory))
    q = attach(df.select(F.col("pk").alias("partitionKey"), "seq", "data").writeStream)
    q = q.option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start()
    assert q.awaitTermination(300), "the query did not finish within 300 s"
    assert q.exception() is None, q.exception()


@pytest.mark.e2e
@pytest.mark.parametrize("entry", [pytest.param("format", marks=pytest.mark.every_line), "foreach"])
def test_a_streaming_query_keeps_each_keys_order(spark, kinesis, kcl, front, stream, tmp_path, entry):
    """A micro-batch query, the same faults. format('kinesis') with order_by sorts shuffled input files (Spark sorts a
    streaming write's rows for the sink; a query itself may not sort a stream). foreach(ordered=True) keeps the order
    each task reads: here each file holds its own keys in order, as a source partitioned by key would."""
    write = tmp_path / "in"
    options = kinesis.writer_options(front.endpoint)
    if entry == "format":
        rows = rows_by_task()
        random.Random(13).shuffle(rows)
        write_files(write, rows, files=4)
        opts = KinesisWriter(stream_name=stream, order_by="seq", **options).options()
        attach = lambda w: w.format("kinesis").options(**opts)  # noqa: E731
    else:
        rows = rows_by_task()  # task p's keys, each key's records in order: file p holds them in that order
        write_files(write, [r for p in range(TASKS) for r in rows if r[0].startswith(f"k{p}-")], files=1)
        writer = KinesisWriter(stream_name=stream, ordered=True, **options)
        attach = lambda w: w.foreach(writer)  # noqa: E731
    faults_on(front)
    stream_once(spark, write, tmp_path / "ckpt", attach)
    stats = assert_faults_happened(front)
    plain, by_kcl = read_both(kinesis, kcl, stream)
    print(f"\n{entry}, streaming: {stats}; plain reader {plain}; KCL {by_kcl}")
    assert plain.inversions == 0, plain
    assert by_kcl.inversions == 0, by_kcl


@pytest.mark.faults  # make test-extended: it shows the tests above can fail; they guard the promise in make test
@pytest.mark.e2e
def test_without_ordered_the_same_faults_reorder_keys(spark, kinesis, kcl, front, stream):
    """The control: each task's input already in order, the option off, the same faults: a reader meets records of a
    key after later ones (so the test above can fail)."""
    faults_on(front)
    write_through_faults(spark, kinesis, front, stream, rows_by_task())
    stats = assert_faults_happened(front)
    plain, by_kcl = read_both(kinesis, kcl, stream)
    print(f"\nunordered: {stats}; plain reader {plain}; KCL {by_kcl}")
    assert plain.inversions > 0 and by_kcl.inversions > 0, (plain, by_kcl)
