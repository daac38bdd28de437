"""The JVM options of every JVM the tests start, and the class-data-sharing archive they map (tests/conftest.py).

``python -m spark_kinesis_testkit.class_archive ROOT`` makes this venv's archive for the checkout at ROOT ahead of
the tests, so that `make test` makes both venvs' archives while sbt builds the jars instead of after, when each leg
starts.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from spark_kinesis_testkit.emulator import java_executable

# Most of the tests' JVMs are short-lived: the C2 compiler's work would not pay for itself before they exit, while it
# competes for the cores the tests run on.
C1_ONLY = "-XX:TieredStopAtLevel=1"
# The JVM's class-data-sharing messages off: a JVM whose class path does not match the archive's runs without it,
# and says so on its standard output, which some tests read.
CDS_QUIET = "-Xlog:cds=off,cds+dynamic=off"

# Spark's own jars only: the archive covers Spark's class path, which our jars (spark.jars, loaded by Spark's own class
# loader) are not on, and `make test` makes it before they are built.
_SESSION = (
    "from spark_kinesis_testkit.emulator import loopback_session_builder\n"
    "s = loopback_session_builder('local[2]', 'class-archive', '').getOrCreate()\n"
    "s.range(100).selectExpr('id % 7 AS k', 'id').groupBy('k').count().collect()\n"
    "s.stop()\n"
)


def spark_class_archive(root: Path) -> Path | None:
    """A dynamic class-data-sharing archive of the classes a Spark session of this venv loads at start (made once per
    venv, Spark and JDK, by one session run under ``-XX:ArchiveClassesAtExit``, then kept in the checkout's
    .cache/cds): every JVM with Spark's class path maps those classes instead of loading them again. None if it cannot
    be made."""
    import pyspark

    java = java_executable()
    if java is None:
        return None
    spark_jars = Path(pyspark.__file__).parent / "jars"
    key = f"{sys.prefix}|{pyspark.__version__}|{os.path.realpath(java)}|{spark_jars.stat().st_mtime_ns}"
    directory = root / ".cache" / "cds"
    archive = directory / f"spark-{pyspark.__version__}-{hashlib.sha256(key.encode()).hexdigest()[:12]}.jsa"
    if archive.exists():
        return archive
    directory.mkdir(parents=True, exist_ok=True)
    partial = archive.with_suffix(f".{os.getpid()}.tmp")
    env = {**os.environ, "JAVA_TOOL_OPTIONS": f"{C1_ONLY} {CDS_QUIET} -XX:ArchiveClassesAtExit={partial}"}
    try:
        subprocess.run([sys.executable, "-c", _SESSION], env=env, timeout=300, check=True, capture_output=True)
        partial.replace(archive)  # whole or not at all: a leg beside this one may read it
    except (subprocess.SubprocessError, OSError) as e:
        partial.unlink(missing_ok=True)
        said = getattr(e, "stderr", None) or b""
        tail = said.decode(errors="replace").strip().splitlines()[-5:] if isinstance(said, bytes) else []
        print(f"no class archive: {e}", *tail, sep="\n  ", file=sys.stderr)
        return None
    return archive


def java_tool_options(root: Path) -> str:
    """``JAVA_TOOL_OPTIONS`` for the tests' JVMs: C1 only, and this venv's archive when it can be made."""
    archive = spark_class_archive(root)
    return C1_ONLY + (f" {CDS_QUIET} -XX:SharedArchiveFile={archive}" if archive is not None else "")


if __name__ == "__main__":
    # Never fails: the tests make the archive again when it is missing, or run without one.
    made = spark_class_archive(Path(sys.argv[1]))
    print(f"class archive: {made if made is not None else 'none (the tests run without one)'}")
