"""A real Apache Kafka broker for tests and benchmarks: KRaft combined mode (broker and controller in one JVM) on free
loopback ports, its log dirs in a temporary directory, stopped by its pid.

The broker's jars come from Maven Central into ``.cache/kafka/broker`` (``make kafka``: ``tools/kafka/pom.xml``), and
so do the Spark Kafka connector's (``.cache/kafka/spark``, passed to a session as ``spark.jars``). Records are
produced and topics created with ``confluent-kafka`` (``requirements-test.txt``). Nothing here talks to anything but
127.0.0.1.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from spark_kinesis_testkit.emulator import free_port, require_java, stop_process

__all__ = ["KafkaBroker", "cluster_id", "connector_jars", "connector_jars_or_none", "produce"]

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "kafka"


def cluster_id(random_bytes: Callable[[], bytes] = lambda: uuid.uuid4().bytes) -> str:
    """A new KRaft cluster id: a random UUID in URL-safe base64, drawn again while it starts with "-", as Kafka's own
    ``Uuid.randomUuid()`` does, because ``kafka-storage format -t <id>`` would read such an id as an option (1 in 64
    ids; a broker start failed so in CI)."""
    while True:
        candidate = base64.urlsafe_b64encode(random_bytes()).rstrip(b"=").decode()
        if not candidate.startswith("-"):
            return candidate


def _jars(kind: str) -> list[Path]:
    jars = sorted((CACHE / kind).glob("*.jar"))
    if not jars:
        raise FileNotFoundError(f"no jars in {CACHE / kind}: run `make kafka` (resolves them from Maven Central)")
    return jars


def connector_jars() -> str:
    """Spark's Kafka connector and its dependencies, in ``spark.jars`` form."""
    return ",".join(str(j) for j in _jars("spark"))


def connector_jars_or_none() -> str | None:
    """``connector_jars()``, or None when ``make kafka`` has not fetched them."""
    try:
        return connector_jars()
    except FileNotFoundError:
        return None


class KafkaBroker:
    """One Kafka broker (KRaft combined mode) on free loopback ports.

    >>> with KafkaBroker() as kafka:
    ...     kafka.create_topic("orders", partitions=2)
    ...     kafka.produce("orders", [(b"key", b"value")])
    """

    def __init__(self, startup_timeout_s: float = 90.0) -> None:
        self.startup_timeout_s = startup_timeout_s
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._dir: Path | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self) -> KafkaBroker:
        java = require_java("the Kafka broker needs Java 17")
        classpath = os.pathsep.join(str(j) for j in _jars("broker"))
        self._dir = Path(tempfile.mkdtemp(prefix="kafka-"))
        self.port, controller = free_port(), free_port()
        while controller == self.port:
            controller = free_port()
        props = self._dir / "server.properties"
        props.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@127.0.0.1:{controller}",
                    f"listeners=PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{controller}",
                    f"advertised.listeners=PLAINTEXT://127.0.0.1:{self.port}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={self._dir / 'logs'}",
                    "auto.create.topics.enable=false",
                    "offsets.topic.replication.factor=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    "",
                ]
            )
        )
        log4j = self._dir / "log4j.properties"
        log4j.write_text(
            "log4j.rootLogger=WARN, file\nlog4j.appender.file=org.apache.log4j.FileAppender\n"
            f"log4j.appender.file.File={self._dir / 'broker.log'}\n"
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.file.layout.ConversionPattern=%d %p %c: %m%n\n"
        )
        jvm = [java, "-Xmx384m", f"-Dlog4j.configuration={log4j.as_uri()}", "-cp", classpath]
        fmt = subprocess.run(
            [*jvm, "kafka.tools.StorageTool", "format", "-t", cluster_id(), "-c", str(props)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if fmt.returncode != 0:
            raise RuntimeError(f"kafka-storage format failed ({fmt.returncode}): {fmt.stdout}{fmt.stderr}")
        out = open(self._dir / "stdout.log", "wb")
        self._proc = subprocess.Popen([*jvm, "kafka.Kafka", str(props)], stdout=out, stderr=subprocess.STDOUT)
        out.close()
        try:
            self._wait_ready()
        except Exception:
            self.stop()
            raise
        return self

    def _wait_ready(self) -> None:
        """Until the broker answers a metadata request as a live broker (its controller quorum is up)."""
        from confluent_kafka.admin import AdminClient

        admin = AdminClient(self._client_conf())
        deadline = time.monotonic() + self.startup_timeout_s
        while True:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited with {self._proc.returncode}: {self.log_tail()}")
            try:
                if admin.list_topics(timeout=1).brokers:
                    return
            except Exception:  # KafkaException while the listener is not up yet
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"the Kafka broker was not ready after {self.startup_timeout_s}s: {self.log_tail()}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self._proc is not None:
            stop_process(self._proc, timeout_s=15.0)
            self._proc = None
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def __enter__(self) -> KafkaBroker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, n: int = 4000) -> str:
        if self._dir is None:
            return ""
        text = "".join(
            p.read_text(errors="replace") for p in (self._dir / "stdout.log", self._dir / "broker.log") if p.exists()
        )
        return text[-n:]

    def _client_conf(self) -> dict[str, Any]:
        # librdkafka logs every refused reconnect (while the broker starts, after it stops) at ERROR: critical only.
        return {"bootstrap.servers": self.bootstrap, "log_level": 2}

    # -- topics and records ---------------------------------------------------------------------
    def create_topic(
        self, name: str, partitions: int, config: dict[str, str] | None = None, timeout_s: float = 30.0
    ) -> None:
        from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]  # (re-exported from C)

        admin = AdminClient(self._client_conf())
        topic = NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})
        futures = admin.create_topics([topic])
        futures[name].result(timeout=timeout_s)
        deadline = time.monotonic() + timeout_s
        while True:  # until every partition has a leader
            meta = admin.list_topics(topic=name, timeout=5).topics.get(name)
            if meta is not None and len(meta.partitions) == partitions:
                if all(p.leader >= 0 for p in meta.partitions.values()):
                    return
            if time.monotonic() > deadline:
                raise TimeoutError(f"topic {name} has no leaders after {timeout_s}s")
            time.sleep(0.05)

    def produce(self, topic: str, records: Iterable[tuple[bytes | None, bytes]]) -> None:
        """Produce (key, value) records and wait until the broker has acknowledged each; fails on any error."""
        produce(self.bootstrap, topic, records)


def produce(bootstrap: str, topic: str, records: Iterable[tuple[bytes | None, bytes]]) -> None:
    """Produce (key, value) records to the broker at ``bootstrap`` (no batching delay: each goes out as produced)
    and wait until the broker has acknowledged each; fails on any error."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "log_level": 2, "linger.ms": 0, "acks": "all"})
    errors: list[Any] = []

    def done(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    for key, value in records:
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=done)
                break
            except BufferError:  # the client's local queue is full: let it send
                producer.poll(0.05)
        producer.poll(0)
    left = producer.flush(60)
    if left or errors:
        raise RuntimeError(f"{left} records unacknowledged, errors: {errors[:3]}")
