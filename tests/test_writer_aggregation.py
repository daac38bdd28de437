"""aggregation='writer': the writer packs user records into KPL-format aggregates per shard, before the daemon.

The daemon then gets one record per aggregate (its own aggregation off), so any aggregated
record read back was built by the writer. Every test reads back as a KCL consumer does (the KCL's own deaggregation,
``read_stream_kcl``), and accounts record by record. Resharding: tests/test_resharding.py.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from helpers import account, entries, payload, rows_for, run_available_now, shard_ranges, write_input
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.billing import PUT_UNIT_BYTES, Bill
from spark_kinesis_testkit.emulator import hash_key, read_stream
from spark_kinesis_testkit.faults import FaultFront
from spark_kinesis_testkit.kcl import read_stream_kcl

pytestmark = pytest.mark.spark35_leg  # line-independent: the aggregates made below both entry points


def writer_for(kinesis: Any, stream: str, endpoint: str | None = None) -> KinesisWriter:
    return KinesisWriter(stream_name=stream, aggregation="writer", **kinesis.writer_options(endpoint))


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
@pytest.mark.parametrize("entry", entries(variant="foreach"))
def test_writer_aggregates_place_every_record_in_the_shard_its_key_names(spark, kinesis, kcl, stream, tmp_path, entry):
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

    writer = writer_for(kinesis, stream)
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry=entry, select=select)
    client = kinesis.client()
    everything = read_stream(client, stream)
    records = read_stream_kcl(client, stream, kcl)
    assert len(records) == len(everything), f"a KCL consumer drops {len(everything) - len(records)} records"
    d = account(range(n), records)
    assert d.missing == [] and d.duplicates == 0
    assert all(r.data == payload(i) for i, r in d.by_id.items())
    assert all(r.explicit_hash_key == rows[i].get("ehk") for i, r in d.by_id.items())
    assert all(r.aggregated for r in records), "every record in a writer-built aggregate"
    assert_placed_by_key(client, stream, records)


@pytest.mark.e2e
def test_aggregates_of_10_kib_records_fill_their_put_units(spark, kinesis, kcl, stream, tmp_path):
    """Records of 10 KiB, a key each, faster than aggregates close: each aggregate grows past two PUT units to close
    where its last unit is full (before, four records closed at the KPL's 51,200 bytes, billed two units for 41 KB:
    1.25x the floor, their bytes in units). Billed from the stream as AWS counts it, read back whole by the KCL."""
    n, size = 1000, 10240
    # One task: the commit's last aggregate of each shard is the only one closed where it stands.
    write_input(tmp_path / "in", rows_for(range(n), key=lambda i: f"user-{i}"), files=1)

    def select(df: Any) -> Any:
        padded = F.concat(F.unbase64("b64"), F.expr(f"unhex(repeat('78', {size} - length(unbase64(b64))))"))
        return df.select(F.col("pk").alias("partitionKey"), padded.alias("data"))

    # An idle shard waits a second for more (gather_ms), an aggregate lingers two: records come faster than aggregates
    # close however loaded the machine (with the defaults, a loaded make test closed them early by the idle rule: 62
    # aggregates, 1.069x). What is tested is where an aggregate closes, not how fast this machine writes.
    options = kinesis.writer_options(RecordMaxBufferedTime=2000)
    writer = KinesisWriter(stream_name=stream, aggregation="writer", gather_ms=1000, **options)
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, select=select)
    client = kinesis.client()
    records = read_stream_kcl(client, stream, kcl)
    d = account(range(n), records)
    assert d.missing == [] and d.duplicates == 0 and all(r.aggregated for r in records)
    assert all(r.data == payload(i) + b"x" * (size - len(payload(i))) for i, r in d.by_id.items())
    bill = Bill.of_stream(client, stream)
    over = bill.put_units / (bill.user_bytes / PUT_UNIT_BYTES)
    assert bill.user_records == n and over <= 1.05, f"{bill.put_units} PUT units, {over:.3f}x the floor"
    assert bill.kinesis_records < n / 10, f"{bill.kinesis_records} aggregates: not past two units"


@pytest.fixture
def front(kinesis) -> Iterator[FaultFront]:
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as f:
        yield f


@pytest.mark.e2e
def test_auto_stream_gets_no_writer_aggregates(spark, kinesis, kcl, front, stream, tmp_path):
    """The writer reads RecordDistributionStrategy itself (DescribeStreamSummary, through the fault front, which knows
    it): on an AUTO stream every record goes alone."""
    front.set_distribution_strategy(stream, "AUTO")
    n = 2000
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer_for(kinesis, stream, front.endpoint))
    records = read_stream_kcl(kinesis.client(), stream, kcl)
    d = account(range(n), records)
    assert d.missing == [] and d.duplicates == 0
    stats = front.stats()
    assert stats["aggregated_on_auto"] == 0 and not any(r.aggregated for r in records), stats
