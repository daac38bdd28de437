"""Counts requests fresh KPL daemons sign with anything but the writer's key (or leave unsigned).

usage: credentials_race.py [DAEMONS (40)]   CREDENTIALS_RACE_BUSY [2]: busy loops beside it (a race needs load)

One Spark JVM (tests/credentials_probe.py) writes 50 records to each of DAEMONS streams, each through a fresh
producer and daemon, behind one fault front that logs every request's operation and signer. Prints the signers and
each request not signed with the writer's key, with its neighbours. The KPL (1.0.8+) sends a daemon its first
credentials over the pipe before any record; this checks that its first requests (DescribeStreamSummary, ListShards,
PutRecords) carry them (docs/configuration.md, "What is exposed on the executor host"). Not part of make test: it
is a soak, minutes long.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from helpers import session_jars
from probe import Probe
from spark_kinesis_testkit.emulator import FAKE_ACCESS_KEY_ID, KinesisMock, loopback_writer_options
from spark_kinesis_testkit.faults import FaultFront


def main() -> int:
    daemons = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    busy = int(os.environ.get("CREDENTIALS_RACE_BUSY", "2"))
    requests: list[tuple[float, str, bool]] = []
    t0 = time.monotonic()
    handle = FaultFront._handle

    async def logged(self: FaultFront, request: Any) -> Any:
        target = request.headers.get("X-Amz-Target", "").split(".")[-1]
        signed_by_writer = f"Credential={FAKE_ACCESS_KEY_ID}/" in request.headers.get("Authorization", "")
        requests.append((round(time.monotonic() - t0, 3), target, not signed_by_writer))
        return await handle(self, request)

    FaultFront._handle = logged  # type: ignore[method-assign,unused-ignore]
    tmp = Path(tempfile.mkdtemp(prefix="credentials-race-"))
    with KinesisMock() as km, FaultFront(f"http://127.0.0.1:{km.plain_port}") as front:
        cases = []
        for i in range(daemons):
            km.create_stream(f"race-{i}", 2)
            cases.append(
                {"name": f"d{i}", "stream": f"race-{i}", "options": loopback_writer_options(front.endpoint), "n": 50}
            )
        loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            cfg = {"jars": session_jars(), "secrets": {}, "cases": cases}
            result = Probe("credentials_probe.py", cfg, tmp).wait(3600)
        finally:
            for p in loops:
                p.kill()
        ok = sum(1 for case in result.all("CASE") if case["status"] == "OK")
        print(f"daemons: {ok} of {daemons} wrote their records; signers: {front.signers()}")
    bad = [i for i, r in enumerate(requests) if r[2]]
    for i in bad:
        print("not signed with the writer's key:", requests[i], "neighbours:", requests[max(0, i - 2) : i + 2])
    by_operation: dict[str, int] = {}
    for _, target, _ in requests:
        by_operation[target] = by_operation.get(target, 0) + 1
    print(f"requests by operation: {by_operation}")
    print(f"credentials_race: daemons={daemons} requests={len(requests)} not_signed_by_writer={len(bad)}")
    return 1 if bad or ok < daemons else 0


if __name__ == "__main__":
    sys.exit(main())
