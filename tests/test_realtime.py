"""Low-latency modes: Spark's real-time mode (``trigger(realTime=...)``, Spark 4.1+) and continuous processing.

Real-time mode admits only the sinks on Spark's allowlist, and ``foreach`` is one: ``foreach(KinesisWriter)`` reads a
real Kafka broker's topic and writes each record as it arrives, long before the batch (and any task) commits;
``format("kinesis")`` is refused at start with an error that names ``foreach(KinesisWriter(...))``. Continuous
processing (``trigger(continuous=...)``, Spark 3.5 and 4) works on both entries: each epoch's writer commits only
once its records are confirmed, as a micro-batch's does.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import assert_quiet_interruption, attach, entries, payload, session_jars, wait_for
from probe import run_probe
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import read_stream
from spark_kinesis_testkit.kafka import cluster_id

ROOT = Path(__file__).resolve().parents[1]
N = 1000
QUEUE_LIMIT = 50
RMBT_MS = 20_000  # far above a round trip: a record that waited for its linger would show


def real_time_mode() -> bool:
    import pyspark

    major, minor = (int(x) for x in pyspark.__version__.split(".")[:2])
    return (major, minor) >= (4, 1)


needs_real_time = pytest.mark.skipif(not real_time_mode(), reason="real-time mode is Spark 4.1+")


def test_a_kafka_cluster_id_never_reads_as_an_option():
    """The broker's storage is formatted with ``-t <id>``: an id starting with "-" (URL-safe base64 of 0xF8...) is
    drawn again, as Kafka's own ids are."""
    draws = iter([b"\xf8" + bytes(15), b"\x01" * 16])
    assert cluster_id(lambda: next(draws)) == "AQEBAQEBAQEBAQEBAQEBAQ"


@pytest.mark.e2e
@needs_real_time
def test_kafka_to_kinesis_in_real_time_mode(kinesis, kafka, stream, tmp_path):
    """Every id arrives while the first real-time batch still runs; a lone record is confirmed long before its
    RecordMaxBufferedTime; the bound holds; a stop mid-batch is quiet (the stop guard's rules, tests/test_stop.py) and
    the restarted query replays the uncommitted batch."""
    from spark_kinesis_testkit.kafka import connector_jars

    topic = f"in-{stream}"
    kafka.create_topic(topic, partitions=2)
    opts = kinesis.writer_options(RecordMaxBufferedTime=RMBT_MS)
    opts.update(queue_limit=QUEUE_LIMIT, producer_idle_timeout_ms=600_000)  # the pool keeps it to be inspected
    cfg = {
        "bootstrap": kafka.bootstrap,
        "topic": topic,
        "partitions": 2,
        "stream": stream,
        "upstream": f"http://127.0.0.1:{kinesis.plain_port}",
        "writer_options": opts,
        "jars": f"{session_jars()},{connector_jars()}",
        "checkpoint": str(tmp_path / "ckpt"),
        "n": N,
    }
    result = run_probe("realtime_probe.py", cfg, tmp_path, timeout_s=400)
    said, log = result.said, result.jvm_log

    arrived = said["ARRIVED"]
    # Sent without any commit: the first (10-minute) batch had not ended when the last id was in Kinesis.
    assert arrived["batches_done"] == 0 and arrived["active"], arrived
    assert 0 < arrived["max_in_flight"] <= QUEUE_LIMIT, arrived
    blocked = said["BLOCKED"]
    assert blocked["in_flight_records"] == QUEUE_LIMIT and blocked["backpressure_cycles"] > 0, blocked
    # A lone record to an idle shard goes within a millisecond: confirmed a round trip after it reached the writer
    # (Kafka and the real-time query's read add to that), not after its RecordMaxBufferedTime. Loose, for a loaded
    # 2-core machine.
    lone = said["LONE"]
    assert lone["seconds"] < RMBT_MS / 1000 / 5, lone
    stopped = said["STOPPED"]
    assert stopped == {"batches_done": 0, "exception": "None"}, stopped  # stopped mid-batch, no failure
    idle = said["IDLE"]
    assert idle["in_flight_records"] == 0 and idle["users"] == 0, idle
    assert said["EXCEPTION"] is None, said["EXCEPTION"]
    after = said["AFTER"]
    assert after["in_flight_records"] == 0 and after["users"] == 0 and after["records_failed"] == 0, after

    assert_quiet_interruption(log, "the query was stopped")

    got: dict[int, int] = {}
    for r in read_stream(kinesis.client(), stream):
        i = int(r.data.split(b":", 1)[0])
        assert r.data == payload(i) and r.partition_key == f"user-{i % 97}", f"record {i} came back altered"
        got[i] = got.get(i, 0) + 1
    missing = sorted(set(range(2 * N)) - set(got))
    assert not missing, f"{len(missing)} ids missing, first {missing[:10]}"


@pytest.mark.e2e
@needs_real_time
def test_format_kinesis_in_real_time_mode_names_foreach(spark, kinesis, stream):
    """Spark refuses every sink off its real-time allowlist at start(); the error names the way that works."""
    writer = KinesisWriter(stream_name=stream, **kinesis.writer_options())
    df = spark.readStream.format("rate").load().selectExpr("CAST(value AS STRING) AS partitionKey", "'x' AS data")
    sw = df.writeStream.format("kinesis").options(**writer.options()).outputMode("update")
    with pytest.raises(ValueError, match=r"foreach\(KinesisWriter\(\.\.\.\)\)") as e:
        sw.trigger(realTime="5 minutes").start()
    assert "allowlistCheck" not in str(e.value)  # Spark's own advice (turn the check off) does not help here
    assert not spark.streams.active


@pytest.mark.e2e
@pytest.mark.parametrize("entry", entries(every_line="foreach"))
def test_continuous_processing_round_trips(spark, kinesis, stream, tmp_path, entry):
    """``trigger(continuous=...)`` (the rate source's continuous reader): each id, record by record."""
    n = 400
    writer = KinesisWriter(stream_name=stream, **kinesis.writer_options(RecordMaxBufferedTime=100))
    df = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 400)
        .option("numPartitions", 1)
        .load()
        .selectExpr("CAST(value AS STRING) AS partitionKey", "CAST(CAST(value AS STRING) AS BINARY) AS data")
    )
    q = attach(df.writeStream, writer, entry).option("checkpointLocation", str(tmp_path / "ckpt"))
    q = q.trigger(continuous="1 second").start()
    client = kinesis.client()
    try:
        got: dict[int, bytes] = {}

        def all_in() -> bool:
            if q.exception():
                raise AssertionError(q.exception())
            # The rate source never stops: a read to an idle shard would follow it for as long as it keeps up (one
            # read took 10,085 records and 19 s of the emulator's CPU), so each poll reads what is there.
            got.update({int(r.partition_key): r.data for r in read_stream(client, stream, max_polls=2)})
            return set(range(n)) <= set(got)

        wait_for(all_in, 120, f"ids 0..{n - 1} in Kinesis", step_s=0.5)
    finally:
        q.stop()
    assert q.exception() is None
    for i in range(n):
        assert got[i] == str(i).encode(), f"record {i} came back altered"
