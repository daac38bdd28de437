"""The Spark side of the benchmarks: one SparkSession that runs what bench/run.py asks.

The master is ``BENCH_MASTER`` (default ``local[2]``; the scaling part uses ``local-cluster[E,1,…]``).

Commands arrive as JSON lines on stdin; each answer is one stdout line ``RESULT <json>`` (Spark logs
go to stderr). Keeping one session for all throughput runs lets the sides alternate in one warm JVM,
and lets the writer keep its pooled KPL producer between runs, as a long-running query would.

Commands:
  {"cmd": "input", "name": n, "start": i, "rows": r, "files": f}  -> parquet of ids [i, i+r)
  {"cmd": "run", "variant": v, "input": n, "payload": b, "stream": s, "writer": {...}}
      v in writer | writer_fixed | writer_kpl | writer_ordered | sink | writer_b | boto3 | boto3_agg | noop: the same
      rows and payload;
      the id is the partition key (writer_fixed: no key column, partitioner="fixed"). Optional
      "per_trigger": files per micro-batch (default 2).
  {"cmd": "backpressure", ...}                                     -> see backpressure()
  {"cmd": "quit"}
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need boto3 and aws-kinesis-agg

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit import procs
from spark_kinesis_testkit.emulator import loopback_session_builder, producer_snapshot

PUT_RECORDS_MAX = 500  # records per PutRecords call (the API's limit)
PUT_RECORDS_MAX_BYTES = 5 * 1024 * 1024


def reply(obj: dict[str, Any]) -> None:
    sys.stdout.write("RESULT " + json.dumps(obj) + "\n")
    sys.stdout.flush()


def log(msg: str) -> None:
    sys.stderr.write(f"spark_side: {msg}\n")
    sys.stderr.flush()


def records(df: DataFrame, payload: int, key: bool = True) -> DataFrame:
    """Ids -> (partitionKey, data): the id as key; 20 zero-padded digits + 'x' padding as bytes.
    BareKplLoop builds the same bytes in Java. ``key=False``: data only (the writer's partitioner sets keys)."""
    pad = F.lit("x" * (payload - 20))
    data = F.concat(F.lpad(F.col("id").cast("string"), 20, "0"), pad).cast("binary").alias("data")
    return df.select(F.col("id").cast("string").alias("partitionKey"), data) if key else df.select(data)


# -- the boto3 variants (what a PySpark user writes without this library) --------------------------
def boto3_partition_sender(client_kwargs: dict[str, Any], stream: str, aggregate: bool) -> Any:
    """A mapPartitions function: one boto3 client per partition, PutRecords in batches of 500 (or
    5 MiB), failed records (FailedRecordCount) retried with backoff until confirmed; yields the count
    of user records confirmed. ``aggregate``: pack user records with aws-kinesis-agg first (KPL format)."""

    def send(rows: Any) -> Any:
        import boto3
        import urllib3
        from botocore.config import Config

        urllib3.disable_warnings()
        client = boto3.client(
            "kinesis", config=Config(retries={"max_attempts": 10, "mode": "standard"}), **client_kwargs
        )
        confirmed = 0

        def put(entries: list[tuple[dict[str, Any], int]]) -> None:
            """entries: (PutRecords entry, user records it carries); retried until all succeed."""
            nonlocal confirmed
            pending, attempt = entries, 0
            while pending:
                resp = client.put_records(StreamName=stream, Records=[e for e, _ in pending])
                failed = []
                for entry, result in zip(pending, resp["Records"]):
                    if result.get("ErrorCode"):
                        failed.append(entry)
                    else:
                        confirmed += entry[1]
                pending = failed
                if pending:
                    attempt += 1
                    if attempt > 30:
                        raise RuntimeError(f"{len(pending)} records still failing after 30 attempts")
                    time.sleep(min(0.05 * 2**attempt, 2.0))

        batch: list[tuple[dict[str, Any], int]] = []
        batch_bytes = 0

        def add(entry: dict[str, Any], users: int) -> None:
            nonlocal batch, batch_bytes
            size = len(entry["Data"]) + len(entry["PartitionKey"])
            if batch and (len(batch) == PUT_RECORDS_MAX or batch_bytes + size > PUT_RECORDS_MAX_BYTES):
                put(batch)
                batch, batch_bytes = [], 0
            batch.append((entry, users))
            batch_bytes += size

        if aggregate:
            from aws_kinesis_agg.aggregator import RecordAggregator

            agg = RecordAggregator()

            def add_agg(rec: Any) -> None:
                pk, ehk, data = rec.get_contents()
                entry = {"Data": data, "PartitionKey": pk}
                if ehk:
                    entry["ExplicitHashKey"] = ehk
                add(entry, rec.get_num_user_records())

            for row in rows:
                full = agg.add_user_record(row.partitionKey, bytes(row.data))
                if full is not None:
                    add_agg(full)
            last = agg.clear_and_get()
            if last is not None:
                add_agg(last)
        else:
            for row in rows:
                add({"Data": bytes(row.data), "PartitionKey": row.partitionKey}, 1)
        if batch:
            put(batch)
        client.close()
        yield confirmed

    return send


class Bench:
    def __init__(self, spark: SparkSession, work: Path) -> None:
        self.spark = spark
        jvm = spark._jvm
        assert jvm is not None, "a classic session (the bench drives its JVM)"
        self.jvm_pid = int(jvm.java.lang.ProcessHandle.current().pid())
        self.work = work
        self.inputs: dict[str, tuple[str, int]] = {}  # name -> (dir, rows)

    def input(self, cmd: dict[str, Any]) -> dict[str, Any]:
        path = str(self.work / f"input-{cmd['name']}")
        start, rows, files = int(cmd["start"]), int(cmd["rows"]), int(cmd["files"])
        self.spark.range(start, start + rows, numPartitions=files).write.mode("overwrite").parquet(path)
        self.inputs[cmd["name"]] = (path, rows)
        return {"input": cmd["name"], "rows": rows}

    def stream_of(self, name: str, payload: int, per_trigger: int = 2, key: bool = True) -> DataFrame:
        path = self.inputs[name][0]
        # Two files (one per core) per micro-batch by default; availableNow ends the query when all are read.
        src = self.spark.readStream.schema("id long").option("maxFilesPerTrigger", per_trigger).parquet(path)
        return records(src, payload, key)

    def run(self, cmd: dict[str, Any]) -> dict[str, Any]:
        variant, payload, stream = cmd["variant"], int(cmd["payload"]), cmd.get("stream", "")
        rows = self.inputs[cmd["input"]][1]
        df = self.stream_of(cmd["input"], payload, int(cmd.get("per_trigger", 2)), key=variant != "writer_fixed")
        checkpoint = tempfile.mkdtemp(prefix="ckpt-", dir=self.work)
        confirmed: list[int] = []
        writer: KinesisWriter | None = None
        dsw = df.writeStream.option("checkpointLocation", checkpoint).trigger(availableNow=True)
        if variant in ("writer", "writer_b", "writer_fixed", "writer_kpl", "writer_ordered"):  # writer_b: A/A control
            # "writer*": aggregation='writer' (the default); "writer_kpl": the KPL daemon aggregating record by record
            extra: dict[str, Any] = {"aggregation": "kpl" if variant == "writer_kpl" else "writer"}
            if variant == "writer_ordered":
                extra["ordered"] = True
            if variant == "writer_fixed":
                extra["partitioner"] = "fixed"
            writer = KinesisWriter(stream_name=stream, **cmd["writer"], **extra)
            dsw = dsw.foreach(writer)
        elif variant in ("sink", "sink_dedupe"):  # the same writer through the DataSource V2 sink
            # sink_dedupe: with skip on replay (dedupe_location): every confirmed record fingerprinted and written
            fingerprints = Path(tempfile.mkdtemp(prefix="fp-", dir=self.work))
            extra = {"dedupe_location": fingerprints.as_uri()} if variant == "sink_dedupe" else {}
            sink = KinesisWriter(stream_name=stream, **cmd["writer"], aggregation="writer", **extra)
            dsw = dsw.format("kinesis").options(**sink.options())
        elif variant in ("boto3", "boto3_agg"):
            sender = boto3_partition_sender(cmd["client_kwargs"], stream, aggregate=variant == "boto3_agg")

            def batch(bdf: DataFrame, _: int) -> None:
                confirmed.append(int(bdf.rdd.mapPartitions(sender).sum()))

            dsw = dsw.foreachBatch(batch)
        elif variant == "noop":
            dsw = dsw.format("noop")
        else:
            raise ValueError(f"unknown variant {variant!r}")
        jfr = cmd.get("jfr")  # profile this run: a JFR recording of the driver JVM (= executors here)
        if jfr:
            self.jcmd("JFR.start", "name=bench", "settings=profile", f"filename={jfr}")
        aggs0 = self.aggregates_sent(stream)
        before, backend0 = procs.tree(self.jvm_pid), procs.cpu_seconds(cmd["backend_pid"])
        t0 = time.monotonic()
        query = dsw.start()
        query.awaitTermination()
        wall = time.monotonic() - t0
        after, backend1 = procs.tree(self.jvm_pid), procs.cpu_seconds(cmd["backend_pid"])
        aggs1 = self.aggregates_sent(stream)
        if jfr:
            self.jcmd("JFR.stop", "name=bench")
        if query.exception() is not None:
            raise RuntimeError(f"{variant} query failed: {query.exception()}")
        shutil.rmtree(checkpoint, ignore_errors=True)
        if writer is not None:
            m = writer.metrics()
            sent, failed = m["recordsSent"], m["recordsFailed"]
        elif variant in ("sink", "sink_dedupe"):  # the sink's totals are cumulative over the query
            progress = query.lastProgress
            assert progress is not None, "the sink's query made no progress"
            m = {k: int(v) for k, v in progress["sink"]["metrics"].items()}
            sent, failed = m["recordsSent"], m["recordsFailed"]
        elif variant == "noop":
            sent, failed = rows, 0
        else:
            sent, failed = sum(confirmed), 0
        cpu = procs.cpu_by_kind(before, after, self.jvm_pid)
        daemons = {  # each KPL daemon's share: the active stream's against the idle ones'
            str(pid): round(p.cpu_s - (before[pid].cpu_s if pid in before else 0.0), 2)
            for pid, p in after.items()
            if procs.kind(p, self.jvm_pid) == "kpl_daemon"
        }
        stored: dict[str, int] = {}
        if variant == "sink_dedupe":  # what the last batch left (the earlier ones are deleted as the next starts)
            files = [f for f in fingerprints.rglob("*") if f.is_file() and not f.name.endswith(".crc")]
            size = sum(f.stat().st_size for f in files)
            stored = {"files": len(files), "bytes": size, "records": (size - 8 * len(files)) // 16}
        if variant in ("sink", "sink_dedupe"):
            shutil.rmtree(fingerprints, ignore_errors=True)
        return {
            "fingerprints": stored,
            "variant": variant,
            "payload": payload,
            "rows": rows,
            "confirmed": sent,
            "failed": failed,
            "wall_s": wall,
            "records_per_s": rows / wall,
            "mb_per_s": rows * payload / wall / 1e6,
            "cpu_s": cpu,
            "daemon_cpu_s": daemons,
            "backend_cpu_s": backend1 - backend0,
            # aggregation='writer': the aggregates its producer handed the KPL (local mode only: the driver's pool)
            "aggregates_sent": None if aggs1 is None else aggs1 - (aggs0 or 0),
        }

    def aggregates_sent(self, stream: str) -> int | None:
        live = [p for p in producer_snapshot(self.spark) if stream and p.source.endswith(f".{stream}")]
        return sum(p.aggregates_sent for p in live) if live else None

    def jcmd(self, *args: str) -> None:
        subprocess.run(["jcmd", str(self.jvm_pid), *args], check=True, capture_output=True)

    def backpressure(self, cmd: dict[str, Any]) -> dict[str, Any]:
        """A rate source outrunning the link for ``seconds``; samples every second. Ends early if the
        query fails (expected without a limit: records expire in the KPL, the writer fails the task)."""
        payload, seconds = int(cmd["payload"]), float(cmd["seconds"])
        src = (
            self.spark.readStream.format("rate")
            .option("rowsPerSecond", int(cmd["rows_per_s"]))
            .option("numPartitions", 2)
            .load()
            .select(F.col("value").alias("id"))
        )
        writer = KinesisWriter(stream_name=cmd["stream"], **cmd["writer"])
        checkpoint = tempfile.mkdtemp(prefix="ckpt-", dir=self.work)
        rows = records(src, payload)
        if cmd.get("large_every"):  # every large_every-th record of large_payload bytes instead
            every, large = int(cmd["large_every"]), int(cmd["large_payload"])
            pad = F.when(F.col("id") % every == 0, F.expr(f"repeat('x', {large - 20})")).otherwise(
                F.expr(f"repeat('x', {payload - 20})")
            )
            data = F.concat(F.lpad(F.col("id").cast("string"), 20, "0"), pad).cast("binary").alias("data")
            rows = src.select(F.col("id").cast("string").alias("partitionKey"), data)
        query = (
            rows.writeStream.foreach(writer)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="1 second")
            .start()
        )
        jvm = self.spark._jvm
        assert jvm is not None, "a classic session (the bench drives its JVM)"
        memory = jvm.java.lang.management.ManagementFactory.getMemoryMXBean()
        samples: list[dict[str, Any]] = []
        t0 = time.monotonic()
        error = None
        next_tick = t0
        while time.monotonic() - t0 < seconds:
            next_tick += 1.0
            time.sleep(max(0.0, next_tick - time.monotonic()))
            live = producer_snapshot(self.spark)
            daemons = procs.kpl_daemons(self.jvm_pid)
            progress: Any = query.lastProgress or {}
            samples.append(
                {
                    "t": round(time.monotonic() - t0, 3),
                    "mono": time.monotonic(),  # CLOCK_MONOTONIC: comparable with bench/run.py's samples
                    "sent": sum(p.records_sent for p in live),
                    "failed": sum(p.records_failed for p in live),
                    "bytes_sent": sum(p.bytes_sent for p in live),
                    "outstanding_records": sum(p.outstanding_records for p in live),  # the KPL's count
                    "in_flight_records": sum(p.in_flight_records for p in live),  # what queue_limit bounds
                    "outstanding_bytes": sum(p.outstanding_bytes for p in live),
                    "backpressure_cycles": sum(p.backpressure_cycles for p in live),
                    "kpl_rss": sum(procs.rss_bytes(d) for d in daemons),
                    "heap_used": int(memory.getHeapMemoryUsage().getUsed()),
                    "source_rows_per_s": progress.get("inputRowsPerSecond"),
                    "batch": progress.get("batchId"),
                }
            )
            if len(samples) % 30 == 0:
                log(json.dumps(samples[-1]))
            if query.exception() is not None:
                error = str(query.exception())
                break
        if error is None:
            query.stop()
        shutil.rmtree(checkpoint, ignore_errors=True)
        return {"samples": samples, "error": error, "writer_metrics": writer.metrics() if error is None else None}


def main() -> int:
    work = Path(tempfile.mkdtemp(prefix="spark-kinesis-bench-"))
    builder = loopback_session_builder(os.environ.get("BENCH_MASTER", "local[2]"), "spark-kinesis-bench")
    builder = builder.config("spark.driver.memory", os.environ.get("BENCH_DRIVER_MEMORY", "4g"))
    builder = builder.config("spark.sql.streaming.metricsEnabled", "false")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    bench = Bench(spark, work)
    reply({"ready": True, "jvm_pid": bench.jvm_pid})
    for line in sys.stdin:
        cmd = json.loads(line)
        try:
            if cmd["cmd"] == "quit":
                break
            out = getattr(bench, cmd["cmd"])(cmd)
        except Exception as e:  # report to the orchestrator, which decides
            out = {"error": f"{type(e).__name__}: {e}"}
        reply(out)
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
