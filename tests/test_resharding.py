"""Resharding while a query writes, with the race made on purpose: every producer's shard map lags each reshard.

The fault front answers ``ListShards`` from before each reshard until the test releases it
(``FaultFront.hold_shard_maps``), so records routed by the old map land in the new shards: an aggregate built for a
split's parent lands in the child that holds its explicit hash key, with sub-records the child does not own. A KCL
consumer drops such an aggregate whole (``AggregatorUtil.deaggregate``); the writer must send every record of it again,
and the KPL does the same for its own aggregates. Each scenario is read back twice: by the KCL's own deaggregation (what
a KCL consumer receives) and by a plain reader (duplicates), record by record; one scenario also by a KCL 3.x worker
end to end (its ``Scheduler``, leases in moto's DynamoDB, parents before children).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import account, id_of, payload, rows_for, start_per_file, wait_for
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import loopback_writer_options, producer_snapshot, read_stream
from spark_kinesis_testkit.faults import FaultFront
from spark_kinesis_testkit.kcl import read_stream_kcl
from spark_kinesis_testkit.kcl_worker import KclWorker
from spark_kinesis_testkit.moto_server import MotoServer

pytestmark = pytest.mark.spark35_leg  # line-independent: the maps kept below both entry points

#: A split of one shard, a merge of two, UpdateShardCount to 8 and back to 4, in this order, on a 4-shard stream.
EVENTS = ("split", "merge", "up", "down")
PER_STEP = 1200  # ids written per step: enough aggregates per shard that a split child gets ones it does not hold


@pytest.fixture
def front(kinesis) -> Iterator[FaultFront]:
    with FaultFront(f"http://127.0.0.1:{kinesis.plain_port}") as f:
        yield f


def open_shards(client: Any, stream: str) -> list[tuple[str, int, int]]:
    shards = client.list_shards(StreamName=stream, ShardFilter={"Type": "AT_LATEST"})["Shards"]
    keys = ("StartingHashKey", "EndingHashKey")
    return sorted(((s["ShardId"], *(int(s["HashKeyRange"][k]) for k in keys)) for s in shards), key=lambda r: r[1])


def reshard(client: Any, stream: str, event: str) -> None:
    """One reshard of ``stream`` on the emulator itself (not through the front), waited for until ACTIVE again."""
    shards = open_shards(client, stream)
    if event == "split":
        sid, first, last = shards[0]
        client.split_shard(StreamName=stream, ShardToSplit=sid, NewStartingHashKey=str((first + last) // 2 + 1))
    elif event == "merge":
        (a, _, _), (b, _, _) = shards[-2:]
        client.merge_shards(StreamName=stream, ShardToMerge=a, AdjacentShardToMerge=b)
    else:
        target = 8 if event == "up" else 4
        client.update_shard_count(StreamName=stream, TargetShardCount=target, ScalingType="UNIFORM_SCALING")

    def active() -> bool:
        summary = client.describe_stream_summary(StreamName=stream)["StreamDescriptionSummary"]
        return bool(summary["StreamStatus"] == "ACTIVE")

    wait_for(active, 60, f"stream {stream} ACTIVE after the {event}")


def race_every_reshard(
    front: FaultFront,
    client: Any,
    stream: str,
    write_step: Callable[[int], None],
    under_old: Callable[[dict[str, int]], bool],
    written: Callable[[int], bool],
) -> dict[str, int]:
    """Each of EVENTS in turn, with every producer's shard map held from before it: hold the maps, reshard, write the
    step (``write_step(step)``), wait until it went out under the old map (``under_old``, given the front's stats from
    before the hold), let the maps go, wait until the step is written (``written(step)``). The user records written
    while each was held, by event."""
    held: dict[str, int] = {}
    for step, event in enumerate(EVENTS, 1):
        before = front.stats()
        front.hold_shard_maps(stream)
        reshard(client, stream, event)
        write_step(step)
        wait_for(lambda b=before: under_old(b), 120, f"step {step} under the old map")
        front.release_shard_maps(stream)
        held[event] = front.stats()["held_records"] - before["held_records"]
        wait_for(lambda s=step: written(s), 180, f"step {step} ({event}) written")
    return held


def write_step(directory: Path, step: int) -> None:
    """Step ``step``'s ids as one input file (a micro-batch of its own), each id its own partition key."""
    ids = range(step * PER_STEP, (step + 1) * PER_STEP)
    part = directory / f"part-{step:03d}.json"
    tmp = directory / f".part-{step:03d}.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows_for(ids, key=lambda i: f"user-{i}")))
    tmp.rename(part)  # whole, or not seen by the file source


@pytest.mark.e2e
@pytest.mark.parametrize(
    "entry,aggregation,worker",
    [
        # `make test` runs each entry and each aggregation once; the other two pairs are `make test-extended`'s.
        ("format", "writer", True),  # the KCL worker once: its JVM and DynamoDB cost ~15 s, the stream is the same kind
        ("foreach", "kpl", False),
        pytest.param("foreach", "writer", False, marks=pytest.mark.variant),
        pytest.param("format", "kpl", False, marks=pytest.mark.variant),
    ],
)
def test_reshards_racing_every_map_lose_nothing_to_a_kcl_consumer(
    spark, kinesis, kcl, front, stream, tmp_path, entry, aggregation, worker
):
    source = tmp_path / "in"
    source.mkdir()
    client = kinesis.client()
    options = loopback_writer_options(front.endpoint, RecordMaxBufferedTime=200)
    writer = KinesisWriter(stream_name=stream, aggregation=aggregation, **options)
    write_step(source, 0)
    q = start_per_file(spark, source, tmp_path / "ckpt", writer, "200 milliseconds", entry=entry)

    def rows_in() -> int:
        assert q.exception() is None, q.exception()
        return sum(p["numInputRows"] for p in q.recentProgress)

    # The step's first PutRecords (the commit seals every buffer at once) goes out by the map from before. The writer
    # reads the map again for each aggregate that landed elsewhere: that read is answered from before too (records then
    # go alone). The KPL's own re-reads are its business: only its writes are waited for.
    def under_old(b: dict[str, int]) -> bool:
        now = front.stats()
        reread = aggregation == "kpl" or now["held_listings"] > b["held_listings"]
        return now["held_records"] > b["held_records"] and reread

    try:
        wait_for(lambda: rows_in() >= PER_STEP, 120, "the first step written (the producers have read the map)")
        held = race_every_reshard(
            front,
            client,
            stream,
            lambda step: write_step(source, step),
            under_old,
            lambda step: rows_in() >= (step + 1) * PER_STEP,
        )
        q.processAllAvailable()
    finally:
        front.release_shard_maps(stream)
        q.stop()
    # The race happened: records went out by a lagging map at every step (held), and (writer) the writer's re-reads
    # were answered from before and its aggregates landed in shards they were not built for. The KPL's own re-reads
    # are its business (it may not re-read while a step is held): only its writes under the old map are asserted.
    assert len(open_shards(client, stream)) == 4 and all(n > 0 for n in held.values()), (held, front.stats())
    if aggregation == "writer":
        producer = next(p for p in producer_snapshot(spark) if p.source.endswith(f".{stream}"))
        assert front.stats()["held_listings"] > 0 and producer.misplaced_aggregates > 0, (producer, front.stats())
        # The executors' producers found the shipped map stale and read it themselves: they told the driver (a
        # format write's commit messages; foreach's accumulators), which read the stream again for a later batch,
        # well within half of DescribeStreamSummaryIntervalMs (its own schedule).
        driver_reads = front.control_plane_calls(stream=stream).get("DescribeStreamSummary/driver", 0)
        assert driver_reads >= 2, f"the driver read {stream} {driver_reads} times: the start check's only"
    n = (len(EVENTS) + 1) * PER_STEP
    kcl_records = read_stream_kcl(client, stream, kcl)
    as_kcl = account(range(n), kcl_records)
    plain = account(range(n), read_stream(client, stream))
    assert as_kcl.missing == [], f"a KCL consumer misses {len(as_kcl.missing)} ids, e.g. {as_kcl.missing[:10]}"
    assert plain.missing == [], f"a plain reader misses {len(plain.missing)} ids, e.g. {plain.missing[:10]}"
    for d in (as_kcl, plain):
        assert all(r.data == payload(i) and r.partition_key == f"user-{i}" for i, r in d.by_id.items())
    if worker:
        # A KCL 3.x application reading the whole stream, every parent and child, as any KCL consumer would.
        endpoint = f"http://127.0.0.1:{kinesis.plain_port}"
        with MotoServer() as ddb, KclWorker(endpoint, ddb.endpoint, stream, f"app-{stream[-6:]}") as consumer:
            got = consumer.wait_until(lambda rs: len(rs) >= len(kcl_records), timeout_s=120)
        by_worker = account(range(n), got)
        assert by_worker.missing == [], f"the KCL worker misses {len(by_worker.missing)} ids: {by_worker.missing[:10]}"
        assert all(r.data == payload(i) and r.partition_key == f"user-{i}" for i, r in by_worker.by_id.items())
        # The worker got what the KCL's deaggregation of each shard gives, copy for copy.
        assert Counter(id_of(r.data) for r in got) == Counter(id_of(r.data) for r in kcl_records)
    print(f"held={held} kcl duplicates={as_kcl.duplicates} plain duplicates={plain.duplicates}")
