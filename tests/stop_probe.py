"""Interrupts a write task while the writer is blocked on queue_limit, then finishes the input; says what it saw.

Run through tests/probe.py. Config: upstream, writer_options, jars, and ``cases``, run one after another in this JVM
(one Spark start for all), each a dict of how, entry, stream, input and checkpoint. ``how``: "stop" (query.stop()
mid-batch, then a new query from the checkpoint) or "kill" (SparkContext.killTaskAttempt on one running write task:
Spark reschedules it in the same query). Each case owns a fault front in front of the emulator (``upstream``) that
delays every response, so the writer blocks; the delay is lifted once the task is gone. Per case, named
``<EVENT>/<how>``: BLOCKED, then STOPPED (the stopped query's exception) or KILLED (the task), IDLE (after a stop),
EXCEPTION (the last query's, None if none), AFTER (each a producer's sample); then DONE. Driver and executor share this
JVM (local mode): its log is the JVM log the runner keeps, where a line ``stop_probe case <how> begins`` (logger
``stop_probe``) starts each case's part.
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
    marker = spark._jvm.org.apache.logging.log4j.LogManager.getLogger("stop_probe")
    for case in cfg["cases"]:
        marker.info(f"stop_probe case {case['how']} begins")
        run_case(spark, cfg, case)
    spark.stop()
    probe.done()


def run_case(spark: Any, cfg: dict[str, Any], case: dict[str, str]) -> None:
    how, stream = case["how"], case["stream"]
    with FaultFront(cfg["upstream"]) as front:
        opts = {**cfg["writer_options"], "endpoint": front.endpoint}
        writer = KinesisWriter(stream_name=stream, **opts)
        limit = int(opts["queue_limit"])
        df = spark.readStream.schema("id LONG, pk STRING, b64 STRING").json(case["input"])
        df = df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))

        def start() -> Any:
            sw = df.writeStream
            sw = sw.foreach(writer) if case["entry"] == "foreach" else sw.format("kinesis").options(**writer.options())
            return sw.option("checkpointLocation", case["checkpoint"]).queryName(f"stop_probe_{how}").start()

        front.add_latency(LATENCY_MS)
        q = start()
        # Blocked: the limit is full and tasks keep waiting for room.
        blocked = poll(
            "the writer to block on queue_limit",
            lambda: (
                (p := live_producer(spark, stream)) and p.in_flight_records == limit and p.backpressure_cycles and p
            ),
        )
        probe.say(f"BLOCKED/{how}", blocked.__dict__)
        if how == "stop":
            q.stop()
            probe.say(f"STOPPED/{how}", str(q.exception()) if q.exception() is not None else None)
        else:
            task = poll("a running write task", lambda: [t for _, t, s in tasks(spark) if s == "RUNNING"])[0]
            spark.sparkContext._jsc.sc().killTaskAttempt(task, True, "stop_probe kills a blocked task")
            poll("the task to be killed", lambda: any(t == task and s == "KILLED" for _, t, s in tasks(spark)))
            probe.say(f"KILLED/{how}", task)
        front.add_latency(0)
        if how == "stop":
            # Every reservation released, the producer back in the pool with no user: what was in flight completes.
            idle = poll(
                "reservations released and no user left",
                lambda: (p := live_producer(spark, stream)) and p.in_flight_records == 0 and p.users == 0 and p,
            )
            probe.say(f"IDLE/{how}", idle.__dict__)
            q = start()  # from the checkpoint: the interrupted batch again, then the rest
        q.processAllAvailable()
        q.stop()
        probe.say(f"EXCEPTION/{how}", str(q.exception()) if q.exception() is not None else None)
        after = poll(
            "an idle producer",
            lambda: (p := live_producer(spark, stream)) and p.in_flight_records == 0 and p.users == 0 and p,
        )
        probe.say(f"AFTER/{how}", after.__dict__)


if __name__ == "__main__":
    main()
