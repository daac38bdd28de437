"""make soak: SOAK_MINUTES (default 10) at the queue limit behind enforced shard limits.

Samples, once a second, the JVM heap after a full GC and the KPL daemon's RSS. Passes when both are
flat — the median of the last fifth of the run is within SOAK_MAX_GROWTH_MB (default 64) of the
median of the second fifth (the first fifth is warm-up) — and no committed record is missing.
Last line: soak: minutes=<m> sent=<n> missing=<k> heap_growth_mb=<x> kpl_rss_growth_mb=<y>
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")  # before the JVM starts
ROOT = Path(__file__).resolve().parents[1]

from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import KinesisMock, loopback_session_builder, read_stream
from spark_kinesis_testkit.faults import FaultFront
from spark_kinesis_testkit.procs import growth, kpl_daemons, rss_bytes

MINUTES = float(os.environ.get("SOAK_MINUTES", "10"))
MAX_GROWTH_MB = float(os.environ.get("SOAK_MAX_GROWTH_MB", "64"))
STREAM, SHARDS = "soak", 4
ROWS_PER_BATCH = 3000  # per second: ~2x what 4 shards at 64 KiB/s take, so the writer sits at the limit
QUEUE_LIMIT = 2000


def main() -> int:
    with KinesisMock(streams={STREAM: SHARDS}) as km, FaultFront(f"http://127.0.0.1:{km.plain_port}") as front:
        front.enforce_shard_limits(bytes_per_s=64 * 1024, records_per_s=200)
        # The bundled jar (spark_kinesis.configure), loopback only.
        spark = loopback_session_builder("local[2]", "spark-kinesis-soak").getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        jvm = spark._jvm
        events = (
            spark.readStream.format("rate-micro-batch")
            .option("rowsPerBatch", ROWS_PER_BATCH)
            .option("numPartitions", 2)
            .load()
            .select(
                F.col("value").cast("string").alias("partitionKey"),
                F.to_json(F.struct(F.col("value").alias("id"), "timestamp", F.lit("x" * 64).alias("pad"))).alias(
                    "data"
                ),
            )
        )
        writer = KinesisWriter(
            stream_name=STREAM, queue_limit=QUEUE_LIMIT, **{**km.writer_options(), "endpoint": front.endpoint}
        )
        checkpoint = tempfile.mkdtemp(prefix="spark-kinesis-soak-")
        q = (
            events.writeStream.foreach(writer)
            .option("checkpointLocation", checkpoint)
            .trigger(processingTime="1 second")
            .start()
        )
        samples = []
        start = time.monotonic()
        while time.monotonic() - start < MINUTES * 60:
            if q.exception() is not None:
                raise SystemExit(f"soak: query failed: {q.exception()}")
            jvm.System.gc()
            heap = jvm.java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed() / 2**20
            daemons = kpl_daemons(os.getpid())
            samples.append(
                {
                    "t": round(time.monotonic() - start, 1),
                    "heap_mb": heap,
                    "kpl_rss_mb": sum(rss_bytes(p) for p in daemons) / 2**20,
                }
            )
            time.sleep(max(0.0, 1.0 - (time.monotonic() - start) % 1.0))
        q.stop()
        committed = sorted(int(p.name) for p in (Path(checkpoint) / "commits").iterdir() if p.name.isdigit())
        sent = (committed[-1] + 1) * ROWS_PER_BATCH if committed else 0
        spark.stop()
        seen = {json.loads(r.data)["id"] for r in read_stream(km.client(), STREAM)}
        missing = sum(1 for i in range(sent) if i not in seen)

    heap_growth, rss_growth = (growth([s[k] for s in samples]) for k in ("heap_mb", "kpl_rss_mb"))
    out = ROOT / ".cache" / "soak"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{int(time.time())}.json").write_text(
        json.dumps(
            {"samples": samples, "sent": sent, "missing": missing, "throttled": front.stats()["throttled_records"]}
        )
    )
    print(f"soak: {len(samples)} samples; throttled records at the front: {front.stats()['throttled_records']}")
    print(
        f"soak: minutes={MINUTES:g} sent={sent} missing={missing} "
        f"heap_growth_mb={heap_growth:.1f} kpl_rss_growth_mb={rss_growth:.1f}"
    )
    return 0 if missing == 0 and heap_growth < MAX_GROWTH_MB and rss_growth < MAX_GROWTH_MB else 1


if __name__ == "__main__":
    sys.exit(main())
