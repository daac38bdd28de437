"""Runs a real query with canary secrets and prints every string a secret could leak into.

usage: secrets_probe.py CONFIG_JSON (keys: input, checkpoint, stream, writer_options, jar, canaries)
Driver and executor share this JVM (local mode), so stderr carries both logs, at INFO.
"""

from __future__ import annotations

import json
import sys

import spark_kinesis  # noqa: F401  (installs the foreach hook)
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis.testing import loopback_session_builder


def main() -> None:
    cfg = json.loads(sys.argv[1])
    canary = cfg["canaries"]
    spark = loopback_session_builder("local[2]", "secrets-probe", cfg["jar"]).getOrCreate()
    opts = dict(cfg["writer_options"])
    opts.update(
        aws_access_key_id=canary["key"], aws_secret_access_key=canary["secret"], aws_session_token=canary["token"]
    )
    opts["kpl"] = {**opts["kpl"], "ProxyPassword": canary["proxy"]}
    writer = KinesisWriter(stream_name=cfg["stream"], **opts)
    print("REPR", repr(writer), str(writer))
    df = spark.readStream.schema("id LONG, pk STRING, b64 STRING").json(cfg["input"])
    df = df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    q = (
        df.writeStream.foreach(writer)
        .option("checkpointLocation", cfg["checkpoint"])
        .trigger(availableNow=True)
        .queryName("secrets_probe")
        .start()
    )
    q.awaitTermination(300)
    print("EXCEPTION", q.exception())
    print("PROGRESS", q.recentProgress)
    q.explain(True)
    print("STATUS", q.status)
    # Error paths that carry the options: a bad KPL value and bad assume-role input, both with secrets set.
    for bad in ({"kpl": {**opts["kpl"], "RecordTtl": 1}}, {"role_external_id": canary["external"]}):
        try:
            df.writeStream.foreach(KinesisWriter(stream_name=cfg["stream"], **{**opts, **bad}))
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
