"""Runs in a *separate* Python (a fresh venv, or spark-submit) to prove an install path works.

usage: install_probe.py CONFIG_JSON   (keys: input, checkpoint, stream, writer_options, configure)
Prints one JSON line: where spark_kinesis and the JVM writer class were loaded from.
"""

from __future__ import annotations

import json
import sys

import spark_kinesis
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter


def _location(java_class: object) -> str:
    return str(java_class._java_lang_class.getProtectionDomain().getCodeSource().getLocation())  # type: ignore[attr-defined]


def main() -> None:
    cfg = json.loads(sys.argv[1])
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
    print(
        "PROBE "
        + json.dumps(
            {
                "module": spark_kinesis.__file__,
                "jvm_jar": str(spark._jvm.io.github.sparkkinesis.Probes.jarLocation()),
                "kpl_jar": _location(spark._jvm.io.github.sparkkinesis.SparkLineCheck),
                "exception": str(q.exception()) if q.exception() else None,
            }
        ),
        flush=True,
    )
    spark.stop()


if __name__ == "__main__":
    main()
