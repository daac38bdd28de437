"""Acceptance 3: every row arrives, byte for byte, with its partition key (aggregation on and off),
explicit hash keys pick the shard, and a streamName column routes rows to streams."""

from __future__ import annotations

import pytest
from helpers import account, payload, rows_for, run_available_now, shard_ranges, write_input
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis.testing import read_stream

N = 10_000


@pytest.mark.e2e
@pytest.mark.parametrize("aggregation", [True, False], ids=["aggregated", "unaggregated"])
def test_round_trip_record_by_record(spark, kinesis, stream, tmp_path, aggregation):
    ids = range(N)
    write_input(tmp_path / "in", rows_for(ids, key=lambda i: f"user-{i % 97}-ключ"))
    writer = KinesisWriter(
        stream_name=stream, queue_limit=5_000, **kinesis.writer_options(AggregationEnabled=aggregation)
    )
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer)

    records = read_stream(kinesis.client(), stream)
    d = account(ids, records)
    assert d.missing == [], f"{len(d.missing)} ids missing, first {d.missing[:10]}"
    for i in ids:
        r = d.by_id[i]
        assert r.data == payload(i), f"id {i}: bytes differ"
        assert r.partition_key == f"user-{i % 97}-ключ", f"id {i}: partition key {r.partition_key!r}"
    aggregated = sum(r.aggregated for r in records)
    if aggregation:
        assert aggregated > N // 2, "the KPL should aggregate most small records"
    else:
        assert aggregated == 0


@pytest.mark.e2e
def test_explicit_hash_key_lands_on_its_shard(spark, kinesis, stream, tmp_path):
    client = kinesis.client()
    ranges = shard_ranges(client, stream)
    assert len(ranges) == 4
    # Aim each row at one shard: its hash key is that shard's range start + id.
    target = {i: ranges[i % 4] for i in range(400)}
    rows = rows_for(range(400))
    for r in rows:
        r["ehk"] = str(target[r["id"]][1] + r["id"])
    write_input(tmp_path / "in", rows, files=2)
    writer = KinesisWriter(stream_name=stream, **kinesis.writer_options())
    run_available_now(
        spark,
        tmp_path / "in",
        tmp_path / "ckpt",
        writer,
        select=lambda df: df.select(
            F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"), F.col("ehk").alias("explicitHashKey")
        ),
    )
    d = account(range(400), read_stream(client, stream))
    assert d.missing == []
    for i, (shard_id, _, _) in target.items():
        assert d.by_id[i].shard_id == shard_id, f"id {i} landed on {d.by_id[i].shard_id}, expected {shard_id}"
    assert len({r.shard_id for r in d.by_id.values()}) == 4


@pytest.mark.e2e
def test_stream_name_column_routes_rows(spark, kinesis, tmp_path):
    kinesis.create_stream("route-even", 2)
    kinesis.create_stream("route-odd", 2)
    rows = rows_for(range(1000))
    for r in rows:
        r["stream"] = "route-even" if r["id"] % 2 == 0 else "route-odd"
    write_input(tmp_path / "in", rows, files=2)
    # No stream_name: every row names its stream.
    writer = KinesisWriter(**kinesis.writer_options())
    run_available_now(
        spark,
        tmp_path / "in",
        tmp_path / "ckpt",
        writer,
        select=lambda df: df.select(
            F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"), F.col("stream").alias("streamName")
        ),
    )
    even = account(range(0, 1000, 2), read_stream(kinesis.client(), "route-even"))
    odd = account(range(1, 1000, 2), read_stream(kinesis.client(), "route-odd"))
    assert even.missing == [] and odd.missing == []
    assert set(even.by_id) == set(range(0, 1000, 2)), "odd ids leaked into route-even"
    assert set(odd.by_id) == set(range(1, 1000, 2)), "even ids leaked into route-odd"
