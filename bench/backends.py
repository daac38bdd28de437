"""Local Kinesis backends for the benchmarks, each one process on a free loopback port.

The figures use kinesalite: it serves either HTTPS (what the KPL needs) or plain HTTP (what the fault
front forwards to) per process and keeps streams in memory. Not kinesis-mock, the test emulator: it
ingests far less than the writer sends, so it would measure itself. Not moto_server: it loses KPL
aggregates under concurrent PutRecords, and every run is read back record by record
(docs/benchmarks.md, "How it is measured", has the figures).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from spark_kinesis_testkit.emulator import (
    FAKE_ACCESS_KEY_ID,
    FAKE_SECRET_ACCESS_KEY,
    REGION,
    create_stream,
    free_port,
    loopback_writer_options,
    stop_process,
)

ROOT = Path(__file__).resolve().parents[1]
KINESALITE_DIR = ROOT / "bench" / "backend" / "node_modules" / "kinesalite"

# KPL settings the throughput runs add to loopback_writer_options' (no CloudWatch, no cert check).
KPL_BASE: dict[str, Any] = {"LogLevel": "warning", "RequestTimeout": 30000, "RecordTtl": 120000}


class Kinesalite:
    """kinesalite 3.3.3 (npm, pinned in bench/backend): Node, in-memory, bound to 127.0.0.1, on a free port. ``tls``
    picks HTTPS (KPL, boto3) or plain HTTP (fault front)."""

    name = "kinesalite"

    def __init__(self, tls: bool = True) -> None:
        self.tls = tls
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log = Path(tempfile.mkstemp(prefix=f"bench-{self.name}-", suffix=".log")[1])
        self._client: Any = None

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> Kinesalite:
        self.port = free_port()
        with self._log.open("wb") as log:
            self._proc = subprocess.Popen(
                self.command(), stdout=log, stderr=subprocess.STDOUT, cwd=tempfile.gettempdir()
            )
        deadline = time.monotonic() + timeout_s
        while not self.ready():
            if self._proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self._proc.returncode}: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"{self.name} not ready after {timeout_s}s: {self.log_tail()}")
            time.sleep(0.05)
        return self

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._proc is not None:
            stop_process(self._proc)
        self._proc = None

    def __enter__(self) -> Kinesalite:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def log_tail(self, n: int = 3000) -> str:
        return self._log.read_text(errors="replace")[-n:] if self._log.exists() else ""

    # -- clients -------------------------------------------------------------------------------
    def endpoint_options(self) -> dict[str, Any]:
        """``KinesisWriter`` keyword arguments (minus the stream and limits) that point at this backend."""
        assert self.tls, "the KPL speaks HTTPS only"
        options: dict[str, Any] = loopback_writer_options(self.url, **KPL_BASE)
        return options

    def client_kwargs(self) -> dict[str, Any]:
        """``boto3.client("kinesis", **kwargs)`` for this backend (also used inside Spark's Python workers)."""
        return {
            "endpoint_url": self.url,
            "region_name": REGION,
            "aws_access_key_id": FAKE_ACCESS_KEY_ID,
            "aws_secret_access_key": FAKE_SECRET_ACCESS_KEY,
            "verify": False,
        }

    def client(self) -> Any:
        if self._client is None:
            import boto3
            from botocore.config import Config

            self._client = boto3.client(
                "kinesis",
                config=Config(retries={"max_attempts": 10, "mode": "standard"}, read_timeout=120),
                **self.client_kwargs(),
            )
        return self._client

    def create_stream(self, name: str, shards: int, timeout_s: float = 30.0) -> None:
        create_stream(self.client(), name, shards, timeout_s)

    def delete_stream(self, name: str, timeout_s: float = 30.0) -> None:
        c = self.client()
        c.delete_stream(StreamName=name, EnforceConsumerDeletion=True)
        deadline = time.monotonic() + timeout_s
        while name in c.list_streams()["StreamNames"]:  # deletion is asynchronous
            if time.monotonic() > deadline:
                raise TimeoutError(f"stream {name} not deleted after {timeout_s}s")
            time.sleep(0.05)

    def command(self) -> list[str]:
        node = shutil.which("node")
        if node is None:
            raise RuntimeError("node is not on PATH; kinesalite needs Node.js")
        if not KINESALITE_DIR.is_dir():
            raise FileNotFoundError(f"{KINESALITE_DIR} missing: run `npm ci` in bench/backend (make bench does)")
        # Its CLI listens on all interfaces; the module API can bind to loopback.
        # It rethrows a request's 'aborted' error (a client hanging up mid-request) from an event
        # handler, which kills the process; log and go on instead.
        # Its CBOR answers (the AWS SDK v2's default for Kinesis) are cut at 16 KiB: cbor 5's encodeOne returns one
        # read of a stream with the default highWaterMark, so ListShards of 64 shards or more cannot be parsed, and the
        # writer's aggregation falls back to records alone. Encode in one buffer, as Kinesis answers.
        script = (
            "process.on('uncaughtException', e => console.error('kinesalite: ignored', e.code || e));"
            f"const cbor = require(require.resolve('cbor', {{paths: [{str(KINESALITE_DIR)!r}]}}));"
            "const encodeOne = cbor.Encoder.encodeOne;"
            "cbor.Encoder.encodeOne = (o, opts) => encodeOne(o, {highWaterMark: 1 << 26, ...opts});"
            f"require({str(KINESALITE_DIR)!r})({{ssl: {str(self.tls).lower()}, createStreamMs: 0, "
            f"deleteStreamMs: 0, updateStreamMs: 0, shardLimit: 1000}}).listen({self.port}, '127.0.0.1')"
        )
        return [node, "-e", script]

    def ready(self) -> bool:
        # No health route, and a request whose client hangs up early crashes it (an unhandled
        # 'aborted' error): a bare TCP connect is the probe.
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
            return True
        except OSError:
            return False
