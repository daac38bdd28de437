"""Kafka -> real-time mode -> foreach(KinesisWriter): records arrive within the long batch, the bound holds, a stop
mid-batch is quiet; says what it saw.

Run through tests/probe.py. Config: bootstrap, topic, partitions, stream, upstream, writer_options, jars, checkpoint,
n.

The query reads the topic with ``trigger(realTime=BATCH)``: one batch that outlasts the probe, so no task commits while
it runs. Ids 0..n-1 are produced while it runs and must all be in Kinesis before its first batch ends. Then one lone
record (id 2n) goes to the idle stream, timed to its confirmation. Then the probe's fault front delays every Kinesis
response (the writer blocks on queue_limit), ids n..2n-1 are produced, the query is stopped mid-batch, and a new query
from the checkpoint replays the uncommitted batch: every id again (at-least-once). Says ARRIVED, LONE, BLOCKED, STOPPED,
IDLE, EXCEPTION (the last query's, None if none), AFTER and DONE. Driver and executors
share this JVM (local mode): its log is the JVM log the runner keeps.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import boto3
import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from helpers import id_of, live_producer, payload
from helpers import poll as poll_for
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import (
    FAKE_ACCESS_KEY_ID,
    FAKE_SECRET_ACCESS_KEY,
    REGION,
    loopback_session_builder,
    read_stream,
)
from spark_kinesis_testkit.faults import FaultFront
from spark_kinesis_testkit.kafka import produce

BATCH = "10 minutes"  # longer than the probe: the batch never ends by itself
LATENCY_MS = 1000


def poll(what: str, check: Any, step_s: float = 0.05) -> Any:
    return poll_for(what, check, timeout_s=120.0, step_s=step_s)  # Kafka, Spark and the KPL share two cores


def records(ids: range) -> list[tuple[bytes, bytes]]:
    return [(f"user-{i % 97}".encode(), payload(i)) for i in ids]


def main() -> None:
    cfg = probe.config()
    n, stream = int(cfg["n"]), cfg["stream"]
    # A real-time batch runs one long task per Kafka partition at once: a slot each, and one to spare.
    spark = loopback_session_builder(f"local[{cfg['partitions'] + 1}]", "realtime-probe", cfg["jars"]).getOrCreate()
    client = boto3.client(
        "kinesis",
        endpoint_url=cfg["upstream"],
        region_name=REGION,
        aws_access_key_id=FAKE_ACCESS_KEY_ID,
        aws_secret_access_key=FAKE_SECRET_ACCESS_KEY,
    )

    def arrived() -> set[int]:
        got = set()
        for r in read_stream(client, stream):
            i = id_of(r.data)
            if r.data != payload(i):
                raise AssertionError(f"record {i} came back altered")
            got.add(i)
        return got

    with FaultFront(cfg["upstream"]) as front:
        opts = {**cfg["writer_options"], "endpoint": front.endpoint}
        writer = KinesisWriter(stream_name=stream, **opts)
        limit = int(opts["queue_limit"])
        df = (
            spark.readStream.format("kafka")
            .option("kafka.bootstrap.servers", cfg["bootstrap"])
            .option("subscribe", cfg["topic"])
            .option("startingOffsets", "earliest")
            .load()
            .selectExpr("CAST(key AS STRING) AS partitionKey", "value AS data")
        )

        def start() -> Any:
            return (
                df.writeStream.foreach(writer)
                .outputMode("update")
                .trigger(realTime=BATCH)
                .option("checkpointLocation", cfg["checkpoint"])
                .queryName("realtime_probe")
                .start()
            )

        q = start()
        poll("the real-time batch to run", lambda: q.status["isTriggerActive"] or q.exception())
        if q.exception():
            probe.failed(str(q.exception()))
            raise SystemExit(3)

        # In flight under the bound, sampled every 5 ms while the first ids go through.
        samples: list[int] = []
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.is_set():
                p = live_producer(spark, stream)
                samples.append(p.in_flight_records if p else 0)
                time.sleep(0.005)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        t0 = time.monotonic()
        produce(cfg["bootstrap"], cfg["topic"], records(range(n)))
        poll(f"ids 0..{n - 1} in Kinesis", lambda: len(arrived() & set(range(n))) == n, step_s=0.5)
        took = time.monotonic() - t0
        sampling.set()
        sampler.join(10)
        # No batch has ended: the records went out without any commit.
        probe.say(
            "ARRIVED",
            {
                "seconds": round(took, 2),
                "batches_done": len(q.recentProgress),
                "active": q.isActive,
                "max_in_flight": max(samples),
                "samples": len(samples),
                "limit": limit,
            },
        )

        # A lone record to an idle stream: confirmed a millisecond and a round trip after it reached the writer, not
        # after RecordMaxBufferedTime (the test sets it far above any round trip here).
        lone = 2 * n
        poll("nothing in flight", lambda: (p := live_producer(spark, stream)) and p.in_flight_records == 0)
        confirmed = live_producer(spark, stream).records_sent
        t0 = time.monotonic()
        produce(cfg["bootstrap"], cfg["topic"], records(range(lone, lone + 1)))
        poll("the lone record confirmed", lambda: live_producer(spark, stream).records_sent > confirmed, step_s=0.01)
        took = time.monotonic() - t0
        poll("the lone record in Kinesis", lambda: lone in arrived(), step_s=0.5)
        probe.say("LONE", {"seconds": round(took, 3)})

        # Blocked: Kinesis answers slowly, the limit is full, tasks wait for room; then stopped mid-batch.
        front.add_latency(LATENCY_MS)
        produce(cfg["bootstrap"], cfg["topic"], records(range(n, 2 * n)))
        cycles = live_producer(spark, stream).backpressure_cycles
        blocked = poll(
            "the writer to block on queue_limit",
            lambda: (
                (p := live_producer(spark, stream))
                and p.in_flight_records == limit
                and p.backpressure_cycles > cycles
                and p
            ),
        )
        probe.say("BLOCKED", blocked.__dict__)
        q.stop()
        probe.say("STOPPED", {"batches_done": len(q.recentProgress), "exception": str(q.exception())})
        front.add_latency(0)
        idle = poll(
            "reservations released and no user left",
            lambda: (p := live_producer(spark, stream)) and p.in_flight_records == 0 and p.users == 0 and p,
        )
        probe.say("IDLE", idle.__dict__)

        q = start()  # from the checkpoint: the uncommitted batch again, every id
        poll(f"ids 0..{2 * n - 1} in Kinesis", lambda: len(arrived() & set(range(2 * n))) == 2 * n, step_s=0.5)
        q.stop()
        probe.say("EXCEPTION", str(q.exception()) if q.exception() is not None else None)
        after = poll(
            "an idle producer",
            lambda: (p := live_producer(spark, stream)) and p.in_flight_records == 0 and p.users == 0 and p,
        )
        probe.say("AFTER", after.__dict__)
    spark.stop()
    probe.done()


if __name__ == "__main__":
    main()
