"""What static tools see of ``KinesisWriter``: every option a typed keyword (mypy, Pylance, PyCharm), from the stub
``python/spark_kinesis/_writer_options.pyi`` that tools/writer_stub.py writes from the facts resource. No Spark."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# One mypy run over a snippet: each line's expected errors (none for the first, a correct call).
SNIPPET = {
    'KinesisWriter("events", region=None, queue_limit=100, fail_on_error=False, aggregation="kpl", kpl={"A": 1})': [],
    "KinesisWriter(queue_limt=100)": [r'Unexpected keyword argument "queue_limt" for "KinesisWriter"'],
    'KinesisWriter(queue_limit="100")': [r'Argument "queue_limit" to "KinesisWriter" has incompatible type "str"'],
    "KinesisWriter(fail_on_error=1)": [r'Argument "fail_on_error" .* incompatible type "int"; expected "bool"'],
    # No default in the table: None is the option left out. With a default: the type alone.
    "KinesisWriter(queue_limit=None)": [r'Argument "queue_limit" .* incompatible type "None"; expected "int"'],
}


def test_mypy_checks_every_keyword_and_its_type(tmp_path: Path) -> None:
    lines = ["from spark_kinesis import KinesisWriter", *SNIPPET]
    (tmp_path / "snippet.py").write_text("\n".join(lines) + "\n")
    # The package from this checkout (the venv's editable install is an import hook mypy does not follow), with its
    # stub and py.typed, under the library's own mypy configuration (strict).
    env = {**os.environ, "MYPYPATH": str(ROOT / "python")}
    config = str(ROOT / "python" / "pyproject.toml")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            config,
            "--cache-dir",
            "cache",
            "--no-error-summary",
            "snippet.py",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    errors: dict[int, list[str]] = {}
    for m in re.finditer(r"^snippet\.py:(\d+): error: (.*)$", result.stdout, re.M):
        errors.setdefault(int(m.group(1)), []).append(m.group(2))
    for number, (code, expected) in enumerate(SNIPPET.items(), start=2):
        got = errors.pop(number, [])
        assert len(got) == len(expected), (code, got, result.stdout + result.stderr)
        for pattern, error in zip(expected, got):
            assert re.search(pattern, error), (code, error)
    assert errors == {}, result.stdout + result.stderr


def test_committed_stub_is_what_the_facts_make() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "writer_stub.py"), "--check"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stdout + result.stderr
