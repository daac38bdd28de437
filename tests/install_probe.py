"""Runs in a *separate* Python (a fresh venv, or spark-submit) to prove an install path works.

Run through tests/probe.py (its only import from tests/: a fresh venv has nothing else). Config: input, checkpoint,
stream, writer_options, configure. Says DONE: where spark_kinesis and the JVM writer class were loaded from, and the
query's exception (None if none).
"""

from __future__ import annotations

import probe
import spark_kinesis
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter


def _location(java_class: object) -> str:
    return str(java_class._java_lang_class.getProtectionDomain().getCodeSource().getLocation())  # type: ignore[attr-defined]


def main() -> None:
    cfg = probe.config()
    builder = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
    builder = builder.config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
    if cfg["configure"]:
        builder = spark_kinesis.configure(builder)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    df = (
        spark.readStream.schema("id LONG, pk STRING, b64 STRING")
        .json(cfg["input"])
        .select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    )
    q = (
        df.writeStream.foreach(KinesisWriter(stream_name=cfg["stream"], **cfg["writer_options"]))
        .option("checkpointLocation", cfg["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(600)
    probe.done(
        {
            "module": spark_kinesis.__file__,
            "jvm_jar": _location(spark._jvm.io.github.sparkkinesis.KinesisForeachWriter),
            "kpl_jar": _location(spark._jvm.io.github.sparkkinesis.SparkLineCheck),
            "exception": str(q.exception()) if q.exception() else None,
        }
    )
    spark.stop()


if __name__ == "__main__":
    main()
