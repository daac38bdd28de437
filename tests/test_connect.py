"""Spark Connect: the writer runs in the server as the kinesis sink, reached by foreach(KinesisWriter(...))
unchanged or by format("kinesis"). A real local Connect server (pyspark 4's remote("local[2]")), in a probe
process of its own; read back record by record."""

from __future__ import annotations

import fcntl
import uuid
from pathlib import Path

import pyspark
import pytest
from helpers import ENTRIES, account, payload, rows_for, session_jars, write_input
from probe import ProbeResult, run_probe
from spark_kinesis.writer import _connect_class_or_none
from spark_kinesis_testkit.emulator import read_stream

ROOT = Path(__file__).resolve().parents[1]
N = 2_000
# pyspark 3.5's local server needs the spark-connect_2.12 plugin from Maven Central, which serves no 3.5.9 here
# (3.5.0 and 3.5.4 it does): the 3.5.4 plugin runs in pyspark 3.5.9's JVM. pyspark 4 ships its own.
CONNECT_PLUGIN_35 = "3.5.4"
# Static keys the emulator accepts: none may show in anything the client or the server's log prints, nor on any
# process's command line.
CANARIES = {
    "aws_access_key_id": "AKIACONNECTCANARY001",
    "aws_secret_access_key": "connect-canary-secret/02+zz",
    "aws_session_token": "connect-canary-token-03",
}

pytestmark = pytest.mark.skipif(
    _connect_class_or_none() is None,
    reason="Spark Connect needs pyspark's connect extras (the requirements files of both legs install them)",
)


def run_connect_probe(cfg: dict, tmp_path: Path) -> ProbeResult:
    # A local Connect server listens on Spark's port 15002, and make test's two legs run side by side from this
    # checkout: one probe at a time (a lock both legs see), or the second fails to bind.
    (ROOT / ".cache").mkdir(exist_ok=True)
    with open(ROOT / ".cache" / "connect-server.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return run_probe("connect_probe.py", cfg, tmp_path, timeout_s=600)


@pytest.mark.e2e
@pytest.mark.every_line
def test_connect_session_round_trips_without_leaking_secrets(kinesis, tmp_path):
    """Both entry points from one Connect session (one server start), with canary secrets as the credentials."""
    write_input(tmp_path / "in", rows_for(range(N)), files=2)
    streams = {}
    for entry in ENTRIES:
        streams[entry] = f"t-connect-{entry}-{uuid.uuid4().hex[:6]}"
        kinesis.create_stream(streams[entry], 4)
    cfg = {
        "jars": session_jars(),
        "input": str(tmp_path / "in"),
        "writer_options": kinesis.writer_options(),
        "canaries": CANARIES,
        "connect_version": CONNECT_PLUGIN_35,
        "runs": [{"entry": e, "stream": streams[e], "checkpoint": str(tmp_path / f"ckpt-{e}")} for e in ENTRIES],
    }
    result = run_connect_probe(cfg, tmp_path)
    out = result.said["DONE"]
    for run in out["runs"]:
        d = account(range(N), read_stream(kinesis.client(), streams[run["entry"]]))
        assert d.missing == [] and d.duplicates == 0, f"{run['entry']}: {len(d.missing)} missing"
        assert all(d.by_id[i].data == payload(i) for i in range(N)), run["entry"]
        assert int(run["sink"]["metrics"]["recordsSent"]) == N, run["sink"]
        # The client-side surfaces were really read: progress names the sink, explain printed a plan.
        assert f"kinesis:{streams[run['entry']]}" in run["sink"]["description"], run["sink"]
        assert "== Physical Plan ==" in run["explain"] and "<redacted>" in run["repr"]
    if tuple(int(x) for x in pyspark.__version__.split(".")[:2]) >= (4, 1):
        # Real-time mode has no allowlisted way to Kinesis from a Connect client: the error says where there is one.
        assert "classic session" in (out["real_time_refused"] or ""), out["real_time_refused"]
    text = result.text()  # its events (the client's surfaces), its output and the server's log
    leaks = sorted(k for k, v in CANARIES.items() if v in text)
    assert leaks == [], f"secrets in the client's progress, explain, status or repr, or the server's log: {leaks}"
    # No canary on any process's command line (the probe's own included) while the pooled KPL daemon ran.
    cmdlines = result.said["CMDLINES"]
    assert cmdlines["daemons"] >= 1, f"no KPL daemon was running when the command lines were read: {cmdlines}"
    assert cmdlines["leaks"] == [], f"secrets on a command line: {cmdlines['leaks']}"
