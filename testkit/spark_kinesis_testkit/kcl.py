"""The Kinesis Client Library's own code as the tests' consumer: never a model of it.

``make kcl`` builds ``tools/kcl`` (the KCL 3.x from Maven Central and two small programs over it) into
``.cache/kcl``. ``KclDeaggregator`` keeps one JVM running the KCL's ``AggregatorUtil.deaggregate`` and hands it each
shard's records as a test read them; ``read_stream_kcl`` reads a stream as a KCL consumer gets it: an aggregate whose
sub-records do not all lie in the range of the shard it was read from is dropped as the KCL drops it, whatever that
is in the KCL version built.
"""

from __future__ import annotations

import base64
import os
import subprocess
from pathlib import Path
from typing import Any

from .emulator import UserRecord, iter_shard, require_java, stop_process

__all__ = ["KclDeaggregator", "kcl_classpath", "read_stream_kcl"]


def kcl_classpath() -> str:
    """The class path of ``tools/kcl``'s programs and the KCL (``$SPARK_KINESIS_KCL_DIR``, else the repo's
    ``.cache/kcl``); FileNotFoundError naming ``make kcl`` when they are not built."""
    root = Path(__file__).resolve().parents[2]
    jar = root / "tools" / "kcl" / "target" / "kcl-tools.jar"
    lib = Path(os.environ.get("SPARK_KINESIS_KCL_DIR", root / ".cache" / "kcl")) / "lib"
    if not jar.is_file() or not lib.is_dir():
        raise FileNotFoundError(f"the KCL's programs are not built ({jar}, {lib}): run `make kcl`")
    return f"{jar}{os.pathsep}{lib}{os.sep}*"


class KclDeaggregator:
    """One JVM running ``io.github.sparkkinesis.kcl.Deaggregate`` (tools/kcl): the KCL's deaggregation, shard by
    shard, for as many reads as the tests make. Started on first use; ``close()`` stops it by its pid."""

    def __init__(self) -> None:
        self._proc: subprocess.Popen[str] | None = None

    def _started(self) -> subprocess.Popen[str]:
        if self._proc is None or self._proc.poll() is not None:
            self._proc = subprocess.Popen(
                [
                    require_java("the KCL runs on the JVM"),
                    "-cp",
                    kcl_classpath(),
                    "io.github.sparkkinesis.kcl.Deaggregate",
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                encoding="utf-8",
            )
        return self._proc

    def deaggregate(self, records: list[dict[str, Any]], first: int, last: int, shard_id: str) -> list[UserRecord]:
        """What the KCL makes of ``records`` (boto3 ``GetRecords`` entries) read from the shard ``shard_id`` whose hash
        keys run from ``first`` to ``last``."""
        fields = [str(first), str(last)]
        arrivals: dict[str, float | None] = {}
        for r in records:
            arrival = r.get("ApproximateArrivalTimestamp")
            arrivals[r["SequenceNumber"]] = arrival.timestamp() if arrival is not None else None
            ehk = r.get("ExplicitHashKey") or "-"
            fields += [r["SequenceNumber"], r["PartitionKey"], ehk, base64.b64encode(r["Data"]).decode()]
        proc = self._started()
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write("\t".join(fields) + "\n")
        proc.stdin.flush()
        answer = proc.stdout.readline()
        if not answer:
            raise RuntimeError(f"the KCL's deaggregation exited with {proc.wait()}")
        out: list[UserRecord] = []
        f = answer.rstrip("\n").split("\t")
        if f == ["-"]:
            return out
        for i in range(0, len(f), 6):
            seq, _sub, agg, pk, ehk, data = f[i : i + 6]
            out.append(
                UserRecord(pk, base64.b64decode(data), shard_id, None if ehk == "-" else ehk, agg == "1", arrivals[seq])
            )
        return out

    def close(self) -> None:
        if self._proc is not None:
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                stop_process(self._proc)  # type: ignore[arg-type]
            self._proc = None

    def __enter__(self) -> KclDeaggregator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_stream_kcl(client: Any, stream: str, kcl: KclDeaggregator, idle_polls: int = 2) -> list[UserRecord]:
    """Every shard of ``stream`` from TRIM_HORIZON (closed parents too), each shard's records deaggregated by the KCL
    against that shard's hash-key range: what a KCL consumer of the stream receives."""
    out: list[UserRecord] = []
    for shard in client.list_shards(StreamName=stream)["Shards"]:
        sid = shard["ShardId"]
        first, last = (int(shard["HashKeyRange"][k]) for k in ("StartingHashKey", "EndingHashKey"))
        records = list(iter_shard(client, stream, sid, idle_polls))
        for i in range(0, len(records), 1000):  # one request line per thousand Kinesis records
            out += kcl.deaggregate(records[i : i + 1000], first, last, sid)
    return out
