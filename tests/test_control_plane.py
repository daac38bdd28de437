"""The writer's control-plane calls (``DescribeStreamSummary``, ``ListShards``) as Kinesis counts them, in the
producer's metrics, and what a throttled one does: ``LimitExceededException`` (the account's 20
``DescribeStreamSummary`` a second, shared by every application in it) fails no write (docs/configuration.md, "Large
fleets")."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from helpers import (
    account,
    csv_last,
    csv_total,
    payload,
    rows_for,
    run_available_now,
    session_jars,
    sink_totals,
    wait_for,
    write_input,
)
from probe import run_probe
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import read_stream
from spark_kinesis_testkit.faults import FaultFront

OPS = ("DescribeStreamSummary", "ListShards")


@pytest.mark.e2e
def test_control_plane_calls_are_counted_and_a_throttled_one_fails_no_write(
    spark, kinesis, stream, tmp_path, metrics_dir
):
    n = 2_000
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as front:
        # Half a DescribeStreamSummary a second for the account: the writer's first read of the stream is throttled
        # (the bucket holds half a call), and so is any read within two seconds of an admitted one (the KPL daemon's
        # draws on it too). The driver's check is off: its client is the same SDK's, and counted nowhere.
        front.limit_control_plane(describe_per_s=0.5, list_shards_per_s=None)
        writer = KinesisWriter(
            stream_name=stream, driver_check=False, **{**kinesis.writer_options(), "endpoint": front.endpoint}
        )
        run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer)
        # Reads admitted from now on, and the query is done: a read still due either succeeds (the next only after
        # DescribeStreamSummaryIntervalMs) or never comes (no record asks), so the front's count and the metric
        # (reported once a second) settle.
        front.limit_control_plane(describe_per_s=None, list_shards_per_s=None)

        def sdk_calls() -> int:
            calls = front.control_plane_calls()
            return sum(calls.get(f"{op}/sdk", 0) for op in OPS)

        wait_for(
            lambda: sdk_calls() > 0 and csv_total(metrics_dir, stream, "controlPlaneCalls") == sdk_calls(),
            30,
            "the producer's controlPlaneCalls to equal the SDK calls the front counted",
        )
        calls, throttled = front.control_plane_calls(), front.control_plane_calls(throttled=True)
    print(f"\ncontrol-plane calls {calls}, throttled {throttled}")
    assert throttled.get("DescribeStreamSummary/sdk", 0) >= 1, f"no read of the writer's was throttled: {throttled}"
    sdk_throttled = sum(throttled.get(f"{op}/sdk", 0) for op in OPS)
    assert csv_total(metrics_dir, stream, "controlPlaneThrottles") == sdk_throttled
    # The task totals count the producer's calls made while the query's tasks ran (a read a task started may finish
    # after the last one reports: then the producer's metric holds it, and the next task of that producer counts it).
    totals = writer.metrics()
    assert 1 <= totals["controlPlaneThrottles"] <= sdk_throttled, totals
    sdk_total = sum(calls.get(f"{op}/sdk", 0) for op in OPS)
    assert totals["controlPlaneThrottles"] <= totals["controlPlaneCalls"] <= sdk_total, totals
    assert totals["driverControlPlaneCalls"] == 0, "driver_check=False: the driver reads nothing"
    assert totals["recordsFailed"] == 0
    read_back = account(range(n), read_stream(kinesis.client(), stream))
    assert read_back.missing == [], f"{len(read_back.missing)} records missing"
    assert all(r.data == payload(i) for i, r in read_back.by_id.items())


@pytest.mark.e2e
@pytest.mark.parametrize("entry", ["format", "foreach"])
def test_the_driver_reads_the_stream_once_and_ships_its_layout(spark, kinesis, stream, tmp_path, entry):
    """What the fleet test below proves of executor JVMs, in this session's one JVM (its writer is an executor's): the
    driver reads the stream once (its check's DescribeStreamSummary, with the ListShards of the first layout) and ships
    the layout with each of four micro-batches; the writer reads nothing, its KPL daemon one ListShards."""
    n, files = 2_000, 4
    write_input(tmp_path / "in", rows_for(range(n)), files=files)
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as front:
        writer = KinesisWriter(stream_name=stream, **{**kinesis.writer_options(), "endpoint": front.endpoint})
        q = run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry=entry)
        # The daemon reads the stream's map when its first records come (it sends them before, alone); by the query's
        # end the read was sent, but its count at the front may still be on its way.
        wait_for(
            lambda: front.control_plane_calls(stream=stream).get("ListShards/kpl", 0) >= 1,
            30,
            "the KPL daemon's ListShards",
        )
        calls = front.control_plane_calls(stream=stream)
    assert sum(1 for p in q.recentProgress if p["numInputRows"] > 0) == files
    totals = writer.metrics() if entry == "foreach" else sink_totals(q)
    _assert_read_by_the_driver_alone(calls, totals, daemons=1, what=f"one JVM ({entry})")
    read_back = account(range(n), read_stream(kinesis.client(), stream))
    assert read_back.missing == [], f"{len(read_back.missing)} records missing"


@pytest.mark.e2e
@pytest.mark.fleet
@pytest.mark.spark35_leg  # line-independent (the reads and where they run)
def test_executors_add_no_control_plane_calls(kinesis, stream, tmp_path):
    """local-cluster with 2 executor JVMs (a ``format`` query, then a ``foreach`` one in the same application), then 4
    (``format``), each query writing a 4-shard stream of its own in four micro-batches:
    the driver reads the stream once (its start check's DescribeStreamSummary, with the ListShards of the first
    layout) and ships the layout with each batch, and the KPL daemons are told the stream places by key. So neither
    the executors' writers nor their daemons call DescribeStreamSummary (the account's 20 a second), however many
    executors write; what is left is each daemon's one ListShards (1,000 a second per stream). Before: the driver's
    one, then two DescribeStreamSummary and two ListShards per executor (docs/configuration.md, "Large fleets")."""
    n, files = 2_000, 4
    runs = []
    # The two runs on 2 executors share an application (calls_probe.py), and so its metrics directory.
    for e, entry in ((2, "format"), (2, "foreach"), (4, "format")):
        name = f"{stream}-{e}-{entry}"
        kinesis.create_stream(name, 4)
        source = tmp_path / f"in-{name}"
        write_input(source, rows_for(range(n)), files=files)
        (tmp_path / f"metrics-{e}").mkdir(exist_ok=True)
        runs.append(
            {
                "executors": e,
                "entry": entry,
                "stream": name,
                "input": str(source),
                "checkpoint": str(tmp_path / f"ckpt-{name}"),
                "metrics_dir": str(tmp_path / f"metrics-{e}"),
            }
        )
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as front:
        cfg = {
            "runs": runs,
            "writer_options": {**kinesis.writer_options(), "endpoint": front.endpoint},
            "jars": session_jars(),
        }
        result = run_probe("calls_probe.py", cfg, tmp_path, timeout_s=600)
        calls = {(r["executors"], r["entry"]): front.control_plane_calls(stream=r["stream"]) for r in runs}
    print(f"\ncontrol-plane calls by executors: {calls}")
    for said, r in zip(result.all("RAN"), runs):
        assert said["registered"] == r["executors"] and said["batches"] == files, said
        # Every executor JVM wrote: each has its own producer's recordsSent.
        sent = csv_last(Path(r["metrics_dir"]), r["stream"], "recordsSent")
        assert len(sent) == r["executors"] and all(v > 0 for v in sent.values()), sent
        read_back = account(range(n), read_stream(kinesis.client(), r["stream"]))
        assert read_back.missing == [], f"{len(read_back.missing)} records missing from {r['stream']}"
        assert all(
            rec.data == payload(i) and rec.partition_key == f"user-{i % 97}" for i, rec in read_back.by_id.items()
        )
    for said, ((e, entry), c) in zip(result.all("RAN"), calls.items()):
        _assert_read_by_the_driver_alone(c, said["totals"], daemons=e, what=f"{e} executors ({entry})")


def _assert_read_by_the_driver_alone(calls: dict[str, int], totals: dict[str, int], daemons: int, what: str) -> None:
    """A query's control-plane calls of its stream as the front counted them (``calls``) and its writer's totals: the
    driver's DescribeStreamSummary once, one ListShards per KPL daemon, nothing else from the executors. The totals
    say the same: the driver's calls (its check and the ListShards of the first layout), none from the executors'
    writers (the daemons' are the KPL's, counted by no metric). ``what``: the run, for the messages."""
    from_executors = {k: v for k, v in calls.items() if not k.endswith("/driver")}
    assert from_executors == {"ListShards/kpl": daemons}, f"{what}: {calls}"
    assert calls.get("DescribeStreamSummary/driver") == 1, f"the driver reads the stream once per query: {calls}"
    driver = sum(v for k, v in calls.items() if k.endswith("/driver"))
    assert (totals["driverControlPlaneCalls"], totals["driverControlPlaneThrottles"]) == (driver, 0), totals
    assert (totals["controlPlaneCalls"], totals["controlPlaneThrottles"]) == (0, 0), totals


# Three intervals of writing, the interval shortened for the test; STEADY="300000,900" runs the default (5 min).
STEADY_INTERVAL_MS, STEADY_S = (int(x) for x in os.environ.get("STEADY", "15000,45").split(","))


@pytest.mark.e2e
@pytest.mark.fleet
def test_steady_control_plane_calls_do_not_grow_with_executors(kinesis, stream, tmp_path):
    """A query that keeps writing for three of `DescribeStreamSummaryIntervalMs` (15 s here), counted from its first
    written batch, on 2 and then 4 executor JVMs: the driver re-reads the stream for its executors (at the first write
    once its read is half an interval old), and neither the executors' writers (which read on their own only when no
    newer layout came within the whole interval) nor their KPL daemons (told the stream places by key, so they re-read
    once a day, not every interval the user set) call `DescribeStreamSummary`; so the steady calls a minute are the
    driver's, the same with 2 executors as with 4. Before, each daemon asked every interval: a call per executor and
    interval, growing with the fleet."""
    runs = []
    for e in (2, 4):
        name = f"{stream}-steady-{e}"
        kinesis.create_stream(name, 4)
        (tmp_path / f"metrics-{e}").mkdir()
        runs.append(
            {
                "executors": e,
                "entry": "format",
                "stream": name,
                "input": "",
                "steady_s": STEADY_S,
                "checkpoint": str(tmp_path / f"ckpt-{name}"),
                "metrics_dir": str(tmp_path / f"metrics-{e}"),
            }
        )
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as front:
        options = {
            **kinesis.writer_options(DescribeStreamSummaryIntervalMs=STEADY_INTERVAL_MS),
            "endpoint": front.endpoint,
        }
        cfg = {"runs": runs, "writer_options": options, "jars": session_jars()}
        result = run_probe("calls_probe.py", cfg, tmp_path, timeout_s=900)
        calls = {r["executors"]: front.control_plane_calls(stream=r["stream"]) for r in runs}
    said = {s["executors"]: s for s in result.all("RAN")}
    per_minute = {
        e: {k: round(v * 60 / said[e]["span_s"], 1) for k, v in c.items() if k.startswith("DescribeStreamSummary/")}
        for e, c in calls.items()
    }
    print(f"\nsteady DescribeStreamSummary a minute over {STEADY_S} s, interval {STEADY_INTERVAL_MS} ms: {per_minute}")
    for e, c in calls.items():
        # The scenario: every executor wrote, for the whole span, and no two writes were half an interval apart (the
        # driver re-reads only at a write: with rarer writes an executor's own re-read would be the product's rule).
        assert said[e]["registered"] == e and said[e]["span_s"] >= STEADY_S, said[e]
        assert said[e]["max_gap_s"] * 1000 < STEADY_INTERVAL_MS / 2, said[e]
        assert said[e]["totals"]["recordsSent"] > 0, said[e]
        # The executors' side: their writers and daemons, by User-Agent.
        executors = {k: v for k, v in c.items() if k.startswith("DescribeStreamSummary/") and not k.endswith("/driver")}
        assert executors == {}, f"{e} executors asked DescribeStreamSummary themselves: {c}"
        # The driver's re-reads ran through the span: its start check and one at least every interval.
        assert c.get("DescribeStreamSummary/driver", 0) >= STEADY_S * 1000 // STEADY_INTERVAL_MS, c
    two, four = (per_minute[e].get("DescribeStreamSummary/driver", 0.0) for e in (2, 4))
    assert abs(two - four) <= 60 * 1000 / STEADY_INTERVAL_MS, (
        f"the driver's calls a minute grew with executors: {per_minute}"
    )
