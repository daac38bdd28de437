"""A query on local-cluster[2,1,1024] (two executor JVMs), run as its own process, with a driver unlike its executors:
the driver's default credentials are not the executors' (``driver_env`` here, ``executor_env`` through
spark.executorEnv: IRSA on the executors' service account only), and the executor JVMs' java.io.tmpdir is read-only
(``executor_tmpdir``) while the writer's kpl.TempDirectory is writable.

Run through tests/probe.py. Config: input, checkpoint, stream, writer_options (no credentials: the default chain),
jars, metrics_dir, driver_env, executor_env, executor_tmpdir. Starts the query as it comes first (says REFUSED with
the error and the seconds it took, or STARTED if the driver's check let it through), then with driver_check=False
(says TOTALS, the writer's driver-side totals), then holds its executors until the test releases it; then DONE.
"""

from __future__ import annotations

import os
import time

import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_session_builder


def main() -> None:
    cfg = probe.config()
    os.environ.update(cfg["driver_env"])  # before the JVM starts: the driver's default chain reads its environment
    builder = loopback_session_builder("local-cluster[2,1,1024]", "cluster-probe", cfg["jars"], cfg["metrics_dir"])
    for name, value in cfg["executor_env"].items():
        builder = builder.config(f"spark.executorEnv.{name}", value)
    builder = builder.config("spark.executor.extraJavaOptions", f"-Djava.io.tmpdir={cfg['executor_tmpdir']}")
    # Spark's own part of a read-only java.io.tmpdir: zstd-jni (its default codec for map statuses) unpacks its native
    # library there and fails; lz4-java falls back to Java where it cannot.
    builder = builder.config("spark.shuffle.mapStatus.compression.codec", "lz4")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    df = (
        spark.readStream.schema("id LONG, pk STRING, b64 STRING")
        .json(cfg["input"])
        .repartition(4)
        .select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    )

    def start(**extra: object) -> tuple[KinesisWriter, object]:
        writer = KinesisWriter(stream_name=cfg["stream"], **{**cfg["writer_options"], **extra})
        q = df.writeStream.foreach(writer).option("checkpointLocation", cfg["checkpoint"])
        return writer, q.trigger(availableNow=True).start()

    begun = time.monotonic()
    try:
        _, checked = start()  # the driver's check runs in foreach(): before any task, and before a checkpoint
        checked.stop()  # type: ignore[attr-defined]
        probe.say("STARTED")
    except Exception as e:
        probe.say("REFUSED", {"error": str(e), "seconds": time.monotonic() - begun})
    writer, q = start(driver_check=False)
    q.awaitTermination(600)  # type: ignore[attr-defined]
    if q.exception():  # type: ignore[attr-defined]
        probe.failed(str(q.exception()))  # type: ignore[attr-defined]
        raise SystemExit(3)
    probe.say("TOTALS", writer.metrics())
    # Keep the executors alive until the test has seen their metrics sinks report.
    probe.hold()
    spark.stop()
    probe.done()


if __name__ == "__main__":
    main()
