"""Writes through the writer once per credentials case, in one Spark JVM whose environment the test chose.

Run through tests/probe.py. Config: jars, secrets ({name: value}: what no process's command line may carry), cases: a
list of {name, stream, options (KinesisWriter keywords), n, mode ("batch" | "stream"), input, checkpoint, write_file
([path, text], written before the case runs)}.
Says CASE ({name, status: "OK" | "ERROR", seconds, message}) per case, and after each case CMDLINE ({name, seen,
daemons, leaks}): every process's /proc/<pid>/cmdline, read while the case's KPL daemon is alive (pooled producers
outlive their query): how many were read, how many are KPL daemons, the names of the secrets found. Then DONE.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import probe
from helpers import payload  # this file's directory is first on sys.path
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit import procs
from spark_kinesis_testkit.emulator import loopback_session_builder


def batch(spark: SparkSession, writer: KinesisWriter, n: int) -> None:
    rows = [(payload(i), f"k{i % 7}") for i in range(n)]
    df = spark.createDataFrame(rows, "data binary, partitionKey string").repartition(2)
    df.write.format("kinesis").options(**writer.options()).mode("append").save()


def stream(spark: SparkSession, writer: KinesisWriter, n: int, case: dict[str, Any]) -> None:
    """One file per micro-batch, a batch a second: long enough for several credential refreshes."""
    src = spark.readStream.schema("id LONG, pk STRING, b64 STRING").option("maxFilesPerTrigger", 1).json(case["input"])
    df: DataFrame = src.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    q = (
        df.writeStream.foreach(writer)
        .option("checkpointLocation", case["checkpoint"])
        .trigger(processingTime="1 second")
        .start()
    )
    deadline = time.monotonic() + 120
    try:
        while sum(p["numInputRows"] for p in q.recentProgress) < n:
            if q.exception() is not None:
                raise RuntimeError(str(q.exception()))
            if time.monotonic() > deadline:
                raise TimeoutError(f"{sum(p['numInputRows'] for p in q.recentProgress)} of {n} rows after 120 s")
            time.sleep(0.2)
    finally:
        q.stop()


def main() -> None:
    cfg = probe.config()
    spark = loopback_session_builder("local[2]", "credentials-probe", cfg["jars"]).getOrCreate()
    for case in cfg["cases"]:
        if case.get("write_file"):
            Path(case["write_file"][0]).write_text(case["write_file"][1])
        t0 = time.monotonic()
        try:
            writer = KinesisWriter(stream_name=case["stream"], **case["options"])
            if case.get("mode") == "stream":
                stream(spark, writer, case["n"], case)
            else:
                batch(spark, writer, case["n"])
            status, message = "OK", ""
        except Exception as e:  # the message is what the test checks
            status, message = "ERROR", " ".join(str(e).split())
        seconds = round(time.monotonic() - t0, 1)
        probe.say("CASE", {"name": case["name"], "status": status, "seconds": seconds, "message": message})
        seen, daemons, leaks = procs.secrets_on_command_lines(cfg["secrets"])
        probe.say("CMDLINE", {"name": case["name"], "seen": seen, "daemons": daemons, "leaks": leaks})
    spark.stop()
    probe.done()


if __name__ == "__main__":
    main()
