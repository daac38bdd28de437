"""Errors reach the user early and by name: Python checks, JVM option/schema checks on the driver
before the query starts, and row errors as a StreamingQueryException naming the cause."""

from __future__ import annotations

import pytest
from helpers import rows_for, run_available_now, write_input
from pyspark.errors import StreamingQueryException
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter


@pytest.mark.e2e
@pytest.mark.every_line
def test_row_error_reaches_python_naming_the_cause(spark, kinesis, stream, tmp_path):
    rows = rows_for(range(50))
    rows[7]["pk"] = "k" * 300
    write_input(tmp_path / "in", rows, files=1)
    writer = KinesisWriter(stream_name=stream, **kinesis.writer_options())
    with pytest.raises(StreamingQueryException) as e:
        run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer)
    assert "partitionKey" in str(e.value) and "300 characters" in str(e.value)


def _rate_df(spark):
    return spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 10).load()


@pytest.mark.e2e
@pytest.mark.every_line
def test_bad_kpl_option_fails_on_the_driver_before_start(spark):
    df = _rate_df(spark).select(F.col("value").cast("string").alias("data"), F.lit("k").alias("partitionKey"))
    with pytest.raises(ValueError, match=r"kpl.RecordMaxBuferedTime is not a KPL setting.*RecordMaxBufferedTime"):
        df.writeStream.foreach(KinesisWriter(stream_name="s", region="us-east-1", kpl={"RecordMaxBuferedTime": 10}))
    assert spark.streams.active == []


@pytest.mark.e2e
@pytest.mark.every_line
def test_schema_error_fails_on_the_driver(spark):
    df = _rate_df(spark)  # columns: timestamp, value
    with pytest.raises(ValueError, match=r"no 'data' column.*to_json"):
        df.writeStream.foreach(KinesisWriter(stream_name="s", region="us-east-1"))
    df2 = df.select(F.col("value").alias("data"), F.lit("k").alias("partitionKey"))
    with pytest.raises(ValueError, match=r"'data' has type bigint"):
        df2.writeStream.foreach(KinesisWriter(stream_name="s", region="us-east-1"))


@pytest.mark.e2e
@pytest.mark.every_line
def test_plain_python_foreach_still_works(spark, tmp_path):
    out = tmp_path / "seen"
    out.mkdir()

    def handle(row) -> None:  # runs in a Python worker
        (out / str(row.value)).touch()

    q = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 5).load().writeStream.foreach(handle).start()
    try:
        deadline_rows = 5
        import time

        end = time.monotonic() + 120
        while len(list(out.iterdir())) < deadline_rows:
            assert time.monotonic() < end, "python foreach saw no rows"
            time.sleep(0.1)
    finally:
        q.stop()


@pytest.mark.e2e
@pytest.mark.every_line
def test_missing_jar_error_names_the_fix(spark, monkeypatch):
    import spark_kinesis._jar as jar
    import spark_kinesis.writer as writer

    monkeypatch.setattr(writer, "JVM_ENTRY_POINT", "io.github.sparkkinesis.NoSuchEntryPoint")
    df = _rate_df(spark).select(F.col("value").cast("string").alias("data"), F.lit("k").alias("partitionKey"))
    with pytest.raises(RuntimeError, match=r"not on the Spark JVM's classpath.*configure.*--packages") as info:
        df.writeStream.foreach(KinesisWriter(stream_name="s", region="us-east-1"))
    assert jar.coordinates(spark.version) in str(info.value), "names the artifact for the running Spark line"
