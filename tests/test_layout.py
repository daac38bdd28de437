"""The code's shape where a rule keeps it: the writer's aggregation is a room of its own, with no arrow back up."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
AGGREGATION = ROOT / "jvm" / "src" / "main" / "scala" / "io" / "github" / "sparkkinesis" / "aggregation"
# What the package may name of the project: the relocated libraries it builds with and the Scala-version shim.
ALLOWED = ("io.github.sparkkinesis.shaded.", "io.github.sparkkinesis.compat.", "io.github.sparkkinesis.aggregation")
pytestmark = pytest.mark.spark35_leg  # no Spark: where `make test` has room

NAMED = re.compile(r"io\.github\.sparkkinesis(?:\.[A-Za-z_][\w]*)*(?:\.\{[^}]*\}|\._)?")


def project_names(source: str) -> list[str]:
    """Every project package or type `source` names in code (imports and qualified names; comments left out)."""
    code = re.sub(r"/\*.*?\*/|//[^\n]*", "", source, flags=re.S)
    return [m.group(0) for m in NAMED.finditer(code) if not m.group(0).startswith("io.github.sparkkinesis.aggregation")]


def test_the_aggregation_package_names_nothing_of_the_writer() -> None:
    files = sorted(AGGREGATION.glob("*.scala"))
    assert len(files) > 5, f"no aggregation package at {AGGREGATION}"
    upward = {
        f.name: bad for f in files if (bad := [n for n in project_names(f.read_text()) if not n.startswith(ALLOWED)])
    }
    assert upward == {}, f"the aggregation package reaches up into the writer: {upward}"


def test_the_check_sees_an_arrow_up() -> None:
    assert project_names("import io.github.sparkkinesis.ProducerMetrics\n") == [
        "io.github.sparkkinesis.ProducerMetrics"
    ]
    assert project_names("val x = io.github.sparkkinesis.Threads.daemon(n)(b)") != []
    assert project_names("// io.github.sparkkinesis.Threads in a comment\n") == []
