"""make release-check's checks (tools/release_check.py) on a small staging of their own, then on tampered copies: each
problem a registry would refuse is named. Real gpg (a throwaway key), real zip files; the daemons are stand-ins with
the headers the check reads (an ELF or Mach-O header, the glibc versions it names). `make release-check` runs the same
checks on what the build stages (and docs/development.md, "Releasing", shows them failing on the real files).
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import release
import release_check as rc
from spark_kinesis._platforms import daemon_root, platforms

pytestmark = pytest.mark.spark35_leg  # no Spark here: the leg that ends first runs it

VERSION = "1.2.3"
LINES = ["spark-kinesis-4_2.13"]
POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>io.github.spark-kinesis</groupId>
  <artifactId>{artifact}</artifactId>
  <version>{version}</version>
  <name>{artifact}</name>
  <description>A writer</description>
  <url>https://github.com/spark-kinesis/spark-kinesis</url>
  <licenses><license><name>Apache-2.0</name><url>https://www.apache.org/licenses/LICENSE-2.0</url></license></licenses>
  <scm><url>https://github.com/spark-kinesis/spark-kinesis</url><connection>scm:git:x</connection></scm>
  <developers><developer><id>a</id><name>spark-kinesis authors</name></developer></developers>
</project>
"""


def _elf(machine: int, glibc: str) -> bytes:
    header = b"\x7fELF\x02\x01\x01" + bytes(11) + machine.to_bytes(2, "little") + bytes(44)
    return header + b"\0libc.so.6\0GLIBC_2.2.5\0" + glibc.encode() + b"\0"


def _macho(cpu: int, minos: tuple[int, int]) -> bytes:
    lc_build = (0x32).to_bytes(4, "little") + (24).to_bytes(4, "little") + (1).to_bytes(4, "little")
    lc_build += ((minos[0] << 16) | (minos[1] << 8)).to_bytes(4, "little") + bytes(8)
    header = b"\xcf\xfa\xed\xfe" + cpu.to_bytes(4, "little") + bytes(8) + (1).to_bytes(4, "little")
    header += len(lc_build).to_bytes(4, "little") + bytes(8)
    return header + lc_build


DAEMONS = {
    "linux-x86_64": _elf(62, "GLIBC_2.12"),
    "linux-aarch64": _elf(183, "GLIBC_2.25"),
    "osx": _macho(0x01000007, (10, 15)),
}
PLATFORM = {p.folder: p for p in platforms()}


def _zip(entries: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries.items():
            z.writestr(name, data)
    return buf.getvalue()


def _wheel(pypi: Path, folder: str, tag: str, daemon_folder: str | None = None) -> Path:
    dist_info = f"spark_kinesis-{VERSION}.dist-info"
    entries = {
        "spark_kinesis/__init__.py": b"",
        "spark_kinesis/jars/PLATFORM": folder.encode() + b"\n",
        "spark_kinesis/jars/spark-kinesis.json": b'{"version": "%s"}' % VERSION.encode(),
        f"{dist_info}/WHEEL": (
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n" + "".join(f"Tag: py3-none-{t}\n" for t in tag.split("."))
        ).encode(),
        f"{dist_info}/METADATA": f"Metadata-Version: 2.4\nName: spark-kinesis\nVersion: {VERSION}\n\n".encode(),
    }
    if folder != "none":
        d = daemon_folder or folder
        bundle = {"io/x.class": b"\xca\xfe", PLATFORM[d].resource: DAEMONS[d]}
        entries[f"spark_kinesis/jars/spark-kinesis-kpl-{VERSION}.jar"] = _zip(bundle)
        line = f"line=4\nscala=2.13\nversion={VERSION}\n".encode()
        entries[f"spark_kinesis/jars/spark-kinesis-4_2.13-{VERSION}.jar"] = _zip(
            {"META-INF/spark-kinesis/line.properties": line}
        )
    wheel = pypi / f"spark_kinesis-{VERSION}-py3-none-{tag}.whl"
    wheel.write_bytes(_zip(entries))
    return wheel


def _sign(file: Path, gnupghome: Path) -> None:
    subprocess.run(
        ["gpg", "--batch", "--yes", "--armor", "--detach-sign", "--output", f"{file}.asc", str(file)],
        env={**os.environ, "GNUPGHOME": str(gnupghome)},
        check=True,
        capture_output=True,
    )
    for ext, algo in rc.CHECKSUMS.items():
        Path(f"{file}{ext}").write_text(algo(file.read_bytes()).hexdigest())


@pytest.fixture(scope="module")
def gnupghome(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("gnupg")
    rc.throwaway_key(home)
    yield home
    rc.stop_agent(home)


@pytest.fixture
def staged(tmp_path: Path, gnupghome: Path) -> Path:
    """A staging as release.stage lays it out, every file sound."""
    out = tmp_path / "out"
    for artifact in ["spark-kinesis-kpl", *LINES]:
        folder = out / "maven" / rc.GROUP.replace(".", "/") / artifact / VERSION
        folder.mkdir(parents=True)
        for suffix in rc.ARTIFACT_FILES:
            f = folder / f"{artifact}-{VERSION}{suffix}"
            if suffix == ".pom":
                f.write_text(POM.format(artifact=artifact, version=VERSION))
            else:
                f.write_bytes(_zip({f"{artifact}{suffix}.txt": b"x"}))
            _sign(f, gnupghome)
    pypi = out / "pypi"
    pypi.mkdir()
    for p in platforms():
        _wheel(pypi, p.folder, p.wheel_tag)
    _wheel(pypi, "none", "any")
    return out


def _problems(out: Path, gnupghome: Path) -> list[str]:
    return rc.check(out, VERSION, gnupghome, LINES, twine=None)


def _folder(out: Path, artifact: str) -> Path:
    return out / "maven" / rc.GROUP.replace(".", "/") / artifact / VERSION


def test_a_sound_staging_passes(staged: Path, gnupghome: Path) -> None:
    assert _problems(staged, gnupghome) == []


@pytest.mark.parametrize("field", ["description", "scm", "developers", "licenses", "url"])
def test_a_pom_without_a_field_central_requires_fails(staged: Path, gnupghome: Path, field: str) -> None:
    pom = _folder(staged, "spark-kinesis-4_2.13") / f"spark-kinesis-4_2.13-{VERSION}.pom"
    text = pom.read_text()
    start, end = text.index(f"<{field}>"), text.index(f"</{field}>") + len(f"</{field}>")
    pom.write_text(text[:start] + text[end:])
    _sign(pom, gnupghome)  # a well-signed POM that lacks the field
    problems = _problems(staged, gnupghome)
    assert problems and all(f"spark-kinesis-4_2.13-{VERSION}.pom: no <{field}" in p for p in problems), problems


def test_a_missing_or_wrong_signature_fails(staged: Path, gnupghome: Path, tmp_path: Path) -> None:
    folder = _folder(staged, "spark-kinesis-kpl")
    (folder / f"spark-kinesis-kpl-{VERSION}.jar.asc").unlink()
    # The POM's signature, of other bytes: the POM changed after it was signed.
    pom = folder / f"spark-kinesis-kpl-{VERSION}.pom"
    pom.write_text(pom.read_text().replace("A writer", "Another writer"))
    for ext, algo in rc.CHECKSUMS.items():
        Path(f"{pom}{ext}").write_text(algo(pom.read_bytes()).hexdigest())
    problems = _problems(staged, gnupghome)
    assert problems == [
        f"spark-kinesis-kpl: no signature spark-kinesis-kpl-{VERSION}.jar.asc (Maven Central requires one per file)",
        problems[1],
    ], problems
    assert problems[1].startswith(f"spark-kinesis-kpl: spark-kinesis-kpl-{VERSION}.pom.asc does not verify "), problems
    assert "BAD signature" in problems[1], problems


def test_a_missing_sources_jar_or_a_stale_checksum_fails(staged: Path, gnupghome: Path) -> None:
    folder = _folder(staged, "spark-kinesis-4_2.13")
    (folder / f"spark-kinesis-4_2.13-{VERSION}-sources.jar").unlink()
    (folder / f"spark-kinesis-4_2.13-{VERSION}-javadoc.jar.sha1").write_text(hashlib.sha1(b"old").hexdigest())
    assert _problems(staged, gnupghome) == [
        f"spark-kinesis-4_2.13: no sources jar spark-kinesis-4_2.13-{VERSION}-sources.jar (Maven Central requires it)",
        f"spark-kinesis-4_2.13: spark-kinesis-4_2.13-{VERSION}-javadoc.jar.sha1 does not match "
        f"spark-kinesis-4_2.13-{VERSION}-javadoc.jar",
    ]


def test_a_file_a_release_does_not_publish_fails(staged: Path, gnupghome: Path) -> None:
    """sbt staged the test classes' docs once (a `tests-javadoc` jar, signed): nothing but the four files goes."""
    folder = _folder(staged, "spark-kinesis-4_2.13")
    extra = folder / f"spark-kinesis-4_2.13-{VERSION}-tests-javadoc.jar"
    extra.write_bytes(_zip({"index.html": b"x"}))
    _sign(extra, gnupghome)
    assert _problems(staged, gnupghome) == [
        f"spark-kinesis-4_2.13: {extra.name}{ext} is not a file a release publishes"
        for ext in ("", ".asc", ".md5", ".sha1")
    ]


def test_a_wheel_tagged_for_less_than_its_daemon_needs_fails(staged: Path, gnupghome: Path) -> None:
    """The aarch64 daemon needs glibc 2.25: a manylinux_2_17 tag would install it where it cannot start."""
    pypi = staged / "pypi"
    (pypi / f"spark_kinesis-{VERSION}-py3-none-manylinux_2_25_aarch64.whl").unlink()
    wrong = _wheel(pypi, "linux-aarch64", "manylinux_2_17_aarch64")
    assert _problems(staged, gnupghome) == [
        f"PyPI: spark_kinesis-{VERSION}-py3-none-manylinux_2_25_aarch64.whl is missing",
        f"PyPI: {wrong.name} is not a file a release publishes",
        f"{wrong.name}: tag manylinux_2_17_aarch64 promises glibc 2.17, but the daemon needs GLIBC_2.25",
    ]


def test_a_wheel_carrying_another_platforms_daemon_fails(staged: Path, gnupghome: Path) -> None:
    pypi = staged / "pypi"
    name = f"spark_kinesis-{VERSION}-py3-none-manylinux_2_12_x86_64.whl"
    _wheel(pypi, "linux-x86_64", "manylinux_2_12_x86_64", daemon_folder="linux-aarch64")
    problems = _problems(staged, gnupghome)
    assert problems == [
        f"{name}: its bundle carries ['{PLATFORM['linux-aarch64'].resource}'], "
        f"not ['{PLATFORM['linux-x86_64'].resource}'] alone"
    ], problems
    # And the macOS daemon under a Linux tag: the machine the tag names against the binary's.
    both = "macosx_10_15_x86_64.macosx_11_0_arm64"
    mac = _wheel(pypi, "osx", both)
    assert rc.tag_problem("manylinux_2_12_x86_64", rc.daemon_needs(DAEMONS["osx"])) == (
        "tag manylinux_2_12_x86_64 is not a macosx tag, but the daemon is a macOS x86_64 program"
    )
    assert rc.check_wheel(mac, VERSION, "osx", both) == []
    assert rc.check_wheel(mac, VERSION, "osx", "macosx_10_15_x86_64") == [
        f"{mac.name}: its WHEEL file says Tag ['py3-none-macosx_10_15_x86_64', 'py3-none-macosx_11_0_arm64'], "
        "not py3-none-macosx_10_15_x86_64"
    ]


def test_every_tag_of_the_macos_wheel_is_checked_the_arm64_one_too(staged: Path, gnupghome: Path) -> None:
    """Apple silicon runs the x86_64 daemon through Rosetta 2, from macOS 11: an arm64 tag is sound from there on, and
    each tag of a compressed set is held to the daemon."""
    needs = rc.daemon_needs(DAEMONS["osx"])
    assert rc.tag_problem("macosx_10_15_x86_64.macosx_11_0_arm64", needs) is None
    assert rc.tag_problem("macosx_10_15_x86_64.macosx_10_15_arm64", needs) == (
        "tag macosx_10_15_arm64 is for arm64 before macOS 11, which has no Rosetta 2 to run the x86_64 daemon"
    )
    assert rc.tag_problem("macosx_10_15_x86_64.manylinux_2_12_x86_64", needs) == (
        "tag manylinux_2_12_x86_64 is not a macosx tag, but the daemon is a macOS x86_64 program"
    )
    pypi = staged / "pypi"
    osx = next(p for p in platforms() if p.folder == "osx")
    (pypi / f"spark_kinesis-{VERSION}-py3-none-{osx.wheel_tag}.whl").unlink()
    wrong = _wheel(pypi, "osx", "macosx_10_15_x86_64.macosx_10_15_arm64")
    assert _problems(staged, gnupghome) == [
        f"PyPI: spark_kinesis-{VERSION}-py3-none-{osx.wheel_tag}.whl is missing",
        f"PyPI: {wrong.name} is not a file a release publishes",
        f"{wrong.name}: tag macosx_10_15_arm64 is for arm64 before macOS 11, which has no Rosetta 2 to run the x86_64 "
        "daemon",
    ]


def test_a_wheel_over_the_size_limit_fails(staged: Path, gnupghome: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    wheel = staged / "pypi" / f"spark_kinesis-{VERSION}-py3-none-any.whl"
    size = wheel.stat().st_size
    monkeypatch.setattr(rc, "WHEEL_MAX_BYTES", size - 1)
    problems = _problems(staged, gnupghome)
    assert f"{wheel.name}: {size} bytes (0.0 MB), more than the {size - 1} a wheel may have" in problems, problems


def test_the_platform_bundle_keeps_one_daemon(tmp_path: Path) -> None:
    """release.platform_bundle on a bundle of every daemon (and the KPL's unused zipped macOS copy)."""
    full = tmp_path / "full.jar"
    entries = {"io/x.class": b"\xca\xfe", f"{daemon_root()}/osx/{release.UNUSED_DAEMON_COPY}": b"zip"}
    entries.update({PLATFORM[f].resource: d for f, d in DAEMONS.items()})
    full.write_bytes(_zip(entries))
    for p in platforms():
        out = tmp_path / f"{p.folder}.jar"
        release.platform_bundle(full, p.folder, out)
        with zipfile.ZipFile(out) as z:
            assert sorted(z.namelist()) == sorted(["io/x.class", p.resource])
            assert rc.tag_problem(p.wheel_tag, rc.daemon_needs(z.read(p.resource))) is None


def test_the_version_step(tmp_path: Path) -> None:
    """tools/release.py version: a release dates its CHANGELOG section (the top one); .devN opens the next."""
    root = tmp_path
    (root / release.VERSION_FILE).parent.mkdir(parents=True)
    shutil.copy(ROOT / release.VERSION_FILE, root / release.VERSION_FILE)
    (root / release.CHANGELOG).write_text("# Changelog\n\n## [1.2.3] - Unreleased\n\n### Added\n- x\n")
    with pytest.raises(SystemExit, match=r"top section is \[1.2.3\], not \[1.2.4\]"):
        release.set_version("1.2.4", root)
    import datetime

    release.set_version("1.2.3", root, today=datetime.date(2026, 12, 1))
    assert release.read_version(root) == "1.2.3"
    assert release.changelog_top(root) == ("1.2.3", "2026-12-01")
    release.set_version("1.2.4.dev0", root)
    assert release.read_version(root) == "1.2.4.dev0"
    assert release.changelog_top(root) == ("1.2.4", "Unreleased")
    assert "## [1.2.3] - 2026-12-01" in (root / release.CHANGELOG).read_text()
    assert release.release_version("1.2.4.dev0") == "1.2.4"


def test_the_checkout_is_the_next_release() -> None:
    """_version.py leads to the release CHANGELOG.md's top section describes (release-check refuses otherwise)."""
    assert release.changelog_top()[0] == release.release_version(release.read_version())


def test_the_release_workflow_keeps_secrets_out_of_commands_and_the_repository() -> None:
    """release.yml: secrets reach steps only as environment variables (never a command line or an action input), no
    PGP_PASSPHRASE (sbt-pgp would put it on gpg's command line), PyPI by trusted publishing (OIDC, no password), and the
    tag checked against the version before make release-check. No key or token in any tracked file."""
    workflow = (ROOT / ".github" / "workflows" / "release.yml").read_text()
    uses = [line for line in workflow.splitlines() if "secrets." in line and not line.lstrip().startswith("#")]
    assert uses, "release.yml uses no secret"
    for line in uses:
        assert re.fullmatch(r"\s+[A-Z_]+: \$\{\{ secrets\.[A-Z_]+ \}\}", line), f"a secret outside an env entry: {line}"
    assert "PGP_PASSPHRASE" not in workflow
    assert "id-token: write" in workflow and "pypa/gh-action-pypi-publish@" in workflow
    assert not re.search(r"^\s+password:", workflow, re.M), "PyPI publishes by trusted publishing, not a password"
    assert workflow.index("tools/release.py check-tag") < workflow.index("run: make release-check")
    # (The key's armor header in two pieces, so this file does not hold it.)
    leaked = re.compile(rb"-----BEGIN PGP PRIVATE " + rb"KEY BLOCK-----|pypi-AgE[A-Za-z0-9_-]{20}")
    found = [str(p) for p in release.tracked_files() if leaked.search((ROOT / p).read_bytes())]
    assert found == [], found
