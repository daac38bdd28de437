"""Interrupts a write task while the writer is blocked on queue_limit, then finishes the input; says what it saw.

Run through tests/probe.py. Config: input, checkpoint, stream, upstream, writer_options, jars, entry, how.
``how``: "stop" (query.stop() mid-batch, then a new query from the checkpoint) or "kill" (SparkContext.killTaskAttempt
on one running write task: Spark reschedules it in the same query). The probe owns a fault front in front of the
emulator (``upstream``) that delays every response, so the writer blocks; the delay is lifted once the task is gone.
Says BLOCKED, then STOPPED (the stopped query's exception) or KILLED (the task), IDLE (after a stop), EXCEPTION (the
last query's, None if none), AFTER (each a producer's sample) and DONE. Driver and executor share this JVM (local
mode): its log is the JVM log the runner keeps.
"""

from __future__ import annotations

from typing import Any

import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from helpers import live_producer, poll
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_session_builder
from spark_kinesis_testkit.faults import FaultFront

LATENCY_MS = 1000


def tasks(spark: Any) -> list[tuple[int, int, str]]:
    """(stage, task id, status) of every task attempt of the active stages, from Spark's status store."""
    sc = spark.sparkContext
    store = sc._jsc.sc().statusStore()
    out = []
    for stage in sc.statusTracker().getActiveStageIds():
        listed = store.taskList(stage, 0, 100)
        out += [(stage, int(listed.apply(i).taskId()), str(listed.apply(i).status())) for i in range(listed.size())]
    return out


def main() -> None:
    cfg = probe.config()
    spark = loopback_session_builder("local[2]", "stop-probe", cfg["jars"]).getOrCreate()
    with FaultFront(cfg["upstream"]) as front:
        opts = {**cfg["writer_options"], "endpoint": front.endpoint}
        writer = KinesisWriter(stream_name=cfg["stream"], **opts)
        limit = int(opts["queue_limit"])
        df = spark.readStream.schema("id LONG, pk STRING, b64 STRING").json(cfg["input"])
        df = df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))

        def start() -> Any:
            sw = df.writeStream
            sw = sw.foreach(writer) if cfg["entry"] == "foreach" else sw.format("kinesis").options(**writer.options())
            return sw.option("checkpointLocation", cfg["checkpoint"]).queryName("stop_probe").start()

        front.add_latency(LATENCY_MS)
        q = start()
        # Blocked: the limit is full and tasks keep waiting for room.
        blocked = poll(
            "the writer to block on queue_limit",
            lambda: (
                (p := live_producer(spark, cfg["stream"]))
                and p.in_flight_records == limit
                and p.backpressure_cycles
                and p
            ),
        )
        probe.say("BLOCKED", blocked.__dict__)
        if cfg["how"] == "stop":
            q.stop()
            probe.say("STOPPED", str(q.exception()) if q.exception() is not None else None)
        else:
            task = poll("a running write task", lambda: [t for _, t, s in tasks(spark) if s == "RUNNING"])[0]
            spark.sparkContext._jsc.sc().killTaskAttempt(task, True, "stop_probe kills a blocked task")
            poll("the task to be killed", lambda: any(t == task and s == "KILLED" for _, t, s in tasks(spark)))
            probe.say("KILLED", task)
        front.add_latency(0)
        if cfg["how"] == "stop":
            # Every reservation released, the producer back in the pool with no user: what was in flight completes.
            idle = poll(
                "reservations released and no user left",
                lambda: (p := live_producer(spark, cfg["stream"])) and p.in_flight_records == 0 and p.users == 0 and p,
            )
            probe.say("IDLE", idle.__dict__)
            q = start()  # from the checkpoint: the interrupted batch again, then the rest
        q.processAllAvailable()
        q.stop()
        probe.say("EXCEPTION", str(q.exception()) if q.exception() is not None else None)
        after = poll(
            "an idle producer",
            lambda: (p := live_producer(spark, cfg["stream"])) and p.in_flight_records == 0 and p.users == 0 and p,
        )
        probe.say("AFTER", after.__dict__)
    spark.stop()
    probe.done()


if __name__ == "__main__":
    main()
