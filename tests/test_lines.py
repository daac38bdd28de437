"""Spark lines: which jar a Spark needs, and the driver-side error for a jar built for another line.

The pure functions run anywhere; the probes start a real session (on the leg's pyspark) with the KPL
bundle and a line jar that does not match it, and expect the error to name the running Spark and Scala
and the artifact to use instead, before any query starts.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import spark_kinesis
from probe import run_probe
from spark_kinesis._facts import lines
from spark_kinesis._jar import coordinates, installed_spark, maven_version


def test_maven_version_follows_pep440_dev_releases() -> None:
    assert maven_version("0.1.0.dev0") == "0.1.0-SNAPSHOT"
    assert maven_version("0.1.0.dev12") == "0.1.0-SNAPSHOT"
    assert maven_version("1.2.3") == "1.2.3"


@pytest.mark.parametrize(
    ("spark", "scala", "artifact"),
    [
        ("3.5.0", None, "spark-kinesis-3.5_2.12"),
        ("3.5.9", "2.13", "spark-kinesis-3.5_2.13"),
        ("4.0.1", None, "spark-kinesis-4_2.13"),
        ("4.3.0", "2.13", "spark-kinesis-4_2.13"),
        ("3.5.6-amzn-2", None, "spark-kinesis-3.5_2.12"),
    ],
)
def test_coordinates_name_the_line_and_scala(spark: str, scala: str | None, artifact: str) -> None:
    assert coordinates(spark, scala) == f"io.github.spark-kinesis:{artifact}:{maven_version()}"


@pytest.mark.parametrize(("spark", "scala"), [("3.4.1", None), ("3.3.0", "2.12"), ("5.0.0", None), ("4.0.0", "2.12")])
def test_unsupported_spark_gets_a_clear_error(spark: str, scala: str | None) -> None:
    with pytest.raises(RuntimeError, match=rf"Spark {spark}.*(supports Spark 3\.5|Scala 2\.13)") as info:
        coordinates(spark, scala)
    assert "spark-kinesis-" in str(info.value) or "Scala 2.13" in str(info.value)


def test_helper_prints_every_lines_coordinates() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "spark_kinesis"], check=True, capture_output=True, text=True, timeout=60
    ).stdout
    for line, scalas in lines().items():
        for scala in scalas:
            assert coordinates(line + ".0", scala) in out
    spark, scala = installed_spark()
    assert f"Installed pyspark runs Spark {spark} (Scala {scala})" in out


def _wrong_classpaths() -> list[Any]:
    """(case id, jar names) for every way the installed Spark can get the wrong line jar. A case with the jar of a
    line's later Scala (3.5_2.13) is marked `later_scala`, and the two line jars at once `variant` (a variant of the
    wrong class path): `make test-extended` runs them, `make test` one wrong jar of each line's first Scala."""
    spark, scala = installed_spark()
    mvn = maven_version()
    right = coordinates(spark, scala).split(":")[1]
    later = {f"spark-kinesis-{ln}_{sc}" for ln, scs in lines().items() for sc in scs[1:]}
    others = [
        f"spark-kinesis-{ln}_{sc}" for ln, scs in lines().items() for sc in scs if f"spark-kinesis-{ln}_{sc}" != right
    ]
    second = next((o for o in others if o not in later), others[0])

    def variant(artifacts: list[str]) -> list[Any]:
        return [pytest.mark.variant] if len(artifacts) > 1 else []

    cases = [(other, [other]) for other in others] + [("two-line-jars", [right, second])]
    return [
        pytest.param(
            case,
            [f"spark-kinesis-kpl-{mvn}.jar", *(f"{a}-{mvn}.jar" for a in artifacts)],
            id=case,
            marks=[pytest.mark.later_scala] if later.intersection(artifacts) else variant(artifacts),
        )
        for case, artifacts in cases
    ]


@pytest.mark.e2e
@pytest.mark.every_line
@pytest.mark.parametrize(("case", "jars"), _wrong_classpaths())
def test_a_jar_for_another_line_fails_on_the_driver_naming_the_fix(case: str, jars: list[str], tmp_path: Path) -> None:
    bundled = Path(spark_kinesis.__file__).parent / "jars"
    spark, scala = installed_spark()
    cfg = {"jars": ",".join(str(bundled / j) for j in jars)}
    result = run_probe("line_probe.py", cfg, tmp_path, timeout_s=300).said["DONE"]
    assert result["error"] == "RuntimeError", result
    message = result["message"]
    assert f"runs Spark {spark} with Scala {scala}" in message, message
    want = coordinates(spark, scala)
    if case == "two-line-jars":
        assert "More than one spark-kinesis Spark-line jar" in message and f"Keep only {want}" in message, message
    else:
        # Names the jar it found and the one to use instead.
        assert f":{case}:" in message and f"Use {want} instead" in message, message
        assert "NoClassDefFoundError" not in message and "NoSuchMethodError" not in message
