"""``KinesisWriter``: keyword arguments checked in Python, the writer built in the JVM (or, on Spark
Connect, the server's ``kinesis`` sink with the same options).

The options are not listed here: they are the JVM's option table (``KinesisWriterOptions.table`` in
jvm/src/main/scala/io/github/sparkkinesis/KinesisWriterOptions.scala), which the build writes into the facts
resource (``_facts``). From it come the keywords' checks, ``__init__``'s ``__signature__`` and the docstring (at
import), and the types static tools see: ``_writer_options.pyi``, written by tools/writer_stub.py.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Union

from spark_kinesis import _facts
from spark_kinesis._jar import JVM_ENTRY_POINT, JVM_LINE_CHECK

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from typing_extensions import Unpack

    from spark_kinesis._writer_options import WriterOptions

KplValue = Union[str, int, bool]


_REDACTED = "<redacted>"


def _check(name: str, value: Any) -> None:
    option = _facts.options()[name]
    expected = option.type
    # bool is an int subclass: queue_limit=True is a mistake, not 1.
    if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
        shown = _REDACTED if option.secret else repr(value)
        raise TypeError(f"{name} must be {expected.__name__}, got {type(value).__name__} {shown}")
    problem = option.problem(value)
    if problem is not None:
        raise ValueError(problem)


class KinesisWriter:
    """Writes each row of a streaming DataFrame to Kinesis through the KPL, with a bounded queue.

    Example: ``configure()`` adds the jars this package carries to the session it builds, and ``import
    spark_kinesis`` lets ``foreach`` take a writer::

        from pyspark.sql import SparkSession
        import spark_kinesis
        from spark_kinesis import KinesisWriter

        spark = spark_kinesis.configure(SparkSession.builder).getOrCreate()
        events = spark.readStream.schema("user_id STRING, action STRING").json("s3://my-bucket/events/")
        query = (
            events.selectExpr("user_id AS partitionKey", "to_json(struct(*)) AS data")
            .writeStream.foreach(KinesisWriter(stream_name="events", region="us-east-1"))
            .option("checkpointLocation", "s3://my-bucket/checkpoints/events")
            .start()
        )

    On a Spark Connect session ``foreach(KinesisWriter(...))`` becomes the ``kinesis`` sink with the same options.
    ``options()`` gives the same settings for ``format("kinesis")`` (streaming, or batch
    ``df.write...mode("append").save()``). Columns: ``data`` (binary or string, required), ``partitionKey``
    (string; or set ``partitioner``), optional ``explicitHashKey`` and ``streamName``.

    The bound is on by default: each executor keeps at most ``queue_limit`` records and ``max_outstanding_bytes``
    bytes of a stream unconfirmed, and a task waits for room before it writes more (how to size them: "Sizing
    queue_limit" in docs/configuration.md).

    Every option is checked here and again, with the schema, in the JVM before the query starts (docs/configuration.md
    has each option's range, and what a mistake says). The options, from the JVM's option table:

    {options}
    - ``kpl`` (dict): KPL settings under their exact ``KinesisProducerConfiguration`` names.
    """

    def __init__(
        self,
        stream_name: str | None = None,
        *,
        kpl: Mapping[str, KplValue] | None = None,
        **options: Unpack[WriterOptions],
    ) -> None:
        # The keywords are the JVM's option table (the facts resource): __signature__ lists them for help() and
        # Jupyter, WriterOptions (the generated stub) types them for static tools.
        table = _facts.options()
        unknown = sorted(k for k in options if k not in table)
        if unknown:
            raise TypeError(
                f"KinesisWriter got unknown argument(s) {', '.join(unknown)}. Valid: {', '.join(table)}, kpl. "
                "KPL settings go in kpl={'RecordMaxBufferedTime': 100, ...}."
            )
        given = {"stream_name": stream_name, **options}
        self._options: dict[str, Any] = {k: v for k in table if (v := given.get(k)) is not None}
        for name, value in self._options.items():
            _check(name, value)
        self._jwriter: Any = None
        self._kpl: dict[str, KplValue] = {}
        if kpl is not None:
            if not isinstance(kpl, Mapping):
                raise TypeError(f"kpl must be a dict of KPL setting name -> value, got {type(kpl).__name__}")
            for key, value in kpl.items():
                if not isinstance(key, str):
                    raise TypeError(f"kpl keys must be KPL setting names (str), got {key!r}")
                if not isinstance(value, (str, int, bool)) or isinstance(value, float):
                    raise TypeError(f"kpl['{key}'] must be str, int or bool, got {type(value).__name__}")
                self._kpl[key] = value

    # -- JVM side ------------------------------------------------------------------------------
    def options(self) -> dict[str, str]:
        """These settings as ``format("kinesis")`` options: ``df.writeStream.format("kinesis").options(**w.options())``.

        Values are strings, KPL settings ``kpl.<Name>``. Secrets are included as given: pass the dict to Spark,
        do not log it.
        """
        return self._java_options()

    def _java_options(self) -> dict[str, str]:
        def text(v: KplValue) -> str:
            return ("true" if v else "false") if isinstance(v, bool) else str(v)

        out = {k: text(v) for k, v in self._options.items()}
        out.update({f"kpl.{k}": text(v) for k, v in self._kpl.items()})
        return out

    def _to_java(self, spark: SparkSession, jschema: Any) -> Any:
        """Build the JVM ``KinesisForeachWriter``; option and schema errors become ``ValueError``."""
        from py4j.protocol import Py4JJavaError
        from pyspark.errors import IllegalArgumentException as SparkIllegalArgument

        jvm: Any = spark._jvm
        check, entry = _jvm_class(jvm, JVM_LINE_CHECK), _jvm_class(jvm, JVM_ENTRY_POINT)
        if check is None or entry is None:
            from spark_kinesis._jar import coordinates

            missing = JVM_LINE_CHECK if check is None else JVM_ENTRY_POINT
            raise RuntimeError(
                f"spark-kinesis is not on the Spark JVM's classpath ({missing} is missing). "
                "Create the session with spark_kinesis.configure(SparkSession.builder).getOrCreate() "
                f"(before any session exists), or start Spark with --packages {coordinates(spark.version)} "
                "(or --jars spark_kinesis.jar_path())."
            )
        # A jar for another Spark line or Scala version fails here, naming the one to use, not in a task.
        problem = check.problem()
        if problem is not None:
            raise RuntimeError(str(problem))
        jmap = jvm.java.util.HashMap()
        for k, v in self._java_options().items():
            jmap.put(k, v)
        try:
            self._jwriter = entry.create(jmap, jschema)
            return self._jwriter
        except SparkIllegalArgument as e:  # pyspark's py4j hook converts the JVM's IllegalArgumentException
            raise ValueError(getattr(e, "_desc", None) or str(e)) from None
        except Py4JJavaError as e:
            if e.java_exception.getClass().getName() == "java.lang.IllegalArgumentException":
                raise ValueError(str(e.java_exception.getMessage())) from None
            raise

    def metrics(self) -> dict[str, int]:
        """Totals over every finished task of the query this writer was attached to, from Spark
        accumulators (also on the Spark UI's stage pages as ``kinesis.<stream>.<name>``).
        Confirmed records of successful tasks only; a retried task's records count once per success.
        The totals, from the JVM's list:

        {totals}
        """
        if self._jwriter is None:
            raise RuntimeError(
                "metrics() needs the writer attached with df.writeStream.foreach(writer) on a classic session; "
                "on Spark Connect or with format('kinesis'), read query.lastProgress['sink']['metrics']."
            )
        import json

        return {str(k): int(v) for k, v in json.loads(str(self._jwriter.metricsJson())).items()}

    # -- Python niceties -----------------------------------------------------------------------
    def __repr__(self) -> str:
        table, kpl_secrets = _facts.options(), _facts.kpl_secrets()
        parts = [f"{k}={_REDACTED if table[k].secret else repr(v)}" for k, v in self._options.items()]
        if self._kpl:
            kpl = {k: (_REDACTED if k in kpl_secrets else v) for k, v in self._kpl.items()}
            parts.append(f"kpl={kpl!r}")
        return f"KinesisWriter({', '.join(parts)})"

    __str__ = __repr__

    def __reduce__(self) -> Any:
        # Never pickle secrets into a Python worker by accident (foreach without the patch).
        raise TypeError(
            "KinesisWriter runs in the JVM and cannot be pickled: use df.writeStream.foreach(KinesisWriter(...)) "
            "after `import spark_kinesis`, or format('kinesis') with its options()."
        )


def _docs_url() -> str | None:
    """Where the docs are online: the package's ``Documentation`` URL (pyproject.toml's ``[project.urls]``, the one
    place that names it), or None where the package is not installed (a bare checkout on ``sys.path``)."""
    from importlib import metadata

    try:
        urls = metadata.metadata("spark-kinesis").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    found = (url.strip() for label, _, url in (u.partition(",") for u in urls) if label.strip() == "Documentation")
    return next(found, None)


def _linked(text: str, docs: str | None) -> str:
    """``text`` with each ``docs/<page>.md`` made a link under ``docs``: the wheel carries no docs/ folder."""
    return text if docs is None else re.sub(r"\bdocs/(?=[\w-]+\.md\b)", docs.rstrip("/") + "/", text)


def _document() -> None:
    """``KinesisWriter``'s signature and docstrings from the facts resource (left as they are without it: a source
    checkout before ``make jar``, where constructing a writer says what to build). An option with a default shows it
    in the signature and is typed by its type alone, as the stub for static tools (``_writer_options.pyi``) types it;
    one without takes None, which leaves it unset."""
    docs = _docs_url()
    try:
        table, totals = _facts.options(), _facts.totals()
    except FileNotFoundError:
        text = (KinesisWriter.__doc__ or "").replace("{options}", "- (the option table: ``make jar``)")
        KinesisWriter.__doc__ = _linked(text, docs)
        return

    def shown(o: _facts.Option) -> str:
        default = "" if o.default is None else f", default {o.default}"
        return f"- ``{o.name}`` ({o.type.__name__}{default}): {o.doc}"

    options = "\n    ".join(map(shown, table.values()))
    KinesisWriter.__doc__ = _linked((KinesisWriter.__doc__ or "").replace("{options}", options), docs)
    doc = "\n        ".join(f"- ``{t['name']}`` ({t['unit']}): {t['description']}" for t in totals)
    KinesisWriter.metrics.__doc__ = (KinesisWriter.metrics.__doc__ or "").replace("{totals}", doc)
    P = inspect.Parameter
    params = [
        P("self", P.POSITIONAL_OR_KEYWORD),
        P("stream_name", P.POSITIONAL_OR_KEYWORD, default=None, annotation="str | None"),
    ]
    params += [
        P(o.name, P.KEYWORD_ONLY, default=None, annotation=f"{o.type.__name__} | None")
        if o.default is None
        else P(o.name, P.KEYWORD_ONLY, default=o.default, annotation=o.type.__name__)
        for o in table.values()
        if o.name != "stream_name"
    ]
    params.append(P("kpl", P.KEYWORD_ONLY, default=None, annotation="Mapping[str, KplValue] | None"))
    KinesisWriter.__init__.__signature__ = inspect.Signature(params, return_annotation=None)  # type: ignore[attr-defined]


_document()


def _jvm_class(jvm: Any, name: str) -> Any:
    """The py4j class `name`, or None when the JVM does not have it (py4j answers a JavaPackage then)."""
    from py4j.java_gateway import JavaClass

    node = jvm
    for part in name.split("."):
        node = getattr(node, part)
    return node if isinstance(node, JavaClass) else None


# -- DataStreamWriter.foreach ----------------------------------------------------------------------
_originals: dict[Any, Any] = {}


def _classic_foreach(self: Any, f: Any) -> Any:
    if isinstance(f, KinesisWriter):
        self._jwrite.foreach(f._to_java(self._spark, self._df._jdf.schema()))
        return self
    return _originals[_classic_class()](self, f)


_SINK_CLASS = "io.github.sparkkinesis.KinesisSourceProvider"


def _connect_foreach(self: Any, f: Any) -> Any:
    # A Connect client cannot reach the server's JVM: the same writer runs there as the `kinesis` sink, with the
    # same options (the server needs the jars: spark.jars or --packages on the server).
    if isinstance(f, KinesisWriter):
        # By class name: on platforms whose own connector also answers to "kinesis" the short name is ambiguous.
        return self.format(_SINK_CLASS).options(**f.options())
    return _originals[_connect_class_or_none()](self, f)


# Spark's real-time mode (trigger(realTime=...), Spark 4.1+) refuses at start() every sink off its allowlist, and
# foreach is on it. Its own message names only the switch that turns the check off, which does not help here (the
# sink then fails on real-time mode's async progress tracking); ours names the way that works.
_RTM_REFUSED = ("OPERATOR_OR_SINK_NOT_IN_ALLOWLIST", "io.github.sparkkinesis.KinesisTable")
_RTM_CLASSIC = (
    "format('kinesis') cannot run in real-time mode (trigger(realTime=...)): Spark admits only the sinks on its "
    "real-time allowlist, and foreach is one. Write with df.writeStream.foreach(KinesisWriter(...)) after "
    "`import spark_kinesis` (Scala, Java: .foreach(KinesisWriter.create(options, df.schema))): it sends each record "
    "as it arrives, within RecordMaxBufferedTime, and never waits for the batch to end."
)
_RTM_CONNECT = (
    "Real-time mode (trigger(realTime=...)) cannot write to Kinesis from a Spark Connect client: there "
    "foreach(KinesisWriter(...)) runs as format('kinesis'), which is not on Spark's real-time sink allowlist. "
    "Run the query from a classic session (or Scala, Java) with df.writeStream.foreach(KinesisWriter(...)), which is."
)


def _start_checked(original: Any, message: str) -> Any:
    def start(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, *args, **kwargs)
        except Exception as e:
            if all(part in str(e) for part in _RTM_REFUSED):
                raise ValueError(message) from None
            raise

    start.__doc__ = original.__doc__
    start._spark_kinesis = True  # type: ignore[attr-defined]
    return start


def _classic_class() -> Any:
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    return DataStreamWriter


def _connect_class_or_none() -> Any:
    import importlib.util

    # Connect needs its extras; without them its import calls sys.exit (pyspark 4.3), so look first.
    if any(importlib.util.find_spec(m) is None for m in ("pandas", "pyarrow", "grpc")):
        return None
    try:
        from pyspark.sql.connect.streaming.readwriter import DataStreamWriter
    except (Exception, SystemExit):
        return None
    return DataStreamWriter


def install() -> None:
    """Let ``DataStreamWriter.foreach`` accept a ``KinesisWriter``; other arguments are untouched. ``start`` turns
    Spark's real-time-mode refusal of ``format("kinesis")`` into a ``ValueError`` that names the way that works."""
    try:
        classic = _classic_class()
    except ImportError:  # pyspark not installed: nothing to patch yet
        return
    for cls, patched in ((classic, _classic_foreach), (_connect_class_or_none(), _connect_foreach)):
        if cls is None or cls.foreach is patched:
            continue
        _originals[cls] = cls.foreach
        patched.__doc__ = cls.foreach.__doc__
        cls.foreach = patched
    for cls, message in ((classic, _RTM_CLASSIC), (_connect_class_or_none(), _RTM_CONNECT)):
        if cls is not None and not getattr(cls.start, "_spark_kinesis", False):
            cls.start = _start_checked(cls.start, message)
