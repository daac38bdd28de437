"""A sink of a Spark Declarative Pipeline (pyspark 4.1+), run as a user runs one: ``spark-pipelines run`` on a spec.

The pipeline file declares ``dp.create_sink(name, format="kinesis", options=KinesisWriter(...).options())`` and an
``@dp.append_flow`` from a JSON directory into it; the CLI starts its own Spark (a local Connect server) with the
writer's jars (``--jars``). Every id is read back with its exact bytes and key. The writer's options, secret key
included, reach the pipeline file through the environment, never a command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyspark
import pytest
from helpers import account, payload, rows_for, session_jars, write_input
from spark_kinesis_testkit.emulator import read_stream

SPARK_4_1 = tuple(int(p) for p in pyspark.__version__.split(".")[:2]) >= (4, 1)

FLOWS = """
import json, os
from pyspark import pipelines as dp
from pyspark.sql import SparkSession, functions as F
from spark_kinesis import KinesisWriter

spark = SparkSession.active()
dp.create_sink("to_kinesis", format="kinesis", options=KinesisWriter(**json.loads(os.environ["WRITER"])).options())


@dp.append_flow(target="to_kinesis")
def events():
    rows = spark.readStream.schema("id LONG, pk STRING, b64 STRING").json(os.environ["INPUT"])
    return rows.select(F.col("pk").alias("partitionKey"), F.unbase64("b64").alias("data"))
"""


@pytest.mark.e2e
@pytest.mark.skipif(not SPARK_4_1, reason="Spark Declarative Pipelines came with Spark 4.1")
def test_declarative_pipeline_sink(kinesis: Any, stream: str, tmp_path: Path) -> None:
    n = 300
    write_input(tmp_path / "in", rows_for(range(n), key=lambda i: f"user-{i}"), files=3)
    (tmp_path / "flows.py").write_text(FLOWS)
    spec = {
        "name": "kinesis-sink",
        "storage": (tmp_path / "storage").as_uri(),
        "libraries": [{"glob": {"include": "flows.py"}}],
    }
    (tmp_path / "spark-pipeline.yml").write_text(json.dumps(spec))  # YAML takes JSON
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "WRITER": json.dumps({"stream_name": stream, **kinesis.writer_options()}),
        "INPUT": str(tmp_path / "in"),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",  # the CLI finds pyspark through `python`
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
    }
    done = subprocess.run(
        [str(bin_dir / "spark-pipelines"), "--jars", session_jars(), "run", "--spec", "spark-pipeline.yml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert "Run is COMPLETED" in done.stdout + done.stderr, done.stdout[-3000:]
    d = account(range(n), read_stream(kinesis.client(), stream))
    assert d.missing == [] and d.duplicates == 0, (d.missing[:10], d.duplicates)
    assert all(r.data == payload(i) and r.partition_key == f"user-{i}" for i, r in d.by_id.items())
