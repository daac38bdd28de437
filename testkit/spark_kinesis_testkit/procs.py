"""Process trees from /proc (Linux): find and kill members (fault tests, soak), and what each one
costs in CPU and memory (benchmarks, soak)."""

from __future__ import annotations

import os
import signal
import statistics
import threading
from dataclasses import dataclass
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")
KPL_COMM = "kinesis_produc"  # /proc/<pid>/comm is cut at 15 characters: kinesis_producer


@dataclass(frozen=True)
class Proc:
    pid: int
    ppid: int
    comm: str
    cpu_s: float  # user + sys of the process and of its reaped children
    start_s: float = 0.0  # when it started, in seconds since boot


def read(pid: int) -> Proc | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm is parenthesised and may contain spaces; the fields after it are fixed.
    comm = raw[raw.index("(") + 1 : raw.rindex(")")]
    f = raw[raw.rindex(")") + 2 :].split()
    ppid = int(f[1])
    utime, stime, cutime, cstime = (int(x) for x in f[11:15])
    return Proc(pid, ppid, comm, (utime + stime + cutime + cstime) / _TICK, int(f[19]) / _TICK)


def tree(root: int) -> dict[int, Proc]:
    """``root`` and every live descendant."""
    procs = [p for p in (read(int(d)) for d in os.listdir("/proc") if d.isdigit()) if p is not None]
    children: dict[int, list[Proc]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    out: dict[int, Proc] = {}
    top = read(root)
    todo = [top] if top else []
    while todo:
        p = todo.pop()
        out[p.pid] = p
        todo.extend(children.get(p.pid, []))
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def secrets_on_command_lines(secrets: dict[str, str]) -> tuple[int, int, list[str]]:
    """Every readable process's /proc/<pid>/cmdline: how many were read, how many are KPL daemons, and the names of
    the ``secrets`` found in any of them, in clear or hex (the KPL hex-encodes its daemon's arguments)."""
    seen, daemons = 0, 0
    leaks: set[str] = set()
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            line = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        seen += 1
        daemons += b"kinesis_producer" in line
        leaks.update(secrets_in(line, secrets))
    return seen, daemons, sorted(leaks)


def secrets_in(cmdline: bytes, secrets: dict[str, str]) -> list[str]:
    """The names of the ``secrets`` found in a raw command line, in clear or hex (the KPL hex-encodes its daemon's
    arguments)."""
    return [
        n
        for n, v in secrets.items()
        if any(f in cmdline for f in (v.encode(), v.encode().hex().encode(), v.encode().hex().upper().encode()))
    ]


def find(root: int, needle: str) -> list[int]:
    """Live descendants of ``root`` (not ``root`` itself) whose command line contains ``needle``, but for those whose
    parent's does too: a JVM starting a program (an executor its KPL daemon, or the daemon's probe) forks a child that
    has the JVM's command line until it executes the program, so counting them counted an executor twice."""
    procs = tree(root)
    matching = {pid for pid in procs if pid != root and needle in _cmdline(pid)}
    return sorted(pid for pid in matching if procs[pid].ppid not in matching)


def kill(pids: list[int]) -> None:
    """SIGKILL each of ``pids``; ones already gone are skipped."""
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def kind(p: Proc, root: int) -> str:
    if p.pid == root:
        return "jvm"
    if p.comm.startswith(KPL_COMM):
        return "kpl_daemon"
    if p.comm == "java":
        return "executor_jvm"  # local-cluster's executors (the daemons are their children)
    return "other"  # Python workers (boto3 variants), shells


def cpu_by_kind(before: dict[int, Proc], after: dict[int, Proc], root: int) -> dict[str, float]:
    """CPU seconds spent between two ``tree`` snapshots, by kind. A process that ended unreaped in
    between loses its share (PySpark reuses its workers; the KPL daemon lives as long as its producer)."""
    out = {"jvm": 0.0, "executor_jvm": 0.0, "kpl_daemon": 0.0, "other": 0.0}
    for pid, p in after.items():
        prev = before.get(pid)
        start = prev.cpu_s if prev is not None and prev.comm == p.comm else 0.0
        out[kind(p, root)] += p.cpu_s - start
    return out


def cpu_seconds(pid: int) -> float:
    p = read(pid)
    return p.cpu_s if p else 0.0


def rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` (0 once it is gone)."""
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * _PAGE
    except OSError:
        return 0


def kpl_daemons(root: int) -> list[int]:
    """The KPL daemons (``kinesis_producer``) under ``root``."""
    return [p.pid for p in tree(root).values() if p.comm.startswith(KPL_COMM)]


class DaemonWatch:
    """Reads the command line of every KPL daemon started under ``root`` (its child or grandchild: a local-mode JVM's
    daemons), as soon as it appears: a daemon the KPL restarts in place may live only until its producer is closed.

    >>> with DaemonWatch(probe.proc.pid) as watch:
    ...     ...
    >>> watch.command_lines  # {pid: raw /proc/<pid>/cmdline}
    """

    def __init__(self, root: int, period_s: float = 0.002) -> None:
        self.root = root
        self.period_s = period_s
        self.command_lines: dict[int, bytes] = {}
        self._settled: set[int] = set()  # seen, and too old to exec a daemon still
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="daemon-watch", daemon=True)

    def __enter__(self) -> DaemonWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.period_s):
            try:
                uptime = float(Path("/proc/uptime").read_text().split()[0])
            except OSError:
                continue
            for d in os.listdir("/proc"):
                if not d.isdigit() or int(d) in self._settled:
                    continue
                pid = int(d)
                p = read(pid)
                if p is None:
                    continue
                if not p.comm.startswith(KPL_COMM):
                    # A JVM's child carries the forking thread's name until it execs: only an old one is settled.
                    if uptime - p.start_s > 1.0:
                        self._settled.add(pid)
                    continue
                parent = read(p.ppid)
                if self.root in (p.ppid, parent.ppid if parent else -1):
                    try:
                        self.command_lines[pid] = Path(f"/proc/{pid}/cmdline").read_bytes()
                    except OSError:
                        continue
                self._settled.add(pid)


def growth(series: list[float]) -> float:
    """How much a sampled measure (heap, RSS) grew over a run: the median of its last fifth minus that of its second
    fifth (the first is warm-up); 0 for fewer than five samples. make soak's and make chaos's leak check."""
    fifth = len(series) // 5
    if fifth == 0:
        return 0.0
    return float(statistics.median(series[-fifth:]) - statistics.median(series[fifth : 2 * fifth]))
