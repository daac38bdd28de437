"""A Spark Connect session (a real local Connect server, started in this process) writing to Kinesis.

Run through tests/probe.py. Config: jars, input, writer_options, canaries, connect_version, runs: [{entry, stream,
checkpoint}]. Each run's `entry` is "foreach" (foreach(KinesisWriter(...)), which spark_kinesis turns into the kinesis
sink under Connect) or "format" (format("kinesis") directly); the runs share one server. `canaries` are extra writer
options (secrets the caller looks for in everything this probe writes). Says CMDLINES (every process's command line,
read while the pooled KPL daemon lives: how many were read, how many are KPL daemons, the canaries found) and DONE
with each run's sink progress and every string a secret could leak into on the client's side (repr, progress,
explain, status), and on Spark 4.1+ the error a real-time query (trigger(realTime=...)) with foreach(KinesisWriter)
gets.
"""

from __future__ import annotations

import contextlib
import io
import sys

import probe
import pyspark
import spark_kinesis  # noqa: F401  (installs the foreach hook, for Connect too)
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit import procs


def main() -> int:
    cfg = probe.config()
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
    if pyspark.__version__ < "4":
        # pyspark 3.5 starts a local server only when given the server plugin (4.x ships it): fetched once from
        # Maven Central into Spark's default ivy cache (~/.ivy2), at the version the test names.
        plugin = f"org.apache.spark:spark-connect_2.12:{cfg.get('connect_version') or pyspark.__version__}"
        builder = builder.config("spark.jars.packages", plugin)
    spark = builder.getOrCreate()
    assert spark.__class__.__module__.startswith("pyspark.sql.connect"), type(spark)
    opts = {**cfg["writer_options"], **(cfg.get("canaries") or {})}
    df = (
        spark.readStream.schema("id LONG, pk STRING, b64 STRING")
        .option("maxFilesPerTrigger", 1)
        .json(cfg["input"])
        .select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    )
    out = []
    for run in cfg["runs"]:
        writer = KinesisWriter(stream_name=run["stream"], **opts)
        sw = (
            df.writeStream.foreach(writer)
            if run["entry"] == "foreach"
            else df.writeStream.format("kinesis").options(**writer.options())
        )
        sw = sw.option("checkpointLocation", run["checkpoint"]).trigger(availableNow=True)
        q = sw.queryName(f"connect_probe_{run['entry']}").start()
        q.awaitTermination(300)
        if q.exception() is not None:
            probe.failed(str(q.exception()))
            return 3
        explained = io.StringIO()
        with contextlib.redirect_stdout(explained):
            q.explain(True)
        out.append(
            {
                "entry": run["entry"],
                "sink": q.lastProgress["sink"],
                "recent": [str(p) for p in q.recentProgress],
                "explain": explained.getvalue(),
                "status": str(q.status),
                "repr": repr(writer),
            }
        )
    # The pooled producer outlives its query: its daemon is running now.
    seen, daemons, leaks = procs.secrets_on_command_lines(cfg.get("canaries") or {})
    probe.say("CMDLINES", {"seen": seen, "daemons": daemons, "leaks": leaks})
    refused = None
    if tuple(int(x) for x in pyspark.__version__.split(".")[:2]) >= (4, 1):
        # Real-time mode: foreach(KinesisWriter) runs as format("kinesis") here, off Spark's real-time allowlist.
        writer = KinesisWriter(stream_name=cfg["runs"][0]["stream"], **opts)
        try:
            df.writeStream.foreach(writer).outputMode("update").trigger(realTime="5 minutes").start().stop()
        except ValueError as e:
            refused = str(e)
    probe.done({"runs": out, "real_time_refused": refused})
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
