"""make bench, part `realtime`: end-to-end latency of Kafka -> Spark real-time mode -> a sink, per record.

One real Kafka broker (testkit kafka.py), kinesalite as Kinesis, one local Spark session (local[3]: a slot for each
of the input topic's 2 partitions, one to spare). Records are produced to Kafka at a steady rate (1,000 and 10,000
records/s, paced every 10 ms); one real-time query per run (``trigger(realTime=...)``, one batch longer than the run)
reads them and writes either

- ``kafka``: Spark's own Kafka sink (the anchor: the same query, an allowlisted sink that sends as rows arrive), or
- ``kinesis``: ``foreach(KinesisWriter(...))`` at its defaults (``aggregation="writer"``: a shard's records go as soon
  as nothing of it is in flight, ``RecordMaxBufferedTime`` 100 ms the bound), or
- ``kinesis_kpl``: the same with ``aggregation="kpl"`` (the KPL daemon aggregates, on its 100 ms linger), or
- ``kinesis_gather20``, ``kinesis_gather100``: ``kinesis`` with ``gather_ms`` 20 and 100 (an idle shard's records wait
  that long for others: the user's trade of latency for PUT payload units), or
- ``kinesis_ordered``: ``kinesis`` with ``ordered=True`` (one Kinesis record of a shard in flight at a time).

Each Kinesis run's stream is then billed as AWS would (testkit billing.py): PUT payload units per million records.

Latency = arrival minus the Kafka input record's timestamp (the input topic's broker LogAppendTime, which the query
carries into each record's data). Arrival: Kinesis's ``ApproximateArrivalTimestamp`` of the record holding it
(kinesalite: the millisecond it took the PutRecords; shared by the user records of one KPL aggregate), or the output
topic's broker LogAppendTime for the Kafka sink. One clock: everything runs on this machine. Each run first sends 2 s
of warm-up records at its rate and waits until the sink has them all (the query's tasks and the KPL daemon started),
then BENCH_RT_SECONDS of measured ones, of which the first BENCH_RT_WARM_S seconds are left out; every id must come
back (record by record: the id, its key and its timestamp), and the batch must not have ended. In flight under
``queue_limit`` is sampled every 10 ms over the measured records, and the CPU the Spark JVM and the KPL daemon spent
while they went through is divided by their count (CPU per record, the Kafka sink's in the JVM alone).

Prints ``bench: rt_added_p50_ms=… rt_added_p99_ms=… rt_added_10k_p50_ms=… rt_added_10k_p99_ms=… rt_p99_ratio_10k=…
rt_cpu_us_per_record=… rt_cpu_us_per_record_10k=… rt_cpu_ratio_vs_kafka=… rt_max_in_flight_over_limit=…`` (added =
``kinesis`` minus ``kafka`` at 1,000 and 10,000 records/s; the ratio is ``kinesis``'s p99 at 10,000 over 1,000; CPU:
``kinesis``'s JVM and daemon per record, and over the Kafka sink's, at 1,000/s) and
``rt_p50_ratio_vs_kpl_agg=… rt_p99_ratio_vs_kpl_agg=…`` (``kinesis`` over ``kinesis_kpl`` at 1,000 records/s) and
``rt_ordered_added_p50_ms=…`` (and ``_p99``, ``_10k_``: ``kinesis_ordered`` minus ``kinesis``) and writes
bench/results/realtime.json, docs/img/bench-realtime.png and its table in docs/benchmarks.md (bench/report.py). Knobs:
BENCH_RT_SECONDS [20], BENCH_RT_WARM_S [1], BENCH_RT_RATES [1000,10000].
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

os.environ.setdefault("AWS_EC2_METADATA_DISABLED", "true")
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests"))

import backends  # noqa: E402
from common import pct, say  # noqa: E402
from spark_kinesis_testkit import procs  # noqa: E402
from spark_kinesis_testkit.billing import Bill  # noqa: E402
from spark_kinesis_testkit.emulator import loopback_session_builder, producer_snapshot, read_stream  # noqa: E402
from spark_kinesis_testkit.kafka import KafkaBroker, connector_jars  # noqa: E402
from spark_kinesis_testkit.provenance import commit, machine  # noqa: E402

SECONDS = float(os.environ.get("BENCH_RT_SECONDS", "20"))
WARM_S = float(os.environ.get("BENCH_RT_WARM_S", "1"))
RATES = [int(r) for r in os.environ.get("BENCH_RT_RATES", "1000,10000").split(",")]
# The writer's options per variant (KPL settings under "kpl"); None: Spark's Kafka sink.
VARIANTS: dict[str, dict[str, Any] | None] = {
    "kafka": None,
    "kinesis": {},
    "kinesis_kpl": {"aggregation": "kpl"},
    # gather_ms: the user's trade of latency for PUT payload units (docs/configuration.md, "What a record costs")
    "kinesis_gather20": {"gather_ms": 20},
    "kinesis_gather100": {"gather_ms": 100},
    # per-key order: a shard's next aggregate goes at the answer of the one in flight (docs/reliability.md)
    "kinesis_ordered": {"ordered": True},
}
QUEUE_LIMIT = 10000  # the writer's default
PARTITIONS = 2
SHARDS = 4
LOG_APPEND = {"message.timestamp.type": "LogAppendTime"}


def produce_steadily(bootstrap: str, topic: str, rate: int, ids: range) -> None:
    """``ids`` at ``rate``/s, a slice every 10 ms on a fixed schedule (a late slice does not shift the next)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 2, "linger.ms": 0, "acks": 1})
    per_tick = max(1, rate // 100)
    start, sent, tick, total = time.monotonic(), 0, 0, len(ids)
    while sent < total:
        for i in ids[sent : sent + per_tick]:
            while True:
                try:
                    producer.produce(topic, key=str(i % 97).encode(), value=str(i).encode())
                    break
                except BufferError:
                    producer.poll(0.001)
        sent = min(total, sent + per_tick)
        producer.poll(0)
        tick += 1
        delay = start + tick * 0.01 - time.monotonic()
        if delay > 0:
            time.sleep(delay)
    if producer.flush(60):
        raise RuntimeError("the input producer could not deliver every record")


class KafkaArrivals:
    """The output topic of the Kafka sink, read as it fills: id -> (input timestamp ms, arrival ms)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        from confluent_kafka import Consumer

        self.got: dict[int, tuple[float, float]] = {}
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-{uuid.uuid4().hex[:6]}",
                "auto.offset.reset": "earliest",
                "log_level": 2,
            }
        )
        self._consumer.subscribe([topic])

    def read(self) -> dict[int, tuple[float, float]]:
        for m in self._consumer.consume(10000, timeout=0.5):
            if m.error() is None:
                value = m.value()
                assert value is not None, "every record the bench sends has a value"
                i, ts = (int(x) for x in value.split(b"|"))
                self.got.setdefault(i, (float(ts), float(m.timestamp()[1])))
        return self.got

    def close(self) -> None:
        self._consumer.close()


class KinesisArrivals:
    """The stream, read back whole each time (deaggregated): id -> (input timestamp ms, arrival ms)."""

    def __init__(self, client: Any, stream: str) -> None:
        self.client, self.stream = client, stream
        self.got: dict[int, tuple[float, float]] = {}

    def read(self) -> dict[int, tuple[float, float]]:
        for r in read_stream(self.client, self.stream):
            i, ts = (int(x) for x in r.data.split(b"|"))
            assert r.partition_key == str(i % 97), f"record {i} came back with key {r.partition_key}"
            assert r.arrival_s is not None
            self.got.setdefault(i, (float(ts), r.arrival_s * 1000))
        return self.got

    def close(self) -> None:
        pass


def wait_all(reader: Any, ids: range, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not set(ids) <= set(reader.read()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: {len(set(ids) - set(reader.got))} of {len(ids)} ids missing")
        time.sleep(0.5)


def run_one(spark: Any, kafka: KafkaBroker, kin: backends.Kinesalite, variant: str, rate: int) -> dict[str, Any]:
    tag = f"{variant}-{rate}-{uuid.uuid4().hex[:6]}"
    topic_in = f"in-{tag}"
    kafka.create_topic(topic_in, PARTITIONS, config=LOG_APPEND)
    df = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic_in)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr(
            "CAST(key AS STRING) AS partitionKey",
            "CAST(CONCAT(CAST(value AS STRING), '|', CAST(unix_millis(timestamp) AS STRING)) AS BINARY) AS data",
        )
    )
    options = VARIANTS[variant]
    if options is None:
        out = f"out-{tag}"
        kafka.create_topic(out, PARTITIONS, config=LOG_APPEND)
        sw = (
            df.selectExpr("partitionKey AS key", "data AS value")
            .writeStream.format("kafka")
            .option("kafka.bootstrap.servers", kafka.bootstrap)
            .option("topic", out)
            .option("kafka.linger.ms", "0")
        )
    else:
        from spark_kinesis import KinesisWriter

        out = f"rt-{tag}"
        kin.create_stream(out, SHARDS)
        opts = {**kin.endpoint_options(), **options}
        opts["kpl"] = {**kin.endpoint_options()["kpl"], **options.get("kpl", {})}
        writer = KinesisWriter(stream_name=out, queue_limit=QUEUE_LIMIT, **opts)
        sw = df.writeStream.foreach(writer)
    ckpt = tempfile.mkdtemp(prefix="bench-rt-")
    q = sw.outputMode("update").trigger(realTime="30 minutes").option("checkpointLocation", ckpt).start()
    samples: list[int] = []
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            live = [p for p in producer_snapshot(spark) if p.source.endswith(f".{out}")]
            samples.append(live[0].in_flight_records if live else 0)
            time.sleep(0.01)

    total = int(rate * SECONDS)
    warm = range(-int(rate * 2), 0)  # 2 s at the rate, before the measured ids: the query and the sink warmed up
    reader: Any = KafkaArrivals(kafka.bootstrap, out) if options is None else KinesisArrivals(kin.client(), out)
    try:
        produce_steadily(kafka.bootstrap, topic_in, rate, warm)
        wait_all(reader, warm, 180, f"{variant} warm-up")
        sampler = threading.Thread(target=sample, daemon=True)
        if options is not None:
            sampler.start()
        jvm_pid = int(spark._jvm.java.lang.ProcessHandle.current().pid())
        cpu_before = procs.tree(jvm_pid)
        produce_steadily(kafka.bootstrap, topic_in, rate, range(total))
        wait_all(reader, range(total), 180, f"{variant} at {rate}/s")
        cpu = procs.cpu_by_kind(cpu_before, procs.tree(jvm_pid), jvm_pid)
        got = reader.got
        batches = len(q.recentProgress)
        exc = q.exception()
    finally:
        done.set()
        reader.close()
        q.stop()
    assert exc is None and batches == 0, f"{variant} at {rate}/s: {exc}, {batches} batches ended"
    # What Kinesis bills for the run's records (warm-up included), counted from the stream: none for the Kafka sink.
    billed = Bill.of_stream(kin.client(), out).per_million() if options is not None else {}
    first = int(rate * WARM_S)
    lat = [got[i][1] - got[i][0] for i in range(first, total)]
    t0 = got[0][0]
    series = [((got[i][0] - t0) / 1000, got[i][1] - got[i][0]) for i in range(0, total, max(1, total // 4000))]
    res = {
        "variant": variant,
        "rate": rate,
        "records": total,
        "warm_up": len(warm),
        "measured": len(lat),
        "p50_ms": pct(lat, 50),
        "p99_ms": pct(lat, 99),
        "max_ms": max(lat),
        "batches_done": batches,
        "max_in_flight": max(samples) if samples else None,
        "cpu_s": {"jvm": round(cpu["jvm"], 2), "kpl_daemon": round(cpu["kpl_daemon"], 2)},
        "cpu_us_per_record": (cpu["jvm"] + cpu["kpl_daemon"]) / total * 1e6,
        "series": series,
        **billed,
    }
    say(
        f"  realtime {variant:15s} {rate:6d}/s: p50 {res['p50_ms']:.0f} ms, p99 {res['p99_ms']:.0f} ms, "
        f"max {res['max_ms']:.0f} ms over {len(lat)} records; max in flight {res['max_in_flight']}; "
        f"CPU {res['cpu_us_per_record']:.0f} µs per record (JVM {cpu['jvm']:.1f} s, daemon {cpu['kpl_daemon']:.1f} s)"
        + (f"; {billed['put_units_per_m']:,.0f} PUT units per million" if billed else "")
    )
    return res


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(RATES), figsize=(6 * len(RATES), 4), squeeze=False)
    for ax, rate in zip(axes[0], RATES):
        for r in runs:
            if r["rate"] == rate:
                xs, ys = zip(*r["series"])
                ax.plot(xs, ys, ".", markersize=2, label=f"{r['variant']} (p99 {r['p99_ms']:.0f} ms)")
        ax.axvline(WARM_S, color="grey", linewidth=0.5)
        ax.set_title(f"Kafka -> real-time query -> sink, {rate:,} records/s")
        ax.set_xlabel("seconds (Kafka record timestamp); left of the line: warm-up, not counted")
        ax.set_ylabel("latency, ms")
        ax.set_yscale("log")
        ax.legend(markerscale=5)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    sys.path.insert(0, str(ROOT / "tests"))
    from helpers import session_jars

    runs: list[dict[str, Any]] = []
    with KafkaBroker() as kafka, backends.Kinesalite() as kin:
        spark = loopback_session_builder(
            f"local[{PARTITIONS + 1}]", "bench-realtime", f"{session_jars()},{connector_jars()}"
        ).getOrCreate()
        spark.sparkContext.setLogLevel("ERROR")
        for rate in RATES:
            for variant in VARIANTS:
                runs.append(run_one(spark, kafka, kin, variant, rate))
        spark.stop()
    by = {(r["variant"], r["rate"]): r for r in runs}
    lo, hi = RATES[0], RATES[-1]
    summary = {
        "rt_added_p50_ms": by[("kinesis", lo)]["p50_ms"] - by[("kafka", lo)]["p50_ms"],
        "rt_added_p99_ms": by[("kinesis", lo)]["p99_ms"] - by[("kafka", lo)]["p99_ms"],
        "rt_added_10k_p50_ms": by[("kinesis", hi)]["p50_ms"] - by[("kafka", hi)]["p50_ms"],
        "rt_added_10k_p99_ms": by[("kinesis", hi)]["p99_ms"] - by[("kafka", hi)]["p99_ms"],
        "rt_p99_ratio_10k": by[("kinesis", hi)]["p99_ms"] / by[("kinesis", lo)]["p99_ms"],
        "rt_cpu_us_per_record": by[("kinesis", lo)]["cpu_us_per_record"],
        "rt_cpu_us_per_record_10k": by[("kinesis", hi)]["cpu_us_per_record"],
        "rt_cpu_ratio_vs_kafka": by[("kinesis", lo)]["cpu_us_per_record"] / by[("kafka", lo)]["cpu_us_per_record"],
        # the writer (aggregation='writer') over the KPL's own aggregation, at the low rate
        "rt_p50_ratio_vs_kpl_agg": by[("kinesis", lo)]["p50_ms"] / by[("kinesis_kpl", lo)]["p50_ms"],
        "rt_p99_ratio_vs_kpl_agg": by[("kinesis", lo)]["p99_ms"] / by[("kinesis_kpl", lo)]["p99_ms"],
        "rt_max_in_flight_over_limit": max(r["max_in_flight"] or 0 for r in runs) / QUEUE_LIMIT,
    }
    if ("kinesis_ordered", lo) in by:  # what ordered adds to the writer's latency, at each rate
        for rate, tag in ((lo, ""), (hi, "_10k")):
            for q in ("p50", "p99"):
                summary[f"rt_ordered_added{tag}_{q}_ms"] = (
                    by[("kinesis_ordered", rate)][f"{q}_ms"] - by[("kinesis", rate)][f"{q}_ms"]
                )
    config = {"seconds": SECONDS, "warm_s": WARM_S, "rates": RATES, "variants": VARIANTS, "queue_limit": QUEUE_LIMIT}
    measured = {"started": stamp, "config": config, "runs": runs, "summary": summary}
    plot(runs, ROOT / "docs" / "img" / "bench-realtime.png")
    say(" ".join(f"{k}={v:.2f}" if isinstance(v, float) else f"{k}={v}" for k, v in summary.items()))
    if os.environ.get("BENCH_RT_OUT"):  # bench/run.py's part: it writes the results with the run's other parts
        Path(os.environ["BENCH_RT_OUT"]).write_text(json.dumps(measured))
        return 0
    import report

    run = {"started": stamp, "commit": commit(ROOT), "machine": machine(), "realtime": measured}
    for path in report.save(run):
        say(f"results: {path.relative_to(ROOT)}")
    report.write_docs(report.load())
    return 0


if __name__ == "__main__":
    sys.exit(main())
