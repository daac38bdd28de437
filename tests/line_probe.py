"""Attaches a KinesisWriter in a session whose classpath holds the given jars; says what happened.

Run through tests/probe.py. Config: jars (comma-separated, as spark.jars takes them).
Says DONE: {"spark": ..., "error": <type>, "message": ...}.
"""

from __future__ import annotations

import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_session_builder


def main() -> None:
    spark = loopback_session_builder("local[1]", "line-probe", probe.config()["jars"]).getOrCreate()
    df = spark.readStream.format("rate").load().select(F.col("value").cast("string").alias("data"))
    result = {"spark": spark.version, "error": None, "message": None}
    try:
        df.writeStream.foreach(KinesisWriter(stream_name="s", region="us-east-1", partitioner="random"))
    except Exception as e:  # the probe reports whatever it is
        result.update(error=type(e).__name__, message=str(e))
    probe.done(result)
    spark.stop()


if __name__ == "__main__":
    main()
