"""Skip on replay (``dedupe_location``): a replayed micro-batch re-sends none of what Kinesis already confirmed, and
loses nothing, also when the replay holds other rows or other partitions. Each scenario runs one probe: the same input
without and with the mode, every id read back and counted (docs/reliability.md, "Skip on replay"); "stop" and "changed"
also run the mode through foreach(KinesisWriter) in the same probe."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from helpers import id_of, payload, rows_for, session_jars, write_input
from probe import run_probe
from spark_kinesis_testkit.emulator import read_stream

N = 400


def _counts(kinesis: Any, stream: str) -> Counter[int]:
    got: Counter[int] = Counter()
    for r in read_stream(kinesis.client(), stream):
        i = id_of(r.data)
        assert r.data == payload(i), f"record {i} came back altered"
        got[i] += 1
    return got


def _probe_config(
    kinesis: Any, tmp_path: Path, prefix: str, modes: tuple[str, ...], shards: int, queue_limit: int
) -> dict[str, Any]:
    """replay_probe.py's configuration: a fresh stream per mode, the input `write_input` put in tmp_path/in."""
    streams = {mode: f"{prefix}-{mode}-{tmp_path.name[-6:]}" for mode in modes}
    for s in streams.values():
        kinesis.create_stream(s, shards)
    opts = kinesis.writer_options()
    opts.update(queue_limit=queue_limit, producer_idle_timeout_ms=600_000)
    return {
        "input": str(tmp_path / "in"),
        "workdir": str(tmp_path),
        "streams": streams,
        "upstream": f"http://127.0.0.1:{kinesis.plain_port}",
        "writer_options": opts,
        "jars": session_jars(),
    }


@pytest.mark.e2e
@pytest.mark.faults
@pytest.mark.parametrize(
    "scenario",
    [
        # Each line plans a replay's clustered write itself, and foreach's tasks plan theirs: Spark 4 in "stop",
        # Spark 3.5 in "changed" (more partitions, other rows). The rest is line-independent; all but "stop" run on the
        # Spark 3.5 leg, which ends minutes before the Spark 4 one.
        "stop",
        pytest.param("changed", marks=pytest.mark.spark35_leg),
        pytest.param("uncommitted", marks=pytest.mark.spark35_leg),
        pytest.param("kill", marks=pytest.mark.spark35_leg),
    ],
)
def test_replay_skips_what_kinesis_confirmed(kinesis: Any, tmp_path: Path, scenario: str) -> None:
    ids = range(N if scenario != "kill" else 3 * N)
    write_input(tmp_path / "in", rows_for(ids), files=2)
    final = set(ids)
    replacement: dict[str, list[dict[str, Any]]] = {}
    if scenario == "changed":
        # The replay reads other rows from the same files: every third id replaced by a new one.
        rows = rows_for(ids)
        for f in range(2):  # write_input's split: file f holds rows f, f + 2, …
            part = [rows_for([r["id"] + 10**6])[0] if r["id"] % 3 == 0 else r for r in rows[f::2]]
            replacement[f"part-{f:03d}.json"] = part
        final = {i + 10**6 if i % 3 == 0 else i for i in ids}
    modes = ("off", "on", "foreach") if scenario in ("stop", "changed") else ("off", "on")
    cfg = _probe_config(kinesis, tmp_path, "rp", modes, shards=2, queue_limit=20)
    streams = cfg["streams"]
    cfg.update(scenario=scenario, replacement=replacement, kill_after=N // 2)
    result = run_probe("replay_probe.py", cfg, tmp_path, timeout_s=300)
    for stopped in result.all("STOPPED") if scenario == "stop" else []:
        assert stopped["commits"] == [], f"the stop came after the batch committed: {stopped}"

    got = {mode: _counts(kinesis, s) for mode, s in streams.items()}
    for mode, counts in got.items():
        missing = sorted(final - set(counts))
        assert not missing, f"mode {mode}: {len(missing)} ids missing, first {missing[:10]}"
    dup = {mode: sum(n - 1 for i, n in counts.items() if i in final) for mode, counts in got.items()}
    print(f"REPLAY {scenario}: duplicates {' '.join(f'{m}={d}' for m, d in dup.items())} of {len(final)} ids")
    assert dup["off"] > 0, "without the mode the replay re-sends what was confirmed: the scenario replayed nothing"
    if scenario == "kill":
        # What the killed executor confirmed in its last flush interval (200 ms) or had in flight (queue_limit) is sent
        # again; the rest of what it confirmed is not.
        assert [k["executors"] for k in result.all("KILLED")] == [2, 2], result.all("KILLED")
        assert dup["on"] <= 2 * 20 < dup["off"], f"duplicates {dup}"
        return
    on = got["on"]
    assert dup["on"] == 0, (
        f"{dup['on']} duplicates with dedupe_location: {sorted(i for i, n in on.items() if n > 1)[:10]}"
    )
    if scenario == "stop":
        # foreach, restarted with the same partitioning: each partition skips what it confirmed, so nothing twice.
        assert dup["foreach"] == 0, f"foreach: {sorted(i for i, n in got['foreach'].items() if n > 1)[:10]}"
    if scenario == "changed":
        for mode in ("on", "foreach"):
            assert all(got[mode][i] == 1 for i in final - set(ids)), f"{mode}: every new row of the replay, once"
        # foreach skips per partition: the replay's other split re-sends what another partition confirmed (never
        # loses it), so duplicates remain, up to as many as without the mode (reported, not asserted away).
        assert dup["foreach"] <= dup["off"], f"duplicates {dup}"


@pytest.mark.e2e
@pytest.mark.faults
@pytest.mark.parametrize("where", [pytest.param("same-jvm", marks=pytest.mark.spark35_leg), "new-jvm"])
def test_restart_at_once_skips_what_the_stopped_tasks_had_in_flight(kinesis: Any, tmp_path: Path, where: str) -> None:
    """query.stop() mid-batch behind a slow link, then the query again from its checkpoint at once: in the same JVM
    while the stopped tasks' records (up to queue_limit) are still being confirmed, or in a new JVM after the first one
    ended with records in flight. The replay must skip every record Kinesis confirmed, in flight at the stop or not:
    0 duplicates and 0 missing on format("kinesis") and on foreach."""
    n = 6000
    write_input(tmp_path / "in", rows_for(range(n)), files=2)
    cfg = _probe_config(kinesis, tmp_path, "rr", ("on", "foreach"), shards=4, queue_limit=400)
    streams = cfg["streams"]
    cfg.update(scenario="restart" if where == "same-jvm" else "exit", stop_after=1000, restarts=2, latency_ms=300)
    result = run_probe("replay_probe.py", cfg, tmp_path, timeout_s=300)
    stops = result.all("STOPPED")
    if where == "new-jvm":
        assert result.all("EXITED"), "the first JVM did not end after its stop"
        run_probe("replay_probe.py", {**cfg, "resume": True}, tmp_path / "resume", timeout_s=300)
    assert stops and all(st["commits"] == [] and st["in_flight"] for st in stops), f"no stop mid-batch: {stops}"
    got = {mode: _counts(kinesis, s) for mode, s in streams.items()}
    for mode, counts in got.items():
        missing = sorted(set(range(n)) - set(counts))
        assert not missing, f"mode {mode}: {len(missing)} ids missing, first {missing[:10]}"
    dup = {mode: sum(c - 1 for c in counts.values()) for mode, counts in got.items()}
    print(f"RESTART {where}: in flight at the stops {[st['in_flight'] for st in stops]}, duplicates {dup}")
    assert dup == {"on": 0, "foreach": 0}, f"duplicates {dup} after a restart at once ({where})"


@pytest.mark.e2e
@pytest.mark.bad_input
def test_refused_where_no_replay_can_be_skipped_safely(spark: Any, kinesis: Any, stream: str, tmp_path: Path) -> None:
    """Batch writes and a location without a scheme, refused on the driver before any task, and continuous processing
    on foreach, refused by its first task (only a task sees the trigger): each message naming the fix. foreach builds
    with the option."""
    from spark_kinesis import KinesisWriter

    # A stream that exists (the driver asks Kinesis about it when the query starts), never written.
    kwargs = {"stream_name": stream, **kinesis.writer_options(), "dedupe_location": (tmp_path / "fp").as_uri()}
    opts = KinesisWriter(**kwargs).options()
    rate = spark.readStream.format("rate").load().selectExpr("cast(value as string) as data", "'k' as partitionKey")
    continuous = (
        rate.writeStream.foreach(KinesisWriter(**kwargs))
        .trigger(continuous="100 milliseconds")
        .option("checkpointLocation", str(tmp_path / "cont"))
        .start()
    )
    with pytest.raises(Exception, match="works with micro-batch streaming queries only"):
        continuous.awaitTermination(120)
    assert not continuous.isActive
    batch = spark.range(3).selectExpr("cast(id as string) as data", "'k' as partitionKey")
    with pytest.raises(Exception, match="works with micro-batch streaming queries only"):
        batch.write.format("kinesis").options(**opts).mode("append").save()

    def inside(df: Any, _: int) -> None:  # a batch write within foreachBatch sees a batch id, not a replayable query
        df.write.format("kinesis").options(**opts).mode("append").save()

    q = rate.writeStream.foreachBatch(inside).option("checkpointLocation", str(tmp_path / "fb")).start()
    with pytest.raises(Exception, match="works with micro-batch streaming queries only"):
        q.awaitTermination(120)
    assert not q.isActive
    bare = {**opts, "dedupe_location": str(tmp_path / "fp")}
    with pytest.raises(Exception, match="expected a directory URI with a scheme"):
        rate.writeStream.format("kinesis").options(**bare).option("checkpointLocation", str(tmp_path / "c")).start()
