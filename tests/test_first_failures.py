"""A newcomer's first failures say why at once: a daemon that cannot run, a stream that is not there, access refused.

Each case is a mistake as a user makes it, and asserts the words (the cause and the fix) and the time. ``RecordTtl`` is
60 s wherever Kinesis is reached, so a write that waited for records to expire (as before these checks) fails the time
bound by far. What the driver can see fails when the query starts (the stream, the endpoint, the credentials' reach;
the daemon's temp directory and executable in local mode, where the daemon runs on the driver's host); what only a
write shows (``PutRecords`` denied) fails the task within seconds of Kinesis' first answer.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import attach, rows_for, write_input
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import free_port
from spark_kinesis_testkit.faults import FaultFront

#: From the action (start, or the query's first write) to the error: the acceptance's 5 s, plus Spark's own planning
#: and a producer's start on a busy 2-core machine.
BOUND_S = 10.0
TTL = {"RecordTtl": 60_000}


@pytest.fixture
def front(kinesis: Any) -> Iterator[FaultFront]:
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as f:
        yield f


def _failing(spark: Any, tmp_path: Path, writer: KinesisWriter, entry: str) -> tuple[BaseException, float]:
    """Starts a query of 20 rows through ``writer`` and waits for its error; returns it and the seconds it took."""
    write_input(tmp_path / "in", rows_for(range(20)), files=1)
    df = spark.readStream.schema("id LONG, pk STRING, b64 STRING").json(str(tmp_path / "in"))
    df = df.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
    start = time.monotonic()
    try:
        q = attach(df.writeStream, writer, entry).option("checkpointLocation", str(tmp_path / "ck"))
        q = q.trigger(availableNow=True).start()
        try:
            if not q.awaitTermination(180):
                raise AssertionError("the query neither failed nor finished in 180 s")
        finally:
            q.stop()
    except Exception as e:
        return e, time.monotonic() - start
    raise AssertionError("the query finished: it should have failed")


def _assert_says(err: BaseException, took: float, *words: str) -> None:
    text = str(err)
    for w in words:
        assert w in text, f"{text[:3000]!r} should say {w!r}"
    assert took < BOUND_S, f"took {took:.1f} s: {text[:500]}"
    print(f"\n{took:.1f} s: {text.splitlines()[0][:400]}")


@contextlib.contextmanager
def _mounted(kind: str, options: str, where: Path) -> Iterator[Path]:
    """A tmpfs mounted at ``where`` with ``options`` (needs root and mount rights: skip otherwise)."""
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"{options},size=256m", "tmpfs", str(where)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a {kind} tmpfs here: {done.stderr.decode().strip()[:200]}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "--lazy", str(where)], check=True)  # lazy: a JVM may still hold a file there


def _writer(kinesis: Any, stream: str, **kw: Any) -> KinesisWriter:
    kpl = {**TTL, **kw.pop("kpl", {})}
    return KinesisWriter(stream_name=stream, **{**kinesis.writer_options(**kpl), **kw})


# -- the daemon ----------------------------------------------------------------------------------------------------


@pytest.mark.spark35_leg  # the daemon's start: line-independent, where `make test` has room
@pytest.mark.e2e
@pytest.mark.parametrize("entry", ["foreach", "format"])
def test_native_executable_without_run_bit(spark: Any, kinesis: Any, stream: str, tmp_path: Path, entry: str) -> None:
    exe = tmp_path / "kinesis_producer"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o644)
    err, took = _failing(spark, tmp_path, _writer(kinesis, stream, kpl={"NativeExecutable": str(exe)}), entry)
    _assert_says(err, took, f"kpl.NativeExecutable {exe} is not executable", "chmod +x")


@pytest.mark.spark35_leg  # the daemon's start: line-independent, where `make test` has room
@pytest.mark.e2e
def test_daemon_missing_a_shared_library(spark: Any, kinesis: Any, stream: str, tmp_path: Path) -> None:
    """What the dynamic loader prints and returns (127) when the aarch64 daemon's libuuid is absent: found when the
    producer starts, in the task."""
    exe = tmp_path / "kinesis_producer"
    exe.write_text(
        '#!/bin/sh\necho "$0: error while loading shared libraries: libuuid.so.1: cannot open shared object file: '
        'No such file or directory" >&2\nexit 127\n'
    )
    exe.chmod(0o755)
    err, took = _failing(spark, tmp_path, _writer(kinesis, stream, kpl={"NativeExecutable": str(exe)}), "foreach")
    _assert_says(err, took, "needs the shared library libuuid.so.1", "Install it on every executor")


@pytest.mark.spark35_leg  # the daemon's start: line-independent, where `make test` has room
@pytest.mark.e2e
def test_temp_directory_on_a_noexec_mount(spark: Any, kinesis: Any, stream: str, tmp_path: Path) -> None:
    with _mounted("noexec", "noexec", tmp_path / "noexec") as where:
        err, took = _failing(spark, tmp_path, _writer(kinesis, stream, kpl={"TempDirectory": str(where)}), "foreach")
    _assert_says(err, took, f"temp directory {where} (kpl.TempDirectory)", "mounted noexec", "Set kpl.TempDirectory")


@pytest.mark.spark35_leg  # the daemon's start: line-independent, where `make test` has room
@pytest.mark.e2e
def test_temp_directory_not_writable(spark: Any, kinesis: Any, stream: str, tmp_path: Path) -> None:
    if os.geteuid() == 0:  # root writes through permission bits: a read-only mount refuses it
        ctx: Any = _mounted("read-only", "ro", tmp_path / "ro")
    else:
        (tmp_path / "ro").mkdir(mode=0o555)
        ctx = contextlib.nullcontext(tmp_path / "ro")
    with ctx as where:
        err, took = _failing(spark, tmp_path, _writer(kinesis, stream, kpl={"TempDirectory": str(where)}), "foreach")
    _assert_says(err, took, f"temp directory {where} (kpl.TempDirectory) is not writable", "Set kpl.TempDirectory")


# -- Kinesis -------------------------------------------------------------------------------------------------------


@pytest.mark.e2e
@pytest.mark.parametrize("entry", ["foreach", "format"])
@pytest.mark.parametrize("aggregation", ["writer", "kpl"])
def test_missing_stream_fails_before_any_task(
    spark: Any, kinesis: Any, tmp_path: Path, entry: str, aggregation: str
) -> None:
    writer = _writer(kinesis, "no-such-stream", aggregation=aggregation)
    err, took = _failing(spark, tmp_path, writer, entry)
    _assert_says(err, took, "ResourceNotFoundException", "Kinesis has no stream no-such-stream in region us-east-1")
    assert "Check stream_name, region and endpoint" in str(err)


@pytest.mark.e2e
def test_endpoint_with_nothing_listening(spark: Any, kinesis: Any, stream: str, tmp_path: Path) -> None:
    endpoint = f"https://127.0.0.1:{free_port()}"
    err, took = _failing(spark, tmp_path, _writer(kinesis, stream, endpoint=endpoint), "foreach")
    _assert_says(err, took, f"Kinesis did not answer at {endpoint}", "Check endpoint and region")


@pytest.mark.e2e
def test_reads_denied_fail_before_any_task(spark: Any, kinesis: Any, stream: str, tmp_path: Path, front: Any) -> None:
    front.deny("DescribeStreamSummary", "ListShards")
    err, took = _failing(spark, tmp_path, _writer(kinesis, stream, endpoint=front.endpoint), "format")
    _assert_says(err, took, "AccessDeniedException", "Grant kinesis:PutRecords, kinesis:ListShards")


@pytest.mark.e2e
@pytest.mark.parametrize("aggregation", ["writer", "kpl"])
def test_put_records_denied_fails_the_task_at_once(
    spark: Any, kinesis: Any, stream: str, tmp_path: Path, front: Any, aggregation: str
) -> None:
    """Only a write shows it: the KPL retries AccessDenied until RecordTtl (60 s here); the writer fails the task
    within seconds of the first refusal."""
    front.deny("PutRecords")
    writer = _writer(kinesis, stream, endpoint=front.endpoint, aggregation=aggregation)
    err, took = _failing(spark, tmp_path, writer, "foreach")
    _assert_says(err, took, "AccessDeniedException", f"stream {stream}", "fails the task at once")
