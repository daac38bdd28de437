"""Runs a real query with canary secrets and prints every string a secret could leak into.

usage: secrets_probe.py CONFIG_FILE (JSON, keys: input, checkpoint, stream, writer_options, jars, canaries,
sts_endpoint; a file, so that no canary is on this process's command line)
Driver and executor share this JVM (local mode), so stderr carries both logs, at INFO.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import spark_kinesis  # noqa: F401  (installs the foreach hook)
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit import procs
from spark_kinesis_testkit.emulator import loopback_session_builder


def main() -> None:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    canary = cfg["canaries"]
    spark = loopback_session_builder("local[2]", "secrets-probe", cfg["jars"]).getOrCreate()
    opts = dict(cfg["writer_options"])
    opts.update(
        aws_access_key_id=canary["key"], aws_secret_access_key=canary["secret"], aws_session_token=canary["token"]
    )
    writer = KinesisWriter(stream_name=cfg["stream"], **opts)
    print("REPR", repr(writer), str(writer))
    df = spark.readStream.schema("id LONG, pk STRING, b64 STRING").json(cfg["input"])
    df = df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    entry = cfg.get("entry", "foreach")
    sw = (
        df.writeStream.foreach(writer)
        if entry == "foreach"
        else df.writeStream.format("kinesis").options(**writer.options())
    )
    q = sw.option("checkpointLocation", cfg["checkpoint"]).trigger(availableNow=True).queryName("secrets_probe").start()
    # Every process's command line, over and over while the query runs, and once more after it (the pooled KPL
    # daemon outlives the query).
    scans: list[tuple[int, int, list[str]]] = []
    while q.isActive:
        scans.append(procs.secrets_on_command_lines(canary))
        q.awaitTermination(0.1)
    q.awaitTermination(300)
    print("EXCEPTION", q.exception())
    scans.append(procs.secrets_on_command_lines(canary))
    daemons, leaks = max(d for _, d, _ in scans), sorted({name for _, _, found in scans for name in found})
    print("CMDLINES", daemons, ",".join(leaks) or "-")
    print("PROGRESS", q.recentProgress)
    q.explain(True)
    print("STATUS", q.status)
    if entry == "format":
        # A batch write too, then every SQL execution as the UI's SQL tab shows it (plans, descriptions, metrics).
        batch = spark.createDataFrame([(b"1:x", "k")], "data binary, partitionKey string")
        batch.write.format("kinesis").options(**writer.options()).mode("append").save()
        store = spark._jsparkSession.sharedState().statusStore()
        executions = store.executionsList()
        for i in range(executions.size()):
            e = executions.apply(i)
            print("SQL", e.description(), e.details(), e.physicalPlanDescription(), e.metrics())

    # Error paths that carry the options: a bad KPL value and bad assume-role input, both with secrets set.
    # ProxyPassword is refused outright: the KPL would put it on its daemon's command line.
    proxy = {"kpl": {**opts["kpl"], "ProxyPassword": canary["proxy"]}}
    for bad in ({"kpl": {**opts["kpl"], "RecordTtl": 1}}, {"role_external_id": canary["external"]}, proxy):
        try:
            bad_writer = KinesisWriter(stream_name=cfg["stream"], **{**opts, **bad})
            if entry == "foreach":
                df.writeStream.foreach(bad_writer)
            else:
                df.writeStream.format("kinesis").options(**bad_writer.options()).start().awaitTermination(60)
        except Exception as e:
            print("ERROR", type(e).__name__, e)
    # Credentials that fail at the first task (STS unreachable, a missing profile), with secrets set.
    no_keys = {"aws_access_key_id": None, "aws_secret_access_key": None, "aws_session_token": None}
    for bad in (
        {
            "role_arn": "arn:aws:iam::1:role/w",
            "role_external_id": canary["external"],
            "sts_endpoint": cfg["sts_endpoint"],
        },
        {**no_keys, "profile_name": "no-such-profile"},
    ):
        try:  # a batch write whatever the entry: the first task's failure comes from the core both share
            merged = {k: v for k, v in {**opts, **bad}.items() if v is not None}
            bad_writer = KinesisWriter(stream_name=cfg["stream"], **merged)
            batch = spark.createDataFrame([(b"1:x", "k")], "data binary, partitionKey string")
            batch.write.format("kinesis").options(**bad_writer.options()).mode("append").save()
            print("NO ERROR for", sorted(bad))
        except Exception as e:
            print("ERROR", type(e).__name__, e)
    try:
        KinesisWriter(stream_name="s", aws_secret_access_key=12345678)  # type: ignore[arg-type]
    except TypeError as e:
        print("ERROR", e)
    print("DONE", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()
