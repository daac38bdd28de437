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
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import id_of, payload, probe_env, rows_for, session_jars, write_input
from spark_kinesis_testkit.emulator import read_stream

ROOT = Path(__file__).resolve().parents[1]
N = 2000
QUEUE_LIMIT = 50
LINE = re.compile(r"^\d{4}-\d\d-\d\d [\d:,.]+ (?P<level>[A-Z]+) (?P<logger>\S+): (?P<msg>.*)$")
OURS = ("io.github.sparkkinesis", "software.amazon.kinesis")  # the writer's loggers and the KPL's


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
    config = tmp_path / "probe.json"
    config.write_text(json.dumps(cfg))
    jvm_log = tmp_path / "jvm.log"
    log4j = tmp_path / "log4j2.properties"
    log4j.write_text(
        "rootLogger.level = info\nrootLogger.appenderRef.file.ref = file\n"
        f"appender.file.type = File\nappender.file.name = file\nappender.file.fileName = {jvm_log}\n"
        "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = %d %p %c: %m%n%ex\n"
    )
    env = probe_env()
    env["PYSPARK_SUBMIT_ARGS"] = f"--driver-java-options -Dlog4j2.configurationFile={log4j.as_uri()} pyspark-shell"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "stop_probe.py"), str(config)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    out = proc.stdout
    log = jvm_log.read_text() if jvm_log.exists() else ""
    assert proc.returncode == 0 and "DONE" in out, (out + proc.stderr)[-4000:] + log[-4000:]
    said = {line.split(" ", 1)[0]: line.split(" ", 1)[1] for line in out.splitlines() if " " in line}

    blocked = json.loads(said["BLOCKED"])
    assert blocked["in_flight_records"] == QUEUE_LIMIT and blocked["backpressure_cycles"] > 0, blocked
    if how == "stop":
        idle = json.loads(said["IDLE"])  # after stop(), before the restart
        assert idle["in_flight_records"] == 0 and idle["users"] == 0, idle
    assert said["EXCEPTION"] == "None"
    after = json.loads(said["AFTER"])
    assert after["in_flight_records"] == 0 and after["users"] == 0 and after["records_failed"] == 0, after

    lines = [m for m in map(LINE.match, log.splitlines()) if m]
    assert any(m["logger"].startswith("io.github.sparkkinesis") for m in lines), "the writer's INFO lines are missing"
    ours = [m.group(0) for m in lines if m["level"] == "ERROR" and m["logger"].startswith(OURS)]
    assert not ours, f"the writer or the KPL logged an ERROR when the task was interrupted: {ours}"
    assert "KinesisWriteException" not in log, "the interruption surfaced as a writer failure"
    # Spark's executor says it interrupted and killed the task; the writer closed it uncommitted.
    assert any(
        m["logger"].endswith("executor.Executor") and re.match(r"Executor (interrupted and )?killed task", m["msg"])
        for m in lines
    ), "no task was interrupted"
    assert re.search(r"KinesisWriter aborted partition=\d+", log), "the interrupted task's writer did not close"

    got: dict[int, int] = {}
    for r in read_stream(kinesis.client(), stream):
        i = id_of(r.data)
        assert r.data == payload(i), f"record {i} came back altered"
        got[i] = got.get(i, 0) + 1
    missing = sorted(set(range(N)) - set(got))
    assert not missing, f"{len(missing)} ids missing, first {missing[:10]}"
