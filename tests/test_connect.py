"""Spark Connect: the writer runs in the server as the kinesis sink, reached by foreach(KinesisWriter(...))
unchanged or by format("kinesis"). A real local Connect server (pyspark 4's remote("local[2]")), in a probe
process of its own; read back record by record."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ENTRIES, account, payload, probe_env, rows_for, session_jars, write_input
from spark_kinesis_testkit.emulator import read_stream

ROOT = Path(__file__).resolve().parents[1]
N = 2_000

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(m) is None for m in ("pandas", "pyarrow", "grpc", "zstandard")),
    reason="Spark Connect needs pyspark's connect extras (requirements-dev.txt installs them)",
)


def run_probe(cfg: dict) -> dict:
    env = probe_env()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "connect_probe.py"), json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    last = next((x for x in reversed(proc.stdout.splitlines()) if x.startswith(("DONE", "FAILED"))), "")
    assert last.startswith("DONE"), f"{last}\n{proc.stdout[-2000:]}\n{proc.stderr[-6000:]}"
    return json.loads(last[5:]) | {"stderr": proc.stderr}


@pytest.mark.e2e
@pytest.mark.parametrize("entry", ENTRIES)
def test_connect_session_round_trip(kinesis, stream, tmp_path, entry):
    write_input(tmp_path / "in", rows_for(range(N)), files=2)
    cfg = {
        "jars": session_jars(),
        "input": str(tmp_path / "in"),
        "checkpoint": str(tmp_path / "ckpt"),
        "stream": stream,
        "writer_options": kinesis.writer_options(),
        "entry": entry,
    }
    out = run_probe(cfg)
    d = account(range(N), read_stream(kinesis.client(), stream))
    assert d.missing == [], f"{len(d.missing)} missing"
    assert all(d.by_id[i].data == payload(i) for i in range(N))
    assert int(out["sink"]["metrics"]["recordsSent"]) == N, out["sink"]
