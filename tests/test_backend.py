"""The tests' Kinesis backend: kinesis-mock here, LocalStack (Testcontainers) where a Docker engine answers.

Without a Docker engine, ``KINESIS_TEST_BACKEND=localstack`` skips every test that needs Kinesis and says why
(which image, where it looked for Docker), rather than failing or silently testing kinesis-mock instead.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest
from helpers import ROOT
from spark_kinesis_testkit.localstack import backend_image, docker_problem, skip_reason


@pytest.mark.localstack
def test_the_session_backend_answers(kinesis, stream):
    """The backend the session runs on (kinesis-mock, or LocalStack in CI) lists the test's stream."""
    names = kinesis.client().list_streams()["StreamNames"]
    assert stream in names


def test_no_docker_is_named(monkeypatch, tmp_path):
    missing = f"unix://{tmp_path}/no-docker.sock"
    monkeypatch.setenv("DOCKER_HOST", missing)
    problem = docker_problem()
    assert problem is not None and missing in problem, problem
    assert skip_reason().startswith(f"KINESIS_TEST_BACKEND=localstack needs a Docker engine to run {backend_image()}")


def test_localstack_without_docker_skips_with_the_reason(tmp_path):
    missing = f"unix://{tmp_path}/no-docker.sock"
    env = {**os.environ, "KINESIS_TEST_BACKEND": "localstack", "DOCKER_HOST": missing}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-rs",
            "-q",
            f"{ROOT}/tests/test_backend.py::test_the_session_backend_answers",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "1 skipped" in out, out[-3000:]
    assert f"needs a Docker engine to run {backend_image()}: no Docker engine answers at {missing}" in out, out[-3000:]


def test_the_workflow_runs_what_ci_runs():
    """Every step of the GitHub workflow that runs a command runs a make target that .ci/run runs here too."""
    ci = (ROOT / ".ci" / "run").read_text()
    here = set(re.findall(r"^make ([\w-]+)", ci, re.M))
    assert here == {"test", "lint", "test-localstack", "chaos", "release-check"}, here
    runs = re.findall(r"^\s+run: (.+)$", (ROOT / ".github" / "workflows" / "ci.yml").read_text(), re.M)
    assert runs, "no run steps found"
    for cmd in runs:
        m = re.match(r"make ([\w-]+)", cmd)
        assert m and m[1] in here, f"workflow step {cmd!r} runs something .ci/run does not"


def test_the_leg_keeps_the_engines_sockets_short_from_a_deep_clone(tmp_path):
    """The dockerd the LocalStack leg starts keeps its unix sockets out of the clone: from a clone over 100 characters
    deep, every socket path is still within containerd's 104 bytes (its limit; the kernel's is 108)."""
    clone = tmp_path / ("x" * 60) / ("y" * 40) / "p"
    (clone / "tools").mkdir(parents=True)
    leg = clone / "tools" / "localstack-leg.sh"
    leg.write_text((ROOT / "tools" / "localstack-leg.sh").read_text())
    assert len(str(clone)) > 100
    proc = subprocess.run(["bash", str(leg), "--socket-paths"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    paths = proc.stdout.split()
    assert any(p.endswith("/containerd/containerd-debug.sock") for p in paths), paths
    for p in paths:
        assert p.startswith("/") and not p.startswith(str(clone)), p
        assert len(p.encode()) <= 104, f"{p}: {len(p.encode())} bytes"
