"""A real KCL 3.x consumer for tests: ``io.github.sparkkinesis.kcl.Consume`` (tools/kcl) in a JVM of its own.

The KCL's ``Scheduler`` reads the stream from kinesis-mock (plain HTTP, polling, TRIM_HORIZON) and keeps its leases
in DynamoDB (moto's server, ``MotoServer``, on loopback); its record processor appends every user record the KCL hands
it to a file and checkpoints, at the end of a shard too, so the KCL moves on to the shard's children as it does for
any application. ``KclWorker.records()`` reads that file back: what a KCL consumer of the stream received, resharded
streams and KPL aggregates included, decided by the KCL's own code rather than a model of it.

>>> with MotoServer() as ddb, KclWorker(km_endpoint, ddb.endpoint, "events", "app-1") as kcl:
...     got = kcl.wait_until(lambda rs: len(rs) >= 100, timeout_s=120)
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from .emulator import FAKE_ACCESS_KEY_ID, FAKE_SECRET_ACCESS_KEY, REGION, UserRecord, require_java, stop_process
from .kcl import kcl_classpath

__all__ = ["KclWorker"]

_ESCAPED = re.compile(r"\\(.)")
_UNESCAPE = {"\\": "\\", "t": "\t", "n": "\n", "r": "\r"}


def _unescape(key: str) -> str:
    """A partition key as Consume wrote it (backslash, tab, newline, carriage return escaped) back to itself."""
    return _ESCAPED.sub(lambda m: _UNESCAPE[m.group(1)], key) if "\\" in key else key


class KclWorker:
    """One KCL worker (one JVM) of application ``app_name`` consuming ``stream``.

    ``kinesis_endpoint`` is kinesis-mock's plain-HTTP endpoint (``http://127.0.0.1:<plain_port>``): the worker polls,
    so it needs no HTTP/2 and no TLS. ``dynamodb_endpoint`` serves the lease table (the KCL creates it, named after
    the application, with its ``LeaseOwnerToLeaseKeyIndex``; KCL 3.5 keeps its worker metrics and leader lock in the
    same table). An application name is a consumer group: a second worker under the same name shares the leases and
    resumes from the checkpoints; a fresh name reads the stream again from TRIM_HORIZON.

    The JVM gets the emulators' static fake keys in its environment (never on its command line) and no other
    ``AWS_*`` variable from this process, so nothing but the two endpoints given is ever asked for anything.
    """

    def __init__(
        self,
        kinesis_endpoint: str,
        dynamodb_endpoint: str,
        stream: str,
        app_name: str,
        region: str = REGION,
        log_level: str | None = None,
        shutdown_timeout_s: float = 20.0,
    ) -> None:
        self.kinesis_endpoint = kinesis_endpoint
        self.dynamodb_endpoint = dynamodb_endpoint
        self.stream = stream
        self.app_name = app_name
        self.region = region
        # slf4j-simple's level for the KCL and the SDK (warn unless given, or $KCL_LOG_LEVEL).
        self.log_level = log_level or os.environ.get("KCL_LOG_LEVEL", "warn")
        self.shutdown_timeout_s = shutdown_timeout_s
        self.started_at: float | None = None  # time.monotonic() when the JVM was started
        # The JVM's exit status once stop() has stopped it: 143 after a graceful shutdown on SIGTERM, 1 when the KCL
        # gave up initialising, 137 when it had to be killed.
        self.returncode: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._records: list[UserRecord] = []  # parsed so far, from the start of the output file
        self._offset = 0  # bytes of the output file parsed
        self._dir = Path(tempfile.mkdtemp(prefix=f"kcl-{app_name}-"))
        self.output = self._dir / "records.tsv"
        self.log = self._dir / "worker.log"

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> KclWorker:
        if self._proc is not None and self._proc.poll() is None:
            raise RuntimeError("this KCL worker is already running")
        self.returncode = None
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(
            AWS_ACCESS_KEY_ID=FAKE_ACCESS_KEY_ID,
            AWS_SECRET_ACCESS_KEY=FAKE_SECRET_ACCESS_KEY,
            AWS_REGION=self.region,
            AWS_EC2_METADATA_DISABLED="true",
            KCL_KINESIS_ENDPOINT=self.kinesis_endpoint,
            KCL_DYNAMODB_ENDPOINT=self.dynamodb_endpoint,
            KCL_REGION=self.region,
            KCL_STREAM=self.stream,
            KCL_APPLICATION=self.app_name,
            KCL_OUTPUT=str(self.output),
            KCL_LOG_LEVEL=self.log_level,
            # The JVM's own bound on its graceful shutdown, inside the one stop() allows it.
            KCL_SHUTDOWN_TIMEOUT_MS=str(int(self.shutdown_timeout_s * 1000)),
        )
        # A test's worker handles little data on cores it shares with kinesis-mock, moto and the test: the serial
        # collector (no GC threads) and the client compiler only, which starts it up about a second sooner.
        jvm = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"]
        cmd = [
            require_java("the KCL runs on the JVM"),
            *jvm,
            "-cp",
            kcl_classpath(),
            "io.github.sparkkinesis.kcl.Consume",
        ]
        self.output.touch()
        with self.log.open("ab") as log:
            self.started_at = time.monotonic()
            self._proc = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=self._dir)
        return self

    def stop(self) -> None:
        """SIGTERM (the worker checkpoints and releases its leases), killed if still there after the JVM's own
        shutdown bound and a little more."""
        if self._proc is not None:
            stop_process(self._proc, timeout_s=self.shutdown_timeout_s + 5.0)
            self.returncode = self._proc.returncode
            self._proc = None

    def __enter__(self) -> KclWorker:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    def log_tail(self, n: int = 4000) -> str:
        if not self.log.exists():
            return ""
        return self.log.read_text(errors="replace")[-n:]

    # -- what the KCL delivered --------------------------------------------------------------
    def records(self) -> list[UserRecord]:
        """Every user record the worker has written so far, in the order its processors received them (one shard's
        in its order; a parent shard's before its children's, since the KCL starts a child only after its parents are
        checkpointed at their end). A record delivered twice (a batch read again after a lost lease, or after a
        restart of this worker before the batch was checkpointed: a restarted worker appends to the same file) is
        there twice.

        ``aggregated`` is the KCL's own flag (``KinesisClientRecord.aggregated()``), not the sub-sequence number: the
        first user record of a KPL aggregate has sub-sequence number 0, as a plain record has. ``explicit_hash_key``
        is an aggregated user record's own; a plain record has none (GetRecords does not return the one it was put
        with). ``arrival_s`` is the Kinesis record's ApproximateArrivalTimestamp.

        The file is parsed from where the last call stopped; a line still being written (no newline yet) is left for
        the next call."""
        if self.output.exists():
            with self.output.open("rb") as f:
                f.seek(self._offset)
                chunk = f.read()
            end = chunk.rfind(b"\n") + 1  # only whole lines
            self._offset += end
            for line in chunk[:end].decode("utf-8").split("\n")[:-1]:  # not splitlines(): a key may hold U+2028
                shard, _seq, _sub, pk, ehk, data, agg, arrival_ms = line.split("\t")
                self._records.append(
                    UserRecord(
                        _unescape(pk),
                        base64.b64decode(data),
                        shard,
                        None if ehk == "-" else ehk,
                        agg == "1",
                        None if arrival_ms == "-" else int(arrival_ms) / 1000.0,
                    )
                )
        return list(self._records)

    def wait_until(
        self, cond: Callable[[list[UserRecord]], bool], timeout_s: float, poll_s: float = 0.25
    ) -> list[UserRecord]:
        """Poll ``records()`` every ``poll_s`` until ``cond`` holds of them, and return them.

        RuntimeError at once if the worker's JVM has exited (it does not, while healthy); TimeoutError after
        ``timeout_s``, both with the record count and the tail of the worker's log, which says why."""
        deadline = time.monotonic() + timeout_s
        while True:
            records = self.records()
            if cond(records):
                return records
            if self._proc is None:
                raise RuntimeError("the KCL worker is not running")
            if self._proc.poll() is not None:
                raise RuntimeError(
                    f"the KCL worker exited with {self._proc.returncode} after {len(records)} records: "
                    f"{self.log_tail()}"
                )
            if time.monotonic() > deadline:
                raise TimeoutError(
                    f"KCL worker: condition not met after {timeout_s}s ({len(records)} records): {self.log_tail()}"
                )
            time.sleep(poll_s)
