"""A Spark Connect session (a real local Connect server, started in this process) writing to Kinesis.

usage: connect_probe.py CONFIG_JSON   (keys: jars, input, checkpoint, stream, writer_options, entry, canaries)
`entry` is "foreach" (foreach(KinesisWriter(...)), which spark_kinesis turns into the kinesis sink under
Connect) or "format" (format("kinesis") directly). Prints "DONE <json>" with the sink's progress metrics and
every string a secret could leak into from the client's side (explain, progress).
"""

from __future__ import annotations

import json
import sys

import spark_kinesis  # noqa: F401  (installs the foreach hook, for Connect too)
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter


def main() -> int:
    cfg = json.loads(sys.argv[1])
    builder = SparkSession.builder.remote("local[2]")
    for key, value in {
        "spark.jars": cfg["jars"],
        "spark.ui.enabled": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.sql.shuffle.partitions": "2",
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    assert spark.__class__.__module__.startswith("pyspark.sql.connect"), type(spark)
    opts = dict(cfg["writer_options"])
    opts.update(cfg.get("canaries") or {})
    writer = KinesisWriter(stream_name=cfg["stream"], **opts)
    df = (
        spark.readStream.schema("id LONG, pk STRING, b64 STRING")
        .option("maxFilesPerTrigger", 1)
        .json(cfg["input"])
        .select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    )
    sw = (
        df.writeStream.foreach(writer)
        if cfg["entry"] == "foreach"
        else df.writeStream.format("kinesis").options(**writer.options())
    )
    q = sw.option("checkpointLocation", cfg["checkpoint"]).trigger(availableNow=True).queryName("connect_probe").start()
    q.awaitTermination(300)
    if q.exception() is not None:
        print("FAILED " + str(q.exception()).replace("\n", " | ")[:4000], flush=True)
        return 3
    progress = q.lastProgress
    print(
        "DONE "
        + json.dumps({"sink": progress["sink"], "recent": [str(p) for p in q.recentProgress], "repr": repr(writer)}),
        flush=True,
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
