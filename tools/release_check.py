"""make release-check: builds what a tag of this commit publishes, checks it as Maven Central and PyPI will, then uses
it as a user would. Fails naming each problem it finds; the last line is ``release-check: ok ...`` or the problems.

1. Stages (tools/release.py stage) into .cache/release/out, signed with a throwaway key made here (a GNUPGHOME of its
   own, no passphrase: nothing secret exists, nothing reaches a command line).
2. Checks the Maven staging (:func:`check_maven`): for the KPL bundle and each Spark line's jar, the jar, sources and
   javadoc jars and the POM; each with an ``.asc`` that gpg verifies against the key, and ``.md5``/``.sha1`` that match;
   every POM field Central requires (name, description, url, licenses, developers, scm) and its coordinates.
3. Checks the PyPI files (:func:`check_wheels`, ``twine check --strict``): one wheel per platform of
   spark_kinesis/_platforms.py and the one without jars; each at most WHEEL_MAX_BYTES; each tag of each platform wheel
   against the daemon it carries (the binary's machine, and the newest glibc or the macOS version it needs; the macOS
   wheel's arm64 tag from macOS 11, where Rosetta 2 runs the x86_64 daemon).
4. In a fresh venv (no checkout on sys.path), installs the Linux x86_64 wheel alone with pyspark and runs the README's
   first example (its ``configure()`` puts the wheel's jars on the session) against the embedded Kinesis
   (kinesis-mock); then runs the same example through ``spark-submit --packages`` with the staging as the only
   repository (``--repositories file://...``, an empty ivy cache), as a user of Central would, without configure().
   Each time every record is read back, and the jars the JVM loaded are where the path says. Last, the macOS wheel's
   jars on this Linux driver: the write is refused naming both platforms (DaemonCheck), before any daemon starts.

``python tools/release_check.py check OUT`` runs 2 and 3 alone on a staged directory (as tests/test_release_check.py
does on tampered copies); ``python tools/release_check.py examples`` runs 4 alone on what the last run staged.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import zipfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(1, str(ROOT / "tests"))  # test_readme: the one reader of the README's blocks and their inputs
import release
from spark_kinesis._platforms import daemon_root, platforms

OUT = ROOT / ".cache" / "release" / "out"
TOOLS_VENV = ROOT / ".cache" / "release" / "venv-tools"
GROUP = "io.github.spark-kinesis"
#: PyPI takes files up to 100 MB; each wheel stays well below, with room for the next KPL or SDK.
WHEEL_MAX_BYTES = 60 * 10**6
#: What Central requires of a POM (central.sonatype.org, "Requirements"): each path must hold text.
POM_FIELDS = (
    "name",
    "description",
    "url",
    "licenses/license/name",
    "licenses/license/url",
    "developers/developer/name",
    "scm/url",
    "scm/connection",
)
#: Files Central requires beside each artifact's POM, by classifier suffix.
ARTIFACT_FILES = (".jar", "-sources.jar", "-javadoc.jar", ".pom")
CHECKSUMS = {".md5": hashlib.md5, ".sha1": hashlib.sha1}


# ---------------------------------------------------------------------------------------------------------------
# Maven.


def _text(pom: ET.Element, path: str) -> str:
    ns = {"m": "http://maven.apache.org/POM/4.0.0"}
    node = pom.find("/".join(f"m:{p}" for p in path.split("/")), ns)
    if node is None:
        node = pom.find(path)  # a POM without the namespace
    return (node.text or "").strip() if node is not None else ""


def check_pom(pom_file: Path, group: str, artifact: str, version: str) -> list[str]:
    try:
        pom = ET.parse(pom_file).getroot()
    except ET.ParseError as e:
        return [f"{pom_file.name}: not XML ({e})"]
    problems = [f"{pom_file.name}: no <{f}> (Maven Central requires it)" for f in POM_FIELDS if not _text(pom, f)]
    for field, want in (("groupId", group), ("artifactId", artifact), ("version", version)):
        if _text(pom, field) != want:
            problems.append(f"{pom_file.name}: <{field}> is {_text(pom, field)!r}, its path says {want!r}")
    return problems


def _verify_signature(file: Path, asc: Path, gnupghome: Path) -> str | None:
    done = subprocess.run(
        ["gpg", "--batch", "--verify", str(asc), str(file)],
        env={**os.environ, "GNUPGHOME": str(gnupghome)},
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        return None
    said = " / ".join(line for line in done.stderr.splitlines() if "BAD" in line or "rror" in line or "No " in line)
    return f"{asc.name} does not verify {file.name} ({said or done.stderr.strip()[-200:]})"


def check_maven(maven: Path, version: str, artifacts: list[str], gnupghome: Path) -> list[str]:
    """Problems of a Maven staging directory: each named artifact complete, signed, summed, with a full POM."""
    problems: list[str] = []
    for artifact in artifacts:
        folder = maven / GROUP.replace(".", "/") / artifact / version
        if not folder.is_dir():
            problems.append(f"{artifact}: nothing staged for {version} (no {folder.relative_to(maven)})")
            continue
        for suffix in ARTIFACT_FILES:
            file = folder / f"{artifact}-{version}{suffix}"
            if not file.is_file():
                what = {"-sources.jar": "sources jar", "-javadoc.jar": "javadoc jar"}.get(suffix, suffix[1:])
                problems.append(f"{artifact}: no {what} {file.name} (Maven Central requires it)")
                continue
            if suffix.endswith(".jar"):
                try:
                    with zipfile.ZipFile(file) as z:
                        if not [n for n in z.namelist() if not n.endswith("/") and "META-INF/MANIFEST" not in n]:
                            problems.append(f"{artifact}: {file.name} is empty")
                except zipfile.BadZipFile:
                    problems.append(f"{artifact}: {file.name} is not a jar")
            asc = file.with_name(file.name + ".asc")
            if not asc.is_file():
                problems.append(f"{artifact}: no signature {asc.name} (Maven Central requires one per file)")
            else:
                bad = _verify_signature(file, asc, gnupghome)
                if bad:
                    problems.append(f"{artifact}: {bad}")
            for ext, algo in CHECKSUMS.items():
                summed = file.with_name(file.name + ext)
                if not summed.is_file():
                    problems.append(f"{artifact}: no checksum {summed.name}")
                elif summed.read_text().split()[0].strip() != algo(file.read_bytes()).hexdigest():
                    problems.append(f"{artifact}: {summed.name} does not match {file.name}")
        # Nothing else (a test jar or its docs would go to Central for good).
        known = {
            f"{artifact}-{version}{suffix}{sig}{ext}"
            for suffix in ARTIFACT_FILES
            for sig in ("", ".asc")
            for ext in ("", *CHECKSUMS)
        }
        problems += [
            f"{artifact}: {p.name} is not a file a release publishes"
            for p in sorted(folder.iterdir())
            if p.name not in known
        ]
        pom = folder / f"{artifact}-{version}.pom"
        if pom.is_file():
            problems += [f"{artifact}: {p}" for p in check_pom(pom, GROUP, artifact, version)]
    return problems


# ---------------------------------------------------------------------------------------------------------------
# Wheels.


ELF_MACHINES = {62: "x86_64", 183: "aarch64"}
MACHO_CPUS = {0x01000007: "x86_64", 0x0100000C: "arm64"}


def daemon_needs(binary: bytes) -> tuple[str, str, tuple[int, int]]:
    """What a daemon needs to run: ("linux", machine, newest glibc it names) or ("macos", cpu, minimum macOS)."""
    if binary[:4] == b"\x7fELF":
        machine = int.from_bytes(binary[18:20], "little")
        glibcs = {tuple(int(x) for x in m.groups()) for m in re.finditer(rb"GLIBC_(\d+)\.(\d+)", binary)}
        newest = max(glibcs, default=(0, 0))
        return "linux", ELF_MACHINES.get(machine, f"ELF machine {machine}"), (newest[0], newest[1])
    if binary[:4] == b"\xcf\xfa\xed\xfe":  # 64-bit Mach-O, little-endian
        cpu = int.from_bytes(binary[4:8], "little")
        ncmds = int.from_bytes(binary[16:20], "little")
        off, minos = 32, (0, 0)
        for _ in range(ncmds):
            cmd, size = (
                int.from_bytes(binary[off : off + 4], "little"),
                int.from_bytes(binary[off + 4 : off + 8], "little"),
            )
            if cmd in (0x24, 0x32):  # LC_VERSION_MIN_MACOSX (version first), LC_BUILD_VERSION (platform, then minos)
                v = int.from_bytes(
                    binary[off + (8 if cmd == 0x24 else 12) : off + (12 if cmd == 0x24 else 16)], "little"
                )
                minos = (v >> 16, (v >> 8) & 0xFF)
            off += size
        return "macos", MACHO_CPUS.get(cpu, f"Mach-O cpu {cpu:#x}"), minos
    return "unknown", "unknown", (0, 0)


def tag_problem(tags: str, needs: tuple[str, str, tuple[int, int]]) -> str | None:
    """Whether a wheel's platform tags (one, or a compressed set ``a.b``) each promise what its daemon needs: its
    machine, and a glibc or macOS at least as new as the daemon's (a lower tag would put the wheel where the daemon
    cannot start). An arm64 macOS tag fits an x86_64 daemon from macOS 11 on: Apple silicon runs it through Rosetta 2
    (the writer names the install where Rosetta 2 is missing)."""
    return next(filter(None, (_one_tag_problem(t, needs) for t in tags.split("."))), None)


def _one_tag_problem(tag: str, needs: tuple[str, str, tuple[int, int]]) -> str | None:
    kind, machine, (major, minor) = needs
    rosetta = re.fullmatch(r"macosx_(\d+)_(\d+)_arm64", tag)
    if kind == "macos" and machine == "x86_64" and rosetta:
        promised = (int(rosetta.group(1)), int(rosetta.group(2)))
        if promised < (11, 0):
            return f"tag {tag} is for arm64 before macOS 11, which has no Rosetta 2 to run the x86_64 daemon"
        if promised < (major, minor):
            return f"tag {tag} promises macOS {promised[0]}.{promised[1]}, but the daemon needs macOS {major}.{minor}"
        return None
    # Per kind of daemon: the tag's prefix, the system's name, and what its version is called.
    known = {"linux": ("manylinux", "Linux", "glibc", "GLIBC_"), "macos": ("macosx", "macOS", "macOS", "")}
    if kind in known:
        prefix, system, base, needed = known[kind]
        m = re.fullmatch(rf"{prefix}_(\d+)_(\d+)_(\w+)", tag)
        if m is None:
            return f"tag {tag} is not a {prefix} tag, but the daemon is a {system} {machine} program"
        if m.group(3) != machine:
            return f"tag {tag} is for {m.group(3)}, but the daemon is a {system} {machine} program"
        if (int(m.group(1)), int(m.group(2))) < (major, minor):
            return f"tag {tag} promises {base} {m.group(1)}.{m.group(2)}, but the daemon needs {needed}{major}.{minor}"
        return None
    return f"tag {tag}: the daemon is no Linux or macOS program this check knows"


def check_wheel(wheel: Path, version: str, folder: str, tag: str) -> list[str]:
    """Problems of one wheel: its name, WHEEL tag and metadata version; the platform its jars are for; the daemon's
    needs against its tag; its size."""
    problems: list[str] = []
    name = wheel.name
    size = wheel.stat().st_size
    if size > WHEEL_MAX_BYTES:
        problems.append(f"{name}: {size} bytes ({size / 1e6:.1f} MB), more than the {WHEEL_MAX_BYTES} a wheel may have")
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        dist_info = f"spark_kinesis-{version}.dist-info"
        tags = re.findall(r"^Tag: (.+)$", whl.read(f"{dist_info}/WHEEL").decode(), re.M)
        if tags != [f"py3-none-{t}" for t in tag.split(".")]:
            problems.append(f"{name}: its WHEEL file says Tag {tags}, not py3-none-{tag}")
        meta = whl.read(f"{dist_info}/METADATA").decode()
        if f"\nVersion: {version}\n" not in meta:
            problems.append(f"{name}: METADATA is not version {version}")
        said = (
            whl.read("spark_kinesis/jars/PLATFORM").decode().strip() if "spark_kinesis/jars/PLATFORM" in names else None
        )
        if said != folder:
            problems.append(f"{name}: spark_kinesis/jars/PLATFORM says {said!r}, not {folder!r}")
        jars = sorted(n for n in names if n.startswith("spark_kinesis/jars/") and n.endswith(".jar"))
        mvn = release.maven_version(version)
        bundle = f"spark_kinesis/jars/spark-kinesis-kpl-{mvn}.jar"
        # One version everywhere: the facts resource Python reads (coordinates) and each line jar's line.properties.
        facts = "spark_kinesis/jars/spark-kinesis.json"
        said_version = json.loads(whl.read(facts))["version"] if facts in names else None
        if said_version != mvn:
            problems.append(f"{name}: {facts} says version {said_version!r}, not {mvn!r}")
        for jar in jars:
            if jar != bundle:
                with zipfile.ZipFile(io.BytesIO(whl.read(jar))) as line_jar:
                    props = line_jar.read("META-INF/spark-kinesis/line.properties").decode()
                if f"\nversion={mvn}\n" not in props:
                    problems.append(f"{name}: {jar} is not version {mvn} (its line.properties: {props!r})")
        if folder == "none":
            if jars:
                problems.append(f"{name}: the wheel for platforms without a daemon carries jars {jars}")
            return problems
        if bundle not in jars:
            return [*problems, f"{name}: no KPL bundle {bundle}"]
        with tempfile.TemporaryDirectory() as tmp:
            whl.extract(bundle, tmp)
            with zipfile.ZipFile(Path(tmp) / bundle) as kpl:
                daemons = sorted(n for n in kpl.namelist() if n.startswith(f"{daemon_root()}/") and not n.endswith("/"))
                want = [next(p.resource for p in platforms() if p.folder == folder)]
                if daemons != want:
                    problems.append(f"{name}: its bundle carries {daemons}, not {want} alone")
                if want[0] in daemons:
                    problem = tag_problem(tag, daemon_needs(kpl.read(want[0])))
                    if problem:
                        problems.append(f"{name}: {problem}")
    return problems


def check_wheels(pypi: Path, version: str) -> list[str]:
    """Problems of the PyPI files: exactly the expected wheels (no sdist), each sound."""
    expected = {f"spark_kinesis-{version}-py3-none-{p.wheel_tag}.whl": (p.folder, p.wheel_tag) for p in platforms()}
    expected[f"spark_kinesis-{version}-py3-none-any.whl"] = ("none", "any")
    present = sorted(p.name for p in pypi.iterdir()) if pypi.is_dir() else []
    problems = [f"PyPI: {f} is missing" for f in sorted(set(expected) - set(present))]
    problems += [f"PyPI: {f} is not a file a release publishes" for f in sorted(set(present) - set(expected))]
    for f in sorted(set(expected) & set(present)):
        problems += check_wheel(pypi / f, version, *expected[f])
    # A wheel under another name (a tag changed by hand): what its tag promises against what it carries.
    for f in sorted(set(present) - set(expected)):
        m = re.fullmatch(rf"spark_kinesis-{re.escape(version)}-py3-none-(.+)\.whl", f)
        if m:
            with zipfile.ZipFile(pypi / f) as whl:
                folder = whl.read("spark_kinesis/jars/PLATFORM").decode().strip()
            problems += check_wheel(pypi / f, version, folder, m.group(1))
    return problems


def twine_check(pypi: Path, twine: Path) -> list[str]:
    files = sorted(str(p) for p in pypi.glob("*.whl"))
    done = subprocess.run([str(twine), "check", "--strict", *files], capture_output=True, text=True)
    if done.returncode == 0:
        return []
    return [
        f"twine check: {line}"
        for line in done.stdout.splitlines() + done.stderr.splitlines()
        if "FAILED" in line or "ERROR" in line or "WARNING" in line
    ] or [f"twine check failed: {done.stdout[-500:]}"]


def line_artifacts() -> list[str]:
    facts = json.loads((release.BUILD_DIR / "python" / "spark_kinesis" / "jars" / "spark-kinesis.json").read_text())
    return [f"{ln['artifact']}_{s}" for ln in facts["lines"] for s in ln["scala"]]


def check(out: Path, version: str, gnupghome: Path, artifacts: list[str], twine: Path | None) -> list[str]:
    problems = check_maven(out / "maven", version, ["spark-kinesis-kpl", *artifacts], gnupghome)
    problems += check_wheels(out / "pypi", version)
    if twine is not None:
        problems += twine_check(out / "pypi", twine)
    return problems


# ---------------------------------------------------------------------------------------------------------------
# The throwaway key and the tools.


def throwaway_key(gnupghome: Path) -> None:
    """A signing key that exists for this run only, unprotected (nothing secret: it signs nothing anyone trusts)."""
    shutil.rmtree(gnupghome, ignore_errors=True)
    gnupghome.mkdir(parents=True, mode=0o700)
    params = (
        "%no-protection\nKey-Type: eddsa\nKey-Curve: ed25519\nKey-Usage: sign\n"
        "Name-Real: spark-kinesis release-check (throwaway)\nName-Email: release-check@invalid\nExpire-Date: 1d\n"
        "%commit\n"
    )
    subprocess.run(
        ["gpg", "--batch", "--gen-key"],
        input=params,
        text=True,
        env={**os.environ, "GNUPGHOME": str(gnupghome)},
        check=True,
        capture_output=True,
    )


def stop_agent(gnupghome: Path) -> None:
    """gpg starts an agent per GNUPGHOME that outlives it: stop the throwaway key's."""
    subprocess.run(
        ["gpgconf", "--kill", "gpg-agent"], env={**os.environ, "GNUPGHOME": str(gnupghome)}, capture_output=True
    )


def tools_venv() -> Path:
    py = TOOLS_VENV / "bin" / "python"
    stamp = TOOLS_VENV / ".stamp"
    reqs = release.TOOLS_REQUIREMENTS.read_text()
    if not py.exists() or not stamp.exists() or stamp.read_text() != reqs:
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(TOOLS_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "-r", str(release.TOOLS_REQUIREMENTS)], check=True)
        stamp.write_text(reqs)
    return py


# ---------------------------------------------------------------------------------------------------------------
# The README's first example, from the published files.


def _example(package_path: bool) -> str:
    """The README's first python block, pointed at the emulator (EMULATOR, defined above it) and a local bucket
    (BUCKET) as tests/test_readme.py points it; for --packages, without configure() (the jars come from Spark)."""
    from test_readme import python_blocks

    code = python_blocks(ROOT / "README.md")[0].code
    code = re.sub(r'\bregion="[^"]*"', "**EMULATOR", code)
    if package_path:
        configured = re.compile(r"spark_kinesis\.configure\((SparkSession\.builder[^\n]*?)\)\.getOrCreate\(\)")
        code, n = configured.subn(r"\1.getOrCreate()", code)
        assert n == 1, "the README's first example no longer calls spark_kinesis.configure(SparkSession.builder...)"
    code = code.replace("s3://my-bucket/", "BUCKET")
    code = re.sub(r'"BUCKET([^"]*)"', r'BUCKET + "\1"', code)
    tail = (
        "\njvm = spark._jvm.io.github.sparkkinesis\n"
        "kpl = jvm.SparkLineCheck._java_lang_class.getProtectionDomain().getCodeSource().getLocation()\n"
        "line = jvm.KinesisForeachWriter._java_lang_class.getProtectionDomain().getCodeSource().getLocation()\n"
        'print("JARS " + json.dumps({"line": str(line), "kpl": str(kpl)}), flush=True)\n'
        "spark.stop()\n"
    )
    head = "import json, os, sys\nEMULATOR = json.loads(os.environ['EXAMPLE_EMULATOR'])\nBUCKET = sys.argv[1] + '/'\n"
    return head + code + tail


def _write_orders(bucket: Path) -> Counter[tuple[str, bytes]]:
    from test_readme import INPUTS, expected_records

    inp = INPUTS["orders"]
    rows = inp.rows()
    (bucket / "orders").mkdir(parents=True)
    for part in range(2):
        (bucket / "orders" / f"part-{part}.json").write_text("".join(json.dumps(r) + "\n" for r in rows[part::2]))
    want: Counter[tuple[str, bytes]] = expected_records(inp)
    return want


def run_examples(out: Path, version: str, work: Path) -> dict[str, float]:
    """Both install paths, each running the README's first example; returns the seconds each took."""
    from spark_kinesis_testkit.emulator import KinesisMock, read_stream

    pyspark_version = subprocess.run(
        [sys.executable, "-c", "import pyspark; print(pyspark.__version__)"], check=True, capture_output=True, text=True
    ).stdout.strip()
    wheel = out / "pypi" / f"spark_kinesis-{version}-py3-none-{platforms()[0].wheel_tag}.whl"
    venv = work / "venv"
    took: dict[str, float] = {}
    t = time.monotonic()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # The wheel alone from this directory; pyspark from PyPI (the library does not depend on it: clusters bring theirs).
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-compile",
            str(wheel),
            f"pyspark=={pyspark_version}",
        ],
        check=True,
        cwd=work,
    )
    took["venv"] = time.monotonic() - t
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_", "PYTHONPATH", "VIRTUAL_ENV"))}
    # As in an activated venv (spark-submit finds pyspark's Spark through the `python3` on PATH).
    env.update(PYTHONNOUSERSITE="1", SPARK_LOCAL_IP="127.0.0.1", AWS_EC2_METADATA_DISABLED="true")
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", PYSPARK_PYTHON=str(venv / "bin" / "python"))
    group = GROUP
    with KinesisMock() as kinesis:
        env["EXAMPLE_EMULATOR"] = json.dumps(kinesis.writer_options())
        for path in ("wheel", "packages"):
            t = time.monotonic()
            run = work / path
            run.mkdir()
            want = _write_orders(run / "bucket")
            kinesis.create_stream("orders", 4)
            (run / "example.py").write_text(_example(path == "packages"))
            if path == "wheel":
                cmd = [str(venv / "bin" / "python"), "example.py", str(run / "bucket")]
            else:

                def venv_python(*args: str, check: bool, cwd: Path = run) -> str:
                    py = str(venv / "bin" / "python")
                    done = subprocess.run([py, *args], check=check, capture_output=True, text=True, env=env, cwd=cwd)
                    return done.stdout

                coords = venv_python("-c", "import spark_kinesis; print(spark_kinesis.coordinates('4'))", check=True)
                coords = coords.strip()
                shown = venv_python("-m", "spark_kinesis", check=False)
                if f"spark-kinesis {version}:" not in shown or f" {coords}\n" not in shown:
                    raise SystemExit(f"release-check: python -m spark_kinesis shows other than {coords}:\n{shown}")
                cmd = [
                    str(venv / "bin" / "spark-submit"),
                    "--master",
                    "local[2]",
                    "--packages",
                    coords,
                    "--repositories",
                    (out / "maven").as_uri(),
                    "--conf",
                    f"spark.jars.ivy={run / 'ivy'}",
                    "example.py",
                    str(run / "bucket"),
                ]
            done = subprocess.run(cmd, cwd=run, env=env, capture_output=True, text=True, timeout=900)
            (run / "output.log").write_text(done.stdout + done.stderr)
            if done.returncode != 0:
                raise SystemExit(
                    f"release-check: the README example via {path} exited {done.returncode}; "
                    f"{run / 'output.log'}:\n{done.stderr[-3000:]}"
                )
            jars = json.loads(next(ln[5:] for ln in done.stdout.splitlines() if ln.startswith("JARS ")))
            got = Counter((r.partition_key, r.data) for r in read_stream(kinesis.client(), "orders"))
            if got != want:
                raise SystemExit(
                    f"release-check: via {path}, the stream holds {sum(got.values())} records, "
                    f"{len(got - want)} unexpected, {len(want - got)} missing of {sum(want.values())}"
                )
            if path == "wheel":
                where = str(venv)
                bad = [k for k, v in jars.items() if where not in v]
            else:
                expected = {
                    "line": f"{group}_{coords.split(':')[1]}-{version}.jar",
                    "kpl": f"{group}_spark-kinesis-kpl-{version}.jar",
                }
                bad = [k for k, v in jars.items() if str(run / "ivy") not in v or not v.endswith(expected[k])]
                fetched = sorted(p.name for p in (run / "ivy" / "jars").glob("*.jar"))
                if fetched != sorted(expected.values()):
                    raise SystemExit(f"release-check: --packages fetched {fetched}, not {sorted(expected.values())}")
            if bad:
                raise SystemExit(f"release-check: via {path}, the JVM loaded {jars} (expected them from {path})")
            kinesis.client().delete_stream(StreamName="orders")
            _wait_gone(kinesis.client(), "orders")
            took[path] = time.monotonic() - t
            print(f"release-check: README example via {path}: {sum(want.values())} records read back, jars {jars}")
    t = time.monotonic()
    said = _elsewhere(out, version, venv, env, work / "elsewhere")
    took["elsewhere"] = time.monotonic() - t
    print(f"release-check: the macOS wheel's jars on this Linux: {said}")
    return took


#: A write whose jars are another platform's wheel's: the driver's DaemonCheck must name this platform.
_ELSEWHERE = """
import sys
from pyspark.sql import SparkSession
spark = SparkSession.builder.master("local[1]").config("spark.jars", sys.argv[1]).getOrCreate()
try:
    (spark.createDataFrame([("k", "v")], "partitionKey string, data string").write.format("kinesis")
     .option("stream_name", "s").option("region", "us-east-1").option("endpoint", "https://127.0.0.1:9")
     .mode("append").save())
except Exception as e:
    print("REFUSED " + str(e).splitlines()[0], flush=True)
"""


def _elsewhere(out: Path, version: str, venv: Path, env: dict[str, str], run: Path) -> str:
    """The macOS wheel's jars on this Linux driver (local mode): the write is refused, naming this platform and the one
    the bundle carries, before any daemon starts."""
    run.mkdir()
    osx = next(p for p in platforms() if p.folder == "osx")
    with zipfile.ZipFile(out / "pypi" / f"spark_kinesis-{version}-py3-none-{osx.wheel_tag}.whl") as whl:
        mvn = release.maven_version(version)
        jars = [f"spark_kinesis/jars/spark-kinesis-kpl-{mvn}.jar", f"spark_kinesis/jars/spark-kinesis-4_2.13-{mvn}.jar"]
        for j in jars:
            whl.extract(j, run)
    (run / "elsewhere.py").write_text(_ELSEWHERE)
    classpath = ",".join(str(run / j) for j in jars)
    done = subprocess.run(
        [str(venv / "bin" / "python"), "elsewhere.py", classpath], cwd=run, env=env, capture_output=True, text=True
    )
    (run / "output.log").write_text(done.stdout + done.stderr)
    said = next((ln[8:] for ln in done.stdout.splitlines() if ln.startswith("REFUSED ")), "")
    if "spark-kinesis carries no KPL daemon (it carries osx)" not in said or "linux-" not in said:
        raise SystemExit(
            f"release-check: the macOS wheel's jars on Linux were not refused by name: {said or done.stderr[-2000:]}"
        )
    return said


def _wait_gone(client: object, stream: str) -> None:
    for _ in range(100):
        try:
            client.describe_stream_summary(StreamName=stream)  # type: ignore[attr-defined]
        except Exception:
            return
        time.sleep(0.2)


def main(argv: list[str]) -> int:
    start = time.monotonic()
    gnupghome = ROOT / ".cache" / "release" / "gnupg"
    if argv[:1] == ["check"] and len(argv) == 2:
        # The key that signed the staging: the release's (GNUPGHOME), else the throwaway one of the last release-check.
        gnupghome = Path(os.environ.get("GNUPGHOME", gnupghome))
        out = Path(argv[1])
        version = release.release_version(release.read_version())
        try:
            problems = check(out, version, gnupghome, line_artifacts(), TOOLS_VENV / "bin" / "twine")
        finally:
            stop_agent(gnupghome)
        for p in problems:
            print(f"release-check: {p}")
        print("release-check: ok" if not problems else f"release-check: {len(problems)} problems")
        return 1 if problems else 0
    if argv == ["examples"]:  # 4 alone, on what the last run staged
        work = ROOT / ".cache" / "release" / "run"
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        took = run_examples(OUT, release.release_version(release.read_version()), work)
        print("release-check: ok, " + ", ".join(f"{k} {v:.0f}s" for k, v in took.items()))
        return 0
    if argv:
        print(__doc__, file=sys.stderr)
        return 2
    tools = tools_venv()
    throwaway_key(gnupghome)
    os.environ["GNUPGHOME"] = str(gnupghome)
    try:
        version = release.stage(OUT, str(tools))
        built = time.monotonic()
        problems = check(OUT, version, gnupghome, line_artifacts(), tools.parent / "twine")
    finally:
        stop_agent(gnupghome)
    for p in problems:
        print(f"release-check: {p}")
    if problems:
        print(f"release-check: {len(problems)} problems in {OUT}")
        return 1
    sizes = {p.name: p.stat().st_size for p in sorted((OUT / "pypi").iterdir())}
    print("release-check: staged and checked " + ", ".join(f"{n} {s / 1e6:.1f} MB" for n, s in sizes.items()))
    work = ROOT / ".cache" / "release" / "run"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    took = run_examples(OUT, version, work)
    print(
        f"release-check: ok {version}: build {built - start:.0f}s, "
        + ", ".join(f"{k} {v:.0f}s" for k, v in took.items())
        + f", total {time.monotonic() - start:.0f}s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
