"""A query on local-cluster[2,1,1024] (two executor JVMs), run as its own process.

usage: cluster_probe.py CONFIG_JSON (keys: input, checkpoint, stream, writer_options, jar, metrics_dir)
Prints one JSON line: the writer's driver-side totals.
"""

from __future__ import annotations

import json
import sys

import spark_kinesis  # noqa: F401  (installs the foreach hook)
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter


def main() -> None:
    cfg = json.loads(sys.argv[1])
    spark = (
        SparkSession.builder.master("local-cluster[2,1,1024]")
        .config("spark.jars", cfg["jar"])
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.executorEnv.AWS_EC2_METADATA_DISABLED", "true")
        .config("spark.metrics.conf.*.sink.csv.class", "org.apache.spark.metrics.sink.CsvSink")
        .config("spark.metrics.conf.*.sink.csv.period", "1")
        .config("spark.metrics.conf.*.sink.csv.unit", "seconds")
        .config("spark.metrics.conf.*.sink.csv.directory", cfg["metrics_dir"])
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    df = (
        spark.readStream.schema("id LONG, pk STRING, b64 STRING")
        .json(cfg["input"])
        .repartition(4)
        .select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    )
    writer = KinesisWriter(stream_name=cfg["stream"], **cfg["writer_options"])
    q = (
        df.writeStream.foreach(writer)
        .option("checkpointLocation", cfg["checkpoint"])
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination(600)
    if q.exception():
        raise SystemExit(f"query failed: {q.exception()}")
    print("PROBE " + json.dumps(writer.metrics()), flush=True)
    # Keep the executors alive until the test has seen their metrics sinks report.
    sys.stdin.readline()
    spark.stop()


if __name__ == "__main__":
    main()
