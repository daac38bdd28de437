"""Writes through both entry points in a Spark whose class path also holds a platform's jars; says what ran.

Run through tests/probe.py (by tests/test_classpath.py). The config: ``jars`` (ours, spark.jars form), ``platform``
(jar paths), ``placement`` (``classpath``: the JVM's class path, where EMR and Glue put their SDK; ``jars``: spark.jars,
ahead of ours; ``jars_after``: spark.jars, after ours), ``writer`` (KinesisWriter arguments), ``input`` (what the
streaming query writes), ``batch_input`` (what the batch write writes), ``checkpoint`` (local paths or s3a:// URLs),
``stream`` (both write to it, through one pooled producer: their ids differ), optional ``s3`` (Hadoop settings for S3A)
and ``other_kpl`` (a second KPL on the class path: drive it too).
Says LOCATIONS (where the SDK classes were loaded from), DAEMONS (the KPL daemons this JVM started: their
executables), OTHER_KPL (what the other KPL's futures said) and DONE.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import probe
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_session_builder


def _location(jvm: Any, name: str) -> str | None:
    try:
        cls = jvm.java.lang.Class.forName(name, False, jvm.java.lang.Thread.currentThread().getContextClassLoader())
    except Exception:  # the class is not on this class path
        return None
    source = cls.getProtectionDomain().getCodeSource()
    return str(source.getLocation()) if source is not None else "bootstrap"


def _daemons(jvm_pid: int) -> list[str]:
    """The executables of the KPL daemons that are children of the JVM."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            exe = os.readlink(proc / "exe")
        except OSError:
            continue
        if ppid == jvm_pid and os.path.basename(exe).startswith("kinesis_producer"):
            found.append(exe)
    return sorted(found)


def _drive_other_kpl(jvm: Any, cfg: dict[str, Any]) -> dict[str, Any]:
    """Puts records through the other KPL (its own classes, its own SDK) and waits for every future."""
    kp = jvm.software.amazon.kinesis.producer
    creds = jvm.software.amazon.awssdk.auth.credentials
    c = kp.KinesisProducerConfiguration()
    c.setKinesisEndpoint("127.0.0.1").setKinesisPort(cfg["port"]).setVerifyCertificate(False)
    c.setRegion(cfg["region"]).setMetricsLevel("none").setAggregationEnabled(False).setRequestTimeout(60000)
    c.setCredentialsProvider(
        creds.StaticCredentialsProvider.create(creds.AwsBasicCredentials.create(cfg["key_id"], cfg["secret"]))
    )
    producer = kp.KinesisProducer(c)
    try:
        futures = [
            producer.addUserRecord(cfg["stream"], f"k-{i}", jvm.java.nio.ByteBuffer.wrap(f"other:{i}".encode()))
            for i in range(cfg["n"])
        ]
        producer.flushSync()
        ok = sum(1 for f in futures if f.get().isSuccessful())
        daemons = _daemons(int(jvm.java.lang.ProcessHandle.current().pid()))
    finally:
        producer.destroy()
    return {"successful": ok, "daemons": daemons}


def main() -> None:
    cfg = probe.config()
    platform = cfg["platform"]
    if cfg["placement"] == "jars":
        builder = loopback_session_builder("local[2]", "classpath-probe", ",".join([*platform, cfg["jars"]]))
    elif cfg["placement"] == "jars_after":
        builder = loopback_session_builder("local[2]", "classpath-probe", ",".join([cfg["jars"], *platform]))
    else:
        builder = loopback_session_builder("local[2]", "classpath-probe", cfg["jars"])
        builder = builder.config("spark.driver.extraClassPath", ":".join(platform))
    for key, value in cfg.get("s3", {}).items():
        builder = builder.config(f"spark.hadoop.{key}", value)
    spark = builder.getOrCreate()
    jvm = spark._jvm
    names = {
        "ours": "io.github.sparkkinesis.shaded.awssdk.services.kinesis.KinesisClient",
        "platform_sdk": "software.amazon.awssdk.services.kinesis.KinesisClient",
        "platform_sdk_v1": "com.amazonaws.services.kinesis.AmazonKinesisClient",
        "platform_kpl": "software.amazon.kinesis.producer.KinesisProducer",
        "s3a": "org.apache.hadoop.fs.s3a.S3AFileSystem",
    }
    probe.say("LOCATIONS", {k: _location(jvm, v) for k, v in names.items()})

    rows = spark.readStream.schema("id LONG, pk STRING, b64 STRING").json(cfg["input"])
    records = rows.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    writer = KinesisWriter(stream_name=cfg["stream"], **cfg["writer"])
    q = records.writeStream.foreach(writer).option("checkpointLocation", cfg["checkpoint"])
    q = q.trigger(availableNow=True).start()
    if not q.awaitTermination(300):
        q.stop()
        raise TimeoutError("the foreach query did not finish in 300 s")
    if q.exception() is not None:
        raise RuntimeError(str(q.exception()))

    batch = spark.read.schema("id LONG, pk STRING, b64 STRING").json(cfg["batch_input"])
    batch = batch.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    formatted = KinesisWriter(stream_name=cfg["stream"], **cfg["writer"])
    batch.write.format("kinesis").options(**formatted.options()).mode("append").save()
    probe.say("DAEMONS", _daemons(int(jvm.java.lang.ProcessHandle.current().pid())))

    if "other_kpl" in cfg:
        probe.say("OTHER_KPL", _drive_other_kpl(jvm, cfg["other_kpl"]))
    spark.stop()
    probe.done()


if __name__ == "__main__":
    main()
