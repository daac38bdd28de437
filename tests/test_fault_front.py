"""The fault-injecting HTTPS front (spark_kinesis_testkit.faults) before kinesis-mock, driven by boto3. No Spark."""

from __future__ import annotations

import os

os.environ["AWS_EC2_METADATA_DISABLED"] = "true"

import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError
from spark_kinesis_testkit.emulator import FAKE_ACCESS_KEY_ID, FAKE_SECRET_ACCESS_KEY, KinesisMock, read_stream
from spark_kinesis_testkit.faults import FaultFront

STREAM = "ff"
MAX_HASH = str(2**128 - 1)
# A request that got no HTTP answer at all. (A RST under TLS shows up in Python as an SSL EOF.)
NO_ANSWER = (BotoConnectionError, HTTPClientError)


@pytest.fixture(scope="module")
def km() -> Iterator[KinesisMock]:
    with KinesisMock(streams={STREAM: 2}) as k:
        yield k
        k.client().close()  # an open keep-alive connection makes kinesis-mock's shutdown wait 10 s


@pytest.fixture
def front(km: KinesisMock) -> Iterator[FaultFront]:
    with FaultFront(f"http://127.0.0.1:{km.plain_port}") as f:
        yield f


@pytest.fixture
def client(front: FaultFront) -> Any:
    return boto3.client(
        "kinesis",
        endpoint_url=front.endpoint,
        verify=front.ca_pem_path,
        region_name="us-east-1",
        aws_access_key_id=FAKE_ACCESS_KEY_ID,
        aws_secret_access_key=FAKE_SECRET_ACCESS_KEY,
        # total_max_attempts: botocore's "max_attempts" counts retries, so 1 would still retry once.
        config=Config(retries={"total_max_attempts": 1, "mode": "standard"}, connect_timeout=5, read_timeout=10),
    )


def _records(n: int, key: str | None = None, size: int = 0) -> list[dict[str, Any]]:
    """``n`` records with unique data (a fresh tag, so each test finds its own in the shared stream)."""
    tag = uuid.uuid4().hex[:10]
    out = []
    for i in range(n):
        data = f"{tag}-{i:05d}".encode()
        out.append({"Data": data + b"." * max(0, size - len(data)), "PartitionKey": key or f"{tag}-{i}"})
    return out


def _in_stream(km: KinesisMock, records: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    """Which of ``records`` (as (key, data)) the emulator holds, sorted."""
    tag = records[0]["Data"][:10]
    return sorted((r.partition_key, r.data) for r in read_stream(km.client(), STREAM) if r.data.startswith(tag))


def _pairs(records: list[dict[str, Any]]) -> list[tuple[str, bytes]]:
    return sorted((r["PartitionKey"], r["Data"]) for r in records)


def _connect_refused(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
        return False
    except ConnectionRefusedError:
        return True


def test_pass_through(front: FaultFront, client: Any, km: KinesisMock) -> None:
    recs = _records(50)
    resp = client.put_records(StreamName=STREAM, Records=recs)
    assert resp["FailedRecordCount"] == 0 and len(resp["Records"]) == 50
    assert all(r["ShardId"].startswith("shardId-") for r in resp["Records"])
    assert _in_stream(km, recs) == _pairs(recs)
    assert {s["ShardId"] for s in client.list_shards(StreamName=STREAM)["Shards"]} == {
        "shardId-000000000000",
        "shardId-000000000001",
    }
    stats = front.stats()
    assert stats["requests"] == stats["forwarded"] == 2


def test_record_limit_per_shard(front: FaultFront, client: Any, km: KinesisMock) -> None:
    front.enforce_shard_limits(records_per_s=100)
    recs = _records(300, key="one-key")
    resp = client.put_records(StreamName=STREAM, Records=recs)
    assert resp["FailedRecordCount"] == 200
    ok, throttled = resp["Records"][:100], resp["Records"][100:]
    assert all("SequenceNumber" in r and "ErrorCode" not in r for r in ok)
    assert all(r["ErrorCode"] == "ProvisionedThroughputExceededException" for r in throttled)
    shard = ok[0]["ShardId"]
    assert throttled[0]["ErrorMessage"] == (
        f"Rate exceeded for shard {shard} in stream {STREAM} under account 000000000000."
    )
    assert _in_stream(km, recs) == _pairs(recs[:100])
    stats = front.stats()
    assert stats["throttled_records"] == 200
    assert stats["admitted_records"] == 100
    assert stats["admitted_bytes"] == sum(len(r["Data"]) + len(r["PartitionKey"]) for r in recs[:100])

    # The bucket refills at 100 records/s: a single record gets through again well within a second.
    deadline = time.monotonic() + 3
    while client.put_records(StreamName=STREAM, Records=_records(1, key="one-key"))["FailedRecordCount"]:
        assert time.monotonic() < deadline, "shard quota never refilled"
        time.sleep(0.02)


def test_shards_have_separate_quotas(front: FaultFront, client: Any) -> None:
    front.enforce_shard_limits(records_per_s=10)
    recs = [{**r, "ExplicitHashKey": "0" if i % 2 else MAX_HASH} for i, r in enumerate(_records(40))]
    resp = client.put_records(StreamName=STREAM, Records=recs)
    assert resp["FailedRecordCount"] == 20
    accepted = [r["ShardId"] for r in resp["Records"] if "ShardId" in r]
    assert sorted(accepted) == ["shardId-000000000000"] * 10 + ["shardId-000000000001"] * 10


def test_byte_limit(front: FaultFront, client: Any, km: KinesisMock) -> None:
    front.enforce_shard_limits(bytes_per_s=10_000)
    recs = _records(20, key="b" * 10, size=990)  # 1000 bytes each, key included
    resp = client.put_records(StreamName=STREAM, Records=recs)
    assert resp["FailedRecordCount"] == 10
    assert ["ErrorCode" in r for r in resp["Records"]] == [False] * 10 + [True] * 10
    assert _in_stream(km, recs) == _pairs(recs[:10])

    # Records bigger than a second's quota never fit: answered without calling the emulator.
    front.enforce_shard_limits(bytes_per_s=500)
    forwarded = front.stats()["forwarded"]
    resp = client.put_records(StreamName=STREAM, Records=_records(5, key="b" * 10, size=990))
    assert resp["FailedRecordCount"] == 5
    assert front.stats()["forwarded"] == forwarded

    # A single PutRecord over quota is a 400 ProvisionedThroughputExceededException.
    with pytest.raises(ClientError) as e:
        client.put_record(StreamName=STREAM, Data=b"x" * 990, PartitionKey="b" * 10)
    assert e.value.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    assert client.put_record(StreamName=STREAM, Data=b"x" * 90, PartitionKey="b" * 10)["ShardId"]

    front.enforce_shard_limits(None)
    assert client.put_records(StreamName=STREAM, Records=_records(20, key="b" * 10, size=990))["FailedRecordCount"] == 0


def test_oversized_records_in_debt(front: FaultFront, client: Any) -> None:
    """A scaled-down quota smaller than one record: ``oversized="debt"`` admits it into a full bucket, then
    refuses until the bucket has refilled past zero (the average rate holds)."""
    front.enforce_shard_limits(bytes_per_s=500, oversized="debt")
    recs = _records(3, key="b" * 10, size=990)  # 1000 bytes each, all on one shard
    resp = client.put_records(StreamName=STREAM, Records=recs)
    assert ["ErrorCode" in r for r in resp["Records"]] == [False, True, True]
    assert client.put_records(StreamName=STREAM, Records=recs[1:2])["FailedRecordCount"] == 1  # still in debt
    with pytest.raises(ValueError, match="oversized"):
        front.enforce_shard_limits(bytes_per_s=500, oversized="allow")
    front.enforce_shard_limits(None)


def test_fail_requests_http500(front: FaultFront, client: Any) -> None:
    front.fail_requests(1.0)
    with pytest.raises(ClientError) as e:
        client.put_records(StreamName=STREAM, Records=_records(3))
    assert e.value.response["Error"]["Code"] == "InternalFailure"
    assert e.value.response["ResponseMetadata"]["HTTPStatusCode"] == 500
    client.list_shards(StreamName=STREAM)  # only writes fail
    front.fail_requests(0)
    assert client.put_records(StreamName=STREAM, Records=_records(3))["FailedRecordCount"] == 0
    stats = front.stats()
    assert stats["http500"] == 1 and stats["forwarded"] == 2


def test_failed_requests_are_evenly_spaced(front: FaultFront, client: Any) -> None:
    """A quarter of the requests fail: the 4th and the 8th, counted from the call, so a short test sees its faults."""
    front.fail_requests(0.25)
    outcomes = []
    for _ in range(8):
        try:
            client.put_records(StreamName=STREAM, Records=_records(1))
            outcomes.append("ok")
        except ClientError as e:
            outcomes.append(str(e.response["ResponseMetadata"]["HTTPStatusCode"]))
    front.fail_requests(0)
    assert outcomes == ["ok", "ok", "ok", "500"] * 2, outcomes


def test_fail_records_partial(front: FaultFront, client: Any, km: KinesisMock) -> None:
    front.fail_requests(0.5, mode="partial")
    recs = _records(200)
    resp = client.put_records(StreamName=STREAM, Records=recs)
    failed = [r for r in resp["Records"] if "ErrorCode" in r]
    assert 60 <= len(failed) <= 140
    assert resp["FailedRecordCount"] == len(failed) == front.stats()["failed_records"]
    assert {r["ErrorCode"] for r in failed} == {"InternalFailure"}
    kept = [rec for rec, r in zip(recs, resp["Records"]) if "ErrorCode" not in r]
    assert _in_stream(km, recs) == _pairs(kept)


def test_fail_requests_both(front: FaultFront, client: Any) -> None:
    """``both``: a fraction of the requests answered 500, and the same fraction of the rest's records failed."""
    front.fail_requests(0.5, mode="both")
    whole = partial = 0
    for _ in range(20):
        try:
            resp = client.put_records(StreamName=STREAM, Records=_records(20))
            partial += resp["FailedRecordCount"]
        except ClientError as e:
            assert e.response["ResponseMetadata"]["HTTPStatusCode"] == 500
            whole += 1
    front.fail_requests(0)
    stats = front.stats()
    assert whole == stats["http500"] > 0 and partial == stats["failed_records"] > 0, stats
    with pytest.raises(ValueError, match="mode"):
        front.fail_requests(0.5, mode="some")


def test_outage_refuse_until_ended(front: FaultFront, client: Any) -> None:
    port = front.port
    assert not _connect_refused(port)
    front.outage(60, mode="refuse")
    assert _connect_refused(port)
    with pytest.raises(NO_ANSWER):
        client.list_shards(StreamName=STREAM)
    front.end_outage()
    assert front.port == port and not _connect_refused(port)
    client.list_shards(StreamName=STREAM)
    assert front.stats()["refused_periods"] == 1


def test_outage_refuse_ends_by_itself(front: FaultFront, client: Any) -> None:
    start = time.monotonic()
    front.outage(1.0, mode="refuse")
    assert _connect_refused(front.port)
    deadline = start + 5
    while _connect_refused(front.port):
        assert time.monotonic() < deadline, "outage did not end"
        time.sleep(0.05)
    assert time.monotonic() - start >= 0.9
    client.list_shards(StreamName=STREAM)


def test_outage_reset(front: FaultFront, client: Any) -> None:
    client.list_shards(StreamName=STREAM)  # an open keep-alive connection gets reset too
    front.outage(60, mode="reset")
    assert not _connect_refused(front.port)  # accepted, then reset
    with pytest.raises(NO_ANSWER):
        client.put_records(StreamName=STREAM, Records=_records(2))
    with pytest.raises(NO_ANSWER):
        client.list_shards(StreamName=STREAM)
    front.end_outage()
    assert client.put_records(StreamName=STREAM, Records=_records(2))["FailedRecordCount"] == 0
    assert front.stats()["reset_connections"] == 2


def test_latency(front: FaultFront, client: Any) -> None:
    def timed() -> float:
        t = time.monotonic()
        client.list_shards(StreamName=STREAM)
        return time.monotonic() - t

    def fastest() -> float:
        # A call without the front's latency can still take long on a loaded machine; one of three below 0.3 s says
        # the 300 ms are not being added, which every call would show if they were.
        return min(timed() for _ in range(3))

    timed()  # warm the connection
    assert fastest() < 0.3
    front.add_latency(300)
    assert timed() >= 0.3
    front.add_latency(0)
    assert fastest() < 0.3


def test_record_size_limit_as_kinesis(front: FaultFront, client: Any, km: KinesisMock) -> None:
    """The summary names each stream's MaxRecordSizeInKiB (kinesis-mock only once raised); a write holding a record
    whose data and key exceed it is refused whole with Kinesis' ValidationException and never stored; a raised stream
    takes it."""
    name = f"ff-size-{uuid.uuid4().hex[:6]}"
    km.create_stream(name, 1)
    summary = client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]
    assert summary["MaxRecordSizeInKiB"] == 1024
    key = "k" * 10
    over = [{"Data": b"\x01" * (1024 * 1024 - 9), "PartitionKey": key}]  # 1 MiB + 1 with its key
    with pytest.raises(ClientError) as e:
        client.put_records(StreamName=name, Records=[{"Data": b"small", "PartitionKey": key}, *over])
    assert e.value.response["Error"]["Code"] == "ValidationException"
    assert "Value at 'records.2.member.data' failed to satisfy constraint" in e.value.response["Error"]["Message"]
    with pytest.raises(ClientError, match="ValidationException"):
        client.put_record(StreamName=name, Data=over[0]["Data"], PartitionKey=key)
    assert front.stats()["oversized_refused"] == 2
    at_limit = {"Data": b"\x02" * (1024 * 1024 - 10), "PartitionKey": key}
    assert client.put_records(StreamName=name, Records=[at_limit])["FailedRecordCount"] == 0

    client.update_max_record_size(StreamARN=summary["StreamARN"], MaxRecordSizeInKiB=2048)
    assert client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["MaxRecordSizeInKiB"] == 2048
    assert client.put_records(StreamName=name, Records=over)["FailedRecordCount"] == 0
    assert sorted(r.data for r in read_stream(km.client(), name)) == sorted([at_limit["Data"], over[0]["Data"]])
    assert front.stats()["oversized_refused"] == 2


def test_large_record_burst() -> None:
    """A record over a second of the byte quota draws on the shard's 10 MiB burst (refilled at the byte rate) and
    leaves the byte bucket in debt, so the shard's average holds; without the burst it never fits."""
    from spark_kinesis_testkit.faults import _BURST_BYTES, _Bucket

    mib, limits = 1024 * 1024, (1024 * 1024, 1000)
    b = _Bucket(1000, mib, 0.0, burst=float(_BURST_BYTES))
    assert b.take(0.0, limits, 4 * mib) and b.take(0.0, limits, 4 * mib)
    assert not b.take(0.0, limits, 4 * mib), "8 MiB of the 10 MiB burst used: 4 more must wait"
    assert not b.take(0.0, limits, 100), "the byte bucket is in debt"
    assert not b.take(6.9, limits, 100) and b.take(7.1, limits, 100), "7 s repay the 7 MiB of debt"
    assert b.take(7.1, limits, 4 * mib), "the burst refilled meanwhile"
    assert not _Bucket(1000, mib, 0.0).take(0.0, limits, 2 * mib), "no burst: a 2 MiB record never fits"


def test_held_shard_maps_answer_from_before_a_reshard(front: FaultFront, client: Any, km: KinesisMock) -> None:
    """A held stream's ListShards is the answer from before the hold (a split made meanwhile is not in it) until it is
    released; writes meanwhile are counted. Its own stream: the split must not change the module's shared one."""
    stream = f"held-{uuid.uuid4().hex[:6]}"
    km.create_stream(stream, 2)

    def open_ids() -> list[str]:
        shards = client.list_shards(StreamName=stream, ShardFilter={"Type": "AT_LATEST"})["Shards"]
        return sorted(s["ShardId"] for s in shards)

    before = open_ids()
    front.hold_shard_maps(stream)
    direct = km.client()
    first = direct.list_shards(StreamName=stream)["Shards"][0]
    low, high = (int(first["HashKeyRange"][k]) for k in ("StartingHashKey", "EndingHashKey"))
    direct.split_shard(StreamName=stream, ShardToSplit=first["ShardId"], NewStartingHashKey=str((low + high) // 2))
    deadline = time.monotonic() + 30
    while direct.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]["StreamStatus"] != "ACTIVE":
        assert time.monotonic() < deadline, "not ACTIVE after the split"
        time.sleep(0.05)
    assert len(direct.list_shards(StreamName=stream, ShardFilter={"Type": "AT_LATEST"})["Shards"]) == 3
    assert open_ids() == before, "a held map shows the split"
    client.put_records(StreamName=stream, Records=_records(3))
    from aws_kinesis_agg.aggregator import RecordAggregator

    agg = RecordAggregator()
    for i in range(4):
        agg.add_user_record(f"k{i}", f"sub-{i}".encode())
    pk, ehk, data = agg.clear_and_get().get_contents()  # ehk: None, the partition key places it
    client.put_records(StreamName=stream, Records=[{"PartitionKey": pk, "Data": data}])
    assert ehk is None
    front.release_shard_maps(stream)
    after = open_ids()
    assert len(after) == 3 and after != before
    stats = front.stats()
    assert stats["held_listings"] == 1 and stats["held_records"] == 4, stats
    assert front.held_user_records(stream) == 3 + 4, "an aggregate counts its every sub-record"
