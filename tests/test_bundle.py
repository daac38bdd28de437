"""The KPL bundle carries nothing a Spark platform also carries, under its own name.

EMR, EMR Serverless, Glue, Databricks and hadoop-aws put their own AWS SDK (and Guava, Jackson, protobuf, HttpClient,
an older KPL) on the JVM's class path; two copies of a class name in one class loader means whichever comes first
wins (docs/bundle.md). So every path in the bundle is under our package or the relocated prefix, or on the allowlist
below with its reason; and no class or text resource still names a relocated package by a class name or a resource
path (a service file, a resource the SDK loads by name, a class name in a string), which would reach for the
platform's copy instead of ours. A relocation rule removed from build.sbt fails this test.
"""

from __future__ import annotations

import re
import struct
import zipfile
from pathlib import Path

import pytest
import spark_kinesis
from helpers import HERE

ROOT = Path(__file__).resolve().parents[1]
OURS = "io/github/sparkkinesis/"

#: Paths outside our package, each with the reason it may be there.
ALLOWED_PATHS: list[tuple[str, str]] = [
    (r"META-INF/MANIFEST\.MF", "the jar's manifest"),
    (r"META-INF/[A-Za-z_-]*(LICENSE|NOTICE)[A-Za-z_.-]*", "licences and notices of the bundled jars"),
    (r"META-INF/spark-kinesis/[^/]+", "the build's own facts (lines, what the bundle carries)"),
    (r"META-INF/services/io\.github\.sparkkinesis\.shaded\.[\w.$]+", "service files of relocated interfaces"),
    (r"spark-kinesis-kpl-native-binaries/[\w-]+/[\w.-]+", "the KPL's daemons, at a path of ours (KplResources)"),
    (r"spark-kinesis-kpl-cacerts/[0-9a-f]{8}\.0", "the KPL's CA certificates, at a path of ours (KplResources)"),
    (
        r"org/publicsuffix/list/effective_tld_names\.dat",
        "the public suffix list the relocated HttpClient 5 loads by this absolute path; every copy is the same list",
    ),
]

#: Packages the bundle relocates, and the KPL's own resource roots (as it spells them): named anywhere in a class
#: constant or a text resource, each would reach past the bundle to whatever the platform has.
UNRELOCATED = re.compile(
    r"(software|com|org)[./](amazon[./](awssdk|eventstream|kinesis[./]producer)|google[./](common|protobuf|thirdparty)"
    r"|fasterxml[./]jackson|apache[./](hc|http|commons[./](io|lang3|codec|logging))|jspecify|reactivestreams"
    r"|amazonaws[./]services[./]schemaregistry)\b|amazon-kinesis-producer-native-binaries|^cacerts/$"
)

#: Constants that name a relocated package but are not a reference, each kind with its reason.
ALLOWED_CONSTANTS: list[tuple[str, str]] = [
    (r"[\w.-]+:[\w.-]+", "Maven coordinates (group:artifact) that the SDK and Jackson name in error messages"),
    (
        r"\.\*/com/google/common/base/\.\*",
        "the path pattern of an Error Prone annotation on Guava, never read at run time",
    ),
]


def _bundle() -> Path:
    jars = sorted((Path(spark_kinesis.__file__).parent / "jars").glob("spark-kinesis-kpl-*.jar"))
    assert len(jars) == 1, f"expected one KPL bundle in the package (make jar): {jars}"
    return jars[0]


def utf8_constants(klass: bytes) -> list[str]:
    """The CONSTANT_Utf8 entries of a class file (JVMS 4.4): names, descriptors and string literals."""
    count = struct.unpack(">H", klass[8:10])[0]
    out, pos, i = [], 10, 1
    sizes = {3: 4, 4: 4, 5: 8, 6: 8, 7: 2, 8: 2, 9: 4, 10: 4, 11: 4, 12: 4, 15: 3, 16: 2, 17: 4, 18: 4, 19: 2, 20: 2}
    while i < count:
        tag = klass[pos]
        if tag == 1:
            length = struct.unpack(">H", klass[pos + 1 : pos + 3])[0]
            out.append(klass[pos + 3 : pos + 3 + length].decode("utf-8", errors="replace"))
            pos += 3 + length
        else:
            pos += 1 + sizes[tag]
            i += tag in (5, 6)  # longs and doubles take two slots
        i += 1
    return out


def _is_reference(constant: str) -> bool:
    """Prose (an error message, with spaces) and serialized protobuf descriptors (their java_package option, never
    used to load a class) mention package names without reaching for them."""
    return (
        " " not in constant
        and constant.isprintable()
        and not any(re.fullmatch(p, constant) for p, _ in ALLOWED_CONSTANTS)
    )


def unrelocated_references(jar: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    with zipfile.ZipFile(jar) as z:
        for name in z.namelist():
            if name.endswith("/") or "native-binaries/" in name:
                continue
            data = z.read(name)
            if name.endswith(".class"):
                texts = utf8_constants(data)
            elif name.startswith("META-INF/spark-kinesis/") or re.search(r"(LICENSE|NOTICE)", name):
                continue  # what the bundle carries, in words: it names the original artifacts on purpose
            else:
                texts = data.decode("utf-8", errors="replace").split()
            bad = [t for t in texts if UNRELOCATED.search(t) and _is_reference(t)]
            if bad:
                found[name] = bad
    return found


@pytest.mark.spark35_leg
def test_every_path_is_ours_or_relocated_or_allowed() -> None:
    with zipfile.ZipFile(_bundle()) as z:
        names = [n for n in z.namelist() if not n.endswith("/")]
    outside = [n for n in names if not n.startswith(OURS)]
    stray = [n for n in outside if not any(re.fullmatch(p, n) for p, _ in ALLOWED_PATHS)]
    assert stray == [], f"{len(stray)} paths outside {OURS} and the allowlist: {stray[:40]}"
    # The KPL's daemon for this machine and the SDK's HTTP client service are there, at their relocated homes.
    assert HERE.resource in names
    assert "META-INF/services/io.github.sparkkinesis.shaded.awssdk.http.SdkHttpService" in names
    assert any(n.startswith(OURS + "shaded/awssdk/services/kinesis/") for n in names)
    assert any(n.startswith(OURS + "shaded/kpl/KinesisProducer") for n in names)


@pytest.mark.spark35_leg
def test_no_class_or_resource_names_a_relocated_package() -> None:
    found = unrelocated_references(_bundle())
    assert found == {}, {k: v[:5] for k, v in list(found.items())[:20]}


@pytest.mark.spark35_leg
def test_service_files_name_relocated_classes_that_exist() -> None:
    """ServiceLoader reads the file named after the interface and loads each class it lists: both follow."""
    with zipfile.ZipFile(_bundle()) as z:
        names = set(z.namelist())
        services = [n for n in names if n.startswith("META-INF/services/") and not n.endswith("/")]
        assert services
        for service in services:
            interface = service.rsplit("/", 1)[1]
            assert interface.replace(".", "/") + ".class" in names, service
            for line in z.read(service).decode().splitlines():
                impl = line.split("#", 1)[0].strip()
                if impl:
                    assert impl.replace(".", "/") + ".class" in names, (service, impl)


def test_the_scan_finds_an_unrelocated_reference(tmp_path: Path) -> None:
    """The scan itself: a jar with one class constant and one service file naming the SDK's own package fails it."""
    klass = bytearray(b"\xca\xfe\xba\xbe\x00\x00\x00\x34")
    constants = [b"software/amazon/awssdk/core/SdkBytes", b"the software.amazon.awssdk package, in prose"]
    klass += struct.pack(">H", len(constants) + 1)
    for c in constants:
        klass += b"\x01" + struct.pack(">H", len(c)) + c
    jar = tmp_path / "x.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("io/github/sparkkinesis/X.class", bytes(klass))
        z.writestr("META-INF/services/x.Y", "software.amazon.awssdk.http.apache.ApacheSdkHttpService\n")
    assert unrelocated_references(jar) == {
        "io/github/sparkkinesis/X.class": ["software/amazon/awssdk/core/SdkBytes"],
        "META-INF/services/x.Y": ["software.amazon.awssdk.http.apache.ApacheSdkHttpService"],
    }
