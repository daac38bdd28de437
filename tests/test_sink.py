"""The `kinesis` DataSource V2 sink: batch writes, save modes, its metrics, and the options Spark mixes in.

The streaming round trips through format("kinesis") run in test_roundtrip.py (every test there runs on
both entry points), the bound in test_backpressure.py, the daemon kill in test_faults.py, the bad-option
table in test_bad_input.py.
"""

from __future__ import annotations

import uuid

import pyspark
import pytest
from helpers import account, payload, rows_for, run_available_now, sink_totals, write_input
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter, _facts
from spark_kinesis_testkit.emulator import read_stream

#: The Spark 3.5 leg writes fewer rows through the same path, to keep `make test` within its time budget.
N_BATCH = 100_000 if pyspark.__version__ >= "4" else 20_000


@pytest.mark.localstack
@pytest.mark.e2e
@pytest.mark.every_line
def test_batch_write_across_8_partitions_record_by_record(spark, kinesis):
    # 16 shards: with aggregation='kpl' a new KPL daemon sends records unaggregated until its shard map has loaded,
    # a queue_limit of them, each one Kinesis record, the emulator's slowest path; 16 shards spread that burst.
    stream = f"t-batch-{uuid.uuid4().hex[:6]}"
    kinesis.create_stream(stream, 16)
    writer = KinesisWriter(stream_name=stream, queue_limit=10_000, **kinesis.writer_options())
    df = (
        spark.range(N_BATCH, numPartitions=8)
        .select(
            F.concat(F.lit("k"), (F.col("id") % 101).cast("string")).alias("partitionKey"),
            F.concat(F.col("id").cast("string"), F.lit(":"), (F.col("id") * 7919 % 1000).cast("string"))
            .cast("binary")
            .alias("data"),
        )
        .repartition(8)
    )
    assert df.rdd.getNumPartitions() == 8
    df.write.format("kinesis").options(**writer.options()).mode("append").save()

    d = account(range(N_BATCH), read_stream(kinesis.client(), stream))
    assert d.missing == [], f"{len(d.missing)} missing, first {d.missing[:10]}"
    for i in range(N_BATCH):
        assert d.by_id[i].data == f"{i}:{i * 7919 % 1000}".encode(), f"id {i}: bytes differ"
        assert d.by_id[i].partition_key == f"k{i % 101}", f"id {i}: key differs"


@pytest.mark.e2e
@pytest.mark.every_line
def test_batch_modes_other_than_append_are_refused_before_any_write(spark, kinesis, stream):
    options = KinesisWriter(stream_name=stream, **kinesis.writer_options()).options()
    rows = spark.createDataFrame([(f"{i}:x".encode(), f"k{i}") for i in range(50)], "data binary, partitionKey string")
    with pytest.raises(Exception, match=r"mode\('append'\) only.*got mode\('overwrite'\)"):
        rows.write.format("kinesis").options(**options).mode("overwrite").save()
    # Spark itself refuses ErrorIfExists (the default) and Ignore for a DataSource V2 sink, naming Append.
    for mode in ("errorifexists", "ignore"):
        with pytest.raises(Exception, match=r"Append"):
            rows.write.format("kinesis").options(**options).mode(mode).save()
    rows.write.format("kinesis").options(**options).mode("append").save()
    d = account(range(50), read_stream(kinesis.client(), stream))
    assert d.missing == [] and d.duplicates == 0, "only the append wrote"


@pytest.mark.localstack
@pytest.mark.e2e
@pytest.mark.every_line
def test_streaming_progress_reports_the_sink_totals(spark, kinesis, stream, tmp_path):
    n = 1_000
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    writer = KinesisWriter(stream_name=stream, **kinesis.writer_options())
    q = run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry="format")
    payload_bytes = sum(len(payload(i)) for i in range(n))
    totals = sink_totals(q)
    assert sorted(totals) == sorted(t["name"] for t in _facts.totals()), totals
    records = {k: totals[k] for k in ("recordsSent", "recordsFailed", "bytesSent", "backpressureCycles")}
    assert records == {"recordsSent": n, "recordsFailed": 0, "bytesSent": payload_bytes, "backpressureCycles": 0}
    assert totals["backpressureWaitMs"] == 0 and totals["controlPlaneThrottles"] == 0
    assert totals["driverControlPlaneCalls"] >= 1, "the driver's check read the stream"
    assert q.lastProgress["sink"]["description"].startswith("kinesis:")
    d = account(range(n), read_stream(kinesis.client(), stream))
    assert d.missing == [] and all(d.by_id[i].data == payload(i) for i in range(n)), d.missing[:10]


@pytest.mark.e2e
def test_sql_tab_shows_the_custom_metrics(spark, kinesis, stream):
    options = KinesisWriter(stream_name=stream, **kinesis.writer_options()).options()
    n = 300
    rows = spark.createDataFrame([(f"{i}:y", f"k{i}") for i in range(n)], "data string, partitionKey string")
    rows.write.format("kinesis").options(**options).mode("append").save()
    store = spark._jsparkSession.sharedState().statusStore()
    executions = store.executionsList()
    last = executions.apply(executions.size() - 1)
    values = {}
    it = store.executionMetrics(last.executionId()).iterator()
    while it.hasNext():
        kv = it.next()
        values[kv._1()] = kv._2()
    metrics = last.metrics()
    shown = {metrics.apply(i).name(): values.get(metrics.apply(i).accumulatorId()) for i in range(metrics.size())}
    # The SQL tab names a custom metric by its description.
    assert shown.get("Kinesis records confirmed") == str(n), shown
    assert shown.get("Kinesis records failed") == "0", shown
    assert shown.get("Kinesis payload bytes confirmed") == str(sum(len(f"{i}:y") for i in range(n))), shown
    assert shown.get("Kinesis control-plane calls (executors)") == "0", "the executors took the driver's layout"


@pytest.mark.e2e
def test_spark_owned_keys_and_kpl_case_pass_through(spark, kinesis, stream, tmp_path):
    write_input(tmp_path / "in", rows_for(range(20)), files=1)
    # checkpointLocation reaches the sink's options beside ours; kpl.RecordTtl must keep its case.
    writer = KinesisWriter(stream_name=stream, **kinesis.writer_options(RecordTtl=60000))
    assert "kpl.RecordTtl" in writer.options()
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry="format")
    assert account(range(20), read_stream(kinesis.client(), stream)).missing == []


@pytest.mark.e2e
@pytest.mark.parametrize("mode", ["update", "complete"])
def test_streaming_aggregation_output_modes(spark, kinesis, stream, tmp_path, mode):
    """An aggregation's changed (update) or all (complete) rows, each epoch appended as records (as Kafka's sink)."""
    n, groups, files = 200, 7, 2
    write_input(tmp_path / "in", rows_for(range(n)), files=files)
    writer = KinesisWriter(stream_name=stream, **kinesis.writer_options())
    df = (
        spark.readStream.schema("id LONG, pk STRING, b64 STRING")
        .option("maxFilesPerTrigger", 1)
        .json(str(tmp_path / "in"))
        .groupBy((F.col("id") % groups).alias("g"))
        .count()
        .select(
            F.concat(F.lit("g"), F.col("g").cast("string")).alias("partitionKey"),
            F.concat_ws(":", F.col("g"), F.col("count")).alias("data"),
        )
    )
    q = (
        df.writeStream.format("kinesis")
        .options(**writer.options())
        .outputMode(mode)
        .option("checkpointLocation", str(tmp_path / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert q.awaitTermination(300)
    assert q.exception() is None

    # File f holds ids f, f+files, ...; one file per epoch, in an order Spark picks. After each epoch every group has
    # a count, and both modes emit every group here: the counts after the first file, then the final ones.
    def counts(ids: list[int]) -> list[str]:
        return [f"{g}:{sum(1 for i in ids if i % groups == g)}" for g in range(groups)]

    final = counts(list(range(n)))
    either = [sorted(counts(list(range(first, n, files))) + final) for first in range(files)]
    got = sorted(r.data.decode() for r in read_stream(kinesis.client(), stream))
    assert got in either, f"{got} is neither order's output: {either}"
