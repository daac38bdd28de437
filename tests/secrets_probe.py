"""Runs a real query with canary secrets and says every string a secret could leak into.

Run through tests/probe.py. Config: input, checkpoint, stream, writer_options, jars, canaries, entries (each runs
its query in turn, with a checkpoint of its own under ``checkpoint``), sts_endpoint. Says REPR (the writer's repr and
str); per entry EXCEPTION (its query's, None if none), CMDLINES (every process's command line, read while the query ran
and once after it: the most KPL daemons seen at once, the canaries found), PROGRESS, EXPLAIN, STATUS, on ``format`` one
SQL per SQL execution (as the UI's SQL tab shows it) and one ERROR per error path the entry takes ({type, message});
then one ERROR per entry-independent error path, NO_ERROR for one that did not fail, and DONE. Driver and executor
share this JVM (local mode): its log, at INFO, is the JVM log the runner keeps.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import probe
import spark_kinesis  # noqa: F401  (installs the foreach hook)
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit import procs
from spark_kinesis_testkit.emulator import loopback_session_builder


def error(e: BaseException) -> None:
    probe.say("ERROR", {"type": type(e).__name__, "message": str(e)})


def main() -> None:
    cfg = probe.config()
    canary = cfg["canaries"]
    spark = loopback_session_builder("local[2]", "secrets-probe", cfg["jars"]).getOrCreate()
    opts = dict(cfg["writer_options"])
    opts.update(
        aws_access_key_id=canary["key"], aws_secret_access_key=canary["secret"], aws_session_token=canary["token"]
    )
    writer = KinesisWriter(stream_name=cfg["stream"], **opts)
    probe.say("REPR", {"repr": repr(writer), "str": str(writer)})
    df = spark.readStream.schema("id LONG, pk STRING, b64 STRING").json(cfg["input"])
    df = df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    for entry in cfg["entries"]:
        run_entry(spark, df, writer, opts, cfg, entry)
    entry_independent_errors(spark, opts, cfg)
    probe.done()
    spark.stop()


def run_entry(
    spark: Any, df: Any, writer: KinesisWriter, opts: dict[str, Any], cfg: dict[str, Any], entry: str
) -> None:
    """The entry's query to the end, what it shows, and the error paths of starting it with bad options."""
    canary = cfg["canaries"]
    sw = (
        df.writeStream.foreach(writer)
        if entry == "foreach"
        else df.writeStream.format("kinesis").options(**writer.options())
    )
    checkpoint = f"{cfg['checkpoint']}/{entry}"
    q = sw.option("checkpointLocation", checkpoint).trigger(availableNow=True).queryName(f"secrets_{entry}").start()
    # Every process's command line, over and over while the query runs, and once more after it (the pooled KPL
    # daemon outlives the query).
    scans: list[tuple[int, int, list[str]]] = []
    while q.isActive:
        scans.append(procs.secrets_on_command_lines(canary))
        q.awaitTermination(0.1)
    q.awaitTermination(300)
    probe.say("EXCEPTION", str(q.exception()) if q.exception() is not None else None)
    scans.append(procs.secrets_on_command_lines(canary))
    daemons, leaks = max(d for _, d, _ in scans), sorted({name for _, _, found in scans for name in found})
    probe.say("CMDLINES", {"daemons": daemons, "leaks": leaks})
    probe.say("PROGRESS", [str(p) for p in q.recentProgress])
    explained = io.StringIO()
    with contextlib.redirect_stdout(explained):
        q.explain(True)
    probe.say("EXPLAIN", explained.getvalue())
    probe.say("STATUS", str(q.status))
    if entry == "format":
        # A batch write too, then every SQL execution as the UI's SQL tab shows it (plans, descriptions, metrics).
        batch = spark.createDataFrame([(b"1:x", "k")], "data binary, partitionKey string")
        batch.write.format("kinesis").options(**writer.options()).mode("append").save()
        store = spark._jsparkSession.sharedState().statusStore()
        executions = store.executionsList()
        for i in range(executions.size()):
            e = executions.apply(i)
            probe.say("SQL", [str(x) for x in (e.description(), e.details(), e.physicalPlanDescription(), e.metrics())])

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
            error(e)


def entry_independent_errors(spark: Any, opts: dict[str, Any], cfg: dict[str, Any]) -> None:
    canary = cfg["canaries"]
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
            probe.say("NO_ERROR", sorted(bad))
        except Exception as e:
            error(e)
    try:
        KinesisWriter(stream_name="s", aws_secret_access_key=12345678)  # type: ignore[arg-type]
    except TypeError as e:
        error(e)


if __name__ == "__main__":
    main()
