"""Interrupting a write task while the writer is blocked on queue_limit is quiet and loses nothing.

A query whose writer waits for room under ``queue_limit`` (Kinesis answering slowly) is either stopped mid-batch
(``query.stop()``, then restarted from its checkpoint) or has one write task killed (``killTaskAttempt``, which Spark
reschedules). Either way:

- the writer and the KPL log no ERROR of their own (Spark's own "Aborting task"/"Aborting commit" lines for the
  killed task are expected: they are Spark's, whatever the sink; told apart by logger name);
- the task ends as Spark's interruption, never as a writer failure (no KinesisWriteException anywhere);
- every reservation is released and the producer is back in the pool with no user (its accounting at zero);
- every id arrives, with its bytes (duplicates allowed: at-least-once).

A second test stops one query again and again while another writes through the same pooled producer: the other never
fails and the daemon they share is never torn down (no interrupt of Spark's reaches the KPL).

Speculative attempts are not covered: Spark runs no speculation in local mode (TaskSchedulerImpl starts it only
off-local), and a lost speculative race is a killed task, which ``kill`` covers.
"""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
from helpers import (
    LOG_LINE,
    OURS,
    assert_quiet_interruption,
    fresh_stream,
    id_of,
    log_parts,
    payload,
    rows_for,
    session_jars,
    write_input,
)
from probe import run_probe
from spark_kinesis_testkit.emulator import read_stream

ROOT = Path(__file__).resolve().parents[1]
N = 2000
QUEUE_LIMIT = 50


@pytest.mark.faults  # a killed task, a stopped query: make test-extended, with the other fault scenarios
@pytest.mark.e2e
@pytest.mark.parametrize(
    "cases",
    [
        # Each leg runs both interruptions in one probe JVM (one Spark start), each on one entry; the entries swap
        # between the lines, so each (how, entry) runs on one of them.
        pytest.param([("stop", "foreach"), ("kill", "format")], id="stop-foreach+kill-format"),
        pytest.param(
            [("stop", "format"), ("kill", "foreach")], id="stop-format+kill-foreach", marks=pytest.mark.spark35_leg
        ),
    ],
)
def test_interrupted_while_blocked(kinesis, tmp_path, cases):
    with contextlib.ExitStack() as fresh:
        streams = {how: fresh.enter_context(fresh_stream(kinesis, f"interrupted-{how}")) for how, _ in cases}
        check_interrupted_while_blocked(kinesis, tmp_path, cases, streams)


def check_interrupted_while_blocked(kinesis, tmp_path, cases, streams):
    """The test's body, with a fresh stream per case (``streams``: how -> stream)."""
    opts = kinesis.writer_options()
    opts.update(queue_limit=QUEUE_LIMIT, producer_idle_timeout_ms=600_000)  # the pool keeps it to be inspected
    for how in streams:
        write_input(tmp_path / how / "in", rows_for(range(N)), files=2)
    cfg = {
        "upstream": f"http://127.0.0.1:{kinesis.plain_port}",
        "writer_options": opts,
        "jars": session_jars(),
        "cases": [
            {
                "how": how,
                "entry": entry,
                "stream": streams[how],
                "input": str(tmp_path / how / "in"),
                "checkpoint": str(tmp_path / how / "ckpt"),
            }
            for how, entry in cases
        ],
    }
    result = run_probe("stop_probe.py", cfg, tmp_path, timeout_s=400)
    said = result.said
    # The JVM log in each case's part: the probe marks where each begins.
    parts = {msg.split()[2]: part for msg, part in log_parts(result.jvm_log, "stop_probe").items()}
    assert sorted(parts) == sorted(streams), f"the log's parts: {sorted(parts)}"

    for how, stream in streams.items():
        blocked = said[f"BLOCKED/{how}"]
        assert blocked["in_flight_records"] == QUEUE_LIMIT and blocked["backpressure_cycles"] > 0, (how, blocked)
        if how == "stop":
            idle = said["IDLE/stop"]  # after stop(), before the restart
            assert idle["in_flight_records"] == 0 and idle["users"] == 0, idle
        assert said[f"EXCEPTION/{how}"] is None, (how, said[f"EXCEPTION/{how}"])
        after = said[f"AFTER/{how}"]
        assert after["in_flight_records"] == 0 and after["users"] == 0 and after["records_failed"] == 0, (how, after)

        lines = assert_quiet_interruption(parts[how], f"the task was interrupted ({how})")
        # Spark's executor says it interrupted and killed the task.
        assert any(
            m["logger"].endswith("executor.Executor") and re.match(r"Executor (interrupted and )?killed task", m["msg"])
            for m in lines
        ), f"no task was interrupted ({how})"

        got: dict[int, int] = {}
        for r in read_stream(kinesis.client(), stream):
            i = id_of(r.data)
            assert r.data == payload(i), f"record {i} came back altered"
            got[i] = got.get(i, 0) + 1
        missing = sorted(set(range(N)) - set(got))
        assert not missing, f"{how}: {len(missing)} ids missing, first {missing[:10]}"


#: The stops of one run of the shared-producer probe, and the input files (and rows in each) of its two queries. The
#: victim needs files left for each of its runs however many batches a run gets through before its stop on a loaded
#: machine (a CI run saw its sixth run find none left at 60 files: 2 per batch, about 5 batches per run).
STOPS, VICTIM_FILES, VICTIM_ROWS, BYSTANDER_FILES, BYSTANDER_ROWS = 6, 120, 50, 20, 100


@pytest.mark.e2e
@pytest.mark.parametrize(
    "entry",
    [
        # The first records of each new stream wait for its map (read on a task's thread, the others waiting for it)
        # and go alone if it cannot be had: where an interrupt reached the KPL before (aggregation='kpl' puts every
        # record from the task's thread too, but Spark's kill checks between rows rarely let an interrupt reach a put).
        # Both entries share that task writer and the sender thread that keeps interrupts from the KPL; how Spark
        # interrupts a task is the line's: each line stops one entry's queries, foreach on Spark 4, format on 3.5.
        "foreach",
        pytest.param("format", marks=pytest.mark.spark35_leg),
    ],
)
def test_stopping_one_query_never_fails_another_on_the_same_daemon(kinesis, tmp_path, entry):
    """Two queries, one pooled producer (the same options, rows routed by a streamName column): the victim is stopped
    mid-batch again and again behind a slow link (its stream's map still being read, records alone and aggregates in
    flight, tasks waiting for the map, on the bound or committing), the bystander writes throughout. Spark interrupts
    the victim's task threads; no interrupt may reach the KPL (it would tear down the daemon both share). The bystander
    never fails, the pool never retires the producer, neither the writer nor the KPL logs an ERROR, and every id of
    both queries arrives, the victim's after its restarts."""
    victim_ids = range(VICTIM_FILES * VICTIM_ROWS)
    bystander_ids = range(10**6, 10**6 + BYSTANDER_FILES * BYSTANDER_ROWS)
    write_input(tmp_path / "victim", rows_for(victim_ids), files=VICTIM_FILES)
    write_input(tmp_path / "bystander", rows_for(bystander_ids), files=BYSTANDER_FILES)
    suffix = tmp_path.name[-6:]
    bystander_stream, victim_streams = f"by-{suffix}", [f"vi-{suffix}-{i}" for i in range(STOPS + 1)]
    for s in [bystander_stream, *victim_streams]:
        kinesis.create_stream(s, 2)
    opts = kinesis.writer_options()
    opts.update(producer_idle_timeout_ms=600_000)
    cfg = {
        "upstream": f"http://127.0.0.1:{kinesis.plain_port}",
        "writer_options": opts,
        "jars": session_jars(),
        "entry": entry,
        "stops": STOPS,
        "seed": 37,
        "latency_ms": 1000,
        "bystander_stream": bystander_stream,
        "victim_streams": victim_streams,
        **{f"{q}_input": str(tmp_path / q) for q in ("victim", "bystander")},
        **{f"{q}_checkpoint": str(tmp_path / f"{q}-ckpt") for q in ("victim", "bystander")},
    }
    result = run_probe("shared_stop_probe.py", cfg, tmp_path, timeout_s=600)
    said, log = result.said, result.jvm_log

    assert said["BYSTANDER"] is None, said["BYSTANDER"]
    assert said["VICTIM"] is None, said["VICTIM"]
    lines = [m for m in map(LOG_LINE.match, log.splitlines()) if m]
    started = [m["msg"] for m in lines if m["msg"].startswith("Started KPL producer #")]
    retired = [m["msg"] for m in lines if re.match(r"Closing KPL producer #\d+ \(broken\)", m["msg"])]
    assert len(started) == 1 and retired == [], (started, retired)  # one daemon for both queries, never retired
    ours = [m.group(0) for m in lines if m["level"] == "ERROR" and m["logger"].startswith(OURS)]
    assert ours == [], ours[:5]
    for fatal in ("KinesisWriteException", "Unexpected error", "Child process exited"):
        assert fatal not in log, f"{fatal!r} in the JVM log: a stop reached the KPL"

    for name, ids, streams in (
        ("victim", victim_ids, victim_streams),
        ("bystander", bystander_ids, [bystander_stream]),
    ):
        got: set[int] = set()
        for stream in streams:
            for r in read_stream(kinesis.client(), stream):
                i = id_of(r.data)
                assert r.data == payload(i), f"record {i} came back altered"
                got.add(i)
        missing = sorted(set(ids) - got)
        assert not missing, f"{name}: {len(missing)} ids missing, first {missing[:10]}"
