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
from spark_kinesis_testkit.emulator import hash_key, iter_shard
from spark_kinesis_testkit.localstack import backend_image, docker_problem, skip_reason


@pytest.mark.localstack
def test_the_session_backend_answers(kinesis, stream):
    """The backend the session runs on (kinesis-mock, or LocalStack in CI) lists the test's stream."""
    names = kinesis.client().list_streams()["StreamNames"]
    assert stream in names


@pytest.mark.localstack
def test_puts_across_shards_land_in_order_with_their_sequence_numbers(kinesis, stream):
    """Two PutRecords requests, each interleaving all four shards (the second into shards that already hold records):
    every record is in the shard its key's hash names, each shard reads back in request order, and each record carries
    the sequence number its response gave, rising within a shard. kinesis-mock's PutRecords is patched
    (tools/emulator/patch.js: how it groups a request's records by shard); this holds for the patch as for Kinesis."""
    client = kinesis.client()
    shards = client.list_shards(StreamName=stream)["Shards"]
    ranges = {
        s["ShardId"]: (int(s["HashKeyRange"]["StartingHashKey"]), int(s["HashKeyRange"]["EndingHashKey"]))
        for s in shards
    }
    sent: dict[str, list[tuple[bytes, str]]] = {sid: [] for sid in ranges}
    for request in range(2):
        entries = [{"Data": f"r{request}-{i}".encode(), "PartitionKey": f"key-{i % 13}"} for i in range(60)]
        answer = client.put_records(StreamName=stream, Records=entries)
        assert answer["FailedRecordCount"] == 0, answer
        for entry, result in zip(entries, answer["Records"]):
            h = hash_key(entry["PartitionKey"])
            assert ranges[result["ShardId"]][0] <= h <= ranges[result["ShardId"]][1], (entry, result)
            sent[result["ShardId"]].append((entry["Data"], result["SequenceNumber"]))
    assert sum(1 for got in sent.values() if got) >= 3, "the keys reached too few shards to interleave them"
    for sid, expected in sent.items():
        read = [(r["Data"], r["SequenceNumber"]) for r in iter_shard(client, stream, sid, idle_polls=2)]
        assert read == expected, sid
        numbers = [int(n) for _, n in read]
        assert numbers == sorted(numbers) and len(set(numbers)) == len(numbers), sid


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
