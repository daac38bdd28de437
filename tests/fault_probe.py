"""A streaming query over ids 0..N-1 in its own process, for fault scenarios.

Run through tests/probe.py. Config: master, jars, input, checkpoint, stream, writer_options,
fail_first_attempt_partitions (list), entry ("foreach", default, or "format"), and optionally upstream and latency_ms
(the writer then reaches Kinesis through a fault front that delays every request by latency_ms, so batches last, and
once the first batch has committed holds every write request, until the test releases the probe: its fault has
landed, and what follows need not wait).
Says BATCH (its id) as batches commit; in local mode, once, INFLIGHT (the KPL's outstanding count) when records of a
later batch are inside the KPL daemon and the daemon's write of them waits at the front (the KPL's own count, not the
writer's: the writer holds records in its shard buffers before the daemon gets them; and held at the front, they stay
in flight until the test acts); finally DONE (the totals) or FAILED (the query's exception; exit 3).
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import Any

import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from pyspark import TaskContext
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_session_builder, producer_snapshot
from spark_kinesis_testkit.faults import FaultFront


def main() -> int:
    cfg = probe.config()
    with contextlib.ExitStack() as stack:
        if cfg.get("upstream"):
            front = stack.enter_context(FaultFront(cfg["upstream"]))
            front.add_latency(cfg.get("latency_ms", 0))
            cfg["writer_options"] = {**cfg["writer_options"], "endpoint": front.endpoint}
            return run(cfg, front)
        return run(cfg)


def run(cfg: dict[str, Any], front: FaultFront | None = None) -> int:
    spark = loopback_session_builder(cfg["master"], "fault-probe", cfg["jars"]).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    df = (
        spark.readStream.schema("id LONG, pk STRING, b64 STRING")
        .option("maxFilesPerTrigger", 1)
        .json(cfg["input"])
        .repartition(2)
    )
    fail_parts = set(cfg.get("fail_first_attempt_partitions") or [])
    if fail_parts:

        @F.udf("long")  # type: ignore[misc]
        def fail_once(i: int) -> int:
            ctx = TaskContext.get()
            # Fail mid-partition on the first attempt: rows before this one were already written.
            if ctx is not None and ctx.attemptNumber() == 0 and ctx.partitionId() in fail_parts and i % 7 == 3:
                raise RuntimeError(f"injected failure in partition {ctx.partitionId()}")
            return i

        df = df.withColumn("id", fail_once("id"))
    df = df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"), "id")
    writer = KinesisWriter(stream_name=cfg["stream"], **cfg["writer_options"])
    entry = cfg.get("entry", "foreach")  # or "format": the kinesis DataSource V2 sink, same options
    stream_writer = (
        df.writeStream.foreach(writer)
        if entry == "foreach"
        else df.writeStream.format("kinesis").options(**writer.options())
    )
    q = stream_writer.option("checkpointLocation", cfg["checkpoint"]).trigger(availableNow=True).start()
    local = cfg["master"].startswith("local[")
    seen = -1
    max_outstanding = 0
    inflight_told = False
    while q.isActive:
        if front is not None and probe.released():
            front.release_writes()
            front.add_latency(0)
            front = None
        p = q.lastProgress
        if p is not None and p["batchId"] > seen:
            if seen < 0 and front is not None:
                front.hold_writes()  # later batches' writes wait at the front: in flight until the test acts
            seen = p["batchId"]
            probe.say("BATCH", seen)
        if local:
            live = producer_snapshot(spark)
            outstanding = sum(p.in_flight_records for p in live)
            max_outstanding = max(max_outstanding, outstanding)
            in_daemon = sum(p.outstanding_records for p in live)
            waiting = front is not None and front.writes_waiting() > 0
            if seen >= 0 and in_daemon > 0 and (front is None or waiting) and not inflight_told:
                inflight_told = True  # a later batch is inside the daemon right now: a fault hits it mid-flight
                probe.say("INFLIGHT", in_daemon)
        time.sleep(0.05)
    if q.exception() is not None:
        probe.failed(str(q.exception()))
        return 3
    executors = spark._jsc.sc().statusStore().executorList(False)
    failed_tasks = sum(executors.apply(i).failedTasks() for i in range(executors.size()))
    sent = writer.metrics() if entry == "foreach" else {k: int(v) for k, v in q.lastProgress["sink"]["metrics"].items()}
    totals = {**sent, "maxOutstanding": max_outstanding, "failedTasks": failed_tasks}
    probe.done(totals)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
