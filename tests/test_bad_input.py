"""Every wrong option, schema, row or environment gets a clear error, fast, by name.

One table: each case says where it fails (python / attach / row / environment), the exception type,
what the message must name, and the time bound (10 s from the action to the error). Option and
schema cases must fail on the driver before any task runs.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import pytest
from helpers import write_input
from pyspark.errors import StreamingQueryException
from spark_kinesis import KinesisWriter
from spark_kinesis_testkit.emulator import free_port

TIME_BOUND_S = 10.0
#: The cases the Spark 3.5 leg runs too: options, schema and rows, one or two of each kind.
EVERY_LINE = {
    "kpl-misspelled",
    "endpoint-http",
    "role-not-arn",
    "no-data-column",
    "data-int",
    "null-data",
    "hash-key-not-decimal",
    "stream-missing",
}
REGION = {"region": "us-east-1"}


@dataclass
class Case:
    id: str
    where: str  # "python": KinesisWriter(...); "attach": foreach(...) and format("kinesis") start; "foreach": foreach
    # only; "row"/"env": a running query
    error: type
    message: list[str]
    kwargs: dict[str, Any] = field(default_factory=dict)
    columns: dict[str, str] = field(default_factory=lambda: {"data": "string", "partitionKey": "string"})
    row: dict[str, Any] = field(default_factory=dict)


def c(id: str, where: str, error: type, *message: str, **kw: Any) -> Case:
    return Case(id, where, error, list(message), **kw)


CASES = [
    # -- options, caught in Python -----------------------------------------------------------
    c("unknown-kwarg", "python", TypeError, "unknown argument(s) stream", "Valid: stream_name", kwargs={"stream": "x"}),
    c("queue-limit-str", "python", TypeError, "queue_limit must be int, got str", kwargs={"queue_limit": "10"}),
    c(
        "queue-limit-zero",
        "python",
        ValueError,
        "Option queue_limit='0' is invalid: expected at least 1",
        kwargs={"queue_limit": 0},
    ),
    c(
        "role-duration-zero",
        "python",
        ValueError,
        "role_duration_seconds='0' is invalid: expected a positive number of seconds",
        kwargs={"role_duration_seconds": 0},
    ),
    c(
        "max-bytes-zero",
        "python",
        ValueError,
        "max_outstanding_bytes='0' is invalid: expected a positive number of bytes",
        kwargs={"max_outstanding_bytes": 0},
    ),
    c("queue-limit-bool", "python", TypeError, "queue_limit must be int, got bool", kwargs={"queue_limit": True}),
    c("fail-on-error-str", "python", TypeError, "fail_on_error must be bool", kwargs={"fail_on_error": "no"}),
    c(
        "flush-timeout-negative",
        "python",
        ValueError,
        "flush_timeout_ms='-1' is invalid: expected a positive number of milliseconds",
        kwargs={"flush_timeout_ms": -1},
    ),
    c(
        "idle-timeout-zero",
        "python",
        ValueError,
        "producer_idle_timeout_ms='0' is invalid: expected a positive number of milliseconds",
        kwargs={"producer_idle_timeout_ms": 0},
    ),
    c(
        "partitioner-unknown",
        "python",
        ValueError,
        "partitioner='hash' is invalid: expected 'random', 'fixed' or 'none'",
        kwargs={"partitioner": "hash"},
    ),
    c("kpl-not-dict", "python", TypeError, "kpl must be a dict", kwargs={"kpl": "RecordTtl=100"}),
    c(
        "kpl-float",
        "python",
        TypeError,
        "kpl['RecordTtl'] must be str, int or bool",
        kwargs={"kpl": {"RecordTtl": 1.5}},
    ),
    # -- options, caught by the JVM on the driver (attach) ------------------------------------------
    c(
        "kpl-misspelled",
        "attach",
        ValueError,
        "kpl.RecordMaxBuferedTime is not a KPL setting",
        "Did you mean 'RecordMaxBufferedTime'",
        kwargs={"kpl": {"RecordMaxBuferedTime": 100}},
    ),
    c(
        "kpl-ttl-below-min",
        "attach",
        ValueError,
        "kpl.RecordTtl='10' is rejected by the KPL",
        kwargs={"kpl": {"RecordTtl": 10}},
    ),
    c(
        "max-record-over-byte-bound",
        "attach",
        ValueError,
        "kpl.MaxUserRecordSize=2000 is larger than max_outstanding_bytes=1000",
        kwargs={"max_outstanding_bytes": 1000, "kpl": {"MaxUserRecordSize": 2000}},
    ),
    c("kpl-max-connections-0", "attach", ValueError, "kpl.MaxConnections='0'", kwargs={"kpl": {"MaxConnections": 0}}),
    c(
        "ordered-with-kpl-aggregation",
        "attach",
        ValueError,
        "ordered needs aggregation='writer'",
        "reorder",
        kwargs={"ordered": True, "aggregation": "kpl"},
    ),
    c(
        "order-by-on-foreach",
        "foreach",
        ValueError,
        "only format('kinesis') can ask",
        "ordered=True",
        kwargs={"order_by": "partitionKey"},
    ),
    c(
        "kpl-max-connections-1000",
        "attach",
        ValueError,
        "kpl.MaxConnections='1000'",
        kwargs={"kpl": {"MaxConnections": 1000}},
    ),
    c(
        "kpl-bool-yes",
        "attach",
        ValueError,
        "kpl.AggregationEnabled='yes'",
        "true or false",
        kwargs={"kpl": {"AggregationEnabled": "yes"}},
    ),
    c(
        "endpoint-http",
        "attach",
        ValueError,
        "endpoint='http://localhost:4567'",
        "always speaks TLS",
        kwargs={"endpoint": "http://localhost:4567"},
    ),
    c("endpoint-underscore", "attach", ValueError, "underscores", kwargs={"endpoint": "kinesis_mock:4567"}),
    c(
        "endpoint-bad-port",
        "attach",
        ValueError,
        "port is not a number in 1..65535",
        kwargs={"endpoint": "localhost:0"},
    ),
    c(
        "endpoint-and-kpl-endpoint",
        "attach",
        ValueError,
        "keep only 'endpoint'",
        kwargs={"endpoint": "https://h:1", "kpl": {"KinesisEndpoint": "h"}},
    ),
    c("region-malformed", "attach", ValueError, "region='Virginia'", "us-east-1", kwargs={"region": "Virginia"}),
    c(
        "key-without-secret",
        "attach",
        ValueError,
        "aws_access_key_id is set but aws_secret_access_key is not",
        kwargs={"aws_access_key_id": "AKIAONLYKEY"},
    ),
    c("token-without-keys", "attach", ValueError, "aws_session_token needs", kwargs={"aws_session_token": "t"}),
    c(
        "external-id-without-role",
        "attach",
        ValueError,
        "role_external_id only applies to assume-role",
        kwargs={"role_external_id": "x"},
    ),
    c("role-not-arn", "attach", ValueError, "role_arn='admin' is not an IAM role ARN", kwargs={"role_arn": "admin"}),
    c(
        "duration-without-role",
        "attach",
        ValueError,
        "role_duration_seconds only applies to assume-role",
        kwargs={"role_duration_seconds": 900},
    ),
    c(
        "partitioner-and-column",
        "attach",
        ValueError,
        "partitioner='random' conflicts with the 'partitionKey' column",
        kwargs={"partitioner": "random"},
    ),
    # -- schema (attach) ------------------------------------------------------------------------------
    c("no-data-column", "attach", ValueError, "no 'data' column", "to_json", columns={"payload": "string"}),
    c("data-int", "attach", ValueError, "'data' has type int", "binary or string", columns={"data": "int"}),
    c(
        "data-struct",
        "attach",
        ValueError,
        "'data' has type struct",
        "to_json",
        columns={"data": "struct<a:int>", "partitionKey": "string"},
    ),
    c(
        "no-partition-key",
        "attach",
        ValueError,
        "no 'partitionKey' column",
        "partitioner='random'",
        columns={"data": "binary"},
    ),
    c(
        "partition-key-int",
        "attach",
        ValueError,
        "'partitionKey' has type int",
        "cast",
        columns={"data": "string", "partitionKey": "int"},
    ),
    c(
        "hash-key-long",
        "attach",
        ValueError,
        "'explicitHashKey' has type bigint",
        columns={"data": "string", "partitionKey": "string", "explicitHashKey": "bigint"},
    ),
    c(
        "stream-name-int",
        "attach",
        ValueError,
        "'streamName' has type int",
        columns={"data": "string", "partitionKey": "string", "streamName": "int"},
    ),
    c("no-stream-anywhere", "attach", ValueError, "No stream to write to", kwargs={"stream_name": None}),
    # -- row values (a running query fails, the message reaches Python) ---------------------------------
    c("null-data", "row", StreamingQueryException, "'data' is null", row={"data": None}),
    c("null-partition-key", "row", StreamingQueryException, "'partitionKey' is null", row={"partitionKey": None}),
    c("empty-partition-key", "row", StreamingQueryException, "'partitionKey' is empty", row={"partitionKey": ""}),
    c("partition-key-300", "row", StreamingQueryException, "key of 300 characters", row={"partitionKey": "k" * 300}),
    c(
        "hash-key-not-decimal",
        "row",
        StreamingQueryException,
        "'explicitHashKey' holds '12ab'",
        columns={"data": "string", "partitionKey": "string", "explicitHashKey": "string"},
        row={"explicitHashKey": "12ab"},
    ),
    c(
        "hash-key-2^128",
        "row",
        StreamingQueryException,
        "0..2^128-1",
        columns={"data": "string", "partitionKey": "string", "explicitHashKey": "string"},
        row={"explicitHashKey": str(2**128)},
    ),
    c(
        "record-too-large",
        "row",
        StreamingQueryException,
        "over the KPL's MaxUserRecordSize of 1024",
        kwargs={"kpl": {"MaxUserRecordSize": 1024}},
        row={"data": "x" * 2000},
    ),
    c(
        "stream-name-empty",
        "row",
        StreamingQueryException,
        "'streamName' is empty",
        columns={"data": "string", "partitionKey": "string", "streamName": "string"},
        row={"streamName": " "},
    ),
    # -- environment: the driver asks Kinesis when the query starts (tests/test_first_failures.py has the rest) --------
    c(
        "endpoint-refuses",
        "env",
        ValueError,
        "Kinesis did not answer within 10 s for stream",
        "at endpoint https://127.0.0.1:",
        "ConnectException",
        kwargs={"endpoint": "refused"},
    ),
    c(
        "endpoint-not-tls",
        "env",
        ValueError,
        "Kinesis did not answer within 10 s for stream",
        "at endpoint https://127.0.0.1:",
        "SSL",
        kwargs={"endpoint": "plain"},
    ),
    c(
        "stream-missing",
        "env",
        ValueError,
        "ResourceNotFoundException",
        "Kinesis has no stream no-such-stream",
        kwargs={"stream_name": "no-such-stream"},
    ),
]


def _total_tasks(spark: Any) -> int:
    executors = spark._jsc.sc().statusStore().executorList(True)
    return sum(executors.apply(i).totalTasks() for i in range(executors.size()))


def _cases(where: str) -> list[Any]:
    return [
        pytest.param(x, marks=pytest.mark.every_line) if x.id in EVERY_LINE else x for x in CASES if x.where == where
    ]


def _timed(action: Callable[[], Any], error: type) -> tuple[BaseException, float]:
    start = time.monotonic()
    with pytest.raises(error) as info:
        action()
    return info.value, time.monotonic() - start


@pytest.mark.bad_input
@pytest.mark.parametrize("case", [x for x in CASES if x.where == "python"], ids=lambda x: x.id)
def test_python_checks(case: Case) -> None:
    err, took = _timed(lambda: KinesisWriter(stream_name="s", **REGION, **case.kwargs), case.error)
    for m in case.message:
        assert m in str(err), f"{str(err)!r} should name {m!r}"
    assert took < TIME_BOUND_S


def _assert_named_in_time_and_no_task_ran(case: Case, err: BaseException, took: float, spark: Any, before: int) -> None:
    for m in case.message:
        assert m in str(err), f"{str(err)[:2000]!r} should name {m!r}"
    assert took < TIME_BOUND_S
    # Prove no task ran: a 3-task job afterwards must bring the count to exactly before + 3.
    spark.sparkContext.parallelize(range(3), 3).foreach(lambda _: None)
    deadline = time.monotonic() + 30
    while _total_tasks(spark) < before + 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _total_tasks(spark) == before + 3, "a task ran for a writer that should have failed on the driver"


def _empty_stream_df(spark: Any, tmp_path: Any, columns: dict[str, str]) -> Any:
    src = tmp_path / "empty"
    src.mkdir()
    schema = ", ".join(f"`{k}` {v}" for k, v in columns.items())
    return spark.readStream.schema(schema).json(str(src))


@pytest.mark.bad_input
@pytest.mark.e2e
@pytest.mark.parametrize("case", _cases("attach") + _cases("foreach"), ids=lambda x: x.id)
def test_driver_checks_before_any_task(case: Case, spark: Any, tmp_path: Any) -> None:
    df = _empty_stream_df(spark, tmp_path, case.columns)
    kwargs = {"stream_name": "s", **REGION, **case.kwargs}
    writer = KinesisWriter(**{k: v for k, v in kwargs.items() if v is not None})
    before = _total_tasks(spark)
    err, took = _timed(lambda: df.writeStream.foreach(writer).start(), case.error)
    _assert_named_in_time_and_no_task_ran(case, err, took, spark, before)
    assert spark.streams.active == []


@pytest.mark.bad_input
@pytest.mark.e2e
@pytest.mark.parametrize("case", _cases("attach"), ids=lambda x: x.id)
def test_format_sink_checks_before_any_task(case: Case, spark: Any, tmp_path: Any) -> None:
    """The same table through format("kinesis"): the same messages, before any task. Options fail in start();
    the sink sees the schema when the first batch is planned, so schema mistakes fail the query there (one
    row of nulls makes that batch)."""
    df = _empty_stream_df(spark, tmp_path, case.columns)
    (tmp_path / "empty" / "row.json").write_text("{}\n")
    kwargs = {"stream_name": "s", **REGION, **case.kwargs}
    options = KinesisWriter(**{k: v for k, v in kwargs.items() if v is not None}).options()
    before = _total_tasks(spark)

    def start_and_plan() -> None:
        q = df.writeStream.format("kinesis").options(**options).option("checkpointLocation", str(tmp_path / "ck"))
        q = q.trigger(availableNow=True).start()
        try:
            q.awaitTermination(60)
        finally:
            q.stop()

    err, took = _timed(start_and_plan, Exception)
    _assert_named_in_time_and_no_task_ran(case, err, took, spark, before)


def _one_row_query(spark: Any, kinesis: Any, tmp_path: Any, case: Case, kwargs: dict[str, Any]) -> None:
    row = {"data": "payload", "partitionKey": "k", **case.row}
    write_input(tmp_path / "in", [row], files=1)
    schema = ", ".join(f"`{k}` {v}" for k, v in case.columns.items())

    def run() -> None:
        df = spark.readStream.schema(schema).json(str(tmp_path / "in"))
        q = df.writeStream.foreach(KinesisWriter(**kwargs)).option("checkpointLocation", str(tmp_path / "ck"))
        q = q.trigger(availableNow=True).start()
        if not q.awaitTermination(60):
            q.stop()
            raise AssertionError("query neither finished nor failed")

    err, took = _timed(run, case.error)
    for m in case.message:
        assert m in str(err), f"{str(err)[:3000]!r} should name {m!r}"
    assert took < TIME_BOUND_S, f"took {took:.1f}s"


@pytest.mark.bad_input
@pytest.mark.e2e
@pytest.mark.parametrize("case", _cases("row"), ids=lambda x: x.id)
def test_row_values(case: Case, spark: Any, kinesis: Any, stream: str, tmp_path: Any) -> None:
    kwargs = dict(case.kwargs)
    opts = kinesis.writer_options(**kwargs.pop("kpl", {}))
    _one_row_query(spark, kinesis, tmp_path, case, {"stream_name": stream, **opts, **kwargs})


@pytest.mark.bad_input
@pytest.mark.e2e
@pytest.mark.parametrize("case", _cases("env"), ids=lambda x: x.id)
def test_environment_failures_are_bounded(case: Case, spark: Any, kinesis: Any, stream: str, tmp_path: Any) -> None:
    # The driver's check names endpoint or stream when the query starts, not after RecordTtl (60 s) of retries.
    opts = kinesis.writer_options(RecordTtl=60000)
    kwargs = {"stream_name": stream, **opts, **case.kwargs}
    if kwargs["endpoint"] == "refused":
        kwargs["endpoint"] = f"https://127.0.0.1:{free_port()}"
    elif kwargs["endpoint"] == "plain":
        kwargs["endpoint"] = f"https://127.0.0.1:{kinesis.plain_port}"
    _one_row_query(spark, kinesis, tmp_path, case, kwargs)
