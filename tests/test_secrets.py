"""Secrets never appear in reprs, plans, progress, errors or the logs the writer controls."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import entries, jvm_log_to_file, probe_env, rows_for, session_jars, write_input
from spark_kinesis_testkit.emulator import free_port

ROOT = Path(__file__).resolve().parents[1]
CANARIES = {
    "key": "AKIACANARY0000LEAK01",
    "secret": "canary-secret-Leak/02+zz",
    "token": "canary-session-token-LEAK-03",
    "proxy": "canary-proxy-pass-LEAK-04",
    "external": "canary-external-id-LEAK-05",
}


@pytest.mark.bad_input
@pytest.mark.e2e
@pytest.mark.parametrize("entry", entries(every_line="format"))  # plans print sink options differently per line
def test_no_secret_in_any_output(kinesis, stream, tmp_path, entry):
    write_input(tmp_path / "in", rows_for(range(200)), files=2)
    cfg = {
        "input": str(tmp_path / "in"),
        "checkpoint": str(tmp_path / "ckpt"),
        "stream": stream,
        "writer_options": kinesis.writer_options(),
        "jars": session_jars(),
        "canaries": CANARIES,
        "entry": entry,
        "sts_endpoint": f"http://127.0.0.1:{free_port()}",  # nothing listens: assume-role fails at the first task
    }
    config = tmp_path / "probe.json"
    config.write_text(json.dumps(cfg))  # a file: the probe's own command line must not carry the canaries
    env = probe_env()
    env["PYTHONPATH"] = str(ROOT / "python")
    # Every JVM log line at INFO into a file. Driver and executor share this JVM in local mode.
    jvm_log = jvm_log_to_file(tmp_path, env)
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "secrets_probe.py"), str(config)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "DONE" in proc.stdout, out[-5000:]
    out += jvm_log.read_text()
    # The probe really exercised what it claims: repr, a finished query, INFO logs, the error paths.
    assert "REPR KinesisWriter(" in out and "<redacted>" in out
    assert "EXCEPTION None" in out
    assert "Started KPL producer" in out, "INFO logs of the writer were not captured"
    if entry == "foreach":
        assert "KinesisWriter(" + stream in out, "the plan/progress description names the writer"
    else:
        assert "kinesis:" + stream in out and "SQL " in out, "the progress and the SQL tab name the sink"
    assert out.count("ERROR ") >= 6 and "NO ERROR" not in out and "kpl.ProxyPassword is refused" in out
    # The credential errors of the first task name their source (redacted) and the fix.
    assert "No AWS credentials for the KPL from AssumeRole(roleArn=arn:aws:iam::1:role/w" in out
    assert "No AWS credentials for the KPL from Profile(no-such-profile)" in out
    # No canary on any process's command line (the KPL daemon's carries only its configuration), in clear or hex.
    scans = [line.split() for line in proc.stdout.splitlines() if line.startswith("CMDLINES ")]
    assert scans and int(scans[0][1]) >= 1, "no KPL daemon was running when the command lines were read"
    assert scans[0][2] == "-", f"secrets on a command line: {scans[0][2]}"
    # The KPL daemon logs at warning here: its start-up must not reach for EC2 instance metadata.
    assert "169.254.169.254" not in out and "EC2MetadataClient" not in out, "the KPL daemon probed EC2 metadata"
    leaks = {name: value for name, value in CANARIES.items() if value in out}
    lines = [line for line in out.splitlines() if any(v in line for v in leaks.values())]
    assert not leaks, f"secrets leaked: {sorted(leaks)}; e.g. {lines[:3]}"
