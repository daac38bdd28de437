"""A small queue_limit holds the records in flight (and so the KPL's queue) down while
a workload that outruns the emulator is written, and nothing is lost."""

from __future__ import annotations

import pytest
from helpers import account, entries, rows_for, run_available_now, sampled_while, sink_totals, wait_for, write_input
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import read_stream

QUEUE_LIMIT = 100


def _metric(spark, stream: str, name: str) -> float:
    """Metric ``name`` of the producer source ``kinesisProducer.<stream>`` in the driver JVM's Spark metrics system
    (what a sink such as the CsvSink reports): a gauge's value or a counter's count."""
    sources = spark._jvm.org.apache.spark.SparkEnv.get().metricsSystem().getSourcesByName(f"kinesisProducer.{stream}")
    total = 0.0
    for i in range(sources.size()):
        registry = sources.apply(i).metricRegistry()
        counter = registry.getCounters().get(name)
        total += counter.getCount() if counter is not None else registry.getGauges().get(name).getValue()
    return total


@pytest.mark.localstack
@pytest.mark.e2e
@pytest.mark.parametrize("entry", entries(every_line="foreach"))
def test_queue_limit_bounds_outstanding_records(spark, kinesis, stream, tmp_path, metrics_dir, entry):
    n = 1_000
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    # Aggregation off: every user record is its own Kinesis record, the emulator's slowest path, so
    # Spark produces far faster than Kinesis accepts (10x the limit here).
    writer = KinesisWriter(
        stream_name=stream,
        queue_limit=QUEUE_LIMIT,
        **kinesis.writer_options(AggregationEnabled=False, RecordMaxBufferedTime=50),
    )
    queries: list = []
    samples = sampled_while(
        lambda: tuple(_metric(spark, stream, m) for m in ("boundRecords", "boundFill", "backpressureCycles")),
        lambda: queries.append(run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry=entry)),
    )
    held = [records for records, _, _ in samples]
    assert len(samples) > 20, "the sampler should have observed the query"
    # Room is reserved atomically before each put: concurrent tasks never overshoot together. While a write is blocked
    # the bound's gauge reads the limit (the guide of docs/metrics.md reads it so), and its fill 1.0.
    assert max(held) == QUEUE_LIMIT, f"boundRecords peaked at {max(held)}, not queue_limit {QUEUE_LIMIT}"
    assert max(fill for _, fill, _ in samples) == 1.0
    cycles = max(c for _, _, c in samples)
    assert cycles > 0, "the writer must have blocked"
    d = account(range(n), read_stream(kinesis.client(), stream))
    assert d.missing == [], f"{len(d.missing)} missing"

    # The same counter reaches Spark's metrics system: the session's CsvSink writes the source
    # kinesisProducer.<stream> with both seed metrics; the driver-side totals agree.
    def csv_max(metric: str) -> int:
        best = -1
        for f in metrics_dir.glob(f"*.kinesisProducer.{stream}.{metric}.csv"):
            rows = f.read_text().splitlines()[1:]
            best = max([best, *(int(float(r.split(",")[1])) for r in rows if r)])
        return best

    wait_for(lambda: csv_max("backpressureCycles") > 0, 30, "backpressureCycles > 0 in the CsvSink")
    totals = writer.metrics() if entry == "foreach" else sink_totals(queries[0])
    assert totals["recordsSent"] == n and totals["backpressureCycles"] > 0 and totals["backpressureWaitMs"] > 0
    print(f"backpressure: boundRecords max={max(held)} limit={QUEUE_LIMIT} cycles={cycles:.0f}")


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
        lambda: _metric(spark, stream, "boundBytes"),
        lambda: run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer),
    )
    assert max(samples) > 0
    assert max(samples) <= max_bytes, f"outstanding bytes reached {max(samples)} > {max_bytes}"
    assert writer.metrics()["backpressureCycles"] > 0, "the byte bound must have blocked"
    assert account(range(n), read_stream(kinesis.client(), stream)).missing == []
    print(f"byte limit: max_outstanding_bytes={max(samples)} limit={max_bytes}")
