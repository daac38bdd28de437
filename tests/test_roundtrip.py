"""Every row arrives, byte for byte, with its partition key (aggregation on and off; binary and string
data), explicit hash keys pick the shard, and a streamName column routes rows to streams."""

from __future__ import annotations

import pytest
from helpers import account, entries, payload, rows_for, run_available_now, shard_ranges, write_input
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import read_stream

N = 10_000
# Every round trip also runs on LocalStack (`make test-localstack`).
pytestmark = pytest.mark.localstack


@pytest.mark.e2e
@pytest.mark.parametrize(
    ("aggregation", "entry"),
    [
        pytest.param(True, "foreach", marks=pytest.mark.every_line),
        pytest.param(True, "format", marks=pytest.mark.every_line),
        (False, "foreach"),  # aggregation off is a KPL setting: one entry point is enough
    ],
    ids=["aggregated-foreach", "aggregated-format", "unaggregated-foreach"],
)
def test_round_trip_record_by_record(spark, kinesis, stream, tmp_path, aggregation, entry):
    # Unaggregated, every record is a Kinesis record, and the emulator's slowest path: fewer suffice.
    ids = range(N if aggregation else N // 4)
    write_input(tmp_path / "in", rows_for(ids, key=lambda i: f"user-{i % 97}-ключ"))
    writer = KinesisWriter(
        stream_name=stream, queue_limit=5_000, **kinesis.writer_options(AggregationEnabled=aggregation)
    )
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry=entry)

    records = read_stream(kinesis.client(), stream)
    d = account(ids, records)
    assert d.missing == [], f"{len(d.missing)} ids missing, first {d.missing[:10]}"
    for i in ids:
        r = d.by_id[i]
        assert r.data == payload(i), f"id {i}: bytes differ"
        assert r.partition_key == f"user-{i % 97}-ключ", f"id {i}: partition key {r.partition_key!r}"
    aggregated = sum(r.aggregated for r in records)
    if aggregation:
        assert aggregated > len(ids) // 2, "the KPL should aggregate most small records"
    else:
        assert aggregated == 0


@pytest.mark.e2e
@pytest.mark.parametrize("entry", entries(every_line="foreach"))
def test_explicit_hash_key_lands_on_its_shard(spark, kinesis, stream, tmp_path, entry):
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
        entry=entry,
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
@pytest.mark.parametrize("entry", entries(every_line="foreach"))
def test_stream_name_column_routes_rows(spark, kinesis, tmp_path, entry):
    even_stream, odd_stream = f"route-even-{entry}", f"route-odd-{entry}"
    kinesis.create_stream(even_stream, 2)
    kinesis.create_stream(odd_stream, 2)
    rows = rows_for(range(1000))
    for r in rows:
        r["stream"] = even_stream if r["id"] % 2 == 0 else odd_stream
    write_input(tmp_path / "in", rows, files=2)
    # No stream_name: every row names its stream.
    writer = KinesisWriter(**kinesis.writer_options())
    run_available_now(
        spark,
        tmp_path / "in",
        tmp_path / "ckpt",
        writer,
        entry=entry,
        select=lambda df: df.select(
            F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"), F.col("stream").alias("streamName")
        ),
    )
    even = account(range(0, 1000, 2), read_stream(kinesis.client(), even_stream))
    odd = account(range(1, 1000, 2), read_stream(kinesis.client(), odd_stream))
    assert even.missing == [] and odd.missing == []
    assert set(even.by_id) == set(range(0, 1000, 2)), "odd ids leaked into route-even"
    assert set(odd.by_id) == set(range(1, 1000, 2)), "even ids leaked into route-odd"


@pytest.mark.e2e
@pytest.mark.parametrize("entry", entries(every_line="foreach"))
def test_string_data_arrives_as_its_utf8_bytes(spark, kinesis, stream, tmp_path, entry):
    ids = range(500)
    text = {i: f"{i}:zażółć gęślą jaźń {'x' * (i % 50)}" for i in ids}
    write_input(tmp_path / "in", [{"id": i, "pk": f"k{i}", "b64": text[i]} for i in ids], files=2)
    writer = KinesisWriter(stream_name=stream, **kinesis.writer_options())
    run_available_now(
        spark,
        tmp_path / "in",
        tmp_path / "ckpt",
        writer,
        entry=entry,
        select=lambda df: df.select(F.col("pk").alias("partitionKey"), F.col("b64").alias("data")),
    )
    d = account(ids, read_stream(kinesis.client(), stream))
    assert d.missing == [] and d.duplicates == 0
    for i in ids:
        assert d.by_id[i].data == text[i].encode("utf-8"), f"id {i}: bytes differ"
        assert d.by_id[i].partition_key == f"k{i}"
