"""The JVM jars this wheel carries, which of them a Spark runs, and putting them on a session's classpath.

The wheel carries the KPL bundle once (``spark-kinesis-kpl-<v>.jar``: the KPL, the AWS SDK and the KPL's
native daemons, the same for every Spark line) and one small jar per Spark line
(``spark-kinesis-<line>_<scala>-<v>.jar``). A session needs the bundle and the jar of its own line.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, TypeVar

from spark_kinesis._version import __version__

GROUP = "io.github.spark-kinesis"
JVM_ENTRY_POINT = "io.github.sparkkinesis.KinesisWriter"
#: Java, in the KPL bundle: tells whether the line jar on the classpath matches the running Spark and Scala.
JVM_LINE_CHECK = "io.github.sparkkinesis.SparkLineCheck"
#: Spark line -> the Scala binary versions it is built for; the first is the one pip's pyspark runs.
LINES: dict[str, tuple[str, ...]] = {"3.5": ("2.12", "2.13"), "4": ("2.13",)}

B = TypeVar("B")


def maven_version(version: str = __version__) -> str:
    """The Maven version of a PEP 440 version: ``0.1.0.dev3`` is ``0.1.0-SNAPSHOT``."""
    return re.sub(r"\.dev\d*$", "-SNAPSHOT", version)


def spark_line(spark_version: str) -> str:
    """The line a Spark version belongs to (``"3.5"`` or ``"4"``); a clear error for any other Spark."""
    m = re.match(r"(\d+)\.(\d+)", spark_version)
    major, minor = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    if major == 4:
        return "4"
    if (major, minor) == (3, 5):
        return "3.5"
    raise RuntimeError(
        f"spark-kinesis does not run on Spark {spark_version}: it supports Spark 3.5 (Scala 2.12 or 2.13) and "
        f"Spark 4.x (Scala 2.13). On Spark 3.5 use {coordinates('3.5.0')}; on Spark 4 use {coordinates('4.0.0')}."
    )


def coordinates(spark_version: str, scala_binary: str | None = None) -> str:
    """Maven coordinates of the jar for a Spark version (``--packages``; it brings the KPL bundle along)."""
    line = spark_line(spark_version)
    scala = scala_binary or LINES[line][0]
    if scala not in LINES[line]:
        raise RuntimeError(
            f"spark-kinesis has no jar for Spark {spark_version} with Scala {scala}: Spark {line} builds run "
            f"Scala {' or '.join(LINES[line])}."
        )
    return f"{GROUP}:spark-kinesis-{line}_{scala}:{maven_version()}"


def installed_spark() -> tuple[str, str | None]:
    """The Spark version and Scala binary version the installed pyspark will start.

    Read from the Spark jars the JVM will load (``$SPARK_HOME/jars``, else pyspark's own), whose
    ``spark-core_<scala>-<version>.jar`` names both; the Scala version is None when no such jar is found.
    """
    import pyspark

    homes = [os.environ.get("SPARK_HOME"), str(Path(pyspark.__file__).parent)]
    for home in (h for h in homes if h):
        for jar in sorted((Path(home) / "jars").glob("spark-core_*.jar")):
            m = re.fullmatch(r"spark-core_(\d+\.\d+)-(\d+\.\d+\.\d+.*)\.jar", jar.name)
            if m:
                return m.group(2), m.group(1)
    return str(pyspark.__version__), None


def jar_paths(spark_version: str | None = None, scala_binary: str | None = None) -> list[str]:
    """Absolute paths of the jars a session needs: the KPL bundle and the jar of its Spark line.

    By default for the Spark the installed pyspark starts (see :func:`installed_spark`).
    """
    if spark_version is None:
        spark_version, found_scala = installed_spark()
        scala_binary = scala_binary or found_scala
    artifact = coordinates(spark_version, scala_binary).split(":")[1]
    jars = Path(__file__).parent / "jars"
    wanted = [jars / f"spark-kinesis-kpl-{maven_version()}.jar", jars / f"{artifact}-{maven_version()}.jar"]
    missing = [p.name for p in wanted if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"spark_kinesis has no bundled {', '.join(missing)} (a source checkout before `make jar`?). "
            f"Build it with `make jar`, or start Spark with --packages {coordinates(spark_version, scala_binary)}."
        )
    return [str(p) for p in wanted]


def jar_path(spark_version: str | None = None, scala_binary: str | None = None) -> str:
    """:func:`jar_paths` joined with commas, as ``--jars`` and ``spark.jars`` take them."""
    return ",".join(jar_paths(spark_version, scala_binary))


def configure(builder: B) -> B:
    """Append the bundled jars for the installed pyspark to ``spark.jars`` of a ``SparkSession.builder``.

    Other jars already listed stay. Call it before ``getOrCreate()``: Spark ignores ``spark.jars`` once a
    session exists.
    """
    options: Any = getattr(builder, "_options", None)
    if options is None or not hasattr(builder, "config"):
        raise TypeError(f"configure() takes a SparkSession.builder, got {type(builder).__name__}")
    existing = [j for j in str(options.get("spark.jars", "")).split(",") if j.strip()]
    existing += [j for j in jar_paths() if j not in existing]
    builder.config("spark.jars", ",".join(existing))
    return builder
