"""What every committed results file (bench/results/) says of where it was measured: the commit and the machine."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Any

from .emulator import java_executable


def commit(root: Path) -> str:
    """``root``'s checked-out commit, with "+changes" when code outside the results and docs differs from it
    (tests/test_bench_results.py refuses such files)."""
    try:
        sha = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/results", ":!docs"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return sha + ("+changes" if dirty else "")


def machine() -> dict[str, Any]:
    """The machine a run measured: CPUs, memory, kernel, Python, pyspark and the JVM."""
    import pyspark

    meminfo = Path("/proc/meminfo").read_text().splitlines() if Path("/proc/meminfo").exists() else []
    mem = next((ln.split()[1] for ln in meminfo if ln.startswith("MemTotal")), 0)
    version = subprocess.run([java_executable() or "java", "-version"], capture_output=True, text=True).stderr
    return {
        "cpus": os.cpu_count(),
        "mem_gib": round(int(mem) / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
        "pyspark": pyspark.__version__,
        "java": version.splitlines()[0] if version else "",
    }
