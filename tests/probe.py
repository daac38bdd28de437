"""The one way a test runs a probe, and the one way a probe answers.

A probe is a ``tests/*_probe.py`` script in a process of its own: a Spark the shared session cannot be (other jars, a
class path, an environment, a Connect server, ``local-cluster``) or one a test kills.

- In: the test's configuration, a JSON file whose path the runner puts in the probe's environment (``PROBE_CONFIG``);
  the probe reads it with ``config()``. Nothing of it goes on a command line: configurations carry credentials, and
  every user of a host can read every process's command line.
- Out: events, one JSON object a line (``{"event": NAME, "data": ...}``) that the probe appends with ``say()`` to the
  file the runner names (``PROBE_EVENTS``). The last one is DONE (``done()``: the probe's result) or FAILED
  (``failed()``: why its query failed). The test reads them as they come (to act mid-run: kill a daemon, start an
  outage) or once the probe has ended.
- Logs: the probe's stdout and stderr go to one file, its Spark JVM's log (INFO and up) to another; the failure
  message of a probe that did not finish ends with both.
- Hold: a probe that must outlive its result (executors whose metrics sinks the test still reads) waits in ``hold()``
  until the test calls ``Probe.release()``; a probe that only changes course on the test's word asks ``released()``.

Standard library only: a probe imports this module in a fresh venv that has nothing but the wheel and pyspark
(tests/test_install.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
CONFIG, EVENTS, RELEASE = "PROBE_CONFIG", "PROBE_EVENTS", "PROBE_RELEASE"
FINAL = ("DONE", "FAILED")
#: How often the runner looks for new events and the probe for its release: both are files.
POLL_S = 0.02


# The probe's side.


def config() -> dict[str, Any]:
    """The configuration the test gave this probe."""
    path = os.environ.get(CONFIG)
    if not path:
        raise SystemExit(f"{sys.argv[0]}: {CONFIG} is not set: run it through tests/probe.py (Probe or run_probe)")
    loaded: dict[str, Any] = json.loads(Path(path).read_text())
    return loaded


def say(event: str, data: Any = None) -> None:
    """Appends one event. One write of the whole line to a file opened for appending: a reader sees all of it or none
    (the runner reads complete lines only)."""
    line = json.dumps({"event": event, "data": data}) + "\n"
    fd = os.open(os.environ[EVENTS], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


def done(result: Any = None) -> None:
    say("DONE", result)


def failed(message: str) -> None:
    say("FAILED", message)


def released() -> bool:
    """Whether the test has released this probe (``Probe.release()``): a probe may also ask without holding."""
    return Path(os.environ[RELEASE]).exists()


def hold(timeout_s: float = 600.0) -> None:
    """Says HOLDING, then waits until the test releases this probe (``Probe.release()``)."""
    say("HOLDING")
    deadline = time.monotonic() + timeout_s
    while not released():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not released within {timeout_s}s")
        time.sleep(POLL_S)


# The test's side.


@dataclass(frozen=True)
class Event:
    name: str
    data: Any


def probe_env() -> dict[str, str]:
    """This process's environment for a probe that starts its own Spark: no PYSPARK_*/SPARK_* settings, and the
    library from this checkout on PYTHONPATH (for Python workers that do not run this interpreter: local-cluster's)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "python"), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _jvm_log_to_file(directory: Path, env: dict[str, str]) -> Path:
    """Makes the Spark JVM a probe starts with ``env`` write every log line at INFO or above into a file (a file
    appender: PySpark's shell filter holds only the console at WARN); returns the file's path. A JVM that the probe
    does not start itself (spark-submit's) keeps its own logging."""
    jvm_log = directory / "jvm.log"
    log4j = directory / "log4j2.properties"
    log4j.write_text(
        f"rootLogger.level = info\nrootLogger.appenderRef.file.ref = file\n"
        f"appender.file.type = File\nappender.file.name = file\nappender.file.fileName = {jvm_log}\n"
        "appender.file.layout.type = PatternLayout\nappender.file.layout.pattern = %d %p %c: %m%n%ex\n"
    )
    env["PYSPARK_SUBMIT_ARGS"] = f"--driver-java-options -Dlog4j2.configurationFile={log4j.as_uri()} pyspark-shell"
    return jvm_log


@dataclass
class ProbeResult:
    script: str
    returncode: int
    events: list[Event]
    #: The probe's stdout and stderr, the raw events file and its Spark JVM's log.
    output: str
    raw_events: str
    jvm_log: str

    @property
    def final(self) -> Event | None:
        """The DONE or FAILED event the probe ended with, or None (it crashed, or was killed)."""
        return self.events[-1] if self.events and self.events[-1].name in FINAL else None

    @property
    def done(self) -> bool:
        return self.final is not None and self.final.name == "DONE"

    @property
    def said(self) -> dict[str, Any]:
        """Each event's name to the data of its last occurrence."""
        return {e.name: e.data for e in self.events}

    def all(self, name: str) -> list[Any]:
        """The data of every ``name`` event, in order."""
        return [e.data for e in self.events if e.name == name]

    @property
    def logs(self) -> str:
        return self.output + self.jvm_log

    def text(self) -> str:
        """Everything the probe wrote (events, output, the JVM's log): where a leak would show."""
        return self.raw_events + self.output + self.jvm_log

    def failure(self) -> str:
        """For an assertion's message: how the probe ended and the ends of its output and its JVM's log."""
        return (
            f"{self.script} exited {self.returncode}, its last event {self.events[-1] if self.events else None}\n"
            f"--- output\n{self.output[-4000:]}\n--- JVM log\n{self.jvm_log[-4000:]}"
        )


class Probe:
    """``tests/<script>`` started on ``cfg`` in a process group of its own; its files in a fresh folder of ``workdir``.

    ``env`` replaces ``probe_env()`` (an install test's clean environment); ``launcher`` replaces this interpreter
    (another venv's, or spark-submit and its arguments)."""

    def __init__(
        self,
        script: str,
        cfg: dict[str, Any],
        workdir: Path,
        *,
        env: dict[str, str] | None = None,
        launcher: list[str] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.script = script
        workdir.mkdir(parents=True, exist_ok=True)
        self.dir = Path(tempfile.mkdtemp(prefix=f"{Path(script).stem}-", dir=workdir))
        config, self.events_file, self.release_file = (self.dir / n for n in ("config.json", "events.jsonl", "release"))
        self.output_file = self.dir / "output.log"
        # Created readable by this user only, before a byte of it is written: configurations carry credentials.
        fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(cfg))
        run_env = dict(probe_env() if env is None else env)
        run_env.update({CONFIG: str(config), EVENTS: str(self.events_file), RELEASE: str(self.release_file)})
        self.jvm_log = _jvm_log_to_file(self.dir, run_env)
        self.events_file.touch()
        self._offset = 0
        self._partial = b""
        self._events: list[Event] = []
        with open(self.output_file, "wb") as out:
            self.proc = subprocess.Popen(
                [*(launcher or [sys.executable]), str(ROOT / "tests" / script)],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=run_env,
                cwd=cwd,
                start_new_session=True,  # its own process group: kill_tree() ends its JVMs and daemons too
            )

    def _read(self) -> list[Event]:
        with open(self.events_file, "rb") as f:
            f.seek(self._offset)
            chunk = f.read()
        self._offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        new = [Event(d["event"], d["data"]) for d in map(json.loads, filter(None, lines))]
        self._events += new
        return new

    def events(self, timeout_s: float) -> Iterator[Event]:
        """Each event not yet read, as the probe writes it, until the probe exits. After ``timeout_s`` the probe's
        process group is killed and TimeoutError names the probe, with its logs."""
        deadline = time.monotonic() + timeout_s
        while True:
            ended = self.proc.poll() is not None
            yield from self._read()
            if ended:
                return
            if time.monotonic() > deadline:
                self.kill_tree()
                raise TimeoutError(f"{self.script} still running after {timeout_s}s\n{self.result().failure()}")
            time.sleep(POLL_S)

    def next(self, name: str, timeout_s: float) -> Any:
        """The data of the next ``name`` event; AssertionError with the probe's logs if it ends without one."""
        for event in self.events(timeout_s):
            if event.name == name:
                return event.data
        raise AssertionError(f"{self.script} ended without {name}\n{self.result().failure()}")

    def wait(self, timeout_s: float, on_event: Callable[[Event], None] | None = None) -> ProbeResult:
        """Reads every event until the probe ends (``on_event`` sees each as it comes); returns what it did. Kills the
        probe's process group if the wait fails (a timeout, or ``on_event`` raised)."""
        try:
            for event in self.events(timeout_s):
                if on_event is not None:
                    on_event(event)
            self.proc.wait(timeout_s)
        except BaseException:
            self.kill_tree()
            raise
        return self.result()

    def result(self) -> ProbeResult:
        return ProbeResult(
            script=self.script,
            returncode=self.proc.returncode if self.proc.returncode is not None else -1,
            events=list(self._events),
            output=self.output_file.read_text(errors="replace"),
            raw_events=self.events_file.read_text(errors="replace"),
            jvm_log=self.jvm_log.read_text(errors="replace") if self.jvm_log.exists() else "",
        )

    def release(self) -> None:
        """Lets a probe waiting in ``hold()`` go on."""
        self.release_file.touch()

    def kill_tree(self) -> None:
        """SIGKILL to the probe's process group (its Python, its Spark JVM, their children); waits for the probe."""
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(60)


def run_probe(script: str, cfg: dict[str, Any], workdir: Path, timeout_s: float, **kw: Any) -> ProbeResult:
    """Runs ``tests/<script>`` on ``cfg`` to its end (``Probe``'s keywords in ``kw``); fails unless it said DONE."""
    result = Probe(script, cfg, workdir, **kw).wait(timeout_s)
    assert result.returncode == 0 and result.done, result.failure()
    return result
