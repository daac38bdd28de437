"""The Python facade: kwargs checked by name, secrets redacted, the option table read from the JVM's (the facts
resource the build writes), the docs checked against it without a JVM."""

from __future__ import annotations

import pickle
import re
from pathlib import Path

import pytest
from spark_kinesis import KinesisWriter, _facts, configure
from spark_kinesis_testkit.emulator import free_port

ROOT = Path(__file__).resolve().parents[1]

SECRETS = {
    "aws_access_key_id": "AKIAPYTESTSECRET0001",
    "aws_secret_access_key": "py/secret+key/value",
    "aws_session_token": "py-session-token-value",
    "role_external_id": "py-external-id-value",
}


def test_unknown_kwarg_lists_valid_ones():
    with pytest.raises(TypeError, match=r"unknown argument\(s\) stream.*Valid: stream_name, region"):
        KinesisWriter(stream="x")  # type: ignore[call-arg]


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        ({"queue_limit": "10"}, TypeError, r"queue_limit must be int, got str"),
        ({"queue_limit": True}, TypeError, r"queue_limit must be int, got bool"),
        (
            {"queue_limit": 0},
            ValueError,
            r"^Option queue_limit='0' is invalid: expected at least 1 \(records outstanding",
        ),
        ({"fail_on_error": "false"}, TypeError, r"fail_on_error must be bool"),
        ({"partitioner": "hash"}, ValueError, r"partitioner='hash' is invalid: expected 'random', 'fixed' or 'none'"),
        (
            {"flush_timeout_ms": -1},
            ValueError,
            r"flush_timeout_ms='-1' is invalid: expected a positive number of millis",
        ),
        ({"stream_name": " "}, ValueError, r"stream_name=' ' is invalid: expected a non-empty string"),
        ({"role_duration_seconds": 0}, ValueError, r"role_duration_seconds='0' is invalid: expected a positive number"),
        ({"kpl": {"RecordTtl": 1.5}}, TypeError, r"kpl\['RecordTtl'\] must be str, int or bool"),
        ({"kpl": [("RecordTtl", 1)]}, TypeError, r"kpl must be a dict"),
        ({"aws_secret_access_key": 123}, TypeError, r"aws_secret_access_key must be str, got int <redacted>"),
    ],
)
def test_bad_kwargs_name_the_argument(kwargs, error, pattern):
    with pytest.raises(error, match=pattern):
        KinesisWriter(**kwargs)


def test_repr_redacts_secrets():
    w = KinesisWriter(
        stream_name="events", role_arn="arn:aws:iam::1:role/r", kpl={"ProxyPassword": "pw-value"}, **SECRETS
    )
    for text in (repr(w), str(w)):
        for secret in [*SECRETS.values(), "pw-value"]:
            assert secret not in text
        assert "stream_name='events'" in text and "<redacted>" in text


def test_writer_refuses_to_be_pickled():
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(KinesisWriter(stream_name="s", **SECRETS))


def test_java_options_serialise_values():
    w = KinesisWriter(
        stream_name="s", queue_limit=7, fail_on_error=False, kpl={"AggregationEnabled": False, "RecordTtl": 100}
    )
    assert w._java_options() == {
        "stream_name": "s",
        "queue_limit": "7",
        "fail_on_error": "false",
        "kpl.AggregationEnabled": "false",
        "kpl.RecordTtl": "100",
    }


@pytest.mark.every_line
def test_configure_appends_the_installed_lines_jars():
    import pyspark
    from pyspark.sql import SparkSession
    from spark_kinesis import coordinates

    b = SparkSession.builder.config("spark.jars", "/opt/other.jar")
    try:
        configure(b)
        jars = b._options["spark.jars"].split(",")
        # The KPL bundle, then the jar of the installed pyspark's line (pip's pyspark 3.5 runs Scala 2.12).
        _, artifact, version = coordinates(pyspark.__version__).split(":")
        assert jars[0] == "/opt/other.jar"
        assert [Path(j).name for j in jars[1:]] == [f"spark-kinesis-kpl-{version}.jar", f"{artifact}-{version}.jar"]
        assert all(Path(j).is_file() for j in jars[1:])
        configure(b)
        assert len(b._options["spark.jars"].split(",")) == 3, "idempotent"
    finally:
        b._options.pop("spark.jars", None)


def test_configure_rejects_non_builders():
    with pytest.raises(TypeError, match=r"SparkSession\.builder"):
        configure(object())


def test_signature_and_docstring_follow_the_option_table():
    import inspect

    table = _facts.options()
    params = inspect.signature(KinesisWriter).parameters
    assert list(params) == [*table, "kpl"]
    # help() and Jupyter show each keyword as static tools see it in the stub: typed by its type alone, with the JVM's
    # default, where the table has one; `<type> | None = None` (left unset) where it has none.
    stub = dict(
        re.findall(
            r"^    (\w+): (\w+(?: \| None)?)$",
            (ROOT / "python" / "spark_kinesis" / "_writer_options.pyi").read_text(),
            re.M,
        )
    )
    for o in table.values():
        p = params[o.name]
        assert p.default == o.default, (
            f"{o.name}: the signature shows {p.default!r}, the table's default is {o.default!r}"
        )
        if o.name != "stream_name":  # KinesisWriter's positional parameter: not in the stub
            assert p.annotation == stub[o.name], (
                f"{o.name}: the signature types it {p.annotation}, the stub {stub[o.name]}"
            )
    doc = inspect.getdoc(KinesisWriter) or ""
    for o in table.values():
        line = next((x for x in doc.splitlines() if x.startswith(f"- ``{o.name}`` ")), None)
        assert line is not None, f"the KinesisWriter docstring does not list {o.name}"
        assert f"({o.type.__name__}" in line, f"{o.name}: the docstring does not give its type: {line}"
        if o.default is not None:
            assert f"default {o.default}" in line, f"{o.name}: the docstring does not give its default: {line}"
    metrics_doc = inspect.getdoc(KinesisWriter.metrics) or ""
    assert all(f"``{t['name']}``" in metrics_doc for t in _facts.totals()), metrics_doc


def test_every_option_row_passes_its_own_rule():
    """The table's defaults are of their option's type and within its rule (a writer built with each one is valid)."""
    for o in _facts.options().values():
        if o.default is not None:
            KinesisWriter(**{o.name: o.default})


@pytest.mark.e2e
def test_jvm_writer_plan_string_has_no_secrets(spark, kinesis):
    from pyspark.sql import functions as F

    df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 1).load()
    df = df.select(F.col("value").cast("string").alias("data"), F.lit("k").alias("partitionKey"))
    # Loopback only: the driver's stream check resolves the role at an STS that refuses (and then checks nothing).
    closed = f"https://127.0.0.1:{free_port()}"
    w = KinesisWriter(
        stream_name="s",
        region="us-east-1",
        endpoint=closed,
        sts_endpoint=closed,
        role_arn="arn:aws:iam::1:role/r",
        **SECRETS,
    )
    jwriter = w._to_java(spark, df._jdf.schema())
    text = str(jwriter.toString()) + str(jwriter.options().toString())
    assert "KinesisWriter(s" in text
    for secret in SECRETS.values():
        assert secret not in text


def test_every_option_is_documented():
    """docs/configuration.md's option table against the JVM's (through the facts resource): a row per option with its
    type, default and, for a ranged option, the JVM's wording of a mistake; every KPL setting named."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    rows = {line.split("|")[1].strip(): line.split("|") for line in doc.splitlines() if line.startswith("| `")}
    problems = []
    for o in _facts.options().values():
        row = rows.get(f"`{o.name}`")
        if row is None:
            problems.append(f"no row for `{o.name}`")
            continue
        typ, default, last = row[2].strip(), row[3], row[5]
        if not typ.startswith(o.type.__name__) or (o.default is not None and f"`{o.default}`" not in default):
            problems.append(f"`{o.name}` row says {typ!r}, {default.strip()!r}: want {o.type.__name__}, {o.default}")
        if o.allowed is not None and f"expected {o.allowed['expected']}" not in last:
            problems.append(f"`{o.name}` row does not quote the JVM's wording 'expected {o.allowed['expected']}'")
    problems += [n for n in _facts.facts()["kplSettings"] if n not in doc]
    assert problems == [], f"docs/configuration.md: {problems}"


def test_tooling_writer_options_address_loopback_only() -> None:
    """What tests, demo and benchmarks give the writer: every endpoint the KPL may use (Kinesis, and CloudWatch for its
    Java side's client) on loopback, and no CloudWatch upload."""
    from spark_kinesis_testkit.emulator import loopback_writer_options

    for endpoint in ("https://127.0.0.1:4567", "127.0.0.1:4567"):
        opts = loopback_writer_options(endpoint)
        kpl = opts["kpl"]
        assert opts["endpoint"] == endpoint and kpl["MetricsLevel"] == "none"
        assert (kpl["CloudwatchEndpoint"], kpl["CloudwatchPort"]) == ("127.0.0.1", 4567)
