"""What a release publishes, built from this checkout: the version step, the signed Maven staging, the wheels.

    python tools/release.py version X.Y.Z      the one bump step (docs/development.md, "Releasing"): writes X.Y.Z into
                                               python/spark_kinesis/_version.py (the one version source: build.sbt, the
                                               wheel, every jar and the facts resource read it) and dates CHANGELOG.md's
                                               top section, which must be X.Y.Z's; X.Y.Z.devN opens the next one
    python tools/release.py check-tag vX.Y.Z   fails unless the tag is the version the commit carries (release.yml)
    python tools/release.py stage OUT          builds into OUT what a tag of this commit publishes (below); gpg signs
                                               with the key of GNUPGHOME (tools/release_check.py makes a throwaway one)

``stage`` builds in a copy of the tracked files (``.cache/release/src``) with the version set to the release one (the
``.devN`` dropped: what the tag's commit carries), so the checkout stays as it is:

- ``OUT/maven``: ``publishSigned`` with the API docs (``-Dpublish.docs=true``), the staging bundle ``sonaRelease``
  uploads to Maven Central: for the KPL bundle and each Spark line's jar, the jar, sources, javadoc and POM, each with
  its ``.asc`` signature and checksums;
- ``OUT/pypi``: one wheel per platform the KPL ships a daemon for, each carrying a copy of the KPL bundle with only that
  daemon (spark_kinesis/_platforms.py), and one ``py3-none-any`` wheel without jars for every other platform. No sdist:
  built from source, the package has no jars (they come from sbt), so it would install something that cannot write.

The ``--packages`` path keeps the Maven bundle with every daemon.
"""

from __future__ import annotations

import datetime
import filecmp
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))  # the platform table's one home is the package (its configure() reads it)
from spark_kinesis._platforms import daemon_root, platforms

VERSION_FILE = Path("python/spark_kinesis/_version.py")
CHANGELOG = Path("CHANGELOG.md")
#: Where sbt's localStaging puts what publishSigned stages (the directory sonaRelease bundles).
SONA_STAGING = Path("target/sona-staging")
#: Pinned tools of the release: building the wheels and twine check (tools/release_check.py installs them).
TOOLS_REQUIREMENTS = ROOT / "tools" / "requirements-release.txt"
#: The KPL ships the macOS daemon a second time, zipped, beside itself; no code reads it (the KPL extracts the
#: binary), so the platform wheels leave it out.
UNUSED_DAEMON_COPY = "kinesis-producer.zip"


def read_version(root: Path = ROOT) -> str:
    m = re.search(r'__version__ = "([^"]+)"', (root / VERSION_FILE).read_text(encoding="utf-8"))
    if m is None:
        raise SystemExit(f'{root / VERSION_FILE}: no __version__ = "..." line')
    return m.group(1)


def write_version(root: Path, version: str) -> None:
    path = root / VERSION_FILE
    text = re.sub(r'__version__ = "[^"]+"', f'__version__ = "{version}"', path.read_text(encoding="utf-8"))
    path.write_text(text, encoding="utf-8")


RELEASE = re.compile(r"\d+\.\d+\.\d+")
DEV = re.compile(r"(\d+\.\d+\.\d+)\.dev\d+")


def release_version(version: str) -> str:
    """The release a version leads to: ``0.1.0.dev0`` -> ``0.1.0``; a release is its own."""
    m = DEV.fullmatch(version)
    if m:
        return m.group(1)
    if RELEASE.fullmatch(version):
        return version
    raise SystemExit(f"version {version!r} is neither X.Y.Z nor X.Y.Z.devN: set one with tools/release.py version")


def changelog_top(root: Path = ROOT) -> tuple[str, str]:
    """CHANGELOG.md's top section: its version and what follows it on the heading line (a date, or "Unreleased")."""
    m = re.search(r"^## \[([^\]]+)\](.*)$", (root / CHANGELOG).read_text(encoding="utf-8"), re.M)
    if m is None:
        raise SystemExit(f"{root / CHANGELOG}: no '## [X.Y.Z] - date' section")
    return m.group(1), m.group(2).strip(" -")


def set_version(version: str, root: Path = ROOT, today: datetime.date | None = None) -> None:
    """The bump step: a release dates its CHANGELOG section (which must be the top one); a .devN opens the next."""
    path = root / CHANGELOG
    top, when = changelog_top(root)
    if RELEASE.fullmatch(version):
        if top != version:
            raise SystemExit(f"CHANGELOG.md's top section is [{top}], not [{version}]: write {version}'s notes there")
        date = (today or datetime.date.today()).isoformat()
        text = path.read_text(encoding="utf-8").replace(f"## [{top}] - {when}", f"## [{top}] - {date}", 1)
        path.write_text(text, encoding="utf-8")
    else:
        nxt = release_version(version)
        if top != nxt:
            text = path.read_text(encoding="utf-8").replace(f"## [{top}]", f"## [{nxt}] - Unreleased\n\n## [{top}]", 1)
            path.write_text(text, encoding="utf-8")
    write_version(root, version)


def maven_version(version: str) -> str:
    return re.sub(r"\.dev\d*$", "-SNAPSHOT", version)


# ---------------------------------------------------------------------------------------------------------------
# The build copy.


def tracked_files(root: Path = ROOT) -> list[Path]:
    """The files a clone of this checkout has (tracked or new, not ignored), as they are in the working tree."""
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        check=True,
        capture_output=True,
    ).stdout
    return [Path(p.decode()) for p in out.split(b"\0") if p and (root / p.decode()).is_file()]


def sync_copy(dest: Path, root: Path = ROOT) -> None:
    """Makes dest hold the tracked files (unchanged ones keep their time, so sbt rebuilds only what changed) and no
    other source file: what sbt builds there is what a clone builds."""
    files = set(tracked_files(root))
    for rel in files:
        src, dst = root / rel, dest / rel
        if dst.is_file() and filecmp.cmp(src, dst, shallow=False):
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)
    for tree in ("jvm/src", "jvm/kpl/src", "project", "python/spark_kinesis", "build"):
        for p in (dest / tree).rglob("*") if (dest / tree).is_dir() else []:
            rel = p.relative_to(dest)
            built = {"target", "project", "jars", "__pycache__"} & set(rel.parts[1:])
            if p.is_file() and rel not in files and not built:
                p.unlink()


# ---------------------------------------------------------------------------------------------------------------
# Wheels.


def platform_bundle(bundle: Path, folder: str, out: Path) -> None:
    """A copy of the KPL bundle with the daemon of one platform only (entries, order and compression as they were)."""
    keep = f"{daemon_root()}/{folder}/"
    with zipfile.ZipFile(bundle) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            name = info.filename
            if name.startswith(f"{daemon_root()}/") and name != f"{daemon_root()}/":
                if not name.startswith(keep) or name.endswith("/" + UNUSED_DAEMON_COPY):
                    continue
            dst.writestr(info, src.read(info), compress_type=info.compress_type)


def build_wheel(python_dir: Path, dist: Path, folder: str, tag: str, build: list[str]) -> Path:
    """The wheel of one platform folder ("none": the one without jars), built from a copy of python_dir (whose jars/
    `bundlePython` filled) by `build` (a `python -m build` command)."""
    version = read_version(python_dir.parent)
    bundle_name = f"spark-kinesis-kpl-{maven_version(version)}.jar"
    bundle = python_dir / "spark_kinesis" / "jars" / bundle_name
    if not bundle.is_file():
        raise SystemExit(f"{bundle} is missing: build it first (sbt bundlePython, make jar)")
    dist.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"wheel-{folder}-") as tmp:
        src = Path(tmp) / "python"
        shutil.copytree(python_dir, src, ignore=shutil.ignore_patterns("build", "dist", "*.egg-info", "__pycache__"))
        jars = src / "spark_kinesis" / "jars"
        if folder == "none":
            # No jar and nothing of what the bundle carries: only the facts resource the Python API reads.
            for p in jars.iterdir():
                if p.name != "spark-kinesis.json":
                    p.unlink()
        else:
            platform_bundle(bundle, folder, jars / bundle_name)
        (jars / "PLATFORM").write_text(folder + "\n", encoding="utf-8")
        # bdist_wheel's --plat-name tags the pure package for the one platform whose daemon it carries; it takes one
        # tag, so the rest of a compressed tag set (macOS: x86_64 and arm64) is added by `wheel tags` after.
        first = tag.split(".")[0]
        plat = [] if tag == "any" else [f"-C--build-option=--plat-name={first}"]
        subprocess.run([*build, "--wheel", "--outdir", str(dist), *plat, str(src)], check=True, capture_output=True)
    if tag != first:
        built = dist / f"spark_kinesis-{version}-py3-none-{first}.whl"
        retag = [build[0], "-m", "wheel", "tags", "--platform-tag", tag, "--remove", str(built)]
        subprocess.run(retag, check=True, capture_output=True)
    wheel = dist / f"spark_kinesis-{version}-py3-none-{tag}.whl"
    if not wheel.is_file():
        raise SystemExit(f"the build of the {folder} wheel wrote no {wheel.name}: {sorted(os.listdir(dist))}")
    return wheel


def build_wheels(python_dir: Path, dist: Path, python: str) -> list[Path]:
    """One wheel per platform of spark_kinesis._platforms and the one without jars, by the tools venv's pinned
    setuptools (no build isolation)."""
    variants = [(p.folder, p.wheel_tag) for p in platforms()] + [("none", "any")]
    build = [python, "-m", "build", "--no-isolation"]
    return [build_wheel(python_dir, dist, folder, tag, build) for folder, tag in variants]


# ---------------------------------------------------------------------------------------------------------------
# Staging.


#: The copy of the tracked files a release builds in.
BUILD_DIR = ROOT / ".cache" / "release" / "src"


def stage(out: Path, python: str, build_dir: Path = BUILD_DIR) -> str:
    """Builds into out/maven and out/pypi what a tag of this commit publishes; returns the release version."""
    version = release_version(read_version())
    top, _ = changelog_top()
    if top != version:
        raise SystemExit(f"CHANGELOG.md's top section is [{top}]; the release is {version}: write its notes first")
    sync_copy(build_dir)
    write_version(build_dir, version)
    shutil.rmtree(build_dir / SONA_STAGING, ignore_errors=True)
    shutil.rmtree(out, ignore_errors=True)
    # sbt-pgp signs through the gpg command line with GNUPGHOME's key. No passphrase goes through sbt: sbt-pgp would
    # put PGP_PASSPHRASE on gpg's command line; a protected key gets it from GNUPGHOME's gpg.conf (passphrase-file).
    env = {k: v for k, v in os.environ.items() if k not in ("PGP_PASSPHRASE", "PGP_SECRET")}
    subprocess.run(
        [str(build_dir / "build" / "sbt"), "-Dpublish.docs=true", "all bundlePython publishSigned"],
        cwd=build_dir,
        env=env,
        stdin=subprocess.DEVNULL,
        check=True,
    )
    shutil.copytree(build_dir / SONA_STAGING, out / "maven")
    build_wheels(build_dir / "python", out / "pypi", python)
    return version


def check_tag(tag: str) -> None:
    """The tag a release workflow runs for names the version the commit carries, and CHANGELOG.md has its dated notes
    on top (the bump step made both)."""
    version = read_version()
    if tag != f"v{version}":
        raise SystemExit(
            f"tag {tag} is not v{version}, the version {VERSION_FILE} carries: tag the commit of "
            f"`python tools/release.py version X.Y.Z` as vX.Y.Z"
        )
    if not RELEASE.fullmatch(version):
        raise SystemExit(f"tag {tag}: {version} is not a release version (X.Y.Z)")
    top, when = changelog_top()
    if top != version or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", when):
        raise SystemExit(f"CHANGELOG.md's top section is [{top}] - {when}, not [{version}] with its date")


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "check-tag":
        check_tag(argv[1])
        print(f"tag {argv[1]}: the version of {VERSION_FILE} and CHANGELOG.md's top section")
        return 0
    if len(argv) == 2 and argv[0] == "version":
        set_version(argv[1])
        print(f"version {argv[1]}: {VERSION_FILE} and {CHANGELOG} (top section {changelog_top()})")
        return 0
    if len(argv) == 2 and argv[0] == "stage":
        version = stage(Path(argv[1]).resolve(), sys.executable)
        print(f"staged {version} in {argv[1]}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
