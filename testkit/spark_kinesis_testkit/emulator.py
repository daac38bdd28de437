"""Embedded Kinesis for tests, demos and benchmarks: kinesis-mock (npm ``kinesis-local``) on loopback.

kinesis-mock is the engine inside LocalStack. It serves TLS (for the KPL, which always speaks TLS)
and plain HTTP (for boto3 and the readiness probe) at once. Nothing here talks to anything but
127.0.0.1.

``boto3`` and ``aws-kinesis-agg`` are needed only by the read-back helpers.

Set ``AWS_EC2_METADATA_DISABLED=true`` in the environment *before the Spark JVM starts*: the KPL
daemon inherits it, and otherwise its C++ SDK probes EC2 instance metadata (169.254.169.254) for
a default region at start-up, even though the region is configured.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "KinesisMock",
    "ProducerSample",
    "UserRecord",
    "find_kinesis_mock",
    "free_port",
    "hash_key",
    "iter_shard",
    "java_executable",
    "loopback_session_builder",
    "producer_snapshot",
    "read_stream",
    "require_java",
    "user_records_in",
]

#: Static fake credentials; kinesis-mock checks that a SigV4 header exists, not its signature.
FAKE_ACCESS_KEY_ID = "AKIAEMULATOR00000000"
FAKE_SECRET_ACCESS_KEY = "emulator-secret-not-a-real-key"
REGION = "us-east-1"


def java_executable() -> str | None:
    """The ``java`` the tests' JVMs run: ``$JAVA_HOME/bin/java`` when JAVA_HOME is set, else the one on PATH; None if
    there is none."""
    home = os.environ.get("JAVA_HOME")
    return shutil.which("java", path=f"{home}/bin" if home else None)


def require_java(needed_by: str) -> str:
    """:func:`java_executable`, or an error naming what needs it."""
    java = java_executable()
    if java is None:
        raise RuntimeError(f"java is not on PATH (or JAVA_HOME): {needed_by}")
    return java


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def find_kinesis_mock() -> Path:
    """Locate kinesis-mock's ``main.js``: ``$KINESIS_MOCK_MAIN``, else the repo's pinned install."""
    env = os.environ.get("KINESIS_MOCK_MAIN")
    candidates = [Path(env)] if env else []
    # testkit/spark_kinesis_testkit/emulator.py: the repo root is two levels up (editable install).
    root = Path(__file__).resolve().parents[2]
    candidates.append(root / "tools" / "emulator" / "node_modules" / "kinesis-local" / "main.js")
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(
        "kinesis-mock not found: run `make emulator` (npm install in tools/emulator) "
        "or set KINESIS_MOCK_MAIN to node_modules/kinesis-local/main.js"
    )


class KinesisMock:
    """A kinesis-mock process on free loopback ports.

    >>> with KinesisMock(streams={"events": 4}) as km:
    ...     writer = KinesisWriter(stream_name="events", **km.writer_options())
    """

    def __init__(
        self,
        streams: Mapping[str, int] | None = None,
        main_js: os.PathLike[str] | str | None = None,
        startup_timeout_s: float = 60.0,
    ) -> None:
        self.main_js = Path(main_js) if main_js else find_kinesis_mock()
        self.streams = dict(streams or {})
        self.startup_timeout_s = startup_timeout_s
        self.tls_port = 0
        self.plain_port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_path: Path | None = None
        self._client: Any = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> KinesisMock:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH; kinesis-mock needs Node.js >= 18")
        self.tls_port, self.plain_port = free_port(), free_port()
        while self.plain_port == self.tls_port:
            self.plain_port = free_port()
        env = dict(os.environ)
        env.update(
            KINESIS_MOCK_CERT_PATH=str(self.main_js.parent / "server.json"),
            KINESIS_MOCK_TLS_PORT=str(self.tls_port),
            KINESIS_MOCK_PLAIN_PORT=str(self.plain_port),
            CREATE_STREAM_DURATION="0ms",
            DELETE_STREAM_DURATION="0ms",
            UPDATE_SHARD_COUNT_DURATION="0ms",
            SHARD_LIMIT="2000",  # a test session creates a stream per test
            LOG_LEVEL="WARN",
            AWS_REGION=REGION,
        )
        if self.streams:
            env["INITIALIZE_STREAMS"] = ",".join(f"{n}:{s}" for n, s in self.streams.items())
        fd, log = tempfile.mkstemp(prefix="kinesis-mock-", suffix=".log")
        self._log_path = Path(log)
        self._proc = subprocess.Popen(
            [node, str(self.main_js)], env=env, stdout=fd, stderr=subprocess.STDOUT, cwd=tempfile.gettempdir()
        )
        os.close(fd)
        url = f"http://127.0.0.1:{self.plain_port}/healthcheck"
        try:
            wait_http_ready(self._proc, url, self.startup_timeout_s, "kinesis-mock", self.log_tail)
        except TimeoutError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        # kinesis-mock waits ~10 s for open keep-alive connections (a live KPL daemon's) before it exits;
        # it keeps nothing on disk, so it gets a second and is then killed.
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._proc is not None:
            stop_process(self._proc, timeout_s=1.0)
        self._proc = None
        if self._log_path is not None:  # read while it ran (log_tail); a stopped emulator's log is only disk
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> KinesisMock:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, n: int = 4000) -> str:
        if self._log_path is None or not self._log_path.exists():
            return ""
        return self._log_path.read_text(errors="replace")[-n:]

    # -- configuration for clients -----------------------------------------------------------
    @property
    def tls_endpoint(self) -> str:
        return f"https://127.0.0.1:{self.tls_port}"

    def writer_options(self, endpoint: str | None = None, **kpl: Any) -> dict[str, Any]:
        """Keyword arguments for ``KinesisWriter`` that point the KPL at this emulator, or at ``endpoint`` when
        something stands in front of it (a fault front); ``kpl`` entries override or extend the KPL settings.

        The emulator is slow (about 1-2 MB/s, seconds per full PutRecords, many more on a busy machine), so requests
        get a generous timeout: a request the KPL gives up on is sent again while the emulator may still store the
        first, and a test that counts duplicates must not meet the KPL's default 6 s on a loaded CI machine.
        """
        slow = {"RequestTimeout": 60000, "RecordTtl": 120000, "CollectionMaxSize": 1048576, "LogLevel": "warning"}
        return loopback_writer_options(endpoint or self.tls_endpoint, **{**slow, **kpl})

    def client(self) -> Any:
        """A boto3 Kinesis client on the plain-HTTP port."""
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "kinesis",
                endpoint_url=f"http://127.0.0.1:{self.plain_port}",
                region_name=REGION,
                aws_access_key_id=FAKE_ACCESS_KEY_ID,
                aws_secret_access_key=FAKE_SECRET_ACCESS_KEY,
                config=Config(retries={"max_attempts": 10, "mode": "standard"}, read_timeout=120),
            )
        return self._client

    def create_stream(self, name: str, shards: int, timeout_s: float = 30.0) -> None:
        create_stream(self.client(), name, shards, timeout_s)


def wait_http_ready(
    proc: subprocess.Popen[bytes], url: str, timeout_s: float, name: str, log_tail: Callable[[], str]
) -> None:
    """Poll ``url`` until it answers 200 (a local server ``proc`` starting); fail at once if ``proc`` exits."""
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}: {log_tail()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{name} not ready after {timeout_s}s: {log_tail()}")
        time.sleep(0.05)


def stop_process(proc: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
    """Terminate ``proc`` (a local server), killing it if it has not exited within ``timeout_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=timeout_s)


def loopback_writer_options(endpoint: str, **kpl: Any) -> dict[str, Any]:
    """``KinesisWriter`` keyword arguments for a local Kinesis at ``endpoint`` (emulator, fault front,
    benchmark backend): region, the fake static keys, no CloudWatch upload, no certificate check
    (every local cert is self-signed); ``kpl`` entries override or extend the KPL settings.

    CloudWatch points at the same loopback address: the daemon uploads nothing at ``MetricsLevel=none``, but the
    KPL's Java side (1.0.8+) builds a CloudWatch client of its own, which must never reach the region's endpoint."""
    where = urllib.parse.urlsplit(endpoint if "://" in endpoint else f"https://{endpoint}")
    return {
        "endpoint": endpoint,
        "region": REGION,
        "aws_access_key_id": FAKE_ACCESS_KEY_ID,
        "aws_secret_access_key": FAKE_SECRET_ACCESS_KEY,
        "kpl": {
            "VerifyCertificate": False,
            "MetricsLevel": "none",
            "CloudwatchEndpoint": where.hostname,
            "CloudwatchPort": where.port or 443,
            **kpl,
        },
    }


def create_stream(client: Any, name: str, shards: int, timeout_s: float = 30.0) -> None:
    """Create ``name`` with ``shards`` shards through a boto3 ``client`` and wait until it is ACTIVE."""
    client.create_stream(StreamName=name, ShardCount=shards)
    deadline = time.monotonic() + timeout_s
    while client.describe_stream_summary(StreamName=name)["StreamDescriptionSummary"]["StreamStatus"] != "ACTIVE":
        if time.monotonic() > deadline:
            raise TimeoutError(f"stream {name} not ACTIVE after {timeout_s}s")
        time.sleep(0.05)


JMX_SINK = "spark.metrics.conf.*.sink.jmx.class"


def loopback_session_builder(
    master: str = "local[2]", app_name: str = "spark-kinesis", jars: str | None = None, metrics_dir: str | None = None
) -> Any:
    """A ``SparkSession.builder`` for tests, demos and benchmarks: loopback only, no UI, the writer's
    jars (``jars``, comma-separated; None: the bundled ones for the installed pyspark; "": none, Spark's
    own only) and optionally a CsvSink writing every second to ``metrics_dir``.
    """
    from pyspark.sql import SparkSession
    from spark_kinesis import configure

    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.sql.shuffle.partitions": "2",
        # Executor JVMs (local-cluster) start KPL daemons too: no EC2 metadata probes there either.
        "spark.executorEnv.AWS_EC2_METADATA_DISABLED": "true",
    }
    # The producers' metrics sources as MBeans (producer_snapshot reads them, as a user's JMX tool would).
    conf[JMX_SINK] = "org.apache.spark.metrics.sink.JmxSink"
    if metrics_dir is not None:
        sink = "spark.metrics.conf.*.sink.csv."
        conf.update(
            {
                sink + "class": "org.apache.spark.metrics.sink.CsvSink",
                sink + "period": "1",
                sink + "unit": "seconds",
                sink + "directory": metrics_dir,
            }
        )
    # Python workers run this interpreter, with its packages (pyspark 4 runs UDFs over Arrow when the driver has
    # pyarrow). pyspark reads the variable when the session's context starts.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    # local-cluster's workers and executors bind where SPARK_LOCAL_IP says, else to the host's first non-loopback
    # address (the driver's settings above do not reach them).
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    if jars is None:
        return configure(builder)
    return builder.config("spark.jars", jars) if jars else builder


@dataclass(frozen=True)
class ProducerSample:
    """One live KPL producer of the driver JVM (local mode: the executors' too)."""

    source: str  # the metrics source name, kinesisProducer.<stream>
    outstanding_records: int
    backpressure_cycles: int
    outstanding_bytes: int
    records_sent: int
    records_failed: int
    bytes_sent: int
    # What queue_limit bounds. outstanding_records is the KPL's count, which also holds its pending metrics request.
    in_flight_records: int
    users: int  # tasks holding this producer (its tasksWriting)
    aggregates_sent: int  # aggregation='writer': aggregates the writer built and handed to the KPL
    resent_records: int  # aggregation='writer': records routed again after an aggregate landed in another shard
    misplaced_aggregates: int  # aggregation='writer': aggregates Kinesis confirmed in another shard than built for


#: Each ProducerSample field's metric of the source ``kinesisProducer.<stream>`` (docs/metrics.md) and its JMX type.
_SAMPLED: dict[str, tuple[str, str]] = {
    "outstanding_records": ("outstandingRecordsCount", "gauges"),
    "backpressure_cycles": ("backpressureCycles", "counters"),
    "outstanding_bytes": ("boundBytes", "gauges"),
    "records_sent": ("recordsSent", "counters"),
    "records_failed": ("recordsFailed", "counters"),
    "bytes_sent": ("bytesSent", "counters"),
    "in_flight_records": ("boundRecords", "gauges"),
    "users": ("tasksWriting", "gauges"),
    "aggregates_sent": ("aggregatesSent", "counters"),
    "resent_records": ("resentRecords", "counters"),
    "misplaced_aggregates": ("misplacedAggregates", "counters"),
}


def producer_snapshot(spark: Any) -> list[ProducerSample]:
    """The live producers of the driver JVM, read as a user reads them: each one's metrics source through Spark's
    ``JmxSink`` (``loopback_session_builder`` turns it on), the MBeans ``metrics:name=<app>.driver.<source>.<metric>``.
    A producer closed while it is read is left out."""
    from py4j.protocol import Py4JJavaError

    gateway = spark.sparkContext._gateway
    jmx = _MBEANS.get(id(gateway))
    if jmx is None:
        if spark.sparkContext.getConf().get(JMX_SINK, None) is None:
            raise RuntimeError(f"producer_snapshot reads Spark's JmxSink: build the session with {JMX_SINK} set")
        jmx = _MBEANS[id(gateway)] = _MBeans(spark._jvm, gateway)
    samples = []
    for name in jmx.sources():
        try:
            values = jmx.sample(name)
        except Py4JJavaError:  # InstanceNotFoundException: it closed after the query
            continue
        samples.append(ProducerSample(source=name[name.index(".kinesisProducer.") + 1 :], **values))
    return samples


class _MBeans:
    """The platform MBean server of a driver JVM, called through its interface ``javax.management.MBeanServer`` (py4j
    looks methods up on an object's class, and the server's class is in a package the JDK does not export). Every call's
    arguments are made once and kept: a sample is one py4j call per metric, so tests can sample while a write runs."""

    _ANCHOR = ".recordsSent"  # a metric every producer's source has, to find the sources by

    def __init__(self, jvm: Any, gateway: Any) -> None:
        self._jvm, self._gateway = jvm, gateway
        self._server = jvm.java.lang.management.ManagementFactory.getPlatformMBeanServer()
        server, name = self._class("javax.management.MBeanServer"), self._class("javax.management.ObjectName")
        query = [name, self._class("javax.management.QueryExp")]
        self._query = server.getMethod("queryNames", self._array(jvm.java.lang.Class, query))
        get = [name, self._class("java.lang.String")]
        self._get = server.getMethod("getAttribute", self._array(jvm.java.lang.Class, get))
        pattern = f"metrics:name=*.kinesisProducer.*{self._ANCHOR},type=*"
        self._sources = self._array(jvm.java.lang.Object, [jvm.javax.management.ObjectName(pattern), None])
        self._reads: dict[str, list[tuple[str, Any]]] = {}

    def sources(self) -> list[str]:
        """Each live producer's metrics name prefix, ``<app>.driver.kinesisProducer.<stream>``."""
        found = str(self._query.invoke(self._server, self._sources).toString())
        return sorted(n[: -len(self._ANCHOR)] for n in re.findall(r"name=([^,\]]+)", found))

    def sample(self, name: str) -> dict[str, int]:
        if name not in self._reads:
            self._reads[name] = [
                (field, self._attribute(f"metrics:name={name}.{metric},type={kind}", kind))
                for field, (metric, kind) in _SAMPLED.items()
            ]
        return {field: int(self._get.invoke(self._server, args)) for field, args in self._reads[name]}

    def _attribute(self, bean: str, kind: str) -> Any:
        attribute = "Count" if kind == "counters" else "Value"
        return self._array(self._jvm.java.lang.Object, [self._jvm.javax.management.ObjectName(bean), attribute])

    def _class(self, name: str) -> Any:
        return self._jvm.java.lang.Class.forName(name)

    def _array(self, of: Any, items: list[Any]) -> Any:
        array = self._gateway.new_array(of, len(items))
        for i, item in enumerate(items):
            array[i] = item
        return array


_MBEANS: dict[int, _MBeans] = {}  # by py4j gateway: one driver JVM each


@dataclass(frozen=True)
class UserRecord:
    """One user record as read back: KPL aggregates are split into their user records."""

    partition_key: str
    data: bytes
    shard_id: str
    explicit_hash_key: str | None
    aggregated: bool
    # The Kinesis record's ApproximateArrivalTimestamp (epoch seconds), shared by the user records of one aggregate.
    arrival_s: float | None = None


AGGREGATED_MAGIC = b"\xf3\x89\x9a\xc2"  # the KPL aggregate format's own constant


def aggregate_of(data: bytes) -> Any | None:
    """A Kinesis record's data as the KPL's ``AggregatedRecord`` (parsed with aws-kinesis-agg's class), or None when it
    is not an aggregate."""
    if data[:4] != AGGREGATED_MAGIC:
        return None
    from aws_kinesis_agg import deaggregator  # first: it puts its folder on sys.path for its generated modules

    message = deaggregator.messages_pb2.AggregatedRecord()
    message.ParseFromString(data[4:-16])
    return message


def user_records_in(data: bytes) -> int:
    """How many user records a Kinesis record's data carries: an aggregate's sub-records, else one."""
    message = aggregate_of(data)
    return 1 if message is None else len(message.records)


def iter_shard(
    client: Any, stream: str, shard_id: str, idle_polls: int, max_polls: int | None = None
) -> Iterator[dict[str, Any]]:
    """A shard's records from TRIM_HORIZON, until ``idle_polls`` reads in a row find none, or after ``max_polls`` reads:
    a shard still being written to may never read empty, and a poll wants what is there, not what keeps coming."""
    it = client.get_shard_iterator(StreamName=stream, ShardId=shard_id, ShardIteratorType="TRIM_HORIZON")[
        "ShardIterator"
    ]
    empty = polls = 0
    while it and empty < idle_polls and (max_polls is None or polls < max_polls):
        polls += 1
        resp = client.get_records(ShardIterator=it, Limit=10000)
        recs = resp["Records"]
        yield from recs
        empty = 0 if recs else empty + 1
        it = resp.get("NextShardIterator")


def read_stream(client: Any, stream: str, idle_polls: int = 2, max_polls: int | None = None) -> list[UserRecord]:
    """Read every record of every shard from TRIM_HORIZON and deaggregate with ``aws-kinesis-agg``: a plain reader,
    which keeps every sub-record wherever it was read (for missing and duplicates). What a KCL consumer receives is
    ``kcl.read_stream_kcl``'s: the KCL's own code.

    aws-kinesis-agg gives a sub-record without an explicit hash key the aggregate's first one (it reads the index
    without asking whether it is set); the KCL does not. Each sub-record's own is taken from the same protobuf message,
    parsed with aws-kinesis-agg's class. ``max_polls`` bounds the reads per shard (``iter_shard``): a poll of a stream
    still being written to."""
    from aws_kinesis_agg import deaggregator  # first: it puts its folder on sys.path for its generated modules

    out: list[UserRecord] = []
    shards = client.list_shards(StreamName=stream)["Shards"]
    for shard in shards:
        sid = shard["ShardId"]
        for raw in iter_shard(client, stream, sid, idle_polls, max_polls):
            arrival = raw.get("ApproximateArrivalTimestamp")
            arrival_s = arrival.timestamp() if arrival is not None else None
            message = aggregate_of(raw["Data"])
            own_ehk = [] if message is None else [m.HasField("explicit_hash_key_index") for m in message.records]
            for i, r in enumerate(deaggregator.iter_deaggregate_records([raw], data_format="Boto3")):
                k = r["kinesis"]
                agg = bool(k.get("aggregated"))
                ehk = k.get("explicitHashKey") if not agg or own_ehk[i] else None
                # aws-kinesis-agg re-encodes sub-record data as base64; pass-through records stay raw.
                data = base64.b64decode(k["data"]) if agg else k["data"]
                out.append(UserRecord(k["partitionKey"], bytes(data), sid, ehk, agg, arrival_s))
    return out


def hash_key(partition_key: str, explicit_hash_key: str | None = None) -> int:
    """Where Kinesis places a record: its explicit hash key, else the MD5 of its partition key, as a 128-bit int."""
    if explicit_hash_key is not None:
        return int(explicit_hash_key)
    return int.from_bytes(hashlib.md5(partition_key.encode("utf-8")).digest(), "big")
