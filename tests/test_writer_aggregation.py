"""aggregation='writer': the writer packs user records into KPL-format aggregates per shard, before the daemon.

The daemon then gets one record per aggregate (its own aggregation on with AggregationMaxCount=1), so any aggregated
record read back was built by the writer. Every test reads back KCL-style (``shard_aware=True``: a sub-record whose hash
key lies outside the shard it was read from is dropped, as the KCL's deaggregation drops it), and accounts record by
record.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import (
    account,
    entries,
    payload,
    rows_for,
    run_available_now,
    shard_ranges,
    start_per_file,
    write_input,
)
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import hash_key, loopback_writer_options, read_stream
from spark_kinesis_testkit.faults import FaultFront


def writer_for(endpoint: str, stream: str, **kpl: Any) -> KinesisWriter:
    return KinesisWriter(stream_name=stream, aggregation="writer", **loopback_writer_options(endpoint, **kpl))


def assert_placed_by_key(client: Any, stream: str, records: list[Any]) -> None:
    """Each record was read from a shard whose range holds its hash key (explicit, else its key's MD5)."""
    ranges = {sid: (first, last) for sid, first, last in shard_ranges(client, stream)}
    outside = [
        r
        for r in records
        if not ranges[r.shard_id][0] <= hash_key(r.partition_key, r.explicit_hash_key) <= ranges[r.shard_id][1]
    ]
    assert outside == [], f"{len(outside)} records outside their shard, e.g. {outside[:3]}"


@pytest.mark.e2e
@pytest.mark.parametrize("entry", entries(every_line="foreach"))
def test_writer_aggregates_place_every_record_in_the_shard_its_key_names(spark, kinesis, stream, tmp_path, entry):
    n = 20000
    rng = random.Random(7)
    rows = rows_for(range(n), key=lambda i: f"user-{i % 997}")
    for r in rows[::3]:  # every third row names its place by an explicit hash key instead
        r["ehk"] = str(rng.getrandbits(128))
    write_input(tmp_path / "in", rows, files=4)

    def select(df: Any) -> Any:
        return df.select(
            F.col("pk").alias("partitionKey"), F.col("ehk").alias("explicitHashKey"), F.unbase64("b64").alias("data")
        )

    writer = writer_for(kinesis.tls_endpoint, stream)
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry=entry, select=select)
    client = kinesis.client()
    everything = read_stream(client, stream)
    records = read_stream(client, stream, shard_aware=True)
    assert len(records) == len(everything), f"a KCL reader drops {len(everything) - len(records)} records"
    d = account(range(n), records)
    assert d.missing == [] and d.duplicates == 0
    assert all(r.data == payload(i) for i, r in d.by_id.items())
    assert all(r.explicit_hash_key == rows[i].get("ehk") for i, r in d.by_id.items())
    assert all(r.aggregated for r in records), "every record in a writer-built aggregate"
    assert_placed_by_key(client, stream, records)


@pytest.mark.e2e
def test_streams_split_and_merged_mid_query_lose_nothing(spark, kinesis, stream, tmp_path):
    """A split and a merge while aggregates are in flight: aggregates built for a closed parent land in a child; the
    writer reads the map again and re-sends the records outside the shard they landed in. Duplicates are allowed."""
    n, files = 16000, 16
    write_input(tmp_path / "in", rows_for(range(n), key=lambda i: f"user-{i}"), files=files)
    writer = writer_for(kinesis.tls_endpoint, stream, RecordMaxBufferedTime=200)
    client = kinesis.client()
    q = start_per_file(spark, tmp_path / "in", tmp_path / "ckpt", writer, "500 milliseconds")

    def rows_in() -> int:
        return sum(p["numInputRows"] for p in q.recentProgress)

    def active() -> None:
        deadline = time.monotonic() + 60
        while client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamStatus"] != "ACTIVE":
            assert time.monotonic() < deadline, "stream not ACTIVE again"
            time.sleep(0.05)

    done: list[str] = []
    try:
        deadline = time.monotonic() + 300
        while rows_in() < n:
            assert q.exception() is None, q.exception()
            assert time.monotonic() < deadline, f"{rows_in()} of {n} rows"
            if not done and rows_in() >= 3 * n // files:
                sid, first, last = shard_ranges(client, stream)[0]
                client.split_shard(StreamName=stream, ShardToSplit=sid, NewStartingHashKey=str((first + last) // 2))
                active()
                done.append("split")
            elif done == ["split"] and rows_in() >= 8 * n // files:
                open_shards = client.list_shards(StreamName=stream, ShardFilter={"Type": "AT_LATEST"})["Shards"]
                a, b = open_shards[-2]["ShardId"], open_shards[-1]["ShardId"]
                client.merge_shards(StreamName=stream, ShardToMerge=a, AdjacentShardToMerge=b)
                active()
                done.append("merge")
            time.sleep(0.05)
        q.processAllAvailable()
    finally:
        q.stop()
    assert done == ["split", "merge"]
    records = read_stream(client, stream, shard_aware=True)
    d = account(range(n), records)
    assert d.missing == [], f"{len(d.missing)} missing, e.g. {d.missing[:10]}"
    assert all(r.data == payload(i) for i, r in d.by_id.items())
    assert_placed_by_key(client, stream, records)


@pytest.fixture
def front(kinesis) -> Iterator[FaultFront]:
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as f:
        yield f


@pytest.mark.e2e
def test_auto_stream_gets_no_writer_aggregates(spark, kinesis, front, stream, tmp_path):
    """The writer reads RecordDistributionStrategy itself (DescribeStreamSummary, through the fault front, which knows
    it): on an AUTO stream every record goes alone."""
    front.set_distribution_strategy(stream, "AUTO")
    n = 2000
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer_for(front.endpoint, stream))
    records = read_stream(kinesis.client(), stream, shard_aware=True)
    d = account(range(n), records)
    assert d.missing == [] and d.duplicates == 0
    stats = front.stats()
    assert stats["aggregated_on_auto"] == 0 and not any(r.aggregated for r in records), stats
