"""The Python facade: kwargs checked by name, secrets redacted, one option table shared with the JVM."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from spark_kinesis import KinesisWriter, configure
from spark_kinesis.writer import _OPTIONS

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
        ({"queue_limit": 0}, ValueError, r"queue_limit must be an int >= 1"),
        ({"fail_on_error": "false"}, TypeError, r"fail_on_error must be bool"),
        ({"partitioner": "hash"}, ValueError, r"partitioner must be 'random', 'fixed' or 'none'"),
        ({"flush_timeout_ms": -1}, ValueError, r"flush_timeout_ms must be a positive int"),
        ({"stream_name": " "}, ValueError, r"stream_name must be a non-empty string"),
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


def _jvm_option_table(spark) -> list[tuple[str, type, object, bool]]:
    """The JVM's option table (the source of truth) in Python terms: name, type, typed default, secret."""
    types = {"string": str, "int": int, "long": int, "boolean": bool}
    rows = []
    for name, kind, default, secret in (list(r) for r in spark._jvm.io.github.sparkkinesis.Probes.optionTable()):
        typed = None if default is None else (default == "true" if kind == "boolean" else types[kind](default))
        rows.append((str(name), types[str(kind)], typed, bool(secret)))
    return rows


@pytest.mark.e2e
def test_python_and_jvm_option_tables_agree(spark):
    python = [(n, o.type, o.default, o.secret) for n, o in _OPTIONS.items()]
    assert python == _jvm_option_table(spark)


@pytest.mark.e2e
def test_signature_and_docstring_follow_the_option_table(spark):
    import inspect

    table = _jvm_option_table(spark)
    params = inspect.signature(KinesisWriter.__init__).parameters
    assert [p for p in params if p not in ("self", "unknown")] == [n for n, *_ in table] + ["kpl"]
    doc = inspect.getdoc(KinesisWriter) or ""
    for name, typ, default, _ in table:
        line = next((x for x in doc.splitlines() if x.startswith("- ") and f"``{name}``" in x), None)
        assert line is not None, f"the KinesisWriter docstring does not list {name}"
        assert f"({typ.__name__}" in line, f"{name}: the docstring does not give its type {typ.__name__}: {line}"
        if default is not None:
            assert f"default {default}" in line, f"{name}: the docstring does not give its default {default}: {line}"
        assert params[name].default is None, f"{name}: the keyword's default is the JVM's, shown in the docstring"


@pytest.mark.e2e
def test_jvm_writer_plan_string_has_no_secrets(spark, kinesis):
    from pyspark.sql import functions as F

    df = spark.readStream.format("rate-micro-batch").option("rowsPerBatch", 1).load()
    df = df.select(F.col("value").cast("string").alias("data"), F.lit("k").alias("partitionKey"))
    w = KinesisWriter(stream_name="s", region="us-east-1", role_arn="arn:aws:iam::1:role/r", **SECRETS)
    jwriter = w._to_java(spark, df._jdf.schema())
    text = str(jwriter.toString()) + str(jwriter.options().toString())
    assert "KinesisWriter(s" in text
    for secret in SECRETS.values():
        assert secret not in text


@pytest.mark.e2e
def test_every_option_is_documented(spark):
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    rows = {line.split("|")[1].strip(): line.split("|") for line in doc.splitlines() if line.startswith("| `")}
    problems = []
    for name, typ, default, _ in _jvm_option_table(spark):
        row = rows.get(f"`{name}`")
        if row is None:
            problems.append(f"no row for `{name}`")
        elif not row[2].strip().startswith(typ.__name__) or (default is not None and f"`{default}`" not in row[3]):
            problems.append(f"`{name}` row says {row[2].strip()!r}, {row[3].strip()!r}: want {typ.__name__}, {default}")
    problems += [n for n in spark._jvm.io.github.sparkkinesis.Probes.kplSettingNames() if n not in doc]
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
