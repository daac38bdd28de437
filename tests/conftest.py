"""Shared fixtures: one embedded Kinesis and one local Spark session for the whole run.

The Spark session gets the freshly built jars for the installed pyspark's Spark line (``make test``
builds them and copies them into the Python package). Tests talk to loopback only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pyspark
import pytest

# Before any JVM starts (the KPL daemon inherits its environment): no EC2 metadata probes.
os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
ROOT = Path(__file__).resolve().parents[1]


# Every JVM the tests start (Spark drivers, executors, probes, spark-submit) compiles with C1 only; those with Spark's
# class path also map its start-up classes from one archive instead of loading and verifying them each time (`make
# test` makes it during its set-up; otherwise the first run here does). Benchmarks and the demo do not run under pytest
# and keep the JVM's default.
if "JAVA_TOOL_OPTIONS" not in os.environ:
    from spark_kinesis_testkit.class_archive import java_tool_options

    os.environ["JAVA_TOOL_OPTIONS"] = java_tool_options(ROOT)

import helpers
from helpers import fresh_stream, session_jars
from spark_kinesis_testkit.emulator import KinesisMock, loopback_session_builder
from spark_kinesis_testkit.kafka import KafkaBroker, connector_jars_or_none
from spark_kinesis_testkit.kcl import KclDeaggregator
from spark_kinesis_testkit.localstack import LocalStackKinesis, docker_problem, skip_reason


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "e2e: runs real Spark + KPL + embedded Kinesis")
    config.addinivalue_line("markers", "install: builds and installs artifacts (wheel, --packages)")
    config.addinivalue_line(
        "markers", "later_scala: runs the jar of a line's later Scala (3.5_2.13); make test runs each line's first"
    )
    config.addinivalue_line("markers", "bad_input: one bad option, schema, row or environment and its error")
    config.addinivalue_line("markers", "faults: a fault scenario (throttling, outages, kills) with id accounting")
    config.addinivalue_line(
        "markers", "platforms: the writer beside a platform's jars on the class path (platform-jars)"
    )
    config.addinivalue_line(
        "markers", "fleet: applications on local-cluster started for their executor count (a JVM per executor)"
    )
    config.addinivalue_line(
        "markers",
        "variant: another variant of a scenario make test runs once (the other entry point or aggregation mode, two "
        "line jars at once, the credentials sources but static keys)",
    )
    config.addinivalue_line(
        "markers",
        "every_line: also runs on the Spark 3.5 leg (pyspark 3.5): what the Spark line decides (the sink and "
        "ForeachWriter APIs, progress, metrics, Connect, errors reaching Python), not the writer below them",
    )
    config.addinivalue_line(
        "markers",
        "lines: the README's first example: `make test-lines` runs it on the pyspark releases the legs do not, the "
        "Spark 3.5 leg as every_line (the Spark 4 leg runs the README whole)",
    )
    config.addinivalue_line(
        "markers",
        "spark35_leg: in `make test`, runs on the Spark 3.5 leg instead of the Spark 4 one (line-independent code: "
        "that leg finishes minutes earlier); `make pytest` still runs it on Spark 4",
    )
    config.addinivalue_line(
        "markers",
        "localstack: also runs in `make test-localstack`, on LocalStack through Testcontainers (KINESIS_TEST_BACKEND)",
    )


@pytest.fixture(scope="session")
def kinesis(record_testsuite_property: Callable[[str, object], None]) -> Iterator[KinesisMock]:
    backend = os.environ.get("KINESIS_TEST_BACKEND", "kinesis-mock")
    if backend == "localstack":
        if docker_problem() is not None:
            if os.environ.get("KINESIS_TEST_BACKEND_REQUIRED") == "1":  # CI's LocalStack job: no Docker is a failure
                pytest.fail(skip_reason(), pytrace=False)
            pytest.skip(skip_reason())
        km: KinesisMock = LocalStackKinesis()
    elif backend == "kinesis-mock":
        km = KinesisMock()
    else:
        raise pytest.UsageError(f"KINESIS_TEST_BACKEND={backend!r}: use kinesis-mock (the default) or localstack")
    km.start()
    if isinstance(km, LocalStackKinesis):  # the junit report names what the tests ran on
        for name, value in km.describe().items():
            record_testsuite_property(name, value)
    try:
        yield km
    finally:
        if isinstance(km, LocalStackKinesis):
            record_testsuite_property("localstack_kinesis_requests", km.requests_served())
        km.stop()


@pytest.fixture(autouse=True)
def read_back(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test's read-backs (ids delivered of ids sent, by ``helpers.account``) as a junit property, where the junit
    family has per-test properties (``make test-localstack`` asks for xunit1; pytest's default xunit2 has none). What
    ``record_property`` does, without requesting it: that warns under xunit2 for every test."""
    helpers.READ_BACKS.clear()
    yield
    if helpers.READ_BACKS and request.config.getini("junit_family") != "xunit2":
        read = ", ".join(f"{got} of {sent} ids" for sent, got in helpers.READ_BACKS)
        request.node.user_properties.append(("read_back", read))


@pytest.fixture(scope="session")
def kafka() -> Iterator[KafkaBroker]:
    """One real Kafka broker (KRaft) for the session, started by the first test that asks for it."""
    with KafkaBroker() as broker:
        yield broker


@pytest.fixture(scope="session")
def kcl() -> Iterator[KclDeaggregator]:
    """The KCL's own deaggregation (one JVM for the session, started on first use): how a test reads what a KCL
    consumer receives (``read_stream_kcl``)."""
    with KclDeaggregator() as deaggregator:
        yield deaggregator


@pytest.fixture(scope="session")
def metrics_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session's CsvSink writes every metrics source once a second."""
    return tmp_path_factory.mktemp("metrics")


@pytest.fixture(scope="session")
def spark(metrics_dir: Path):  # type: ignore[no-untyped-def]
    jars = session_jars()
    # Spark's Kafka connector (Scala 2.13, Spark 4) for the README's Kafka example, when `make kafka` has fetched it;
    # without it only the tests that read Kafka fail (they say to run `make kafka`). Only on the Spark that has
    # real-time mode (4.1+), which every test reading Kafka needs: an older Spark 4 (`make test-lines`) keeps its own
    # class path.
    major, minor = (int(x) for x in pyspark.__version__.split(".")[:2])
    if (major, minor) >= (4, 1) and (kafka_jars := connector_jars_or_none()):
        jars += "," + kafka_jars
    builder = loopback_session_builder("local[2]", "spark-kinesis-tests", jars, str(metrics_dir))
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture
def stream(kinesis: KinesisMock, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh 4-shard stream per test (helpers.fresh_stream), deleted after it."""
    with fresh_stream(kinesis, request.node.name) as name:
        yield name
