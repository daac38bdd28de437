"""Provenance of the published figures: every committed bench result names the landed commit it measured.

bench/report.py stamps each results file with the commit it ran on, "+changes" when the code differed from it. A
figure in docs/benchmarks.md is only as good as that stamp: a build of uncommitted code cannot be measured again, and a
commit that is not in this history (a rebased-away branch) cannot be read.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = sorted((ROOT / "bench" / "results").glob("*.json"))


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("path", RESULTS, ids=[p.stem for p in RESULTS])
def test_each_results_file_comes_from_a_landed_commit(path: Path) -> None:
    commit = json.loads(path.read_text()).get("commit", "")
    assert commit and "+" not in commit and commit != "unknown", (
        f"{path.name} was measured on {commit!r}, not a commit: run its part again from a clean checkout of main"
    )
    assert _git("cat-file", "-e", f"{commit}^{{commit}}").returncode == 0, f"{path.name}: no commit {commit} here"
    assert _git("merge-base", "--is-ancestor", commit, "HEAD").returncode == 0, (
        f"{path.name} was measured on {commit}, which is not an ancestor of HEAD"
    )


def test_the_benchmarks_page_cites_no_uncommitted_build() -> None:
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    assert "+changes" not in text, "docs/benchmarks.md cites a build of uncommitted code"
