"""Runs the e2e tests on two Spark lines side by side, optionally beside a JVM command, and says each one's result last.

``python tools/legs.py -m EXPR [--suffix S] [--beside CMD] [-- PYTEST_ARGS...]``

The two legs are pytest over ``tests/``: ``spark4`` on the default venv (``.venv``, pyspark 4) and ``spark3.5`` on
``.venv-spark3.5`` (pyspark 3.5, the Scala 2.12 jar), which runs the tests marked ``every_line`` or ``spark35_leg``.
Both add ``-m EXPR``. The Spark 4 leg prints as it goes; the others (the 3.5 leg at nice 5, ``--beside`` at nice 10:
they take what the first leaves idle) write ``.cache/leg-<name><suffix>.log``, printed after it. The last lines are
each job's result (its summary line and its failures), where a reader of a CI log's tail finds them; the exit status
is 1 if any job failed. Every job runs to its end whatever the others do.
"""

from __future__ import annotations

import argparse
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOGS = ROOT / ".cache"
#: pytest's last summary line ("=== 3 passed in 4.2s ===") and sbt's ("[success] Total time: ...").
SUMMARY = re.compile(r"^(=+ .* in [0-9.]+s|\[(success|error)\] Total time)")
FAILURE = re.compile(r"^(FAILED|ERROR) ")


@dataclass
class Job:
    name: str
    argv: list[str]
    nice: int = 0
    live: bool = False  # prints as it goes; the others print their log after the live one ends

    def start(self, log: Path) -> subprocess.Popen[bytes]:
        argv = ["nice", "-n", str(self.nice), *self.argv] if self.nice else self.argv
        print(f"== {self.name}: {shlex.join(self.argv)}", flush=True)
        if self.live:
            return subprocess.Popen(
                argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
            )
        with log.open("wb") as out:
            return subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)


def said(name: str, rc: int, text: str) -> list[str]:
    """A job's result in a few lines: its last summary line (or its last line) and each failure it names."""
    lines = text.splitlines()
    summary = [line for line in lines if SUMMARY.match(line)]
    last = summary[-1] if summary else (lines[-1] if lines else "no output")
    return [f"== {name}: rc={rc}: {last}", *(line for line in lines if FAILURE.match(line))]


def run(jobs: list[Job], suffix: str) -> int:
    """Starts every job, follows the live one, then prints the others' logs and every job's result; 1 if any failed."""
    LOGS.mkdir(exist_ok=True)
    logs = {job.name: LOGS / f"leg-{job.name}{suffix}.log" for job in jobs}
    procs = {job.name: job.start(logs[job.name]) for job in sorted(jobs, key=lambda j: j.live)}
    for job in jobs:
        proc = procs[job.name]
        if job.live and proc.stdout is not None:
            with logs[job.name].open("wb") as log:
                for chunk in iter(proc.stdout.readline, b""):
                    sys.stdout.buffer.write(chunk)
                    sys.stdout.flush()
                    log.write(chunk)
    rcs = {name: proc.wait() for name, proc in procs.items()}
    for job in jobs:
        if not job.live:
            print(f"== {job.name} (ran beside; its output) ==", flush=True)
            sys.stdout.buffer.write(logs[job.name].read_bytes())
    for job in jobs:
        print("\n".join(said(job.name + suffix, rcs[job.name], logs[job.name].read_text(errors="replace"))))
    sys.stdout.flush()
    return 1 if any(rcs.values()) else 0


def legs(markers: str, suffix: str, pytest_args: list[str], beside: str | None) -> list[Job]:
    """The two legs for marker expression ``markers``, and beside. The Spark 4 leg leaves out ``lines`` (the README's
    first example: that leg runs the README whole); the 3.5 leg runs it as ``every_line``."""
    jobs = [
        Job(
            "spark4",
            [".venv/bin/python", "-m", "pytest", "tests", "-m", f"not spark35_leg and not lines and ({markers})"],
            live=True,
        ),
        Job(
            "spark3.5",
            [
                ".venv-spark3.5/bin/python",
                *("-m", "pytest", "tests", "-m", f"(every_line or spark35_leg) and ({markers})"),
            ],
            nice=5,
        ),
    ]
    for job in jobs:
        job.argv += [f"--junitxml=.cache/reports/junit-{job.name}{suffix}.xml", *pytest_args]
    if beside:
        jobs.append(Job("sbt", shlex.split(beside), nice=10))
    return jobs


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-m", dest="markers", required=True, help="the marker expression both legs add to theirs")
    parser.add_argument("--suffix", default="", help="of the logs' and reports' names (make test-extended's)")
    parser.add_argument("--beside", help="a command run beside the legs at nice 10 (the Scala unit tests)")
    parser.add_argument("pytest_args", nargs="*", help="after --: passed to both legs")
    return parser.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse(argv)
    (ROOT / ".cache" / "reports").mkdir(parents=True, exist_ok=True)
    return run(legs(args.markers, args.suffix, args.pytest_args, args.beside), args.suffix)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
