"""The two install paths, each running a real query from a clean interpreter.

(a) the wheel built from python/, installed into a fresh venv, using only the jar it carries;
(b) spark-submit --packages resolving the thin jar and the KPL from a local Maven repository.
"""

from __future__ import annotations

import json
import os
import platform
import re
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
import spark_kinesis
from helpers import HERE, account, payload, rows_for, write_input
from probe import run_probe
from spark_kinesis._platforms import daemon_root, platforms
from spark_kinesis_testkit.emulator import read_stream

ROOT = Path(__file__).resolve().parents[1]
N = 500

sys.path.insert(0, str(ROOT / "tools"))
import release
import release_check


def _run_probe(launcher: list[str], cfg: dict, env: dict, cwd: Path) -> dict[str, Any]:
    said = run_probe("install_probe.py", cfg, cwd, timeout_s=900, env=env, launcher=launcher, cwd=cwd).said
    result: dict[str, Any] = said["DONE"]
    assert result["exception"] is None, result["exception"]
    return result


def _check_delivery(kinesis, stream: str) -> None:
    d = account(range(N), read_stream(kinesis.client(), stream))
    assert d.missing == []
    assert all(d.by_id[i].data == payload(i) for i in range(N))


def _clean_env() -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def _site_packages(py: Path) -> Path:
    out = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return Path(out.stdout.strip())


def _installed_coordinates() -> str:
    spark, scala = spark_kinesis.installed_spark()
    return spark_kinesis.coordinates(spark, scala)


@pytest.mark.install
@pytest.mark.every_line
def test_wheel_in_a_fresh_venv_uses_its_own_jar(kinesis, stream, tmp_path, wheel):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", "--no-compile", str(wheel)],
        check=True,
        capture_output=True,
        timeout=300,
    )
    # pyspark (and py4j, its one dependency) linked in from this leg's venv rather than installed: unpacking its
    # 400 MB was most of this test's time, and `make release-check` installs the wheel and pyspark as a user does.
    # A .pth folder comes after site-packages on sys.path, so the wheel's spark_kinesis is the one imported.
    import py4j
    import pyspark

    linked = tmp_path / "linked"
    linked.mkdir()
    for package in (pyspark, py4j):
        (linked / package.__name__).symlink_to(Path(package.__file__).parent, target_is_directory=True)
    (_site_packages(py) / "linked-pyspark.pth").write_text(f"{linked}\n")

    write_input(tmp_path / "in", rows_for(range(N)), files=2)
    cfg = {
        "input": str(tmp_path / "in"),
        "checkpoint": str(tmp_path / "ckpt"),
        "stream": stream,
        "writer_options": kinesis.writer_options(),
        "configure": True,
    }
    result = _run_probe([str(py)], cfg, _clean_env(), cwd=tmp_path)
    site = str(venv)
    artifact = _installed_coordinates().split(":")[1]
    assert result["module"].startswith(site), result
    # Both jars come from the installed wheel: the KPL bundle and the jar of the installed pyspark's line.
    assert result["jvm_jar"].startswith("file:" + site) and f"/jars/{artifact}-" in result["jvm_jar"], result
    assert result["kpl_jar"].startswith("file:" + site) and "/jars/spark-kinesis-kpl-" in result["kpl_jar"], result
    _check_delivery(kinesis, stream)


def _maven_mirror() -> list[str]:
    settings = Path.home() / ".m2" / "settings.xml"
    if not settings.exists():
        return []
    m = re.search(r"<mirror>.*?<url>([^<]+)</url>", settings.read_text(), re.S)
    return [m.group(1).strip()] if m else []


@pytest.mark.install
@pytest.mark.every_line
def test_spark_submit_packages_resolves_thin_jar_and_kpl(kinesis, stream, tmp_path):
    repo = Path(os.environ.get("SPARK_KINESIS_M2_REPO", ROOT / ".cache" / "m2repo"))
    coords = _installed_coordinates()  # spark-kinesis-3.5_2.12 on pip's pyspark 3.5, -4_2.13 on pyspark 4
    group, artifact, mvn_version = coords.split(":")
    assert (repo / group.replace(".", "/") / artifact / mvn_version).is_dir(), f"run `make jar` ({repo})"

    write_input(tmp_path / "in", rows_for(range(N)), files=2)
    cfg = {
        "input": str(tmp_path / "in"),
        "checkpoint": str(tmp_path / "ckpt"),
        "stream": stream,
        "writer_options": kinesis.writer_options(),
        "configure": False,
    }
    spark_submit = Path(sys.executable).parent / "spark-submit"
    repos = ",".join([repo.as_uri(), *_maven_mirror()])
    env = _clean_env()
    # The Python facade from source, but no jar from it: the JVM side must come from --packages.
    env["PYTHONPATH"] = str(ROOT / "python")
    env["PYSPARK_PYTHON"] = sys.executable
    ivy = tmp_path / "ivy"  # empty: it shows exactly what --packages resolves
    cmd = [
        str(spark_submit),
        "--master",
        "local[2]",
        "--packages",
        coords,
        "--repositories",
        repos,
        "--conf",
        f"spark.jars.ivy={ivy}",
    ]
    result = _run_probe(cmd, cfg, env, cwd=tmp_path)
    assert f"{group}_{artifact}-{mvn_version}.jar" in result["jvm_jar"], result
    assert f"{group}_spark-kinesis-kpl-{mvn_version}.jar" in result["kpl_jar"], result
    # The line jar's POM names only the KPL bundle, which carries the KPL and its dependencies relocated:
    # nothing else reaches Spark's classpath (Spark 3.5's Guava 14 never meets the KPL's Guava 33).
    jars = sorted(p.name for p in (ivy / "jars").glob("*.jar"))
    assert jars == [f"{group}_{artifact}-{mvn_version}.jar", f"{group}_spark-kinesis-kpl-{mvn_version}.jar"], jars
    _check_delivery(kinesis, stream)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This platform's wheel as a release builds it (tools/release.py: the KPL bundle with this platform's daemon only),
    from the jars `make jar` bundled into python/; built in a copy (no build/ leftovers, and the two legs of
    `make test` never build in the same folder at once)."""
    build = [sys.executable, "-m", "build"]  # isolated: setuptools from PyPI, as pyproject.toml asks
    return release.build_wheel(ROOT / "python", tmp_path_factory.mktemp("dist"), HERE.folder, HERE.wheel_tag, build)


#: The README states the wheels' sizes; each carries the KPL bundle once, with one platform's daemon.
WHEEL_MAX_BYTES = release_check.WHEEL_MAX_BYTES


@pytest.mark.install
def test_wheel_carries_one_bundle_and_a_jar_per_line(wheel: Path) -> None:
    mvn = spark_kinesis._jar.maven_version()
    lines = [
        f"spark-kinesis-{line}_{scala}-{mvn}.jar"
        for line, scalas in spark_kinesis._facts.lines().items()
        for scala in scalas
    ]
    with zipfile.ZipFile(wheel) as whl:
        names = whl.namelist()
        jars = sorted(n.rsplit("/", 1)[1] for n in names if n.startswith("spark_kinesis/jars/") and n.endswith(".jar"))
        assert jars == sorted([f"spark-kinesis-kpl-{mvn}.jar", *lines])
        licences = {n.rsplit("/", 1)[1] for n in names if ".dist-info/licenses/" in n}
        assert licences == {"LICENSE", "NOTICE"}, licences
        notice = whl.read("spark_kinesis/jars/NOTICE").decode()
        # Ours first, then the bundled jars' own notices (Jackson's and the AWS SDK's among them).
        assert notice.startswith("spark-kinesis\n") and "Jackson" in notice and "AWS SDK for Java" in notice
        # What the bundle carries, as the build resolved it; docs/bundle.md shows the same table.
        bundled = whl.read("spark_kinesis/jars/BUNDLED.md").decode()
        assert "| software.amazon.kinesis | amazon-kinesis-producer |" in bundled, bundled
        assert bundled in (ROOT / "docs" / "bundle.md").read_text(), (
            "docs/bundle.md differs from what the build bundles: copy python/spark_kinesis/jars/BUNDLED.md into it"
        )
        # The facts resource Python reads (options, totals, lines): the one every line jar carries.
        facts = whl.read("spark_kinesis/jars/spark-kinesis.json")
        assert [o["name"] for o in json.loads(facts)["options"]][:2] == ["stream_name", "region"]
        for jar in jars:
            with zipfile.ZipFile(whl.open(f"spark_kinesis/jars/{jar}")) as j:
                assert {"META-INF/LICENSE", "META-INF/NOTICE"} <= set(j.namelist()), jar
                if jar in lines:
                    assert j.read("META-INF/spark-kinesis/spark-kinesis.json") == facts, jar
                # Java 8 (class file 52) everywhere but the Spark 4 line, which needs Java 17 (61).
                majors = {int.from_bytes(j.read(n)[6:8], "big") for n in j.namelist() if n.endswith(".class")}
                assert max(majors) == (61 if jar.startswith("spark-kinesis-4_") else 52), (jar, sorted(majors))
                if jar.startswith("spark-kinesis-kpl-"):
                    daemons = [n for n in j.namelist() if n.startswith(f"{daemon_root()}/") and not n.endswith("/")]
                    assert daemons == [HERE.resource], daemons
        assert whl.read("spark_kinesis/jars/PLATFORM").decode().strip() == HERE.folder
    assert wheel.name.endswith(f"-py3-none-{HERE.wheel_tag}.whl"), wheel.name
    # The whole check a release runs on it (name, tag against the daemon, size).
    assert release_check.check_wheel(wheel, spark_kinesis.__version__, HERE.folder, HERE.wheel_tag) == []
    assert wheel.stat().st_size <= WHEEL_MAX_BYTES, f"{wheel.stat().st_size} bytes"


@pytest.mark.install
def test_wheel_ships_only_the_library(wheel: Path) -> None:
    """The wheel holds the library (its modules, py.typed and the options' stub, the jars) and nothing of the test
    harness."""
    with zipfile.ZipFile(wheel) as whl:
        names = [n for n in whl.namelist() if ".dist-info/" not in n]
    source = ROOT / "python"
    library = sorted(p.relative_to(source).as_posix() for p in (source / "spark_kinesis").rglob("*.py"))
    assert sorted(n for n in names if n.endswith(".py")) == library
    assert {f"spark_kinesis/{m}.py" for m in ("__init__", "_jar", "_version", "writer")} <= set(library)
    harness = [n for n in names if re.search(r"testing|faults|testkit", n)]
    assert harness == [], f"test harness in the wheel: {harness}"
    data = re.compile(
        r"spark_kinesis/(py\.typed|_writer_options\.pyi"
        r"|jars/[^/]+\.jar|jars/NOTICE|jars/BUNDLED\.md|jars/spark-kinesis\.json|jars/PLATFORM)"
    )
    other = [n for n in names if not n.endswith(".py") and not data.fullmatch(n)]
    assert other == [], other
    # What type checkers read of an installed package (tests/test_typing.py runs mypy against the same files).
    assert {"spark_kinesis/py.typed", "spark_kinesis/_writer_options.pyi"} <= set(names), names


@pytest.mark.install
@pytest.mark.spark35_leg  # no Spark: the leg that ends first
def test_the_wheel_without_jars_names_the_platform(tmp_path: Path) -> None:
    """The `any` wheel, for platforms the KPL ships no daemon for, installed alone: the Python API imports, and
    configure() (through jar_paths) fails naming this machine's platform, where daemons exist and --packages, instead of
    a missing-binary failure in an executor."""
    build = [sys.executable, "-m", "build"]
    wheel = release.build_wheel(ROOT / "python", tmp_path / "dist", "none", "any", build)
    assert release_check.check_wheel(wheel, spark_kinesis.__version__, "none", "any") == []
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True, timeout=300)
    code = "import spark_kinesis; from spark_kinesis import KinesisWriter; spark_kinesis.jar_paths('4.0.1', '2.13')"
    done = subprocess.run([str(py), "-c", code], capture_output=True, text=True, env=_clean_env(), cwd=tmp_path)
    said = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and said.startswith("RuntimeError: spark_kinesis has no jars here"), done.stderr
    assert f"this machine runs {platform.system()} {platform.machine()}" in said, said
    assert all(p.shown in said for p in platforms()), said
    assert f"--packages {spark_kinesis.coordinates('4.0.1', '2.13')}" in said, said
