"""A fault-injecting HTTPS front for a Kinesis emulator, so tests can make it behave like a busy Kinesis.

``FaultFront`` listens with TLS on a free loopback port (the KPL always speaks TLS), forwards every
request unchanged to the emulator's plain-HTTP port, and returns its answer, unless a fault is on:

* ``enforce_shard_limits`` - per-shard quotas (records/s, bytes/s) like real Kinesis; records over
  quota get ``ProvisionedThroughputExceededException`` and are not forwarded.
* ``fail_requests`` - a fraction of *write* requests (``PutRecords`` and ``PutRecord`` only: failing
  ``ListShards`` etc. changes how the KPL behaves) get HTTP 500, or (``mode="partial"``) a fraction
  of ``PutRecords`` records get a per-record ``InternalFailure``.
* ``add_latency`` - a delay before each request is handled.
* ``hold_writes`` - ``PutRecords`` and ``PutRecord`` wait at the front until ``release_writes`` (or the upstream
  timeout): a producer provably has records in flight for as long as the test wants (``writes_waiting()`` says how many
  requests wait), where a fixed latency only makes that likely.
* ``outage`` - the port refuses connections, or accepts them and resets them without an answer.
* ``set_distribution_strategy`` - a stream's ``RecordDistributionStrategy`` (Kinesis, September 2026), which
  neither emulator knows: ``DescribeStreamSummary`` answers report it (``USER_PARTITION_KEY`` unless set; the
  ``UpdateStreamRecordDistributionStrategy`` call sets it too), and on an ``AUTO`` stream each written record is
  placed at random, whatever its keys, as Kinesis does. Aggregated records written to an ``AUTO`` stream are
  counted (``stats()["aggregated_on_auto"]``): Kinesis takes them, but a KCL consumer drops an aggregate whole when
  one of its user records' hash keys lies outside the shard it was put in (``kcl.read_stream_kcl`` shows it).
* ``deny`` - answer an operation with ``AccessDeniedException`` (a role without that permission), for every caller or
  for the requests one access key signs (``key_id``: a principal without it, beside one with it); with ``code=
  "UnrecognizedClientException"``, as Kinesis answers a key it does not know. Counted (``stats()["denied"]``).
* ``hold_shard_maps`` - answer ``ListShards`` of a stream with what the emulator answered the same request before the
  hold, until ``release_shard_maps``: every producer's shard map then lags a reshard made meanwhile, so records routed
  by the old map land in the new shards on purpose (the race of a reshard with a producer's map, which otherwise
  depends on timing). Writes of a held stream are counted (``stats()["held_records"]``, Kinesis records; per stream,
  ``held_user_records(stream)``, the user records they carry).
* ``limit_control_plane`` - Kinesis' control-plane limits: ``DescribeStreamSummary`` 20 a second per account (every
  request the front sees is one account's) and ``ListShards`` 1,000 a second per stream, or lower; a call over its limit
  is answered ``LimitExceededException`` and not forwarded (``stats()["control_plane_throttled"]``). The calls are
  counted whether or not limits are on, by operation and caller (``control_plane_calls()``: ``kpl`` for the KPL daemon,
  ``sdk`` for an AWS SDK for Java client, the writer's and the driver's; ``other`` for the rest, boto3's).
* Record size limits (always on): kinesis-mock 0.6.2 keeps each stream's ``MaxRecordSizeInKiB`` (``UpdateMaxRecordSize``
  sets it, records up to 10 MiB are stored) but leaves it out of ``DescribeStreamSummary`` until it was set, counts
  only the data, and refuses a record per entry with ``InvalidArgumentException``. The front answers as Kinesis does:
  the summary names the limit (1024 unless raised), and a write holding a record whose data and partition key exceed
  its stream's limit is refused whole with ``ValidationException`` (``stats()["oversized_refused"]``). With
  ``enforce_shard_limits(oversized="burst")`` a record larger than a second of the byte quota draws on the shard's
  large-record burst (10 MiB, refilled at the byte quota) and leaves the byte bucket in debt.

The aiohttp server and client run on an event loop in a daemon thread; the switches may be called
from any thread while traffic flows. All mutable state lives on the loop: each switch runs there
and has taken effect when it returns.

Requests whose body the front rewrites (a ``PutRecords`` with some records dropped) keep their
original SigV4 headers, so their signature no longer matches: fine for kinesis-mock, which only
checks that the headers exist. Needs ``aiohttp`` and ``trustme`` (see ``requirements-dev.txt``).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import re
import socket
import ssl
import struct
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import cbor2
import trustme
from aiohttp import ClientError, ClientSession, ClientTimeout, web

from .emulator import AGGREGATED_MAGIC, hash_key, user_records_in

__all__ = ["FaultFront"]

T = TypeVar("T")

_TARGET_PREFIX = "Kinesis_20131202."
_SIGNER = re.compile(r"Credential=([^/,\s]+)/")  # SigV4: Credential=<key id>/<date>/<region>/<service>/aws4_request
_JSON = "application/x-amz-json-1.1"
# Not forwarded: connection-level headers, and ones aiohttp recomputes for the new connection/body.
_HOP_BY_HOP = frozenset(
    h.lower()
    for h in (
        "Connection Keep-Alive Proxy-Authenticate Proxy-Authorization TE Trailer Transfer-Encoding Upgrade "
        "Host Content-Length Expect"
    ).split()
)
_ACCOUNT = "000000000000"  # kinesis-mock's account id
_STRATEGIES = ("USER_PARTITION_KEY", "AUTO")
_CONTROL_PLANE = ("DescribeStreamSummary", "ListShards")

_DEFAULT_RECORD_KIB = 1024  # a stream's MaxRecordSizeInKiB unless raised
_BURST_BYTES = 10 * 1024 * 1024  # a shard's large-record burst: one record of the largest size
# A write body shorter than this (base64 makes 4 bytes of 3) holds no record over the smallest limit: not parsed.
_SMALL_BODY = _DEFAULT_RECORD_KIB * 1024 * 4 // 3
# What ``deny`` answers with, as Kinesis words it: an action the principal may not take, or a key it does not know.
_REFUSALS = {
    "AccessDeniedException": "not authorized to perform: kinesis:{op}",
    "UnrecognizedClientException": "The security token included in the request is invalid.",
}


def _control_body(request: web.Request, body: bytes) -> dict[str, Any]:
    """A control-plane request's body: CBOR from the AWS SDK for Java, JSON from the KPL and boto3; {} if neither."""
    try:
        parsed = cbor2.loads(body) if "cbor" in request.headers.get("Content-Type", "") else _json(body)
    except (ValueError, cbor2.CBORDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _caller(user_agent: str) -> str:
    """Who sent a request, by its User-Agent: the KPL daemon, the writer's driver (its SDK client adds
    ``spark-kinesis-driver``), an AWS SDK for Java client (an executor's writer), or another."""
    if "KinesisProducerLibrary" in user_agent:
        return "kpl"
    if "spark-kinesis-driver" in user_agent:
        return "driver"
    return "sdk" if "aws-sdk-java" in user_agent else "other"


@dataclass
class _Bucket:
    """Token bucket holding at most one second of quota, refilled continuously.

    ``debt``: a record larger than a second of the byte quota (possible only with a scaled-down quota, as in the
    benchmarks) is admitted once the bucket is full and leaves it in debt, so the average rate still holds.
    ``burst``: such a record is admitted when the shard's large-record burst (``_BURST_BYTES``, refilled at the byte
    quota) holds it, as Kinesis takes records up to 10 MiB; it leaves the byte bucket in debt too.
    """

    records: float
    bytes: float
    stamp: float = field(default_factory=time.monotonic)
    debt: bool = False
    burst: float | None = None  # the large-record burst's bytes (None: no burst)

    def take(self, now: float, limits: tuple[int, int], nbytes: int) -> bool:
        max_bytes, max_records = limits
        elapsed, self.stamp = now - self.stamp, now
        self.records = min(max_records, self.records + elapsed * max_records)
        self.bytes = min(max_bytes, self.bytes + elapsed * max_bytes)
        if self.burst is not None:
            self.burst = min(_BURST_BYTES, self.burst + elapsed * max_bytes)
            if nbytes > max_bytes:
                if self.records < 1 or self.burst < min(nbytes, _BURST_BYTES):
                    return False
                self.records -= 1
                self.burst -= nbytes
                self.bytes -= nbytes
                return True
        if self.records < 1 or self.bytes < (min(nbytes, max_bytes) if self.debt else nbytes):
            return False
        self.records -= 1
        self.bytes -= nbytes
        return True


@dataclass
class _Rate:
    """Calls a second, holding at most one second of them (Kinesis' control-plane limits)."""

    per_s: float
    tokens: float = 0.0
    stamp: float = field(default_factory=time.monotonic)

    def __post_init__(self) -> None:
        self.tokens = self.per_s

    def take(self, now: float) -> bool:
        self.tokens = min(self.per_s, self.tokens + (now - self.stamp) * self.per_s)
        self.stamp = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True


@dataclass(frozen=True)
class _Shard:
    shard_id: str
    start: int
    end: int


def _error(status: int, kind: str, message: str) -> web.Response:
    body = json.dumps({"__type": kind, "message": message})
    # The header names the error for a client of either content type (the AWS SDK for Java speaks CBOR).
    return web.Response(status=status, text=body, headers={"Content-Type": _JSON, "x-amzn-ErrorType": kind})


def _record_error(code: str, message: str) -> dict[str, str]:
    return {"ErrorCode": code, "ErrorMessage": message}


def _passed_back(header: str) -> bool:
    h = header.lower()
    return h == "content-type" or h.startswith("x-amz")  # x-amzn-RequestId, x-amz-id-2


def _record_bytes(record: dict[str, Any]) -> int:
    return len(base64.b64decode(record.get("Data", ""))) + len(record["PartitionKey"].encode("utf-8"))


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _stream_name(body: dict[str, Any]) -> str:
    name = body.get("StreamName")
    return str(name) if name else str(body.get("StreamARN", "")).rpartition("/")[2]


class FaultFront:
    """HTTPS front for a Kinesis emulator at ``upstream_url`` (e.g. ``http://127.0.0.1:4567``).

    >>> with FaultFront(f"http://127.0.0.1:{km.plain_port}") as front:
    ...     front.enforce_shard_limits(records_per_s=100)
    ...     client = boto3.client("kinesis", endpoint_url=front.endpoint, verify=front.ca_pem_path, ...)
    """

    def __init__(self, upstream_url: str, *, seed: int = 0, upstream_timeout_s: float = 120.0) -> None:
        self.upstream_url = upstream_url.rstrip("/")
        self._upstream_timeout_s = upstream_timeout_s
        self._rng = random.Random(seed)
        self._port = 0
        self._ca_pem_path: str | None = None
        self._ssl: ssl.SSLContext | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._session: ClientSession | None = None
        # Switches (only touched on the loop once started).
        self._limits: tuple[int, int] | None = None  # (bytes_per_s, records_per_s)
        self._buckets: dict[str, _Bucket] = {}
        self._debt = False
        self._burst = False
        self._record_limits: dict[str, int] = {}  # stream -> its largest record in bytes, read from the emulator
        self._shards: dict[str, list[_Shard]] = {}
        self._fail_fraction = 0.0
        self._fail_mode = "http500"
        self._fail_counted = 0  # write requests seen since fail_requests
        self._latency_s = 0.0
        self._writes_gate: asyncio.Event | None = None  # set while writes pass; None: never held
        self._writes_waiting = 0
        self._control_limits: tuple[float | None, float | None] = (None, None)  # DescribeStreamSummary, ListShards /s
        self._control_rates: dict[str, _Rate] = {}  # "" for the account's DescribeStreamSummary, else a stream's
        self._control_calls: dict[str, int] = {}  # "<operation>/<caller>" -> calls
        self._control_throttled: dict[str, int] = {}  # "<operation>/<caller>" -> calls answered LimitExceededException
        self._control_by_stream: dict[str, dict[str, int]] = {}  # stream -> "<operation>/<caller>" -> calls
        self._signers: dict[str, int] = {}  # access key id of each signed request -> requests
        self._strategies: dict[str, str] = {}  # stream -> RecordDistributionStrategy (USER_PARTITION_KEY if absent)
        self._denied: set[str] = set()  # operations answered with AccessDeniedException
        self._denied_key: str | None = None  # only for requests this key signs (None: every request)
        self._denied_code = "AccessDeniedException"
        self._first_denied: float | None = None  # time.monotonic() of the first request denied since ``deny``
        self._held: set[str] = set()  # streams whose ListShards answers come from self._listings
        self._held_by_stream: dict[str, int] = {}  # user records written to each stream while its maps were held
        self._listings: dict[tuple[str, bytes], tuple[int, bytes, dict[str, str]]] = {}  # the last answer per request
        self._outage_mode: str | None = None
        self._outage_timer: asyncio.TimerHandle | None = None
        self._outage_end: asyncio.Task[None] | None = None  # keeps the timer's task referenced
        self._stats = dict.fromkeys(
            (
                "requests",
                "forwarded",
                "throttled_records",
                "admitted_records",  # taken from a shard's quota (limits on): the link's payload
                "admitted_bytes",
                "failed_records",
                "http500",
                "reset_connections",
                "refused_periods",
                "aggregated_on_auto",  # aggregated records written to an AUTO stream
                "placed_on_auto",  # records an AUTO stream placed itself
                "oversized_refused",  # writes refused for a record over its stream's MaxRecordSizeInKiB
                "large_admitted",  # records admitted from a shard's large-record burst
                "held_listings",  # ListShards answered from before a hold
                "held_records",  # records written to a stream while its shard maps were held
                "denied",  # requests answered with AccessDeniedException (``deny``)
                "control_plane_throttled",  # control-plane calls answered LimitExceededException
            ),
            0,
        )

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> FaultFront:
        if self._loop is not None:
            raise RuntimeError("FaultFront already started")
        ca = trustme.CA()
        self._ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ca.issue_cert("127.0.0.1", "localhost").configure_cert(self._ssl)
        self._ssl.set_alpn_protocols(["http/1.1"])  # no HTTP/2 here, whatever libcurl offers
        fd, self._ca_pem_path = tempfile.mkstemp(prefix="fault-front-ca-", suffix=".pem")
        os.close(fd)
        ca.cert_pem.write_to_path(self._ca_pem_path)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-front", daemon=True)
        self._thread.start()
        try:
            self._run(self._start())
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        try:
            self._run(self._stop())
        finally:
            loop.call_soon_threadsafe(loop.stop)
            thread.join(timeout=10)
            loop.close()
            self._loop = self._thread = None
            if self._ca_pem_path:
                os.unlink(self._ca_pem_path)
                self._ca_pem_path = None

    def __enter__(self) -> FaultFront:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def endpoint(self) -> str:
        return f"https://127.0.0.1:{self._port}"

    @property
    def ca_pem_path(self) -> str:
        if self._ca_pem_path is None:
            raise RuntimeError("FaultFront not started")
        return self._ca_pem_path

    # -- switches (any thread) ------------------------------------------------------------------
    def enforce_shard_limits(
        self, bytes_per_s: int | None = 1048576, records_per_s: int = 1000, oversized: str = "refuse"
    ) -> None:
        """Per-shard quotas as in real Kinesis; ``enforce_shard_limits(None)`` turns them off.

        Each call starts with full buckets and re-reads the shard maps (ListShards, per stream).
        ``oversized``: what happens to a record larger than ``bytes_per_s``: ``"refuse"`` it always, ``"debt"``:
        admit it into a full bucket, which then refills from below zero, or ``"burst"``: admit it when the shard's
        large-record burst holds it (Kinesis' records over 1 MiB), leaving the byte bucket in debt.
        """
        if oversized not in ("refuse", "debt", "burst"):
            raise ValueError(f"bad oversized={oversized!r}: 'refuse', 'debt' or 'burst'")

        def apply() -> None:
            self._limits = None if bytes_per_s is None else (bytes_per_s, records_per_s)
            self._debt = oversized == "debt"
            self._burst = oversized == "burst"
            self._buckets.clear()
            self._shards.clear()

        self._call(apply)

    def fail_requests(self, fraction: float, mode: str = "http500") -> None:
        """Fail ``fraction`` of PutRecords/PutRecord requests (``"http500"``) or of PutRecords records
        (``"partial"``; a PutRecord is then failed whole) with InternalFailure, or (``"both"``) ``fraction`` of the
        requests and then of the records of the rest. ``0`` turns it off. Failed requests are evenly spaced (the
        1/fraction-th, counted from this call), so any run of requests holds its share however short; failed
        records are drawn at random (a request holds many)."""
        if mode not in ("http500", "partial", "both") or not 0.0 <= fraction <= 1.0:
            raise ValueError(f"bad fail_requests({fraction!r}, mode={mode!r})")

        def apply() -> None:
            self._fail_fraction, self._fail_mode, self._fail_counted = fraction, mode, 0

        self._call(apply)

    def add_latency(self, ms: float) -> None:
        """Delay every request by ``ms`` before it is handled; ``0`` turns it off."""

        def apply() -> None:
            self._latency_s = max(0.0, ms) / 1000.0

        self._call(apply)

    def hold_writes(self) -> None:
        """From now until ``release_writes``, each ``PutRecords`` and ``PutRecord`` waits at the front before it is
        handled (at most the upstream timeout)."""

        def apply() -> None:
            if self._writes_gate is None or self._writes_gate.is_set():
                self._writes_gate = asyncio.Event()

        self._call(apply)

    def release_writes(self) -> None:
        """Writes held by ``hold_writes`` go on, and new ones pass."""

        def apply() -> None:
            if self._writes_gate is not None:
                self._writes_gate.set()

        self._call(apply)

    def writes_waiting(self) -> int:
        """Write requests waiting at the front right now (``hold_writes``)."""
        return self._call(lambda: self._writes_waiting)

    def limit_control_plane(
        self, describe_per_s: float | None = 20.0, list_shards_per_s: float | None = 1000.0
    ) -> None:
        """From now on, ``DescribeStreamSummary`` calls over ``describe_per_s`` (per account) and ``ListShards`` calls
        of a stream over ``list_shards_per_s`` are answered ``LimitExceededException``; ``None``: no limit."""

        def apply() -> None:
            self._control_limits = (describe_per_s, list_shards_per_s)
            self._control_rates = {}

        self._call(apply)

    def control_plane_calls(self, throttled: bool = False, stream: str | None = None) -> dict[str, int]:
        """Control-plane calls so far by ``"<operation>/<caller>"`` (``kpl``, ``driver``, ``sdk``, ``other``),
        throttled or not; with ``throttled``, only those answered ``LimitExceededException``; with ``stream``, all
        calls naming that stream (a ``ListShards`` page after the first names none)."""
        if stream is not None:
            return self._call(lambda: dict(self._control_by_stream.get(stream, {})))
        return self._call(lambda: dict(self._control_throttled if throttled else self._control_calls))

    def outage(self, seconds: float, mode: str = "refuse") -> None:
        """Start an outage of ``seconds`` and return at once (the front ends it by itself).

        ``"refuse"``: nothing listens on the port (connects get ECONNREFUSED); ``"reset"``: connections
        are accepted and reset without an answer. In both modes requests arriving on connections that
        were already open are reset too, as a real outage would break them.
        """
        if mode not in ("refuse", "reset"):
            raise ValueError(f"bad outage mode {mode!r}")
        self._run(self._begin_outage(seconds, mode))

    def end_outage(self) -> None:
        """End the current outage now (no-op without one); when this returns, the port listens again."""
        self._run(self._end_outage())

    def set_distribution_strategy(self, stream: str, strategy: str) -> None:
        """Make ``stream`` report ``strategy`` (``"AUTO"`` or ``"USER_PARTITION_KEY"``) from now on."""
        if strategy not in _STRATEGIES:
            raise ValueError(f"bad strategy {strategy!r}: one of {_STRATEGIES}")

        def apply() -> None:
            self._strategies[stream] = strategy

        self._call(apply)

    def deny(self, *operations: str, key_id: str | None = None, code: str = "AccessDeniedException") -> None:
        """Answer these operations (e.g. ``"DescribeStreamSummary"``) with ``code``, for the requests ``key_id`` signs
        if given, else for all; none: allow all."""
        if code not in _REFUSALS:
            raise ValueError(f"code={code!r}: one of {sorted(_REFUSALS)}")

        def apply() -> None:
            self._denied = set(operations)
            self._denied_key = key_id
            self._denied_code = code
            self._first_denied = None

        self._call(apply)

    def first_denied_at(self) -> float | None:
        """``time.monotonic()`` when the front first answered a request ``deny`` refused (since that call), else None:
        when the writer first heard the refusal."""
        return self._call(lambda: self._first_denied)

    def hold_shard_maps(self, stream: str) -> None:
        """From now until ``release_shard_maps(stream)``, answer each ``ListShards`` of ``stream`` as the emulator
        answered the same request (same body and content type) last before now; a request never seen is forwarded."""

        def apply() -> None:
            self._held.add(stream)

        self._call(apply)

    def release_shard_maps(self, stream: str) -> None:
        """``ListShards`` of ``stream`` reaches the emulator again."""

        def apply() -> None:
            self._held.discard(stream)

        self._call(apply)

    def signers(self) -> dict[str, int]:
        """Requests per access key id that signed them (SigV4 ``Credential=<key id>/...``): what Kinesis sees."""
        return self._call(lambda: dict(self._signers))

    def stats(self) -> dict[str, int]:
        return self._call(lambda: dict(self._stats))

    def held_user_records(self, stream: str) -> int:
        """User records written to ``stream`` while its shard maps were held (an aggregate's every sub-record): what the
        KPL's "Wrong Shard" re-sends of them can write twice."""
        return self._call(lambda: self._held_by_stream.get(stream, 0))

    # -- loop plumbing -----------------------------------------------------------------------
    def _run(self, coro: Any) -> Any:
        if self._loop is None:
            coro.close()
            raise RuntimeError("FaultFront not started")
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=60)

    def _call(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the loop (or right here before start), so state is never shared between threads."""
        if self._loop is None:
            return fn()

        async def wrapper() -> T:
            return fn()

        result: T = self._run(wrapper())
        return result

    async def _start(self) -> None:
        self._session = ClientSession(timeout=ClientTimeout(total=self._upstream_timeout_s))
        # PutRecords bodies reach 5 MiB (plus base64); aiohttp's default cap is 1 MiB.
        app = web.Application(client_max_size=16 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        await self._listen()

    async def _stop(self) -> None:
        if self._outage_timer is not None:
            self._outage_timer.cancel()
        if self._outage_end is not None:
            self._outage_end.cancel()  # must not re-listen on a runner being cleaned up
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _listen(self) -> None:
        assert self._runner is not None
        # Port 0 the first time; after a "refuse" outage, the same port again.
        self._site = web.TCPSite(self._runner, "127.0.0.1", self._port, ssl_context=self._ssl, reuse_address=True)
        await self._site.start()
        self._port = int(self._runner.addresses[-1][1])

    async def _begin_outage(self, seconds: float, mode: str) -> None:
        await self._end_outage()
        self._outage_mode = mode
        if mode == "refuse" and self._site is not None:
            await self._site.stop()  # closes the listening socket at once
            self._site = None
            self._stats["refused_periods"] += 1
        assert self._loop is not None
        # A timer on the loop ends the outage: the caller never sleeps.
        self._outage_timer = self._loop.call_later(seconds, self._outage_over)

    def _outage_over(self) -> None:
        self._outage_timer = None
        self._outage_end = asyncio.ensure_future(self._end_outage())

    async def _end_outage(self) -> None:
        if self._outage_timer is not None:
            self._outage_timer.cancel()
            self._outage_timer = None
        self._outage_mode = None
        if self._site is None:
            await self._listen()

    # -- request handling --------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        self._stats["requests"] += 1
        signer = _SIGNER.search(request.headers.get("Authorization", ""))
        key_id = signer.group(1) if signer else "<unsigned>"
        self._signers[key_id] = self._signers.get(key_id, 0) + 1
        if self._outage_mode is not None:
            return self._reset(request)
        body = await request.read()
        if self._latency_s:
            await asyncio.sleep(self._latency_s)
        target = request.headers.get("X-Amz-Target", "")
        op = target[len(_TARGET_PREFIX) :] if target.startswith(_TARGET_PREFIX) else ""
        gate = self._writes_gate
        if gate is not None and not gate.is_set() and op in ("PutRecords", "PutRecord"):
            self._writes_waiting += 1
            try:
                await asyncio.wait_for(gate.wait(), self._upstream_timeout_s)
            except asyncio.TimeoutError:
                pass  # held past the upstream timeout: handled as if released (the caller gave up long before)
            finally:
                self._writes_waiting -= 1
        if op in self._denied and self._denied_key in (None, key_id):
            self._stats["denied"] += 1
            if self._first_denied is None:
                self._first_denied = time.monotonic()
            return _error(400, self._denied_code, _REFUSALS[self._denied_code].format(op=op))
        if op in _CONTROL_PLANE:
            key = f"{op}/{_caller(request.headers.get('User-Agent', ''))}"
            self._control_calls[key] = self._control_calls.get(key, 0) + 1
            named_stream = _stream_name(_control_body(request, body))
            named = self._control_by_stream.setdefault(named_stream, {})
            named[key] = named.get(key, 0) + 1
            if not self._control_admitted(op, named_stream):
                self._stats["control_plane_throttled"] += 1
                self._control_throttled[key] = self._control_throttled.get(key, 0) + 1
                return _error(400, "LimitExceededException", f"Rate exceeded for {op} under this account.")
        if op == "DescribeStreamSummary":
            return await self._describe_stream_summary(request, body)
        if op == "UpdateStreamRecordDistributionStrategy":
            return self._update_strategy(body)
        if op == "ListShards":
            return await self._list_shards(request, body)
        if self._held and op in ("PutRecords", "PutRecord"):
            parsed = _json(body)
            if _stream_name(parsed) in self._held:
                records = parsed.get("Records", []) if op == "PutRecords" else [parsed]
                self._stats["held_records"] += len(records)
                users = sum(user_records_in(base64.b64decode(r.get("Data", ""))) for r in records)
                self._held_by_stream[_stream_name(parsed)] = self._held_by_stream.get(_stream_name(parsed), 0) + users
        if op == "UpdateMaxRecordSize":
            self._record_limits.pop(_stream_name(_json(body)), None)  # read again from the emulator
        if op in ("PutRecords", "PutRecord") and len(body) > _SMALL_BODY:
            refused = await self._oversized(request, op, body)
            if refused is not None:
                return refused
        if op in ("PutRecords", "PutRecord") and self._fail_fraction:
            if (self._fail_mode != "partial" or op == "PutRecord") and self._fails_next_request():
                self._stats["http500"] += 1
                return _error(500, "InternalFailure", "injected")
        auto = "AUTO" in self._strategies.values()  # parse write bodies only then: the benchmarks' front is busy
        if auto and op in ("PutRecords", "PutRecord") and self._strategies.get(_stream_name(_json(body))) == "AUTO":
            body = self._place_on_auto(op, body)
        if op == "PutRecords" and (self._limits or (self._fail_mode != "http500" and self._fail_fraction)):
            return await self._put_records(request, body)
        if op == "PutRecord" and self._limits:
            return await self._put_record(request, body)
        return await self._forward(request, body)

    def _fails_next_request(self) -> bool:
        """Whether this write request is one of ``fraction``'s evenly spaced failures: the one where the count of
        requests times the fraction reaches the next whole number (a test's faults happen by its 1/fraction-th
        request, not by chance)."""
        seen = self._fail_counted = self._fail_counted + 1
        return int(seen * self._fail_fraction) > int((seen - 1) * self._fail_fraction)

    def _control_admitted(self, op: str, stream: str) -> bool:
        describe, list_shards = self._control_limits
        limit = describe if op == "DescribeStreamSummary" else list_shards
        if limit is None:
            return True
        scope = "stream:" + stream if op == "ListShards" else ""  # "": the account
        rate = self._control_rates.setdefault(scope, _Rate(limit))
        return rate.take(time.monotonic())

    async def _describe_stream_summary(self, request: web.Request, body: bytes) -> web.Response:
        """The emulator's answer, with the stream's RecordDistributionStrategy (which it does not know)."""

        cbor = "cbor" in request.headers.get(
            "Content-Type", ""
        )  # the AWS SDK for Java's default; boto3 and the KPL: JSON

        def with_strategy(data: bytes) -> bytes:
            answer = cbor2.loads(data) if cbor else json.loads(data)
            summary = answer["StreamDescriptionSummary"]
            summary["RecordDistributionStrategy"] = self._strategies.get(summary["StreamName"], "USER_PARTITION_KEY")
            if summary.get("MaxRecordSizeInKiB") is None:  # kinesis-mock: null until raised
                summary["MaxRecordSizeInKiB"] = _DEFAULT_RECORD_KIB
            return cbor2.dumps(answer) if cbor else json.dumps(answer).encode()

        return await self._forward(request, body, with_strategy)

    async def _list_shards(self, request: web.Request, body: bytes) -> web.Response:
        """The emulator's answer, remembered per request; for a held stream, the one remembered from before."""
        key = (request.headers.get("Content-Type", ""), body)
        if _stream_name(_control_body(request, body)) in self._held and key in self._listings:
            self._stats["held_listings"] += 1
            status, data, headers = self._listings[key]
            return web.Response(status=status, body=data, headers=headers)
        try:
            status, data, headers = await self._upstream(request, body)
        except (ClientError, asyncio.TimeoutError) as e:
            return _error(500, "InternalFailure", f"fault front: upstream failed: {e!r}")
        self._stats["forwarded"] += 1
        if status == 200:
            self._listings[key] = (status, data, headers)
        return web.Response(status=status, body=data, headers=headers)

    async def _record_limit(self, request: web.Request, stream: str) -> int:
        """``stream``'s largest record in bytes (data and partition key), from the emulator's summary (cached)."""
        if stream not in self._record_limits:
            kib = _DEFAULT_RECORD_KIB
            try:
                status, data, _ = await self._upstream(
                    request, json.dumps({"StreamName": stream}).encode(), "DescribeStreamSummary"
                )
                if status == 200:
                    kib = int(json.loads(data)["StreamDescriptionSummary"].get("MaxRecordSizeInKiB") or kib)
            except (ClientError, asyncio.TimeoutError, ValueError, KeyError):
                return kib * 1024  # not cached: asked again next time
            self._record_limits[stream] = kib * 1024
        return self._record_limits[stream]

    async def _oversized(self, request: web.Request, op: str, raw: bytes) -> web.Response | None:
        """Kinesis' answer to a write holding a record over its stream's limit (the whole request is refused), or
        None."""
        body = _json(raw)
        stream = _stream_name(body)
        records = body.get("Records", []) if op == "PutRecords" else [body]
        limit = await self._record_limit(request, stream)
        for i, rec in enumerate(records, 1):
            if isinstance(rec, dict) and rec.get("PartitionKey") is not None and _record_bytes(rec) > limit:
                self._stats["oversized_refused"] += 1
                where = f"records.{i}.member.data" if op == "PutRecords" else "data"
                return _error(
                    400,
                    "ValidationException",
                    f"1 validation error detected: Value at '{where}' failed to satisfy constraint: "
                    f"Member must have length less than or equal to {limit}",
                )
        return None

    def _update_strategy(self, raw: bytes) -> web.Response:
        body = _json(raw)
        strategy = body.get("RecordDistributionStrategy")
        if strategy not in _STRATEGIES:
            return _error(400, "ValidationException", f"RecordDistributionStrategy must be one of {_STRATEGIES}")
        self._strategies[_stream_name(body)] = str(strategy)
        return web.json_response({}, content_type=_JSON)

    def _place_on_auto(self, op: str, raw: bytes) -> bytes:
        """An AUTO stream places each record itself: a random hash key, whatever keys the record names."""
        body = _json(raw)
        records = body.get("Records", []) if op == "PutRecords" else [body]
        for rec in records:
            if base64.b64decode(rec.get("Data", ""))[:4] == AGGREGATED_MAGIC:
                self._stats["aggregated_on_auto"] += 1
            rec["ExplicitHashKey"] = str(self._rng.getrandbits(128))
            rec.setdefault("PartitionKey", "auto")  # optional on AUTO streams; the emulator needs one
            if rec["PartitionKey"] is None:
                rec["PartitionKey"] = "auto"
            self._stats["placed_on_auto"] += 1
        return json.dumps(body).encode()

    def _reset(self, request: web.Request) -> web.Response:
        """Abort the connection with a TCP RST and no answer."""
        self._stats["reset_connections"] += 1
        transport = request.transport
        if transport is not None:
            sock = transport.get_extra_info("socket")
            if sock is not None:  # linger 0: close() sends RST instead of FIN
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            transport.abort()
        # aiohttp sees the closed transport when writing this and drops it quietly.
        return web.Response(status=500)

    def _upstream_headers(self, request: web.Request, op: str | None = None) -> dict[str, str]:
        headers = {k: v for k, v in request.headers.items() if k.lower() not in _HOP_BY_HOP}
        if op is not None:
            headers["X-Amz-Target"] = _TARGET_PREFIX + op
        return headers

    async def _upstream(
        self, request: web.Request, body: bytes, op: str | None = None
    ) -> tuple[int, bytes, dict[str, str]]:
        """POST/forward to the emulator; returns status, body and the headers worth passing back."""
        assert self._session is not None
        async with self._session.request(
            request.method,
            self.upstream_url + request.path_qs,
            data=body,
            headers=self._upstream_headers(request, op),
            allow_redirects=False,
        ) as resp:
            data = await resp.read()
            return resp.status, data, {k: v for k, v in resp.headers.items() if _passed_back(k)}

    async def _forward(
        self, request: web.Request, body: bytes, rewrite: Callable[[bytes], bytes] | None = None
    ) -> web.Response:
        """The emulator's answer; ``rewrite`` changes a successful one's body."""
        try:
            status, data, headers = await self._upstream(request, body)
        except (ClientError, asyncio.TimeoutError) as e:
            return _error(500, "InternalFailure", f"fault front: upstream failed: {e!r}")
        self._stats["forwarded"] += 1
        if status == 200 and rewrite is not None:
            data = rewrite(data)
        return web.Response(status=status, body=data, headers=headers)

    async def _shard_map(self, request: web.Request, body: dict[str, Any]) -> list[_Shard] | None:
        """Open shards of the request's stream, from ListShards on the emulator (cached per stream)."""
        key = str(body.get("StreamName") or body.get("StreamARN") or "")
        if key in self._shards:
            return self._shards[key]
        ident = {"StreamName": body["StreamName"]} if body.get("StreamName") else {"StreamARN": key}
        query: dict[str, Any] = dict(ident)
        shards: list[_Shard] = []
        while True:
            try:
                status, data, _ = await self._upstream(request, json.dumps(query).encode(), "ListShards")
            except (ClientError, asyncio.TimeoutError):
                return None
            if status != 200:
                return None  # e.g. unknown stream: forwarding gets the emulator's own error
            page = json.loads(data)
            for s in page.get("Shards", []):
                # Closed shards (after resharding) take no writes; kinesis-mock sends an explicit null.
                if s.get("SequenceNumberRange", {}).get("EndingSequenceNumber") is None:
                    r = s["HashKeyRange"]
                    shards.append(_Shard(s["ShardId"], int(r["StartingHashKey"]), int(r["EndingHashKey"])))
            if not page.get("NextToken"):
                break
            query = {"NextToken": page["NextToken"]}
        self._shards[key] = shards
        return shards

    def _admit(self, stream: str, shards: list[_Shard], record: dict[str, Any], now: float) -> str | None:
        """Take quota for one record; returns the throttled shard's id, or None if admitted."""
        assert self._limits is not None
        hk = hash_key(record["PartitionKey"], record.get("ExplicitHashKey"))
        shard = next((s for s in shards if s.start <= hk <= s.end), None)
        if shard is None:
            return None  # let the emulator judge a hash key outside every shard
        bucket = self._buckets.get(stream + "/" + shard.shard_id)
        if bucket is None:
            max_bytes, max_records = self._limits
            bucket = self._buckets[stream + "/" + shard.shard_id] = _Bucket(
                max_records, max_bytes, now, self._debt, float(_BURST_BYTES) if self._burst else None
            )
        nbytes = _record_bytes(record)
        if not bucket.take(now, self._limits, nbytes):
            return shard.shard_id
        if nbytes > self._limits[0]:
            self._stats["large_admitted"] += 1
        self._stats["admitted_records"] += 1
        self._stats["admitted_bytes"] += nbytes
        return None

    def _throttle_message(self, shard_id: str, stream: str) -> str:
        return f"Rate exceeded for shard {shard_id} in stream {stream} under account {_ACCOUNT}."

    async def _put_records(self, request: web.Request, raw: bytes) -> web.Response:
        try:
            body = json.loads(raw)
            records: list[dict[str, Any]] = body["Records"]
        except (ValueError, KeyError, TypeError):
            return await self._forward(request, raw)  # malformed: the emulator answers
        stream = _stream_name(body)
        shards = await self._shard_map(request, body) if self._limits else None
        # Decide each record's fate in order; None = forward it.
        results: list[dict[str, str] | None] = []
        now = time.monotonic()
        for rec in records:
            if self._fail_mode != "http500" and self._fail_fraction and self._rng.random() < self._fail_fraction:
                self._stats["failed_records"] += 1
                results.append(_record_error("InternalFailure", "injected"))
                continue
            shard_id = self._admit(stream, shards, rec, now) if shards is not None else None
            if shard_id is not None:
                self._stats["throttled_records"] += 1
                results.append(
                    _record_error("ProvisionedThroughputExceededException", self._throttle_message(shard_id, stream))
                )
            else:
                results.append(None)
        accepted = [rec for rec, res in zip(records, results) if res is None]
        if len(accepted) == len(records):
            return await self._forward(request, raw)
        merged: dict[str, Any] = {}
        if accepted:
            try:
                subset = json.dumps({**body, "Records": accepted}).encode()
                status, data, headers = await self._upstream(request, subset)
            except (ClientError, asyncio.TimeoutError) as e:
                return _error(500, "InternalFailure", f"fault front: upstream failed: {e!r}")
            self._stats["forwarded"] += 1
            if status != 200:  # the whole request failed upstream: that answer wins
                return web.Response(status=status, body=data, headers=headers)
            merged = json.loads(data)
            upstream_results = iter(merged["Records"])
            results = [next(upstream_results) if res is None else res for res in results]
        merged["Records"] = results
        merged["FailedRecordCount"] = sum(1 for r in results if r and r.get("ErrorCode"))  # kinesis-mock sends nulls
        return web.json_response(merged, content_type=_JSON)

    async def _put_record(self, request: web.Request, raw: bytes) -> web.Response:
        try:
            body = json.loads(raw)
            shards = await self._shard_map(request, body)
            stream = _stream_name(body)
            shard_id = self._admit(stream, shards, body, time.monotonic()) if shards is not None else None
        except (ValueError, KeyError, TypeError):
            return await self._forward(request, raw)
        if shard_id is None:
            return await self._forward(request, raw)
        self._stats["throttled_records"] += 1
        return _error(400, "ProvisionedThroughputExceededException", self._throttle_message(shard_id, stream))
