"""The published figures: every committed bench result names the landed commit it measured, and its charts come from it.

bench/report.py stamps each results file with the commit it ran on, "+changes" when the code differed from it. A
figure in docs/benchmarks.md is only as good as that stamp: a build of uncommitted code cannot be measured again, and a
commit that is not in this history (a rebased-away branch) cannot be read.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

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


# -- the charts: bench/charts.py draws every one from these files (python bench/report.py) ---------------------------
def _bench() -> tuple[Any, Any]:
    sys.path.insert(0, str(ROOT / "bench"))
    import charts
    import report

    return charts, report


def test_every_side_has_a_colour_of_its_own() -> None:
    charts, report = _bench()
    sides = {*report.VARIANTS, *report.COST_SIDES, *(side for side, _ in charts.RT_SIDES.values()), "bare_kpl"}
    assert sides <= set(charts.COLORS), f"sides without a colour: {sides - set(charts.COLORS)}"
    assert len(set(charts.COLORS.values())) == len(charts.COLORS), "two sides share a colour"
    assert set(charts.NAMES) == set(charts.COLORS)
    assert charts.OURS >= {"writer", "writer_kpl", "sink"}


def test_the_report_draws_every_chart_from_the_committed_results(tmp_path: Path) -> None:
    """Each chart the benchmarks page shows is drawn from bench/results alone, each side in its one colour throughout,
    and no label runs over another or off its panel."""
    charts, report = _bench()  # matplotlib: requirements-dev.txt
    from matplotlib.colors import to_hex

    drawn = {p.name for p in charts.draw(report.load(), tmp_path)}
    shown = set(re.findall(r"img/(bench-[\w-]+\.png)", (ROOT / "docs" / "benchmarks.md").read_text()))
    assert shown <= drawn, f"docs/benchmarks.md shows charts the report does not draw: {shown - drawn}"
    assert {"bench-cost.png", "bench-realtime.png"} <= shown
    assert all((tmp_path / name).read_bytes().startswith(b"\x89PNG") for name in drawn)

    figures = charts.figures(report.load())
    try:
        seen: dict[str, set[str]] = {}
        for name, fig in figures.items():
            fig.canvas.draw()
            texts = [*fig.texts, *(t for legend in fig.legends for t in legend.get_texts())]
            for ax in fig.axes:
                for a in [*ax.patches, *ax.lines]:
                    if a.get_gid():
                        colour = a.get_facecolor() if hasattr(a, "get_width") else a.get_color()
                        seen.setdefault(a.get_gid(), set()).add(to_hex(colour, keep_alpha=False))
                texts += [*ax.texts, ax.title, ax.xaxis.label, ax.yaxis.label]
                for axis in (ax.xaxis, ax.yaxis):
                    lo, hi = sorted(axis.get_view_interval())
                    ticks = zip(axis.get_majorticklocs(), axis.get_majorticklabels())
                    labels = [t for x, t in ticks if lo <= x <= hi and t.get_visible() and t.get_text()]
                    texts += labels
                    boxes = [t.get_window_extent() for t in labels]
                    for i, b in enumerate(boxes):
                        assert not any(b.overlaps(c) for c in boxes[i + 1 :]), f"{name}: tick labels overlap"
                boxes = [t.get_window_extent() for t in ax.texts]  # the bars' texts: apart, each in its panel
                for i, b in enumerate(boxes):
                    assert ax.bbox.x0 <= b.x0 and b.x1 <= ax.bbox.x1, f"{name}: {ax.texts[i].get_text()!r} leaves"
                    assert not any(b.overlaps(c) for c in boxes[i + 1 :]), f"{name}: {ax.texts[i].get_text()!r}"
            for t in texts:
                b = t.get_window_extent()
                assert fig.bbox.x0 <= b.x0 and b.x1 <= fig.bbox.x1, f"{name}: {t.get_text()!r} leaves the figure"
        assert {"writer", "boto3", "kafka"} <= set(seen)
        for side, colours in seen.items():
            assert colours == {charts.COLORS[side]}, f"{side} is drawn in {colours}, not {charts.COLORS[side]}"
    finally:
        charts._plt().close("all")
