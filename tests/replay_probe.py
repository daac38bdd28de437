"""Replays one micro-batch of a query, without and with skip on replay, and says what it wrote where; the test reads
the streams back.

Run through tests/probe.py. Config: input, workdir, streams ({"off": s1, "on": s2}, and "foreach": s3 to run the mode
through foreach(KinesisWriter) too; "off" and "on" write with format("kinesis")), upstream, writer_options, jars,
scenario:

- "stop": query.stop() while the batch is writing (Kinesis answering slowly behind a fault front, once some records
  are confirmed), then a new query from the checkpoint: the batch again, then the rest.
- "uncommitted": the batch runs to its end, every task committed; its commit log entry is then removed, which leaves
  the checkpoint as a driver killed between the last task's commit and that entry leaves it. A new query replays it.
- "kill": on ``local-cluster`` (two executor JVMs), one executor JVM killed (SIGKILL) while both write (Kinesis
  answering slowly, once ``kill_after`` records are in the stream): Spark runs its task again elsewhere, in the same
  batch.
- "changed": as "uncommitted", then the batch's input files are rewritten (``replacement``: new rows for some) and the
  replay splits its files into more partitions (``spark.sql.files.maxPartitionBytes``).
- "restart": as "stop", but the new query starts as soon as the stopped one has ended, while what its tasks had in
  flight (up to ``queue_limit``) is still being confirmed (the front holds every write from just before the stop until
  it is over); ``restarts`` times in a row (each a new batch to stop in).
- "exit": as "restart", but this JVM ends at once after the stop (``spark.stop()``, records still in flight) and
  says EXITED; the test restarts the query in a new probe with ``resume`` set (no stop there).

Each mode runs its own query, checkpoint and stream in this JVM, one after the other. Says STOPPED (per mode, for
"stop"), then DONE.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from helpers import live_producer, poll
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit import procs
from spark_kinesis_testkit.emulator import (
    FAKE_ACCESS_KEY_ID,
    FAKE_SECRET_ACCESS_KEY,
    REGION,
    loopback_session_builder,
    read_stream,
)
from spark_kinesis_testkit.faults import FaultFront


def kinesis_client(endpoint: str) -> Any:
    import boto3

    return boto3.client(
        "kinesis",
        endpoint_url=endpoint,
        region_name=REGION,
        aws_access_key_id=FAKE_ACCESS_KEY_ID,
        aws_secret_access_key=FAKE_SECRET_ACCESS_KEY,
    )


def main() -> None:
    cfg = probe.config()
    master = "local-cluster[2,1,1024]" if cfg["scenario"] == "kill" else "local[2]"
    spark = loopback_session_builder(master, "replay-probe", cfg["jars"]).getOrCreate()
    work = Path(cfg["workdir"])
    with FaultFront(cfg["upstream"]) as front:
        for mode, stream in cfg["streams"].items():
            opts = {**cfg["writer_options"], "endpoint": front.endpoint}
            if mode != "off":
                opts.update(dedupe_location=(work / "fingerprints").as_uri(), dedupe_flush_interval_ms=200)
            writer = KinesisWriter(stream_name=stream, **opts)
            source = work / f"in-{mode}"
            shutil.copytree(cfg["input"], source, dirs_exist_ok=True)
            checkpoint = work / f"ckpt-{mode}"
            df = spark.readStream.schema("id LONG, pk STRING, b64 STRING").json(str(source))
            df = df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))

            def start(df: Any = df, writer: Any = writer, checkpoint: Path = checkpoint, mode: str = mode) -> Any:
                if mode == "foreach":
                    w = df.writeStream.foreach(writer)
                else:
                    w = df.writeStream.format("kinesis").options(**writer.options())
                return w.option("checkpointLocation", str(checkpoint)).start()

            if cfg["scenario"] == "kill":
                # Both executors registered before the batch starts (the one killed in the mode before is replaced by
                # then, on a loaded machine too): the kill must find two writing.
                sc = spark.sparkContext._jsc.sc()  # its executors' memory status counts the driver too: 3
                poll("two executors registered", lambda sc=sc: sc.getExecutorMemoryStatus().size() == 3, timeout_s=120)
                front.add_latency(300)
                q = start()
                client = kinesis_client(cfg["upstream"])
                poll("records in the stream", lambda s=stream, c=client: len(read_stream(c, s)) >= cfg["kill_after"])
                driver = int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
                executors = procs.find(driver, "CoarseGrainedExecutorBackend")
                procs.kill(executors[:1])
                probe.say("KILLED", {"mode": mode, "executors": len(executors)})
                front.add_latency(0)
                q.processAllAvailable()
                q.stop()
                continue
            if cfg["scenario"] in ("restart", "exit") and not cfg.get("resume"):
                front.add_latency(cfg.get("latency_ms", 300))
                for round_ in range(cfg.get("restarts", 1)):
                    q = start()
                    sent = cfg["stop_after"] * (round_ + 1)
                    poll(
                        "records confirmed",
                        lambda s=stream, n=sent: (p := live_producer(spark, s)) and p.records_sent >= n,
                    )
                    # Kinesis answers no write while the query stops, so the stop leaves records in flight however
                    # long it takes (at 300 ms a request, a stop slower than a second found none on a loaded machine).
                    front.hold_writes()
                    poll("a write held at the front", lambda: front.writes_waiting() > 0)
                    q.stop()
                    in_flight = (p := live_producer(spark, stream)) and p.in_flight_records
                    commits = sorted(f.name for f in (checkpoint / "commits").glob("[0-9]*"))
                    front.release_writes()
                    probe.say("STOPPED", {"mode": mode, "commits": commits, "in_flight": in_flight})
                    if cfg["scenario"] == "exit":
                        break
                if cfg["scenario"] == "exit":
                    continue
                front.add_latency(0)
            elif cfg["scenario"] == "stop":
                front.add_latency(300)
                q = start()
                poll("some records confirmed", lambda s=stream: (p := live_producer(spark, s)) and p.records_sent >= 60)
                q.stop()
                front.add_latency(0)
                poll(
                    "the stopped tasks' records complete",
                    lambda s=stream: (p := live_producer(spark, s)) and p.in_flight_records == 0 and p.users == 0,
                )
                commits = sorted(f.name for f in (checkpoint / "commits").glob("[0-9]*"))
                probe.say("STOPPED", {"mode": mode, "commits": commits})
            elif not cfg.get("resume"):
                q = start()
                q.processAllAvailable()
                q.stop()
                # The driver "died" before logging batch 0's commit (the entry and Hadoop's checksum of it).
                for name in ("0", ".0.crc"):
                    (checkpoint / "commits" / name).unlink(missing_ok=True)
                if cfg["scenario"] == "changed":
                    for name, lines in cfg["replacement"].items():
                        (source / name).write_text("".join(json.dumps(r) + "\n" for r in lines))
                    spark.conf.set("spark.sql.files.maxPartitionBytes", "2048")
            q = start()
            q.processAllAvailable()
            q.stop()
            spark.conf.unset("spark.sql.files.maxPartitionBytes")
            if q.exception() is not None:
                probe.failed(str(q.exception()))
                return
    spark.stop()
    if cfg["scenario"] == "exit" and not cfg.get("resume"):
        probe.say("EXITED")
    probe.done()


if __name__ == "__main__":
    main()
