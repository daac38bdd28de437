"""Secrets never appear in reprs, plans, progress, errors or the logs the writer controls."""

from __future__ import annotations

import pytest
from helpers import rows_for, session_jars, write_input
from probe import run_probe
from spark_kinesis_testkit.emulator import free_port

CANARIES = {
    "key": "AKIACANARY0000LEAK01",
    "secret": "canary-secret-Leak/02+zz",
    "token": "canary-session-token-LEAK-03",
    "proxy": "canary-proxy-pass-LEAK-04",
    "external": "canary-external-id-LEAK-05",
}


@pytest.mark.bad_input
@pytest.mark.e2e
@pytest.mark.parametrize(
    "entries",
    [
        # One probe JVM runs both entries' queries in turn (their error paths at start differ; the credentials that
        # fail at the first task are the core's, run once); plans print sink options differently per line, so the
        # Spark 3.5 leg runs `format` too.
        pytest.param(["foreach", "format"], id="foreach+format"),
        pytest.param(["format"], id="format", marks=pytest.mark.spark35_leg),
    ],
)
def test_no_secret_in_any_output(kinesis, stream, tmp_path, entries):
    write_input(tmp_path / "in", rows_for(range(200)), files=2)
    cfg = {
        "input": str(tmp_path / "in"),
        "checkpoint": str(tmp_path / "ckpt"),
        "stream": stream,
        "writer_options": kinesis.writer_options(),
        "jars": session_jars(),
        "canaries": CANARIES,
        "entries": entries,
        "sts_endpoint": f"http://127.0.0.1:{free_port()}",  # nothing listens: assume-role fails at the first task
    }
    # The canaries go in the probe's config file: its own command line must not carry them.
    result = run_probe("secrets_probe.py", cfg, tmp_path, timeout_s=600)
    said = result.said
    # Everything the probe wrote: its events (repr, progress, plans, status, errors), its output, and every JVM log
    # line at INFO (driver and executor share its JVM in local mode).
    out = result.text()
    # The probe really exercised what it claims: repr, a finished query per entry, INFO logs, the error paths.
    assert said["REPR"]["repr"].startswith("KinesisWriter(") and "<redacted>" in said["REPR"]["repr"], said["REPR"]
    assert result.all("EXCEPTION") == [None] * len(entries), result.all("EXCEPTION")
    assert "Started KPL producer" in result.jvm_log, "INFO logs of the writer were not captured"
    if "foreach" in entries:
        assert "KinesisWriter(" + stream in out, "the plan/progress description names the writer"
    if "format" in entries:
        assert "kinesis:" + stream in out and result.all("SQL"), "the progress and the SQL tab name the sink"
    errors = "\n".join(e["message"] for e in result.all("ERROR"))
    # Three error paths at each entry's start, two credentials failures of the first task, one TypeError.
    assert len(result.all("ERROR")) == 3 * len(entries) + 3 and "NO_ERROR" not in said, (
        result.all("ERROR"),
        result.all("NO_ERROR"),
    )
    assert errors.count("kpl.ProxyPassword is refused") == len(entries), errors
    # The credential errors of the first task name their source (redacted) and the fix.
    assert "No AWS credentials for the KPL from AssumeRole(roleArn=arn:aws:iam::1:role/w" in errors
    assert "No AWS credentials for the KPL from Profile(no-such-profile)" in errors
    # No canary on any process's command line (the KPL daemon's carries only its configuration), in clear or hex.
    for cmdlines in result.all("CMDLINES"):
        assert cmdlines["daemons"] >= 1, "no KPL daemon was running when the command lines were read"
        assert cmdlines["leaks"] == [], f"secrets on a command line: {cmdlines['leaks']}"
    # The KPL daemon logs at warning here: its start-up must not reach for EC2 instance metadata.
    assert "169.254.169.254" not in out and "EC2MetadataClient" not in out, "the KPL daemon probed EC2 metadata"
    leaks = {name: value for name, value in CANARIES.items() if value in out}
    lines = [line for line in out.splitlines() if any(v in line for v in leaks.values())]
    assert not leaks, f"secrets leaked: {sorted(leaks)}; e.g. {lines[:3]}"
