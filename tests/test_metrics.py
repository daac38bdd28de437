"""The writer's metrics reach Spark's metrics sinks per executor and per stream, and the
driver-side totals (accumulators, `writer.metrics()`) add up to what was read back."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest
from helpers import (
    account,
    csv_last,
    csv_total,
    payload,
    read_only,
    rows_for,
    run_available_now,
    session_jars,
    wait_for,
    write_input,
)
from probe import Probe
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import producer_snapshot, read_stream
from spark_kinesis_testkit.faults import FaultFront

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.e2e
@pytest.mark.every_line
def test_sink_reports_records_and_bytes_without_backpressure(spark, kinesis, stream, tmp_path, metrics_dir):
    n = 2_000
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    writer = KinesisWriter(stream_name=stream, queue_limit=100_000, **kinesis.writer_options())
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer)
    payload_bytes = sum(len(payload(i)) for i in range(n))

    wait_for(lambda: csv_total(metrics_dir, stream, "recordsSent") == n, 30, f"recordsSent={n} in the CsvSink")
    wait_for(lambda: csv_total(metrics_dir, stream, "bytesSent") == payload_bytes, 30, "bytesSent = payload total")
    assert csv_total(metrics_dir, stream, "backpressureCycles") == 0, "a big queue_limit never blocks"
    assert csv_total(metrics_dir, stream, "recordsFailed") == 0
    assert metrics_dir.glob(f"*.kinesisProducer.{stream}.putLatency.csv"), "latency histogram reported"
    totals = writer.metrics()
    assert totals == {
        "recordsSent": n,
        "recordsFailed": 0,
        "bytesSent": payload_bytes,
        "backpressureCycles": 0,
        "backpressureWaitMs": 0,
        # The driver read the stream (its check's DescribeStreamSummary, the first layout's ListShards) and shipped it:
        # the executors' writers read nothing (docs/configuration.md, "Large fleets").
        "controlPlaneCalls": 0,
        "controlPlaneThrottles": 0,
        "driverControlPlaneCalls": 2,
        "driverControlPlaneThrottles": 0,
    }
    assert account(range(n), read_stream(kinesis.client(), stream)).missing == []


@pytest.mark.e2e
def test_two_writers_report_separately(spark, kinesis, tmp_path, metrics_dir):
    sizes = {"metrics-a": 300, "metrics-b": 700}
    writers, errors = {}, []

    def run(name: str, n: int) -> None:
        try:
            kinesis.create_stream(name, 2)
            write_input(tmp_path / name / "in", rows_for(range(n)), files=2)
            writers[name] = KinesisWriter(stream_name=name, **kinesis.writer_options())
            run_available_now(spark, tmp_path / name / "in", tmp_path / name / "ckpt", writers[name])
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=run, args=item) for item in sizes.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    assert not errors, errors
    for name, n in sizes.items():
        wait_for(lambda s=name, k=n: csv_total(metrics_dir, s, "recordsSent") == k, 30, f"{name} recordsSent={n}")
        assert writers[name].metrics()["recordsSent"] == n


@pytest.mark.e2e
def test_a_closing_producer_leaves_its_streams_other_producers_metrics(spark, kinesis, stream):
    """Two configurations writing one stream have two producers, sources ``kinesisProducer.<stream>`` and
    ``kinesisProducer.<stream>.2``. Spark's removeSource drops every metric whose name starts with the removed
    source's: the first closing must leave the second's metrics in the sinks (read here through the JmxSink)."""
    rows = [(f"k{i}", payload(i)) for i in range(10)]
    df = spark.createDataFrame(rows, "partitionKey string, data binary")

    def write(idle_ms: int, buffered_ms: int) -> None:
        options = kinesis.writer_options(RecordMaxBufferedTime=buffered_ms)
        w = KinesisWriter(stream_name=stream, producer_idle_timeout_ms=idle_ms, **options)
        df.write.format("kinesis").options(**w.options()).mode("append").save()

    first, second = f"kinesisProducer.{stream}", f"kinesisProducer.{stream}.2"

    def sources() -> set[str]:
        return {p.source for p in producer_snapshot(spark)} & {first, second}

    # The first producer outlives the second write's start by its idle timeout, however slow the machine: the second
    # configuration's producer is then made beside it and takes the suffixed name (which alone says both were alive;
    # whether the first has closed by the time the second write returns does not matter).
    write(15_000, 100)
    write(3_600_000, 150)
    assert second in sources(), "the second configuration's producer was made while the first was alive"
    wait_for(lambda: sources() == {second}, 45, f"the first producer closed, {second} still reported")
    # Each write's records, keys and bytes.
    assert sorted((r.partition_key, r.data) for r in read_stream(kinesis.client(), stream)) == sorted(rows * 2)


DRIVER_KEY = "AKIADRIVERONLY000000"


@pytest.mark.e2e
@pytest.mark.fleet
def test_local_cluster_executors_unlike_their_driver_report_and_add_up(kinesis, stream, tmp_path):
    """local-cluster, credentials from the default chain: Kinesis does not know the driver's key (its environment, a
    laptop's in client mode), the executors' (spark.executorEnv, as IRSA gives a service account's pods) may write. The
    driver's check refuses the start, naming driver_check; with driver_check=False the query runs, each executor JVM
    reports to its own metrics sink, and the totals add up to every record read back. The executors' java.io.tmpdir is
    read-only and kpl.TempDirectory writable: their daemons start there, the daemon probe's output too
    (docs/reliability.md, "What the checks refuse and what they let through")."""
    n = 2_000
    write_input(tmp_path / "in", rows_for(range(n)), files=4)
    metrics_dir = tmp_path / "metrics"
    metrics_dir.mkdir()
    opts = kinesis.writer_options()
    executor_key = {
        "AWS_ACCESS_KEY_ID": opts.pop("aws_access_key_id"),
        "AWS_SECRET_ACCESS_KEY": opts.pop("aws_secret_access_key"),
    }
    kpl_tmp = tmp_path / "kpl-tmp"
    kpl_tmp.mkdir()
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as front, read_only(tmp_path / "ro-tmp") as locked:
        front.deny(
            "DescribeStreamSummary", "ListShards", "PutRecords", key_id=DRIVER_KEY, code="UnrecognizedClientException"
        )
        opts.update(endpoint=front.endpoint, kpl={**opts["kpl"], "TempDirectory": str(kpl_tmp)})
        cfg = {
            "input": str(tmp_path / "in"),
            "checkpoint": str(tmp_path / "ckpt"),
            "stream": stream,
            "writer_options": opts,
            "jars": session_jars(),
            "metrics_dir": str(metrics_dir),
            "driver_env": {"AWS_ACCESS_KEY_ID": DRIVER_KEY, "AWS_SECRET_ACCESS_KEY": "driver-secret-not-a-key"},
            "executor_env": executor_key,
            "executor_tmpdir": str(locked),
        }
        probe = Probe("cluster_probe.py", cfg, tmp_path)
        try:
            totals = probe.next("TOTALS", timeout_s=600)  # AssertionError with its logs if it ends without them
            # Each executor JVM (ids 0 and 1; the driver is "driver") has its own source and sink.
            wait_for(lambda: csv_total(metrics_dir, stream, "recordsSent") == n, 60, "executors' recordsSent to sum")
            per_executor = csv_last(metrics_dir, stream, "recordsSent")
        finally:
            probe.release()
            result = probe.wait(120)
        signers = front.signers()
        assert not list(locked.iterdir()), "an executor wrote under its read-only java.io.tmpdir"
    refused = result.said.get("REFUSED")
    assert refused is not None, f"the driver's check let through a start its credentials cannot make: {result.said}"
    for words in ("UnrecognizedClientException", f"stream {stream}", "driver_check=false"):
        assert words in refused["error"], f"{refused['error'][:2000]!r} should say {words!r}"
    # Refused at Kinesis' first answer: the driver's key signed one request (the check's DescribeStreamSummary), so
    # no retry and no wait for the check's own 10 s bound. Not a time bound: the seconds are the first check's class
    # loading in a fresh driver JVM beside two starting executors, as slow as the machine is busy (printed below).
    assert signers.get(DRIVER_KEY) == 1, signers
    assert signers.get(executor_key["AWS_ACCESS_KEY_ID"], 0) > 0, signers
    assert set(per_executor) == {"0", "1"}, per_executor
    assert all(v > 0 for v in per_executor.values()), per_executor
    assert totals["recordsSent"] == sum(per_executor.values()) == n
    read_back = account(range(n), read_stream(kinesis.client(), stream))
    assert read_back.missing == [] and len(read_back.by_id) == totals["recordsSent"]
    assert all(r.data == payload(i) for i, r in read_back.by_id.items())
    print(f"\nrefused in {refused['seconds']:.1f} s; then {n} delivered with driver_check=False; signers {signers}")


def test_every_metric_is_documented():
    """docs/metrics.md against the JVM's lists (the facts resource, no JVM): every producer metric named, and a row of
    the totals' table per task total with its unit and the description the SQL tab shows."""
    from spark_kinesis import _facts

    doc = (ROOT / "docs" / "metrics.md").read_text()
    missing = [n for n in _facts.facts()["producerMetrics"] if not re.search(rf"`{re.escape(n)}`", doc)]
    assert missing == [], f"docs/metrics.md lacks {missing}"
    rows = [[c.strip() for c in line.split("|")[1:4]] for line in doc.splitlines() if line.startswith("| `")]
    for t in _facts.totals():
        assert [f"`{t['name']}`", t["unit"], t["description"]] in rows, f"docs/metrics.md has no totals row for {t}"
