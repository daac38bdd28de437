"""Where a JFR recording's CPU samples went: top self frames, threads, and a few inclusive frames.

python bench/jfr_top.py recording.jfr  -> JSON on stdout (bench/run.py stores it with the results).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from typing import Any

# Inclusive counts for the frames that say which layer a sample belongs to.
MARKERS = {
    "writer.process": "io.github.sparkkinesis.KinesisForeachWriter.process",
    "writer.convert": "io.github.sparkkinesis.RowConverter",
    "writer.backpressure": "io.github.sparkkinesis.QueueLimiter.await",
    "kpl.addUserRecord": "io.github.sparkkinesis.shaded.kpl.KinesisProducer.addUserRecord",
    "kpl.daemon_io": "io.github.sparkkinesis.shaded.kpl.Daemon",
    "kpl.callbacks": "io.github.sparkkinesis.shaded.kpl.KinesisProducer$MessageHandler",
    "spark.foreach_sink": "org.apache.spark.sql.execution.streaming",
    "parquet": "org.apache.parquet",
    "replay.fingerprint": "io.github.sparkkinesis.replay.Fingerprint",  # skip on replay (dedupe_location)
    "replay.ledger": "io.github.sparkkinesis.replay.FingerprintLedger",
    "replay.store": "io.github.sparkkinesis.replay.FingerprintStore",
}


def _frame(f: dict[str, Any]) -> str:
    m = f["method"]
    return f"{m['type']['name']}.{m['name']}".replace("/", ".")  # JFR's JSON spells packages with slashes


def summarise(path: str, top: int = 25) -> dict[str, Any]:
    jfr = shutil.which("jfr")
    if jfr is None:
        raise RuntimeError("the JDK's jfr tool is not on PATH")
    raw = subprocess.run(
        [jfr, "print", "--json", "--stack-depth", "64", "--events", "jdk.ExecutionSample", path],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    events = json.loads(raw)["recording"]["events"]
    self_frames: Counter[str] = Counter()
    threads: Counter[str] = Counter()
    marked: Counter[str] = Counter()
    for e in events:
        frames = [_frame(f) for f in e["values"]["stackTrace"]["frames"]]
        if not frames:
            continue
        self_frames[frames[0]] += 1
        name = e["values"]["sampledThread"]["javaName"] or "?"
        threads[re.sub(r"[-\s#]*\d+$", "", name)] += 1
        joined = "\n".join(frames)
        for label, needle in MARKERS.items():
            if needle in joined:
                marked[label] += 1
    n = max(1, len(events))
    return {
        "samples": len(events),
        "top_self": [[f, c, round(c / n, 4)] for f, c in self_frames.most_common(top)],
        "threads": [[t, c, round(c / n, 4)] for t, c in threads.most_common(12)],
        "inclusive": {k: round(v / n, 4) for k, v in marked.most_common()},
    }


if __name__ == "__main__":
    json.dump(summarise(sys.argv[1]), sys.stdout, indent=1)
