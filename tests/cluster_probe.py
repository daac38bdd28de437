"""A query on local-cluster[2,1,1024] (two executor JVMs), run as its own process.

usage: cluster_probe.py CONFIG_JSON (keys: input, checkpoint, stream, writer_options, jars, metrics_dir)
Prints one JSON line: the writer's driver-side totals.
"""

from __future__ import annotations

import json
import sys

import spark_kinesis  # noqa: F401  (installs the foreach hook)
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_session_builder


def main() -> None:
    cfg = json.loads(sys.argv[1])
    spark = loopback_session_builder(
        "local-cluster[2,1,1024]", "cluster-probe", cfg["jars"], cfg["metrics_dir"]
    ).getOrCreate()
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
