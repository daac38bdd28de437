"""A small queue_limit holds the records in flight (and so the KPL's queue) down while
a workload that outruns the emulator is written, and nothing is lost."""

from __future__ import annotations

import pytest
from helpers import account, entries, rows_for, run_available_now, sampled_while, sink_totals, wait_for, write_input
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import producer_snapshot, read_stream

pytestmark = pytest.mark.spark35_leg  # line-independent: the bounds kept below both entry points

QUEUE_LIMIT = 100


def csv_max(metrics_dir, stream: str, metric: str) -> float:
    """The highest value the session's CsvSink (a row a second) wrote for ``kinesisProducer.<stream>.<metric>``."""
    best = -1.0
    for f in metrics_dir.glob(f"*.kinesisProducer.{stream}.{metric}.csv"):
        rows = f.read_text().splitlines()[1:]
        best = max([best, *(float(r.split(",")[1]) for r in rows if r)])
    return best


@pytest.mark.localstack
@pytest.mark.e2e
@pytest.mark.parametrize("entry", entries(variant="foreach"))
def test_queue_limit_bounds_outstanding_records(spark, kinesis, stream, tmp_path, metrics_dir, entry):
    n = 4_000
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    # Aggregation off: every user record is its own Kinesis record, the emulator's slowest path, so
    # Spark produces far faster than Kinesis accepts (40x the limit here: seconds blocked).
    writer = KinesisWriter(
        stream_name=stream,
        queue_limit=QUEUE_LIMIT,
        **kinesis.writer_options(AggregationEnabled=False, RecordMaxBufferedTime=50),
    )
    q = run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry=entry)
    d = account(range(n), read_stream(kinesis.client(), stream))
    assert d.missing == [], f"{len(d.missing)} missing"

    # What Spark's metrics system reports (the session's CsvSink, a row a second, of the source
    # kinesisProducer.<stream>): while the write blocked, the bound's gauge read queue_limit and its fill 1.0 (what
    # docs/metrics.md's guide reads), never more (room is reserved atomically before each put: concurrent tasks never
    # overshoot together); the driver-side totals say it blocked too.
    wait_for(lambda: csv_max(metrics_dir, stream, "backpressureCycles") > 0, 30, "backpressureCycles in the CsvSink")
    held, fill = csv_max(metrics_dir, stream, "boundRecords"), csv_max(metrics_dir, stream, "boundFill")
    assert held == QUEUE_LIMIT and fill == 1.0, f"boundRecords peaked at {held}, boundFill at {fill}"
    totals = writer.metrics() if entry == "foreach" else sink_totals(q)
    assert totals["recordsSent"] == n and totals["backpressureCycles"] > 0 and totals["backpressureWaitMs"] > 0
    print(f"backpressure: boundRecords max={held:.0f} limit={QUEUE_LIMIT} boundFill max={fill}")


@pytest.mark.e2e
def test_max_outstanding_bytes_bounds_bytes_in_flight(spark, kinesis, stream, tmp_path):
    n = 1_500
    max_bytes = 20_000  # ~150 records of ~130 bytes
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    writer = KinesisWriter(
        stream_name=stream,
        queue_limit=100_000,  # only the byte bound can block here
        max_outstanding_bytes=max_bytes,
        **kinesis.writer_options(AggregationEnabled=False, RecordMaxBufferedTime=50),
    )

    samples = sampled_while(
        lambda: sum(p.outstanding_bytes for p in producer_snapshot(spark) if p.source.endswith(f".{stream}")),
        lambda: run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer),
    )
    assert max(samples) > 0
    assert max(samples) <= max_bytes, f"outstanding bytes reached {max(samples)} > {max_bytes}"
    assert writer.metrics()["backpressureCycles"] > 0, "the byte bound must have blocked"
    assert account(range(n), read_stream(kinesis.client(), stream)).missing == []
    print(f"byte limit: max_outstanding_bytes={max(samples)} limit={max_bytes}")
