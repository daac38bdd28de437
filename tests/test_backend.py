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
    """The GitHub workflow and .ci/run run the same make targets, the README's `make test` first, each with its
    arguments, and .ci/run fails on each one's exit code (no hand-kept list of targets to forget)."""
    ci = (ROOT / ".ci" / "run").read_text()
    here = re.findall(r"^make ([\w-]+.*?) \|\| (\w+)_rc=\$\?$", ci, re.M)
    assert here and here[0][0].startswith("test "), here
    runs = re.findall(r"^\s+run: (make .+)$", (ROOT / ".github" / "workflows" / "ci.yml").read_text(), re.M)
    assert sorted(runs) == sorted(f"make {cmd}" for cmd, _ in here), (runs, here)
    for _, rc in here:
        assert f'"${rc}_rc" != 0' in ci, f"{rc}_rc is set but never fails CI"
