"""Counts requests a fresh KPL daemon signs with the command line's placeholder (PipeOnlyCredentials).

usage: credentials_race.py [DAEMONS (40)]   CREDENTIALS_RACE_BUSY [2]: busy loops beside it (the race needs load)

One Spark JVM (tests/credentials_probe.py) writes 50 records to each of DAEMONS streams, each through a fresh
producer and daemon, behind one fault front that logs every request's operation and signer. Prints the signers and
each request signed with the placeholder, with its neighbours. How ProducerClient's round trip after the first
credentials was measured (docs/configuration.md, "What is exposed on the executor host"): 4 of 160 daemons without
it, 0 of 240 with it. Not part of make test: it is a soak, minutes long.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tests")]

from helpers import probe_env, session_jars
from spark_kinesis_testkit.emulator import KinesisMock, loopback_writer_options
from spark_kinesis_testkit.faults import FaultFront

PLACEHOLDER = "SPARK-KINESIS-PLACEHOLDER"


def main() -> int:
    daemons = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    busy = int(os.environ.get("CREDENTIALS_RACE_BUSY", "2"))
    requests: list[tuple[float, str, bool]] = []
    t0 = time.monotonic()
    handle = FaultFront._handle

    async def logged(self: FaultFront, request: Any) -> Any:
        target = request.headers.get("X-Amz-Target", "").split(".")[-1]
        requests.append(
            (round(time.monotonic() - t0, 3), target, PLACEHOLDER in request.headers.get("Authorization", ""))
        )
        return await handle(self, request)

    FaultFront._handle = logged  # type: ignore[method-assign]
    tmp = Path(tempfile.mkdtemp(prefix="credentials-race-"))
    with KinesisMock() as km, FaultFront(f"http://127.0.0.1:{km.plain_port}") as front:
        cases = []
        for i in range(daemons):
            km.create_stream(f"race-{i}", 2)
            cases.append(
                {"name": f"d{i}", "stream": f"race-{i}", "options": loopback_writer_options(front.endpoint), "n": 50}
            )
        (tmp / "cfg.json").write_text(json.dumps({"jars": session_jars(), "secrets": {}, "cases": cases}))
        loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            out = subprocess.run(
                [sys.executable, str(ROOT / "tests" / "credentials_probe.py"), str(tmp / "cfg.json")],
                env={**probe_env(), "PYTHONPATH": str(ROOT / "python")},
                capture_output=True,
                text=True,
                timeout=3600,
            ).stdout
        finally:
            for p in loops:
                p.kill()
        ok = sum(1 for line in out.splitlines() if line.startswith("CASE ") and " OK " in line)
        print(f"daemons: {ok} of {daemons} wrote their records; signers: {front.signers()}")
    bad = [i for i, r in enumerate(requests) if r[2]]
    for i in bad:
        print("signed with the placeholder:", requests[i], "neighbours:", requests[max(0, i - 2) : i + 2])
    print(f"credentials_race: daemons={daemons} placeholder_signed={len(bad)}")
    return 1 if bad or ok < daemons else 0


if __name__ == "__main__":
    sys.exit(main())
