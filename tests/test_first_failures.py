"""A newcomer's first failures say why at once: a daemon that cannot run, a stream that is not there, access refused;
and what the checks let through runs: every configuration the docs recommend is a test here.

Each failing case is a mistake as a user makes it, and asserts the words (the cause and the fix) and the time.
``RecordTtl`` is 60 s wherever Kinesis is reached, so a write that waited for records to expire (as before these
checks) fails the time bound by far. What the driver can see fails when the query starts (the stream, the endpoint and
its certificate, the credentials; the daemon's temp directory and executable in local mode, where the daemon runs on
the driver's host); what only a write shows (``PutRecords`` denied, a stream named per row) fails the task within
seconds of Kinesis' first answer. What the checks let through (reads denied, a private CA, a lenient per-row write; a
driver unlike its executors: tests/test_metrics.py) delivers every record, read back one by one
(docs/reliability.md, "What the checks refuse and what they let through").
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import account, attach, mounted, payload, read_only, rows_for, write_input
from pyspark.sql import functions as F
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import free_port, read_stream
from spark_kinesis_testkit.faults import FaultFront

#: From the action (the query's start; for `PutRecords` denied, Kinesis' first refusal) to the error: the acceptance's
#: 5 s, plus Spark's own planning and a producer's start on a busy 2-core machine.
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
    with mounted("noexec", "noexec", tmp_path / "noexec") as where:
        err, took = _failing(spark, tmp_path, _writer(kinesis, stream, kpl={"TempDirectory": str(where)}), "foreach")
    _assert_says(err, took, f"temp directory {where} (kpl.TempDirectory)", "mounted noexec", "Set kpl.TempDirectory")


@pytest.mark.spark35_leg  # the daemon's start: line-independent, where `make test` has room
@pytest.mark.e2e
def test_temp_directory_not_writable(spark: Any, kinesis: Any, stream: str, tmp_path: Path) -> None:
    with read_only(tmp_path / "ro") as where:
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
    _assert_says(err, took, "Kinesis did not answer within", f"at endpoint {endpoint}", "Check endpoint and region")


@pytest.mark.spark35_leg  # line-independent: the checks, the trust, the refusals; where `make test` has room
@pytest.mark.e2e
def test_untrusted_certificate_fails_naming_host_issuer_and_ca_file(
    spark: Any, kinesis: Any, stream: str, tmp_path: Path, front: Any
) -> None:
    """The front's certificate comes from a CA of the test's own: with VerifyCertificate on and no kpl.CaCertFile,
    neither the writer nor its daemon trusts it. Named as such, never as an endpoint that did not answer."""
    writer = _writer(kinesis, stream, endpoint=front.endpoint, kpl={"VerifyCertificate": True})
    err, took = _failing(spark, tmp_path, writer, "foreach")
    _assert_says(
        err,
        took,
        "Kinesis presented a certificate for",
        f"at endpoint https://127.0.0.1:{front.port}",
        "issued by",
        "Set kpl.CaCertFile",
    )
    assert "did not answer" not in str(err)
    assert took < 5.0, f"took {took:.1f} s"


# -- what the checks let through (docs/reliability.md, "What the checks refuse and what they let through") -------------

N_BATCH = 2_000


def _batch_write(spark: Any, tmp_path: Path, writer: KinesisWriter, ids: range, stream_of: Any = None) -> float:
    """One batch write of ``ids`` through ``format("kinesis")`` (as the issue's user: ``mode("append").save()``), rows
    routed by a ``streamName`` column when ``stream_of`` names each id's stream; returns the seconds it took."""
    rows = rows_for(ids)
    if stream_of is not None:
        rows = [{**r, "stream": stream_of(r["id"])} for r in rows]
    write_input(tmp_path / "batch", rows, files=2)
    df = spark.read.schema("id LONG, pk STRING, b64 STRING, stream STRING").json(str(tmp_path / "batch"))
    cols = [F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data")]
    if stream_of is not None:
        cols.append(F.col("stream").alias("streamName"))
    start = time.monotonic()
    df.select(*cols).write.format("kinesis").options(**writer.options()).mode("append").save()
    return time.monotonic() - start


def _delivered_each(kinesis: Any, stream: str, ids: range) -> list[Any]:
    """Every id of ``ids`` read back from ``stream``, its bytes and key as sent; returns the user records."""
    records = read_stream(kinesis.client(), stream)
    got = account(ids, records)
    assert got.missing == [], f"{len(got.missing)} of {len(ids)} missing, first {got.missing[:10]}"
    for i, r in got.by_id.items():
        assert r.data == payload(i) and r.partition_key == rows_for([i])[0]["pk"], f"record {i} came back altered"
    return records


@pytest.mark.spark35_leg  # line-independent: the checks, the trust, the refusals; where `make test` has room
@pytest.mark.e2e
@pytest.mark.parametrize("aggregation", ["writer", pytest.param("kpl", marks=pytest.mark.variant)])
@pytest.mark.parametrize("case", ["reads-denied", "private-ca"])
def test_what_the_docs_recommend_starts_and_delivers(
    spark: Any, kinesis: Any, stream: str, tmp_path: Path, front: Any, case: str, aggregation: str
) -> None:
    """Configurations docs/configuration.md sends users to, in both aggregation modes, a batch of 2,000 rows each:

    - reads-denied: credentials allowed PutRecords only (IAM). No mode needs the reads to send, so the driver only
      warns; without the shard map every record goes alone, in both modes (what the WARN says it costs).
    - private-ca: an endpoint whose certificate only kpl.CaCertFile vouches for (the front's, from the test's own CA),
      certificates verified. The driver's check (which refuses it without the file: the test above) and the daemon
      (every record delivered) trust it; with aggregation='writer' the executors' shard reads too: every record in an
      aggregate. (The KPL's own aggregation starts once its daemon has read the map, after a short batch's first sends.)
    """
    kpl: dict[str, Any] = {}
    if case == "reads-denied":
        front.deny("DescribeStreamSummary", "ListShards")
    else:
        kpl = {"VerifyCertificate": True, "CaCertFile": front.ca_pem_path}
    writer = _writer(kinesis, stream, endpoint=front.endpoint, aggregation=aggregation, kpl=kpl)
    took = _batch_write(spark, tmp_path, writer, range(N_BATCH))
    records = _delivered_each(kinesis, stream, range(N_BATCH))
    aggregated = sum(r.aggregated for r in records)
    if case == "reads-denied":
        assert front.stats()["denied"] > 0, "the reads were never asked: the scenario did not happen"
        assert aggregated == 0, "aggregated without a shard map"
    elif aggregation == "writer":
        assert aggregated == N_BATCH, f"{aggregated} of {N_BATCH} aggregated: the shard map was not read over TLS"
    print(f"\n{case} {aggregation}: {N_BATCH} records in {took:.1f} s, {aggregated} in aggregates")


@pytest.mark.spark35_leg  # line-independent: the checks, the trust, the refusals; where `make test` has room
@pytest.mark.e2e
@pytest.mark.parametrize("fail_on_error", [False, True])
def test_a_refused_stream_of_a_per_row_write(
    spark: Any, kinesis: Any, stream: str, tmp_path: Path, fail_on_error: bool
) -> None:
    """10 of 1,000 rows routed to a stream that does not exist (per-row streams: the driver cannot check them). Lenient,
    the write drops and counts those 10 and delivers every other row; strict, it fails naming that stream."""
    n, typo = 1_000, "typo-stream"
    writer = KinesisWriter(fail_on_error=fail_on_error, **kinesis.writer_options(**TTL))
    to = {i: typo if i % 100 == 7 else stream for i in range(n)}
    if fail_on_error:
        start = time.monotonic()
        with pytest.raises(Exception) as failed:
            _batch_write(spark, tmp_path, writer, range(n), to.get)
        _assert_says(failed.value, time.monotonic() - start, f"Kinesis has no stream {typo}", "fails the task at once")
        return
    before = _failed_records(spark)
    took = _batch_write(spark, tmp_path, writer, range(n), to.get)
    good = [i for i in range(n) if to[i] == stream]
    records = read_stream(kinesis.client(), stream)
    got = account(good, records)
    assert got.missing == [] and len(records) == len(good), f"missing {got.missing[:10]} of {len(good)}"
    assert _failed_records(spark) - before == n - len(good), "the refused stream's records were not counted failed"
    assert took < TTL["RecordTtl"] / 1000, f"took {took:.1f} s: the refused records waited for RecordTtl"
    print(f"\nlenient: {len(good)} delivered, {n - len(good)} dropped and counted, in {took:.1f} s")


def _failed_records(spark: Any) -> int:
    """recordsFailed of every live producer of the driver's JVM (the per-row writer's source: perRowStreams)."""
    from spark_kinesis_testkit.emulator import producer_snapshot

    return sum(p.records_failed for p in producer_snapshot(spark) if p.source.endswith(".perRowStreams"))


@pytest.mark.e2e
@pytest.mark.parametrize("aggregation", ["writer", "kpl"])
def test_put_records_denied_fails_the_task_at_once(
    spark: Any, kinesis: Any, stream: str, tmp_path: Path, front: Any, aggregation: str
) -> None:
    """Only a write shows it: the KPL retries AccessDenied until RecordTtl (60 s here); the writer fails the task
    within seconds of the first refusal. Timed from that refusal, as the front saw it: the query's start before it
    (planning, the producer's start, the first `PutRecords`) is the machine's load, not the writer's rule."""
    front.deny("PutRecords")
    writer = _writer(kinesis, stream, endpoint=front.endpoint, aggregation=aggregation)
    err, took = _failing(spark, tmp_path, writer, "foreach")
    failed = time.monotonic()
    first = front.first_denied_at()
    assert first is not None, f"the front refused no PutRecords: {front.stats()}"
    print(f"\n{took:.1f} s from the start, {front.stats()['denied']} PutRecords refused before the task failed")
    _assert_says(err, failed - first, "AccessDeniedException", f"stream {stream}", "fails the task at once")
