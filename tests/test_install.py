"""Acceptance 8: the two install paths, each running a real query from a clean interpreter.

(a) the wheel built from python/, installed into a fresh venv, using only the jar it carries;
(b) spark-submit --packages resolving the thin jar and the KPL from a local Maven repository.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import account, payload, rows_for, write_input
from spark_kinesis.testing import read_stream

ROOT = Path(__file__).resolve().parents[1]
N = 500


def _run_probe(cmd: list[str], cfg: dict, env: dict, cwd: Path) -> dict:
    proc = subprocess.run(
        [*cmd, str(ROOT / "tests" / "install_probe.py"), json.dumps(cfg)],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("PROBE ")]
    assert proc.returncode == 0 and lines, (
        f"probe failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
    )
    result = json.loads(lines[-1][len("PROBE ") :])
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


@pytest.mark.install
def test_wheel_in_a_fresh_venv_uses_its_own_jar(kinesis, stream, tmp_path):
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT / "python")],
        check=True,
        capture_output=True,
        timeout=600,
    )
    wheel = next(dist.glob("spark_kinesis-*.whl"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = venv / "bin" / "python"
    pyspark_version = subprocess.run(
        [sys.executable, "-c", "import pyspark; print(pyspark.__version__)"], check=True, capture_output=True, text=True
    ).stdout.strip()
    subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(wheel), f"pyspark=={pyspark_version}"],
        check=True,
        capture_output=True,
        timeout=900,
    )

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
    assert result["module"].startswith(site), result
    assert result["jvm_jar"].startswith("file:" + site) and "spark-kinesis-assembly" in result["jvm_jar"], result
    _check_delivery(kinesis, stream)


def _maven_mirror() -> list[str]:
    settings = Path.home() / ".m2" / "settings.xml"
    if not settings.exists():
        return []
    m = re.search(r"<mirror>.*?<url>([^<]+)</url>", settings.read_text(), re.S)
    return [m.group(1).strip()] if m else []


@pytest.mark.install
def test_spark_submit_packages_resolves_thin_jar_and_kpl(kinesis, stream, tmp_path):
    repo = Path(os.environ.get("SPARK_KINESIS_M2_REPO", ROOT / ".cache" / "m2repo"))
    version = re.search(r'__version__ = "(.+)"', (ROOT / "python/spark_kinesis/_version.py").read_text()).group(1)
    mvn_version = re.sub(r"\.dev\d*$", "-SNAPSHOT", version)
    coords = f"io.github.spark-kinesis:spark-kinesis_2.13:{mvn_version}"
    assert (repo / "io/github/spark-kinesis/spark-kinesis_2.13" / mvn_version).is_dir(), f"run `make jar` ({repo})"

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
    ivy = ROOT / ".cache" / "ivy-spark"
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
    assert "spark-kinesis_2.13" in result["jvm_jar"] and "assembly" not in result["jvm_jar"], result
    jars = {p.name for p in (ivy / "jars").glob("*.jar")}
    assert any(j.startswith("software.amazon.kinesis_amazon-kinesis-producer-1.0.7") for j in jars), sorted(jars)
    leaked = sorted(
        j for j in jars if re.match(r"(org.scala-lang|org.apache.kafka|org.jetbrains.kotlin|org.apache.avro)", j)
    )
    assert leaked == [], f"--packages pulled in what the POM should exclude: {leaked}"
    _check_delivery(kinesis, stream)
