"""The JVM jar this wheel carries, and putting it on a session's classpath."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from spark_kinesis._version import __version__

JVM_ENTRY_POINT = "io.github.sparkkinesis.KinesisWriter"
MAVEN_COORDINATES = "io.github.spark-kinesis:spark-kinesis_2.13:" + __version__.replace(".dev0", "-SNAPSHOT")

B = TypeVar("B")


def jar_path() -> str:
    """Absolute path of the assembly jar bundled in this package."""
    jars = sorted((Path(__file__).parent / "jars").glob("spark-kinesis-assembly*.jar"))
    if not jars:
        raise FileNotFoundError(
            "spark_kinesis has no bundled jar (a source checkout before `make jar`?). "
            f"Build it with `make jar`, or start Spark with --packages {MAVEN_COORDINATES}."
        )
    return str(jars[-1])


def configure(builder: B) -> B:
    """Append the bundled jar to ``spark.jars`` of a ``SparkSession.builder`` (keeping other jars).

    Call it before ``getOrCreate()``: Spark ignores ``spark.jars`` once a session exists.
    """
    options: Any = getattr(builder, "_options", None)
    if options is None or not hasattr(builder, "config"):
        raise TypeError(f"configure() takes a SparkSession.builder, got {type(builder).__name__}")
    jar = jar_path()
    existing = [j for j in str(options.get("spark.jars", "")).split(",") if j.strip()]
    if jar not in existing:
        existing.append(jar)
    builder.config("spark.jars", ",".join(existing))
    return builder
