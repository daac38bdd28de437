"""The writer beside what Spark platforms put on the class path: their AWS SDK, hadoop-aws, another KPL.

EMR and Glue put their SDK bundle on the JVM's class path (``spark.driver/executor.extraClassPath``), hadoop-aws users
add theirs to ``spark.jars``, EMR ships the awslabs Kinesis connector with a KPL 1.0.x inside (docs/runtimes.md).
Each case runs a probe Spark with such jars on the JVM's class path, or in spark.jars ahead of ours, writes through
both entry points (``foreach(KinesisWriter)``, streaming; ``format("kinesis")``, batch: other ids, the same stream, so
one pooled producer serves both) and reads every record back, record by record. The bundle's relocated SDK is the one
doing it (its classes load from our jar, the platform's from its own), and the only daemons this JVM starts are ours.
The jars come from Maven Central (`make platform-jars`).
"""

from __future__ import annotations

import base64
import hashlib
import re
import uuid
import zipfile
from pathlib import Path
from typing import Any

import pyspark
import pytest
from helpers import HERE, LOG_LINE, OURS, ROOT, account, rows_for, session_jars, write_input
from probe import run_probe
from spark_kinesis_testkit.emulator import FAKE_ACCESS_KEY_ID, FAKE_SECRET_ACCESS_KEY, REGION, read_stream
from spark_kinesis_testkit.moto_server import S3A_JARS, MotoServer

# `platforms`: `make test-extended` runs these (with the 3 GB of platform jars it fetches), `make test` does not.
pytestmark = [pytest.mark.e2e, pytest.mark.platforms]

PLATFORM_JARS = ROOT / ".cache" / "platform-jars"
N = 120
#: The ids each entry writes: the streaming query (foreach) and the batch write (format).
STREAMED, BATCHED = range(N), range(N, 2 * N)
SPARK4 = int(pyspark.__version__.split(".")[0]) >= 4

#: SDK jars as platforms carry them (tools/platform-jars/pom.xml says whose each is).
SDKS = [
    "bundle-2.23.19.jar",
    "bundle-2.24.6.jar",
    "bundle-2.25.53.jar",
    "bundle-2.35.4.jar",
    "bundle-2.54.3.jar",
    "aws-java-sdk-bundle-1.12.782.jar",
]
#: A second KPL as the awslabs connector carries it (1.0.6; unrelocated here, which collides more, not less), with
#: what it needs beyond pyspark: its protobuf, the Glue jars its constructor links against, an SDK v2.
OTHER_KPL = [
    "amazon-kinesis-producer-1.0.6.jar",
    "protobuf-java-4.29.0.jar",
    "schema-registry-serde-1.1.24.jar",
    "schema-registry-common-1.1.24.jar",
    "bundle-2.35.4.jar",
]
#: Which leg of `make test` runs each case. On the JVM's class path a jar sits under Spark's own classes (their Netty,
#: their Jackson), so that placement depends on the line: the Spark 3.5 leg (EMR 7 runs Spark 3.5, Glue 5 too) runs EMR
#: 7's SDKs there and the v1 bundle, the Spark 4 leg 2.25.53, 2.35.4, 2.54.3 and the v1 bundle.
EVERY_LINE = {
    ("bundle-2.23.19.jar", "classpath"),
    ("bundle-2.24.6.jar", "classpath"),
    ("bundle-2.25.53.jar", "classpath"),
    ("aws-java-sdk-bundle-1.12.782.jar", "classpath"),
}
#: In spark.jars a jar is seen only by the user class loader, beside our KPL bundle (one jar for every line), and no
#: class of Spark's links against it: what meets there does not depend on the line, so each such case runs on one leg,
#: EMR 7's SDKs on the Spark 3.5 leg (which ends first) and the rest on the Spark 4 leg.
SPARK35_LEG = {
    ("bundle-2.23.19.jar", "jars"),
    ("bundle-2.24.6.jar", "jars"),
    ("bundle-2.25.53.jar", "jars"),
}
#: Bundles before 2.25 carry an unrelocated Netty 4.1 that, ahead of Spark 4's own on the JVM's class path, stops
#: Spark 4 itself from starting (NoSuchMethodError in SparkContext, before any writer): no platform pairs the two.
#: They run on the Spark 3.5 leg, where EMR 7 has them.
NOT_ON_SPARK4 = {("bundle-2.23.19.jar", "classpath"), ("bundle-2.24.6.jar", "classpath")}


def _jar(name: str) -> str:
    path = PLATFORM_JARS / name
    if not path.exists():
        pytest.fail(f"{path} is missing: run `make platform-jars`", pytrace=False)
    return str(path)


def _daemon_sha1(jar: str, resource: str) -> str:
    with zipfile.ZipFile(jar) as z:
        return hashlib.sha1(z.read(resource)).hexdigest()


def _ours_sha1() -> str:
    bundle = next(j for j in session_jars().split(",") if "spark-kinesis-kpl-" in j)
    return _daemon_sha1(bundle, HERE.resource)


def _round_trip(
    kinesis: Any,
    tmp_path: Path,
    platform: list[str],
    placement: str,
    inputs: tuple[str, str] | None = None,
    checkpoint: str | None = None,
    s3: dict[str, str] | None = None,
    other_kpl: bool = False,
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Runs the probe (``inputs``: where the streaming query and the batch write read, by default local files of
    STREAMED and BATCHED); checks the stream record by record, the daemons the probe started and the JVM log.
    Returns what the probe said (each event's data by its name) and its config."""
    suffix = uuid.uuid4().hex[:6]
    stream = f"cp-{suffix}"
    kinesis.create_stream(stream, 2)
    if inputs is None:
        write_input(tmp_path / "input", rows_for(STREAMED), files=2)
        write_input(tmp_path / "batch-input", rows_for(BATCHED), files=2)
        inputs = (str(tmp_path / "input"), str(tmp_path / "batch-input"))
    cfg: dict[str, Any] = {
        "jars": session_jars(),
        "platform": platform,
        "placement": placement,
        "writer": kinesis.writer_options(),
        "input": inputs[0],
        "batch_input": inputs[1],
        "checkpoint": checkpoint or str(tmp_path / "checkpoint"),
        "stream": stream,
        **({"s3": s3} if s3 else {}),
    }
    if other_kpl:
        other = f"cp-other-{suffix}"
        kinesis.create_stream(other, 1)
        port = int(kinesis.tls_endpoint.rsplit(":", 1)[1])
        cfg["other_kpl"] = {
            "stream": other,
            "port": port,
            "region": REGION,
            "key_id": FAKE_ACCESS_KEY_ID,
            "secret": FAKE_SECRET_ACCESS_KEY,
            "n": 50,
        }
    result = run_probe("classpath_probe.py", cfg, tmp_path, timeout_s=420)
    said, log = result.said, result.jvm_log

    d = account(range(2 * N), read_stream(kinesis.client(), stream))
    for entry, ids in (("foreach", STREAMED), ("format", BATCHED)):
        missing = [i for i in d.missing if i in ids]
        assert missing == [], (entry, missing[:10])
        for r in rows_for(ids):
            got = d.by_id[r["id"]]
            assert (got.partition_key, got.data) == (r["pk"], base64.b64decode(r["b64"])), (entry, r["id"])
    assert d.duplicates == 0, d.duplicates

    locations = said["LOCATIONS"]
    ours = next(j for j in session_jars().split(",") if "spark-kinesis-kpl-" in j)
    assert locations["ours"] is not None and locations["ours"].endswith(Path(ours).name), locations
    daemons = said["DAEMONS"]
    assert daemons, "the writer's KPL daemon was not running after the writes"
    sha = _ours_sha1()
    assert all(re.search(rf"/spark-kinesis-kpl-native-binaries/kinesis_producer_{sha}$", d, re.I) for d in daemons), (
        daemons,
        sha,
    )
    errors = [
        m.group(0)
        for m in map(LOG_LINE.match, log.splitlines())
        if m and m["level"] == "ERROR" and m["logger"].startswith(OURS)
    ]
    assert errors == [], errors[:5]
    return said, cfg


def _sdk_cases() -> list[Any]:
    cases = []
    for jar in SDKS:
        for placement in ("classpath", "jars"):
            marks = [pytest.mark.every_line] if (jar, placement) in EVERY_LINE else []
            if (jar, placement) in SPARK35_LEG:
                marks.append(pytest.mark.spark35_leg)
            if (jar, placement) in NOT_ON_SPARK4:
                marks.append(pytest.mark.skipif(SPARK4, reason="its Netty stops Spark 4 itself from starting"))
            cases.append(pytest.param(jar, placement, marks=marks, id=f"{jar.removesuffix('.jar')}-{placement}"))
    return cases


@pytest.mark.parametrize(("jar", "placement"), _sdk_cases())
def test_round_trip_beside_a_platform_sdk(kinesis: Any, tmp_path: Path, jar: str, placement: str) -> None:
    said, _ = _round_trip(kinesis, tmp_path, [_jar(jar)], placement)
    locations = said["LOCATIONS"]
    # Both SDKs in one class loader: the platform's under its own name, from its jar; ours relocated, from ours.
    platform_class = "platform_sdk_v1" if jar.startswith("aws-java-sdk") else "platform_sdk"
    assert locations[platform_class] is not None and locations[platform_class].endswith(jar), locations


@pytest.mark.spark35_leg  # line-independent: the KPL bundle's relocation and its daemon's path, on either line
@pytest.mark.parametrize("placement", ["classpath", "jars", "jars_after"])
def test_another_kpl_starts_its_own_daemon_and_ours_ours(kinesis: Any, tmp_path: Path, placement: str) -> None:
    """The awslabs connector's KPL beside ours, on the JVM's class path or in spark.jars before or after ours: each
    KPL extracts and starts its own daemon, and both deliver."""
    platform = [_jar(j) for j in OTHER_KPL]
    said, cfg = _round_trip(kinesis, tmp_path, platform, placement, other_kpl=True)
    other = said["OTHER_KPL"]
    assert other["successful"] == 50, other
    theirs = _daemon_sha1(platform[0], "amazon-kinesis-producer-native-binaries/linux-x86_64/kinesis_producer")
    assert any(
        re.search(rf"/amazon-kinesis-producer-native-binaries/kinesis_producer_{theirs}$", d, re.I)
        for d in other["daemons"]
    ), (
        other,
        theirs,
    )
    got = read_stream(kinesis.client(), cfg["other_kpl"]["stream"])
    assert sorted(r.data for r in got) == sorted(f"other:{i}".encode() for i in range(50))


@pytest.mark.skipif(not SPARK4, reason="hadoop-aws 3.5.0 is for the Hadoop 3.5.0 that pyspark 4 carries")
def test_s3_input_and_checkpoint_through_s3a_beside_its_sdk(kinesis: Any, tmp_path: Path) -> None:
    """The README's shape on an EMR-like class path: JSON read from S3 and the checkpoint kept on S3 through S3A
    (moto's S3 on loopback), hadoop-aws and the SDK bundle it pins on the JVM's class path. The platform's SDK serves
    S3A while ours serves the writer, in one JVM."""
    with MotoServer() as moto:
        s3 = moto.s3()
        s3.create_bucket(Bucket="cp-bucket")
        for prefix, ids in (("input", STREAMED), ("batch-input", BATCHED)):
            write_input(tmp_path / "upload" / prefix, rows_for(ids), files=2)
            for f in sorted((tmp_path / "upload" / prefix).iterdir()):
                s3.upload_file(str(f), "cp-bucket", f"{prefix}/{f.name}")
        settings = moto.s3a_settings()
        platform = [_jar(j) for j in S3A_JARS]
        said, _ = _round_trip(
            kinesis,
            tmp_path,
            platform,
            "classpath",
            inputs=("s3a://cp-bucket/input/", "s3a://cp-bucket/batch-input/"),
            checkpoint="s3a://cp-bucket/checkpoint/",
            s3=settings,
        )
        assert said["LOCATIONS"]["s3a"].endswith("hadoop-aws-3.5.0.jar"), said["LOCATIONS"]
        keys = {o["Key"] for o in s3.list_objects_v2(Bucket="cp-bucket", Prefix="checkpoint/")["Contents"]}
        assert {"checkpoint/offsets/0", "checkpoint/commits/0"} <= keys, sorted(keys)
