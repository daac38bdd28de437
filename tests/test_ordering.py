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
from helpers import entries, wait_for
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import UserRecord, producer_snapshot, read_stream
from spark_kinesis_testkit.faults import FaultFront
from spark_kinesis_testkit.kcl import read_stream_kcl
from spark_kinesis_testkit.ordering import Order, order_of

pytestmark = pytest.mark.spark35_leg  # line-independent: the order kept below both entry points

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
@pytest.mark.parametrize("entry", entries())
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


RESHARD_KEYS, PER_KEY_STEP = 100, 12  # a step: 1,200 records, 12 of each key


def write_step_file(directory: Path, step: int) -> None:
    """Step ``step``: each key's next PER_KEY_STEP records, shuffled (the sink's sort puts each key's in order)."""
    rows = [
        (f"k{j}", seq, body(f"k{j}", seq))
        for j in range(RESHARD_KEYS)
        for seq in range(step * PER_KEY_STEP, (step + 1) * PER_KEY_STEP)
    ]
    random.Random(step).shuffle(rows)
    tmp = directory / f".part-{step:03d}.tmp"
    tmp.write_text("".join(json.dumps({"pk": k, "seq": q, "data": d.decode()}) + "\n" for k, q, d in rows))
    tmp.rename(directory / f"part-{step:03d}.json")  # whole, or not seen by the file source


@pytest.mark.e2e
def test_reshards_racing_every_map_keep_each_keys_order(spark, kinesis, kcl, front, stream, tmp_path):
    """A split, a merge, UpdateShardCount up and down while a query writes with order_by, each with every producer's
    shard map held from before it (as tests/test_resharding.py): aggregates built for a parent land in a child not
    holding all of their records, and the new map's shards must not get a key's later records before its earlier ones
    are where they belong. Read back parents before children by both readers: no record of a key after a later one."""
    from test_resharding import EVENTS, open_shards, race_every_reshard

    source = tmp_path / "in"
    source.mkdir()
    client = kinesis.client()
    opts = KinesisWriter(
        stream_name=stream, order_by="seq", **kinesis.writer_options(front.endpoint, RecordMaxBufferedTime=200)
    ).options()
    write_step_file(source, 0)
    df = spark.readStream.schema("pk string, seq int, data string").option("maxFilesPerTrigger", 1).json(str(source))
    q = (
        df.select(F.col("pk").alias("partitionKey"), "seq", "data")
        .writeStream.format("kinesis")
        .options(**opts)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    per_step = RESHARD_KEYS * PER_KEY_STEP

    def rows_in() -> int:
        assert q.exception() is None, q.exception()
        return sum(p["numInputRows"] for p in q.recentProgress)

    try:
        wait_for(lambda: rows_in() >= per_step, 120, "the first step written (the producers have read the map)")
        held = race_every_reshard(
            front,
            client,
            stream,
            lambda step: write_step_file(source, step),
            lambda before: front.stats()["held_records"] > before["held_records"],
            lambda step: rows_in() >= (step + 1) * per_step,
        )
        q.processAllAvailable()
    finally:
        front.release_shard_maps(stream)
        q.stop()
    producer = next(p for p in producer_snapshot(spark) if p.source.endswith(f".{stream}"))
    # The race happened: records went out by a lagging map at every step, and aggregates landed where not built for.
    assert len(open_shards(client, stream)) == 4 and all(n > 0 for n in held.values()), (held, front.stats())
    assert producer.misplaced_aggregates > 0 and producer.resent_records > 0, producer
    n = (len(EVENTS) + 1) * per_step
    plain, by_kcl = read_stream(client, stream), read_stream_kcl(client, stream, kcl)
    for records in (plain, by_kcl):
        assert len({key_and_seq(r) for r in records}) == n, "records missing"
    orders = order_of(plain, key_and_seq), order_of(by_kcl, key_and_seq)
    print(f"\nreshards, ordered: held={held} {producer}; plain reader {orders[0]}; KCL {orders[1]}")
    assert orders[0].inversions == 0 and orders[1].inversions == 0, orders
