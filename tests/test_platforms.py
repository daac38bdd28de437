"""Which wheel pip installs where, from the one table of platforms (the JVM's ``Platforms``, through the facts
resource), by pip's own tag rules (``packaging.tags``: the order pip ranks a wheel's tags in for an interpreter); what
``configure()`` says where no daemon exists; the docs that list the platforms, held to the table; and the pyspark
releases the README says are tested."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from helpers import ROOT
from packaging import tags
from packaging.utils import parse_wheel_filename
from spark_kinesis._jar import PLATFORM_FILE, _no_daemon_here, maven_version
from spark_kinesis._platforms import platforms, where_it_runs

pytestmark = pytest.mark.spark35_leg  # no Spark: where `make test` has room


def wheels() -> dict[str, str]:
    """Each wheel a release publishes (tools/release.py), by the folder of the daemon it carries ("none": no jars)."""
    named = {p.folder: f"spark_kinesis-0.1.0-py3-none-{p.wheel_tag}.whl" for p in platforms()}
    return {**named, "none": "spark_kinesis-0.1.0-py3-none-any.whl"}


def pip_picks(platform_tags: list[str]) -> str:
    """The folder of the wheel pip installs for CPython 3.11 on a machine whose platform tags are ``platform_tags``
    (best first): of the wheels with a tag it supports, the one whose best tag ranks first in its order."""
    cpython = tags.cpython_tags((3, 11), platforms=platform_tags)
    order = [*cpython, *tags.compatible_tags((3, 11), "cp311", platform_tags)]
    rank = {t: i for i, t in enumerate(order)}
    fits = {
        folder: min(rank[t] for t in parse_wheel_filename(name)[3] if t in rank)
        for folder, name in wheels().items()
        if any(t in rank for t in parse_wheel_filename(name)[3])
    }
    return min(fits, key=fits.__getitem__)


def manylinux(glibc_minor: int, arch: str) -> list[str]:
    """A glibc 2.<glibc_minor> Linux's platform tags, as packaging lists them (legacy aliases aside)."""
    return [f"manylinux_2_{m}_{arch}" for m in range(glibc_minor, 4, -1)] + [f"linux_{arch}"]


@pytest.mark.parametrize(
    "machine,platform_tags,folder",
    [
        # A native arm64 Python on Apple silicon (python.org, Homebrew, uv, conda): the macOS wheel, with the jars.
        ("macOS 14 arm64", tags.mac_platforms((14, 0), "arm64"), "osx"),
        ("macOS 11 arm64", tags.mac_platforms((11, 0), "arm64"), "osx"),
        ("macOS 10.15 x86_64", tags.mac_platforms((10, 15), "x86_64"), "osx"),
        ("macOS 14 x86_64 (Rosetta 2)", tags.mac_platforms((14, 0), "x86_64"), "osx"),
        ("macOS 10.14 x86_64", tags.mac_platforms((10, 14), "x86_64"), "none"),  # older than the daemon
        ("Linux x86_64 glibc 2.17", manylinux(17, "x86_64"), "linux-x86_64"),
        ("Linux aarch64 glibc 2.31", manylinux(31, "aarch64"), "linux-aarch64"),
        ("Linux aarch64 glibc 2.17", manylinux(17, "aarch64"), "none"),  # older than the aarch64 daemon needs
        ("Alpine (musl) x86_64", ["musllinux_1_2_x86_64", "linux_x86_64"], "none"),
        ("Windows x86_64", ["win_amd64"], "none"),
    ],
)
def test_pip_picks_the_wheel_whose_daemon_runs_there(machine: str, platform_tags: list[str], folder: str) -> None:
    assert pip_picks(list(platform_tags)) == folder, f"{machine}: {wheels()}"


def test_the_macos_wheel_is_tagged_for_both_macs() -> None:
    osx = next(p for p in platforms() if p.folder == "osx")
    assert osx.wheel_tags == ("macosx_10_15_x86_64", "macosx_11_0_arm64")
    assert osx.wheel_tag == "macosx_10_15_x86_64.macosx_11_0_arm64"  # a compressed tag set: one file, both tags


def test_configure_on_windows_names_wsl2_and_connect(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What configure() and jar_paths() say from the wheel without jars (its jars/ holds only PLATFORM, "none")."""
    (tmp_path / PLATFORM_FILE).write_text("none\n")
    (tmp_path / "elsewhere").mkdir()
    assert _no_daemon_here(tmp_path / "elsewhere", "4.0.1", "2.13") is None, "a checkout's jars/ has no PLATFORM file"
    coords = "io.github.spark-kinesis:spark-kinesis-4_2.13:" + maven_version()
    monkeypatch.setattr("platform.system", lambda: "Windows")
    monkeypatch.setattr("platform.machine", lambda: "AMD64")
    assert _no_daemon_here(tmp_path, "4.0.1", "2.13") == (
        "spark_kinesis has no jars here: pip installed its wheel for platforms the KPL ships no daemon for, and this "
        "machine runs Windows AMD64. The KPL's daemon exists for Linux x86_64 (glibc 2.12 or later); Linux aarch64 "
        "(glibc 2.25 or later, with libuuid); macOS 10.15 or later on x86_64, and on Apple silicon through Rosetta 2; "
        "there, pip installs the wheel with the jars. Run Spark in WSL2 (its Linux x86_64 gets the jars: pip install "
        "spark-kinesis there), or use this machine as a Spark Connect client (SparkSession.builder.remote(...)) of a "
        "Spark server on Linux or macOS that has the jars."
    )
    monkeypatch.setattr("platform.system", lambda: "Linux")
    monkeypatch.setattr("platform.machine", lambda: "riscv64")
    other = _no_daemon_here(tmp_path, "4.0.1", "2.13")
    assert other and other.endswith(f"or start Spark on one of those platforms with --packages {coords}."), other


def test_the_docs_list_the_platforms_in_one_place_from_the_table() -> None:
    """python/README.md (PyPI's page) says which wheel a platform gets, in the table's words; README.md and
    docs/development.md point there instead of a list of their own, and development.md's table of tags is the
    table's."""
    page = (ROOT / "python" / "README.md").read_text()
    assert where_it_runs() in " ".join(page.split()), "python/README.md does not list the table's platforms"
    for doc in ("README.md", "docs/development.md"):
        text = " ".join((ROOT / doc).read_text().split())
        assert "python/README.md" in text, f"{doc} does not point at python/README.md for the platforms"
        assert "arch -x86_64" not in text, f"{doc} still sends Apple silicon users to an x86_64 Python"
    table = (ROOT / "docs" / "development.md").read_text()
    tagged = re.findall(r"^\s*\| `([a-z0-9_.]+)` \| `?([a-z0-9_-]+)`? \|", table, re.M)
    assert sorted(tagged) == sorted([(p.wheel_tag, p.folder) for p in platforms()] + [("any", "none")]), tagged


def test_tested_here_names_what_make_test_lines_runs() -> None:
    """README.md's "Tested here" lists exactly the pyspark releases of the Makefile's LINES_PYSPARK."""
    listed = re.search(r"^LINES_PYSPARK := (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert listed is not None, "the Makefile has no LINES_PYSPARK"
    said = " ".join((ROOT / "README.md").read_text().split())
    m = re.search(r"first example above .*? on pyspark ([0-9., and]+?), each in a venv of its own", said)
    assert m is not None, "README.md's Tested here does not list the releases make test-lines runs"
    assert re.findall(r"\d+\.\d+\.\d+", m.group(1)) == listed.group(1).split(), m.group(1)
