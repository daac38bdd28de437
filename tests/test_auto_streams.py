"""Streams whose RecordDistributionStrategy is AUTO (Kinesis places each record; aggregates are not supported there).

Neither emulator knows the strategy: the fault front reports it in DescribeStreamSummary, places each record written to
an AUTO stream at random as Kinesis does, and counts aggregated records that reach one. The KPL asks the stream on its
first record and re-asks every DescribeStreamSummaryIntervalMs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from helpers import (
    account,
    entries,
    payload,
    rows_for,
    run_available_now,
    session_jars,
    start_per_file,
    write_input,
)
from probe import run_probe
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_writer_options, read_stream
from spark_kinesis_testkit.faults import FaultFront
from spark_kinesis_testkit.kcl import read_stream_kcl


@pytest.fixture
def front(kinesis) -> Iterator[FaultFront]:
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as f:
        yield f


def keys_half_null(df):  # type: ignore[no-untyped-def]
    """Every other row without a partition key (null), the rest with one: both are fine on an AUTO stream."""
    return df.select(F.when(F.col("id") % 2 == 0, F.col("pk")).alias("partitionKey"), F.unbase64("b64").alias("data"))


@pytest.mark.e2e
@pytest.mark.parametrize("entry", entries(variant="foreach"))
def test_auto_stream_gets_every_record_and_no_aggregate(spark, kinesis, kcl, front, stream, tmp_path, entry):
    front.set_distribution_strategy(stream, "AUTO")
    n = 3000
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    writer = KinesisWriter(stream_name=stream, partitioner="none", **kinesis.writer_options(front.endpoint))
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry=entry, select=keys_half_null)
    records = read_stream_kcl(kinesis.client(), stream, kcl)
    d = account(range(n), records)
    assert d.missing == [] and d.duplicates == 0
    assert all(r.data == payload(i) for i, r in d.by_id.items())
    stats = front.stats()
    assert stats["aggregated_on_auto"] == 0 and not any(r.aggregated for r in records), stats
    assert stats["placed_on_auto"] >= n, stats  # every record went through the AUTO stream's own placement


@pytest.mark.e2e
def test_stream_switched_to_auto_mid_query_loses_nothing(spark, kinesis, kcl, front, stream, tmp_path):
    """Aggregates go out while the stream places by key; after the switch, until the writer has asked again, an
    aggregate lands on a random shard, where a KCL consumer drops it whole: the writer re-sends all its records, and
    reads the stream's strategy again (records then go alone). Read back by the KCL's own code: nothing is lost."""
    n, files = 8000, 8
    write_input(tmp_path / "in", rows_for(range(n), key=lambda i: f"user-{i}"), files=files)
    kpl = {"DescribeStreamSummaryIntervalMs": 1000, "RecordMaxBufferedTime": 200}
    writer = KinesisWriter(stream_name=stream, **loopback_writer_options(front.endpoint, **kpl))
    q = start_per_file(spark, tmp_path / "in", tmp_path / "ckpt", writer, "1 second")
    try:
        deadline = time.monotonic() + 300
        switched = False
        while sum(p["numInputRows"] for p in q.recentProgress) < n:
            assert q.exception() is None, q.exception()
            assert time.monotonic() < deadline, f"{sum(p['numInputRows'] for p in q.recentProgress)} of {n} rows"
            if not switched and sum(p["numInputRows"] for p in q.recentProgress) >= 2 * n // files:
                front.set_distribution_strategy(stream, "AUTO")
                switched = True
            time.sleep(0.1)
        q.processAllAvailable()
    finally:
        q.stop()
    assert switched
    records = read_stream_kcl(kinesis.client(), stream, kcl)
    d = account(range(n), records)
    assert d.missing == [], f"{len(d.missing)} missing, e.g. {d.missing[:10]}"
    assert any(r.aggregated for r in records), "the KPL aggregated before the switch"
    assert front.stats()["placed_on_auto"] > 0


@pytest.mark.e2e
@pytest.mark.spark35_leg
def test_missing_describe_stream_summary_permission_is_a_warning_naming_it(kinesis, stream, tmp_path):
    """Without kinesis:DescribeStreamSummary the KPL cannot tell the strategy: records still go out (alone, then
    aggregated as before), and the log says which permission is missing."""
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as front:
        front.deny("DescribeStreamSummary")
        cfg = {
            "jars": session_jars(),
            "secrets": {},
            "cases": [
                {"name": "denied", "stream": stream, "options": loopback_writer_options(front.endpoint), "n": 500}
            ],
        }
        result = run_probe("credentials_probe.py", cfg, tmp_path, timeout_s=300)
    case = result.said["CASE"]
    assert (case["name"], case["status"]) == ("denied", "OK"), case
    d = account(range(500), read_stream(kinesis.client(), stream))
    assert d.missing == []
    warnings = [line for line in result.jvm_log.splitlines() if " WARN " in line]
    assert any("kinesis:DescribeStreamSummary" in line for line in warnings), "\n".join(warnings[-20:])
