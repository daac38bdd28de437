"""Records up to 10 MiB, as each stream allows (MaxRecordSizeInKiB).

kinesis-mock 0.6.2 stores records up to 10 MiB and keeps each stream's MaxRecordSizeInKiB (its GetRecords patched by
tools/emulator/patch.js to return a 10 MiB record); the fault front answers as Kinesis does where it differs
(the limit in every summary, data and key counted, a ValidationException for a record over it) and models the shards'
quotas with their large-record burst (docs/development.md).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from helpers import account, entries, rows_for, run_available_now, start_per_file, wait_for, write_input
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import (
    FAKE_ACCESS_KEY_ID,
    FAKE_SECRET_ACCESS_KEY,
    REGION,
    loopback_writer_options,
    read_stream,
)
from spark_kinesis_testkit.faults import FaultFront

pytestmark = pytest.mark.spark35_leg  # line-independent: the records' sizes kept below both entry points

MIB = 1024 * 1024
LIMIT = 10 * MIB
# The emulator takes about a second per MiB: generous timeouts, so a 10 MiB PutRecords is never timed out and re-sent.
SLOW = {"RequestTimeout": 120_000, "RecordTtl": 600_000}


@pytest.fixture
def front(kinesis) -> Iterator[FaultFront]:  # type: ignore[no-untyped-def]
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as f:
        f.enforce_shard_limits(oversized="burst")  # Kinesis' quotas: 1 MiB/s a shard, large records from a burst
        yield f


def raise_limit(front: FaultFront, stream: str, kib: int = 10240) -> None:
    """UpdateMaxRecordSize through the front, as a user would call Kinesis."""
    client = boto3.client(
        "kinesis",
        endpoint_url=front.endpoint,
        verify=front.ca_pem_path,
        region_name=REGION,
        aws_access_key_id=FAKE_ACCESS_KEY_ID,
        aws_secret_access_key=FAKE_SECRET_ACCESS_KEY,
    )
    arn = client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamARN"]
    client.update_max_record_size(StreamARN=arn, MaxRecordSizeInKiB=kib)
    assert client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["MaxRecordSizeInKiB"] == kib


def sized(i: int, size: int) -> bytes:
    """``size`` unique bytes starting with the id (helpers.id_of reads it)."""
    head = f"{i}:".encode()
    block = hashlib.sha256(str(i).encode()).digest() + bytes(range(256))
    body = block * (size // len(block) + 1)
    return (head + body)[:size]


def large_rows(sizes: dict[int, int]) -> list[dict[str, Any]]:
    import base64

    return [{"id": i, "pk": f"user-{i}", "b64": base64.b64encode(sized(i, n)).decode()} for i, n in sizes.items()]


def write_file(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")
    # The file source takes files in modification-time order and equal times in any order (file times tick by the
    # kernel's jiffy): each file is stamped 10 ms after the newest one before it, so the batches come in write order.
    newest = max((p.stat().st_mtime_ns for p in path.parent.iterdir() if p != path), default=None)
    if newest is not None:
        os.utime(path, ns=(newest + 10_000_000, newest + 10_000_000))


#: 100 B to 10 MiB; id 6 is exactly the limit with its key ("user-6": 6 bytes).
MIXED_SIZES = {1: 100, 2: 1000, 3: 200_000, 4: MIB + 1, 5: 3 * MIB, 6: LIMIT - len("user-6")}


@pytest.mark.e2e
# Spark 4 only: what a record's size decides is line-independent (the unit tests run it on every line), and the emulator
# takes these 14 MiB at 1-2 MB/s (a minute of `make test`'s Spark 3.5 leg). For the same reason the 3 and 10 MiB
# records go once, through `foreach`: after the row a record's path is the core both entries share, so `format`
# proves its rows from 100 B to just over 1 MiB (one from the large-record burst) without 13 MiB more to the emulator.
# `make test` runs `foreach`, the one that carries the 10 MiB records; `format` is the variant.
@pytest.mark.parametrize("entry", entries(variant="format"))
def test_mixed_sizes_up_to_10_mib_round_trip(spark, kinesis, front, stream, tmp_path, entry):
    raise_limit(front, stream)
    sizes = MIXED_SIZES if entry == "foreach" else {i: n for i, n in MIXED_SIZES.items() if n < 2 * MIB}
    small = range(100, 140)
    write_input(tmp_path / "in", large_rows(sizes) + rows_for(small), files=2)
    writer = KinesisWriter(stream_name=stream, **loopback_writer_options(front.endpoint, **SLOW))
    run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry=entry)
    d = account([*sizes, *small], read_stream(kinesis.client(), stream))
    assert d.missing == [] and d.duplicates == 0, d.missing
    for i, n in sizes.items():
        assert d.by_id[i].data == sized(i, n), f"record {i} of {n} bytes came back as {len(d.by_id[i].data)} bytes"
    stats = front.stats()
    large = sum(n > MIB for n in sizes.values())
    assert stats["oversized_refused"] == 0 and stats["large_admitted"] >= large, (large, stats)


@pytest.mark.e2e
@pytest.mark.parametrize("entry", entries())
def test_record_over_its_streams_limit_fails_fast_and_small_ones_arrive(spark, kinesis, front, stream, tmp_path, entry):
    """A stream left at 1 MiB: the batch holding a 2 MiB record fails at once with the size, the limit and the fix;
    the record never reaches Kinesis (no ValidationException to retry); the batches before it are all there."""
    write_file(tmp_path / "in" / "part-000.json", rows_for(range(0, 100)))
    write_file(tmp_path / "in" / "part-001.json", rows_for(range(100, 200)))
    write_file(tmp_path / "in" / "part-002.json", rows_for(range(200, 250)) + large_rows({1000: 2 * MIB}))
    writer = KinesisWriter(stream_name=stream, **loopback_writer_options(front.endpoint, **SLOW))
    started = time.monotonic()
    with pytest.raises(Exception) as e:
        run_available_now(spark, tmp_path / "in", tmp_path / "ckpt", writer, entry=entry).processAllAvailable()
    took = time.monotonic() - started
    message = str(e.value)
    for part in (f"stream {stream}", "2097161 bytes", "MaxRecordSizeInKiB 1024", "update-max-record-size"):
        assert part in message, f"'{part}' not in: {message[:2000]}"
    assert took < 120, f"the query failed {took:.0f} s after it started"
    assert front.stats()["oversized_refused"] == 0, "the record reached Kinesis"
    d = account(range(200), read_stream(kinesis.client(), stream))
    assert d.missing == [], d.missing


@pytest.mark.e2e
def test_stream_raised_mid_query_takes_large_records(spark, kinesis, front, stream, tmp_path):
    """UpdateMaxRecordSize while the query runs: the next 2 MiB records are written, no restart."""
    src_dir = tmp_path / "in"
    write_file(src_dir / "part-000.json", rows_for(range(0, 50)))
    kpl = {**SLOW, "DescribeStreamSummaryIntervalMs": 1000}
    writer = KinesisWriter(stream_name=stream, **loopback_writer_options(front.endpoint, **kpl))
    q = start_per_file(spark, src_dir, tmp_path / "ckpt", writer, "500 milliseconds")

    def rows_in() -> int:
        assert q.exception() is None, q.exception()
        return sum(p["numInputRows"] for p in q.recentProgress)

    try:
        wait_for(lambda: rows_in() >= 50, 120, "the first batch")
        raise_limit(front, stream, kib=4096)
        write_file(src_dir / "part-001.json", large_rows({1000: 2 * MIB, 1001: 4 * MIB - 9}) + rows_for(range(50, 60)))
        wait_for(lambda: rows_in() >= 62, 180, "the batch with 2 and 4 MiB records")
        q.processAllAvailable()
        assert q.exception() is None
    finally:
        q.stop()
    d = account([*range(60), 1000, 1001], read_stream(kinesis.client(), stream))
    assert d.missing == [], d.missing
    assert d.by_id[1000].data == sized(1000, 2 * MIB) and d.by_id[1001].data == sized(1001, 4 * MIB - 9)
