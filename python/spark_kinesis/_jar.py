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

from spark_kinesis import _facts
from spark_kinesis._version import __version__

JVM_ENTRY_POINT = "io.github.sparkkinesis.KinesisWriter"
#: Java, in the KPL bundle: tells whether the line jar on the classpath matches the running Spark and Scala.
JVM_LINE_CHECK = "io.github.sparkkinesis.SparkLineCheck"

B = TypeVar("B")


def maven_version(version: str = __version__) -> str:
    """The Maven version of a PEP 440 version: ``0.1.0.dev3`` is ``0.1.0-SNAPSHOT``."""
    return re.sub(r"\.dev\d*$", "-SNAPSHOT", version)


def shown_line(line: str) -> str:
    """``"3.5"``, or ``"4.x"`` for a line that is a whole major version (as SparkLineCheck shows it)."""
    return line if "." in line else f"{line}.x"


def spark_line(spark_version: str) -> str:
    """The line a Spark version belongs to (``"3.5"`` or ``"4"``); a clear error for any other Spark.

    A version belongs to a line when it is the line's id, or the id and a "." or "-" further (SparkLines.lineOf).
    """
    lines = _facts.lines()
    for line in lines:
        if spark_version == line or spark_version.startswith((f"{line}.", f"{line}-")):
            return line
    supported = " and ".join(f"Spark {shown_line(ln)} (Scala {' or '.join(s)})" for ln, s in lines.items())
    each = "; ".join(f"on Spark {ln} use {coordinates(ln)}" for ln in lines)
    raise RuntimeError(
        f"spark-kinesis does not run on Spark {spark_version}: it supports {supported}. {each[0].upper()}{each[1:]}."
    )


def coordinates(spark_version: str, scala_binary: str | None = None) -> str:
    """Maven coordinates of the jar for a Spark version (``--packages``; it brings the KPL bundle along)."""
    line = spark_line(spark_version)
    scalas = _facts.lines()[line]
    scala = scala_binary or scalas[0]
    if scala not in scalas:
        raise RuntimeError(
            f"spark-kinesis has no jar for Spark {spark_version} with Scala {scala}: Spark {line} builds run "
            f"Scala {' or '.join(scalas)}."
        )
    artifact = next(ln["artifact"] for ln in _facts.facts()["lines"] if ln["line"] == line)
    return f"{_facts.group()}:{artifact}_{scala}:{maven_version()}"


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
    no_daemon = _no_daemon_here(jars, spark_version, scala_binary)
    if no_daemon:
        raise RuntimeError(no_daemon)
    wanted = [jars / f"spark-kinesis-kpl-{maven_version()}.jar", jars / f"{artifact}-{maven_version()}.jar"]
    missing = [p.name for p in wanted if not p.is_file()]
    if missing:
        raise FileNotFoundError(
            f"spark_kinesis has no bundled {', '.join(missing)} (a source checkout before `make jar`?). "
            f"Build it with `make jar`, or start Spark with --packages {coordinates(spark_version, scala_binary)}."
        )
    return [str(p) for p in wanted]


#: Written into a wheel's jars/ by tools/release.py: the folder of the one daemon its KPL bundle carries, or "none" in
#: the wheel for every platform the KPL ships no daemon for (no jars at all). A checkout's `make jar` writes none: its
#: bundle carries every daemon.
PLATFORM_FILE = "PLATFORM"


def _no_daemon_here(jars: Path, spark_version: str, scala_binary: str | None) -> str | None:
    """What to say when this install is the wheel without jars (a platform the KPL ships no daemon for), else None.

    The wheel for one platform installed on another is the JVM's to refuse (DaemonCheck, as the writer starts, names
    the platform it runs on and the one the bundle carries).
    """
    marker = jars / PLATFORM_FILE
    if not marker.is_file() or marker.read_text(encoding="utf-8").strip() != "none":
        return None
    import platform

    from spark_kinesis._platforms import where_it_runs

    system, machine = platform.system(), platform.machine()
    said = (
        f"spark_kinesis has no jars here: pip installed its wheel for platforms the KPL ships no daemon for, and this "
        f"machine runs {system} {machine}. The KPL's daemon exists for {where_it_runs()}; there, pip installs the "
        f"wheel with the jars. "
    )
    if system == "Windows":
        return said + str(_facts.facts()["windowsAdvice"])
    return said + (
        "From here, the Python API works as a Spark Connect client (the server needs the jars), or start Spark on one "
        f"of those platforms with --packages {coordinates(spark_version, scala_binary)}."
    )


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
