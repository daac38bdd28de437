"""make demo: a rate source -> to_json -> KinesisWriter (queue-limited) -> embedded Kinesis, read back.

The last line is machine-readable:
  demo: sent=<n> delivered=<n> missing=0 duplicates=<n> backpressure_cycles=<n> records_per_s=<x>
Exits non-zero if any sent record is missing.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

# Before the JVM starts (the KPL daemon inherits its environment): no EC2 metadata probes.
os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")

from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import KinesisMock, loopback_session_builder, read_stream

STREAM = "demo-events"
SHARDS = 8
ROWS_PER_BATCH = int(os.environ.get("DEMO_ROWS_PER_BATCH", "3000"))
SECONDS = float(os.environ.get("DEMO_SECONDS", "25"))
QUEUE_LIMIT = 2000


def main() -> int:
    with KinesisMock(streams={STREAM: SHARDS}) as km:
        print(f"demo: kinesis-mock on 127.0.0.1:{km.tls_port} (TLS) with {SHARDS} shards", flush=True)
        # The bundled jar (spark_kinesis.configure), loopback only.
        spark = loopback_session_builder("local[2]", "spark-kinesis-demo").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        events = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", ROWS_PER_BATCH)
            .option("numPartitions", 2)
            .load()
            .select(
                F.col("value").cast("string").alias("partitionKey"),
                F.to_json(F.struct(F.col("value").alias("id"), "timestamp", F.lit("demo").alias("source"))).alias(
                    "data"
                ),
            )
        )
        writer = KinesisWriter(stream_name=STREAM, queue_limit=QUEUE_LIMIT, **km.writer_options())
        print(f"demo: writing with {writer!r}", flush=True)
        checkpoint = tempfile.mkdtemp(prefix="spark-kinesis-demo-")
        start = time.monotonic()
        query = (
            events.writeStream.foreach(writer)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="1 second")
            .start()
        )
        while time.monotonic() - start < SECONDS:
            if query.exception() is not None:
                raise SystemExit(f"demo: query failed: {query.exception()}")
            time.sleep(0.2)
        query.stop()
        elapsed = time.monotonic() - start
        # "sent" = rows of committed batches: a batch interrupted by stop() is not committed (a
        # restart would redo it), so its rows are reported apart, not as sent.
        committed = sorted(int(p.name) for p in (Path(checkpoint) / "commits").iterdir() if p.name.isdigit())
        sent = (committed[-1] + 1) * ROWS_PER_BATCH if committed else 0
        cycles = writer.metrics()["backpressureCycles"]
        spark.stop()

        records = read_stream(km.client(), STREAM)
        seen: dict[int, int] = {}
        for r in records:
            i = json.loads(r.data)["id"]
            seen[i] = seen.get(i, 0) + 1
        delivered = sum(1 for i in range(sent) if i in seen)
        duplicates = sum(seen[i] - 1 for i in range(sent) if i in seen)
        missing = sent - delivered
        beyond = sum(1 for i in seen if i >= sent)
        if beyond:
            print(f"demo: {beyond} records from the batch interrupted by stop() also arrived", flush=True)
        print(
            f"demo: sent={sent} delivered={delivered} missing={missing} duplicates={duplicates} "
            f"backpressure_cycles={cycles} records_per_s={sent / elapsed:.1f}",
            flush=True,
        )
        return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
