"""Queries on ``local-cluster`` with a growing count of executor JVMs, one after another in this process, each writing
its own stream through ``format("kinesis")`` or ``foreach``: what Kinesis' control plane sees of each is counted by the
test's fault front, by stream. Consecutive runs with the same count of executors share one application (its executors
start once; a query's writers and daemons are its stream's own either way).

Run through tests/probe.py. Config: runs (a list of {executors, entry, stream, input, checkpoint, metrics_dir, and
optionally steady_s: a query that keeps writing until its written micro-batches after the first span that long,
instead of the input's files}; runs that share an application share its metrics_dir, the first's), writer_options (the
fault front's endpoint, no credentials on a command line), jars. Says RAN per run, with the executors registered, the
micro-batches written, the writer's totals (``writer.metrics()`` or the progress's sink metrics) and how long the query
ran (a steady run also the span of its written batches after the first and the longest gap between two of their
starts); then DONE.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from helpers import poll, sink_totals
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_session_builder


def writes(q: Any) -> list[float]:
    """When each micro-batch that wrote rows started, in seconds (Spark's progress timestamps)."""
    return [
        datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp()
        for p in q.recentProgress
        if p["numInputRows"] > 0
    ]


def steady(starts: list[float]) -> list[float]:
    """The writes after the first: its tasks start the executors' producers and daemons."""
    return starts[1:]


def span_s(starts: list[float]) -> float:
    return starts[-1] - starts[0] if starts else 0.0


def main() -> None:
    cfg = probe.config()
    runs = cfg["runs"]
    spark = None
    try:
        for i, run in enumerate(runs):
            e = run["executors"]
            if spark is None:
                master = f"local-cluster[{e},1,1024]"
                spark = loopback_session_builder(master, "calls-probe", cfg["jars"], run["metrics_dir"]).getOrCreate()
                spark.sparkContext.setLogLevel("ERROR")
            sc = spark.sparkContext._jsc.sc()  # its executors' memory status counts the driver too
            poll(f"{e} executors registered", lambda sc=sc, e=e: sc.getExecutorMemoryStatus().size() == e + 1, 180.0)
            steady_s = run.get("steady_s")
            if steady_s is None:
                df = (
                    spark.readStream.schema("id LONG, pk STRING, b64 STRING")
                    .option("maxFilesPerTrigger", 1)
                    .json(run["input"])
                    .repartition(2 * e)  # every executor writes in every batch
                    .select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
                )
            else:  # a query that keeps writing: 200 rows a second over every executor
                df = (
                    spark.readStream.format("rate-micro-batch")
                    .option("rowsPerBatch", 200)
                    .option("numPartitions", 2 * e)
                    .load()
                    .select(
                        (F.col("value") % 97).cast("string").alias("partitionKey"),
                        F.col("value").cast("string").alias("data"),
                    )
                )
            writer = KinesisWriter(stream_name=run["stream"], **cfg["writer_options"])
            w = df.writeStream
            w = w.foreach(writer) if run["entry"] == "foreach" else w.format("kinesis").options(**writer.options())
            w = w.option("checkpointLocation", run["checkpoint"])
            started = time.monotonic()
            if steady_s is None:
                q = w.trigger(availableNow=True).start()
                q.awaitTermination()
            else:
                q = w.trigger(processingTime="1 second").start()
                # However slow the machine, the query writes steadily for steady_s.
                poll(
                    f"{steady_s} s of steady writes",
                    lambda q=q, s=steady_s: span_s(steady(writes(q))) >= s,
                    4 * steady_s + 180,
                )
                q.stop()
            ran_s = round(time.monotonic() - started, 1)
            starts = writes(q)
            totals = writer.metrics() if run["entry"] == "foreach" else sink_totals(q)
            registered = sc.getExecutorMemoryStatus().size() - 1
            said = {"executors": e, "registered": registered, "batches": len(starts), "totals": totals, "ran_s": ran_s}
            if steady_s is not None:
                after = steady(starts)
                gaps = [b - a for a, b in zip(after, after[1:])]
                said.update(span_s=round(span_s(after), 1), max_gap_s=round(max(gaps, default=0.0), 1))
            probe.say("RAN", said)
            if i + 1 == len(runs) or runs[i + 1]["executors"] != e:
                spark.stop()
                spark = None
    finally:
        if spark is not None:
            spark.stop()
    probe.done()


if __name__ == "__main__":
    main()
