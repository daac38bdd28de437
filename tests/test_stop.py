"""Interrupting a write task while the writer is blocked on queue_limit is quiet and loses nothing.

A query whose writer waits for room under ``queue_limit`` (Kinesis answering slowly) is either stopped mid-batch
(``query.stop()``, then restarted from its checkpoint) or has one write task killed (``killTaskAttempt``, which Spark
reschedules). Either way:

- the writer and the KPL log no ERROR of their own (Spark's own "Aborting task"/"Aborting commit" lines for the
  killed task are expected: they are Spark's, whatever the sink; told apart by logger name);
- the task ends as Spark's interruption, never as a writer failure (no KinesisWriteException anywhere);
- every reservation is released and the producer is back in the pool with no user (its accounting at zero);
- every id arrives, with its bytes (duplicates allowed: at-least-once).

Speculative attempts are not covered: Spark runs no speculation in local mode (TaskSchedulerImpl starts it only
off-local), and a lost speculative race is a killed task, which ``kill`` covers.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from helpers import assert_quiet_interruption, id_of, payload, rows_for, run_probe, session_jars, write_input
from spark_kinesis_testkit.emulator import read_stream

ROOT = Path(__file__).resolve().parents[1]
N = 2000
QUEUE_LIMIT = 50


@pytest.mark.e2e
@pytest.mark.parametrize(
    "how,entry",
    [
        ("stop", "foreach"),
        ("kill", "format"),
        # Line-independent: the Spark 3.5 leg runs these instead of the Spark 4 one.
        pytest.param("stop", "format", marks=pytest.mark.spark35_leg),
        pytest.param("kill", "foreach", marks=pytest.mark.spark35_leg),
    ],
)
def test_interrupted_while_blocked(kinesis, stream, tmp_path, how, entry):
    write_input(tmp_path / "in", rows_for(range(N)), files=2)
    opts = kinesis.writer_options()
    opts.update(queue_limit=QUEUE_LIMIT, producer_idle_timeout_ms=600_000)  # the pool keeps it to be inspected
    cfg = {
        "input": str(tmp_path / "in"),
        "checkpoint": str(tmp_path / "ckpt"),
        "stream": stream,
        "upstream": f"http://127.0.0.1:{kinesis.plain_port}",
        "writer_options": opts,
        "jars": session_jars(),
        "entry": entry,
        "how": how,
    }
    said, log = run_probe("stop_probe.py", cfg, tmp_path, timeout_s=300)

    blocked = json.loads(said["BLOCKED"])
    assert blocked["in_flight_records"] == QUEUE_LIMIT and blocked["backpressure_cycles"] > 0, blocked
    if how == "stop":
        idle = json.loads(said["IDLE"])  # after stop(), before the restart
        assert idle["in_flight_records"] == 0 and idle["users"] == 0, idle
    assert said["EXCEPTION"] == "None"
    after = json.loads(said["AFTER"])
    assert after["in_flight_records"] == 0 and after["users"] == 0 and after["records_failed"] == 0, after

    lines = assert_quiet_interruption(log, "the task was interrupted")
    # Spark's executor says it interrupted and killed the task.
    assert any(
        m["logger"].endswith("executor.Executor") and re.match(r"Executor (interrupted and )?killed task", m["msg"])
        for m in lines
    ), "no task was interrupted"

    got: dict[int, int] = {}
    for r in read_stream(kinesis.client(), stream):
        i = id_of(r.data)
        assert r.data == payload(i), f"record {i} came back altered"
        got[i] = got.get(i, 0) + 1
    missing = sorted(set(range(N)) - set(got))
    assert not missing, f"{len(missing)} ids missing, first {missing[:10]}"
