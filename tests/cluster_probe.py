"""A query on local-cluster[2,1,1024] (two executor JVMs), run as its own process.

Run through tests/probe.py. Config: input, checkpoint, stream, writer_options, jars, metrics_dir.
Says TOTALS (the writer's driver-side totals), then holds its executors until the test releases it; then DONE.
"""

from __future__ import annotations

import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_session_builder


def main() -> None:
    cfg = probe.config()
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
        probe.failed(str(q.exception()))
        raise SystemExit(3)
    probe.say("TOTALS", writer.metrics())
    # Keep the executors alive until the test has seen their metrics sinks report.
    probe.hold()
    spark.stop()
    probe.done()


if __name__ == "__main__":
    main()
