"""Stops one query again and again while another writes through the same pooled producer; says what it saw.

Run through tests/probe.py. Config: upstream, writer_options, jars, entry, stops, seed, latency_ms, bystander_stream,
victim_streams (stops + 1), victim_input, victim_checkpoint, bystander_input, bystander_checkpoint.
Both queries route rows by a streamName column with the same options, so the executor's pool gives them one producer
(one KPL daemon). A fault front in front of the emulator (``upstream``) delays every response by ``latency_ms``; each
run of the victim writes to a stream of its own that the writer has not seen, so its tasks start by reading that
stream's map (one reads, the other waits for it), and records and aggregates are in flight at every stop. The victim is
stopped ``stops`` times at random moments of its batches (``query.stop()`` interrupts its
task threads wherever they are: writing, waiting on the bound, handing records to the KPL, committing) and restarted
from its checkpoint; the bystander runs throughout. Then both finish their input without the delay.
Says STOP (one per stop: what was in flight), BYSTANDER and VICTIM (each query's exception, None if none), PRODUCERS
(the pool's live producers at the end) and DONE. Its JVM's log is the one the runner keeps.
"""

from __future__ import annotations

import random
import time
from typing import Any

import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from helpers import live_producer, poll
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_session_builder, producer_snapshot
from spark_kinesis_testkit.faults import FaultFront


def running_tasks(spark: Any, query: Any) -> int:
    """Tasks running now in the jobs of ``query``'s current run (a streaming query's job group is its run id)."""
    tracker = spark.sparkContext.statusTracker()
    stages = [
        s for j in tracker.getJobIdsForGroup(str(query.runId)) if (i := tracker.getJobInfo(j)) for s in i.stageIds
    ]
    return sum(info.numActiveTasks for s in stages if (info := tracker.getStageInfo(s)))


def main() -> None:
    cfg = probe.config()
    # Four task slots: the victim's two partitions and the bystander's run at once.
    spark = loopback_session_builder("local[4]", "shared-stop-probe", cfg["jars"]).getOrCreate()
    rng = random.Random(cfg["seed"])
    with FaultFront(cfg["upstream"]) as front:
        # No stream_name: every row names its stream, so both queries share the per-row streams' producer.
        writer = KinesisWriter(**{**cfg["writer_options"], "endpoint": front.endpoint})

        def start(name: str, stream: str, files_per_batch: int) -> Any:
            rows = spark.readStream.schema("id LONG, pk STRING, b64 STRING").option(
                "maxFilesPerTrigger", files_per_batch
            )
            df = rows.json(cfg[f"{name}_input"]).select(
                F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"), F.lit(stream).alias("streamName")
            )
            sw = df.writeStream
            sw = sw.foreach(writer) if cfg["entry"] == "foreach" else sw.format("kinesis").options(**writer.options())
            return sw.option("checkpointLocation", cfg[f"{name}_checkpoint"]).queryName(name).start()

        front.add_latency(cfg["latency_ms"])
        bystander = start("bystander", cfg["bystander_stream"], 1)
        for i in range(cfg["stops"]):
            victim = start("victim", cfg["victim_streams"][i], 2)
            # Its tasks are running (each reads a file, passes the UDF and writes, in one stage).
            poll("the victim's tasks running", lambda q=victim: running_tasks(spark, q) > 0)
            # The stop's moment is random on purpose: each lands at another point of the write, most while the stream's
            # map is being read (a new stream for each run of the victim: its first records wait for the map).
            time.sleep(rng.uniform(0.1, 1.5 * cfg["latency_ms"] / 1000.0))
            p = live_producer(spark, "perRowStreams")
            victim.stop()
            busy = bool(bystander.status["isTriggerActive"])
            probe.say("STOP", {"i": i, "in_flight": p and p.in_flight_records, "bystander_busy": busy})
        front.add_latency(0)
        victim = start("victim", cfg["victim_streams"][-1], 100)
        for q in (victim, bystander):
            try:
                q.processAllAvailable()
            except Exception:  # a failed query: its exception() says why, below
                pass
            q.stop()
        probe.say("BYSTANDER", str(bystander.exception()) if bystander.exception() else None)
        probe.say("VICTIM", str(victim.exception()) if victim.exception() else None)
        probe.say("PRODUCERS", [p.__dict__ for p in producer_snapshot(spark)])
    spark.stop()
    probe.done()


if __name__ == "__main__":
    main()
