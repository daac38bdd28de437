"""tools/legs.py, make test's runner: every job runs to its end, a failure anywhere fails the run, and the results
come last (each job's summary line and the failures it names). Jobs here are small Python programs, not pytest."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import legs

pytestmark = pytest.mark.spark35_leg  # no Spark: where `make test` has room


def job(name: str, code: str, live: bool = False) -> legs.Job:
    return legs.Job(name, [sys.executable, "-c", code], nice=0 if live else 5, live=live)


def test_said_takes_the_last_summary_line_and_every_failure() -> None:
    text = "\n".join(
        [
            "collected 3 items",
            "FAILED tests/test_a.py::test_x - AssertionError",
            "ERROR tests/test_b.py::test_y - RuntimeError",
            "===== 1 failed, 1 passed, 1 error in 12.50s =====",
            "a JVM of the leg logs after pytest's summary",
        ]
    )
    assert legs.said("spark4", 1, text) == [
        "== spark4: rc=1: ===== 1 failed, 1 passed, 1 error in 12.50s =====",
        "FAILED tests/test_a.py::test_x - AssertionError",
        "ERROR tests/test_b.py::test_y - RuntimeError",
    ]
    assert legs.said("sbt", 0, "[info] done\n[success] Total time: 300 s") == [
        "== sbt: rc=0: [success] Total time: 300 s"
    ]
    assert legs.said("x", 2, "") == ["== x: rc=2: no output"]


def test_a_failing_job_beside_fails_the_run_after_every_job_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(legs, "LOGS", tmp_path)
    slow_ok = "import time; time.sleep(0.5); print('=== 2 passed in 0.50s ===')"
    failing = "import sys; print('FAILED tests/test_z.py::test_z'); print('=== 1 failed in 0.01s ==='); sys.exit(1)"
    rc = legs.run([job("live", slow_ok, live=True), job("side", failing)], "-t")
    out = capsys.readouterr().out
    assert rc == 1
    # the live job ran to its end although the other failed first; the side job's log follows the live one's output
    assert out.index("=== 2 passed") < out.index("== side (ran beside")
    assert out.splitlines()[-3:] == [
        "== live-t: rc=0: === 2 passed in 0.50s ===",
        "== side-t: rc=1: === 1 failed in 0.01s ===",
        "FAILED tests/test_z.py::test_z",
    ]
    assert (tmp_path / "leg-live-t.log").read_text().strip() == "=== 2 passed in 0.50s ==="
    assert legs.run([job("live", slow_ok, live=True), job("side", "print('ok')")], "") == 0


def test_each_leg_adds_the_marker_expression_and_the_reports_take_the_suffix() -> None:
    jobs = legs.legs("not (faults)", "-extended", ["-k", "x"], beside="build/sbt unitTests")
    by_name = {j.name: j for j in jobs}
    assert by_name["spark4"].live and by_name["spark4"].argv[-3:] == [
        "--junitxml=.cache/reports/junit-spark4-extended.xml",
        "-k",
        "x",
    ]
    assert "not spark35_leg and not lines and (not (faults))" in by_name["spark4"].argv
    assert "(every_line or spark35_leg) and (not (faults))" in by_name["spark3.5"].argv
    assert by_name["sbt"].argv == ["build/sbt", "unitTests"] and by_name["sbt"].nice == 10


def test_the_makefiles_calls_parse() -> None:
    # `--suffix -extended` read "-extended" as an option and failed test-extended before any test ran (stop 86's CI).
    dry = subprocess.run(
        ["make", "-n", "MAKE=true", "--no-print-directory", "test", "test-extended", "PYTEST_ARGS=-p no:cacheprovider"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    calls = [shlex.split(line)[2:] for line in dry.splitlines() if "tools/legs.py" in line]
    parsed = [legs.parse(argv) for argv in calls]
    assert [a.suffix for a in parsed] == ["", "-extended"]
    assert [a.beside for a in parsed] == ["build/sbt unitTests", "build/sbt extendedTests"]
    assert all(a.pytest_args == ["-p", "no:cacheprovider"] for a in parsed)
