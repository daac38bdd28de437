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


DESIGN = ROOT / "docs" / "design.md"
WRITER = AGGREGATION.parent


def test_every_file_of_the_writer_package_is_on_one_floor() -> None:
    """docs/design.md's "Floors" table names each file of the flat package exactly once, and no other."""
    floors = DESIGN.read_text().split("## Floors", 1)[1].split("\n## ", 1)[0]
    named = re.findall(r"`([A-Za-z]+\.scala)`", "\n".join(ln for ln in floors.splitlines() if ln.startswith("| ")))
    on_disk = sorted(f.name for f in WRITER.glob("*.scala"))
    assert sorted(named) == on_disk, {
        "twice": sorted({n for n in named if named.count(n) > 1}),
        "not listed": sorted(set(on_disk) - set(named)),
        "gone": sorted(set(named) - set(on_disk)),
    }


def test_every_home_design_md_names_exists() -> None:
    """Each file docs/design.md names as a home is there (`jvm/.../X.scala` is the writer's package or one below)."""
    text = DESIGN.read_text()
    missing = []
    for path in sorted(set(re.findall(r"`((?:jvm|python|testkit|tests|tools|bench|project)/[\w./-]+\.\w+)`", text))):
        if path.startswith("jvm/.../"):
            found = list(WRITER.rglob(path.removeprefix("jvm/.../")))
        elif "/.../" in path:
            head, tail = path.split("/.../")
            found = list((ROOT / head).rglob(tail))
        else:
            found = [ROOT / path] if (ROOT / path).exists() else []
        if not found:
            missing.append(path)
    assert missing == [], f"docs/design.md names homes that are not there: {missing}"
