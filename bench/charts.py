"""The charts of docs/benchmarks.md (docs/img/bench-*.png), drawn from the committed results files alone.

``python bench/report.py`` draws every one again from bench/results/<part>.json, and make bench's report does after a
run has written its parts' files. A part file keeps summary figures, not samples, so a chart shows medians with their
min-max where the file has them; the backpressure runs show each run's link use, run time, peak in flight and daemon
memory rather than their time series. (bench/realtime.py run on its own still draws its per-record scatter into
bench-realtime.png; the report draws over it.)

Every side has one colour in every chart (COLORS); ours, this project's writer and sink, have bold names and outlined
bars. Sides are rows of horizontal bars, with short names (NAMES).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from common import SIZES

#: One colour per side, the same in every chart: report.VARIANTS and COST_SIDES, the real-time part's Kafka sink and
#: the overhead part's bare KPL loop. Ours first.
COLORS = {
    "writer": "#1f77b4",
    "sink": "#17becf",
    "writer_b": "#aec7e8",
    "writer_kpl": "#9467bd",
    "boto3_agg": "#ff7f0e",
    "boto3": "#d62728",
    "bare_kpl": "#bcbd22",
    "kafka": "#8c564b",
    "noop": "#7f7f7f",
}
OURS = {"writer", "sink", "writer_b", "writer_kpl"}
NAMES = {
    "writer": "writer (default)",
    "sink": 'format("kinesis") sink',
    "writer_b": "writer again (A/A)",
    "writer_kpl": "writer, aggregation='kpl'",
    "boto3_agg": "kinesis-agg + boto3",
    "boto3": "boto3 put_records",
    "bare_kpl": "bare KPL loop",
    "kafka": "Spark's Kafka sink",
    "noop": "Spark alone (noop)",
}
#: The real-time part's sinks: each its side and its name.
RT_SIDES = {
    "kafka": ("kafka", NAMES["kafka"]),
    "kinesis": ("writer", "writer, gather_ms=1 (default)"),
    "kinesis_gather20": ("writer", "writer, gather_ms=20"),
    "kinesis_gather100": ("writer", "writer, gather_ms=100"),
    "kinesis_ordered": ("writer", "writer, ordered=True"),
    "kinesis_kpl": ("writer_kpl", NAMES["writer_kpl"]),
}
EXECUTORS = {1: "o-", 2: "s--", 4: "^:"}  # a line's style per executor count (scale)
#: A row of bars: its side, its name, its figure (a number, {median, min, max} or None: not run) and the text beside it.
Row = tuple[str, str, Any, str]
Figures = dict[str, Any]
BOX = {"fc": "white", "ec": "none", "alpha": 0.8, "pad": 0.5}  # a bar's text over a grid or reference line


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _mid(v: Any) -> tuple[float, float, float]:
    return (v["median"], v["min"], v["max"]) if isinstance(v, dict) else (v, v, v)


def _num(v: float) -> str:
    return f"{v:,.{0 if v >= 100 else 1}f}"


def _bars(ax: Any, rows: list[Row], base: float = 0.0, room: float = 1.5, alpha: float = 1.0) -> list[Any]:
    """Horizontal bars, the first row on top, from ``base``; whiskers min-max; each bar's text beside it."""
    out: list[Any] = []
    right, n = base, len(rows)
    for i, (side, _, fig, text) in enumerate(rows):
        y = n - 1 - i
        if fig is None:
            ax.annotate("not run", (base, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7)
            out.append(None)
            continue
        mid, lo, hi = _mid(fig)
        ours = side in OURS
        err = {"xerr": [[mid - lo], [hi - mid]], "capsize": 3, "error_kw": {"lw": 0.8}} if hi > lo else {}
        bar = ax.barh(y, mid - base, left=base, color=COLORS[side], alpha=alpha, gid=side, **err)[0]
        bar.set_edgecolor("black" if ours else COLORS[side])
        bar.set_linewidth(1.2 if ours else 0)
        out.append(bar)
        right = max(right, hi)
        if text:
            ax.annotate(text, (hi, y), xytext=(4, 0), textcoords="offset points", va="center", fontsize=7.5, bbox=BOX)
    ax.set_yticks(range(n), [r[1] for r in rows][::-1])
    for label, row in zip(ax.get_yticklabels(), rows[::-1]):
        label.set_fontweight("bold" if row[0] in OURS else "normal")
    ax.set_xlim(base if base else 0, right * room if right > base else 1)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return out


def _finish(fig: Any, title: str, bottom: float = 0.03, note: bool = True) -> Any:
    fig.suptitle(title, fontsize=10)
    if note:
        fig.text(0.005, 0.005, "bold, outlined: spark-kinesis", fontsize=7, color="dimgray")
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def throughput(parts: dict[str, Any]) -> Figures:
    p = parts.get("throughput")
    if not p:
        return {}
    sm, cfg = p["summary"], p["config"]
    sides = [s for s in COLORS if f"{s}_100_records_per_s" in sm and s != "noop"]
    panels = [(SIZES[s], f"{{}}_{s}_records_per_s") for s in (100, 1024, 10240)]
    if "limited_shards" in cfg:
        panels.append((f"100 B behind quotas, {cfg['limited_shards']} shards", "limited_{}_records_per_s"))
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(2.9 * len(panels) + 1.8, 0.4 * len(sides) + 1.5), sharey=True)
    for ax, (title, key) in zip(axes, panels):
        rows = []
        for s in sides:
            v, throttled = sm.get(key.format(s)), sm.get(f"limited_{s}_throttled")
            text = _num(_mid(v)[0]) if v else ""
            rows.append(
                (s, NAMES[s], v, text + (f"\n{throttled:,} throttled" if throttled and "limited" in key else ""))
            )
        _bars(ax, rows, room=1.6)
        ax.xaxis.set_major_formatter(lambda x, _: f"{x / 1000:g}k" if x else "0")
        ax.set_title(title, fontsize=9)
        ax.set_xlabel("records/s")
    noop = sm.get("noop_100_records_per_s")
    alone = f"; Spark alone {_mid(noop)[0]:,.0f}/s" if noop else ""
    title = f"Records/s into {(p.get('backend') or {}).get('used', '?')} over TLS, median of {cfg['reps']}, whiskers"
    return {"bench-throughput.png": _finish(fig, f"{title} min–max{alone}")}


def cost(parts: dict[str, Any]) -> Figures:
    """PUT units over the floor by record size, a line per side; boto3's put_records (a Kinesis record each, up to
    hundreds of times the floor) in the title, not on the axis."""
    p = parts.get("cost")
    if not p:
        return {}
    sizes = sorted(dict.fromkeys(r["payload"] for r in p["runs"]))
    at = {(r["variant"], r["payload"]): r["put_over_floor"] for r in p["runs"]}
    sides = [s for s in COLORS if s != "boto3" and any(v == s for v, _ in at)]
    fig, ax = _plt().subplots(figsize=(8.2, 3.6))
    top = 1.4  # what lies above is drawn at the edge, its figure beside it: the sizes' differences stay readable
    for side in sides:
        xs = [i for i, size in enumerate(sizes) if (side, size) in at]
        ys = [min(at[(side, sizes[i])], top) for i in xs]
        ours = side in OURS
        width = 3.5 if side == "writer" else 1.5 if ours else 1  # the sink's line shows over the writer's
        ax.plot(xs, ys, "o-" if ours else "s--", color=COLORS[side], gid=side, label=NAMES[side], lw=width)
        for i in xs:
            if at[(side, sizes[i])] > top:
                x = at[(side, sizes[i])]
                ax.annotate(f"{x:.2f}×", (i, top), xytext=(6, -4), textcoords="offset points", fontsize=7.5, bbox=BOX)
    for i, size in enumerate(sizes):  # the default writer's figures, over its points
        if ("writer", size) in at:
            x = at[("writer", size)]
            ax.annotate(f"{x:.2f}×", (i, x), xytext=(0, 9), textcoords="offset points", ha="center", fontsize=7.5)
    ax.set_ylim(0.95, top + 0.05)
    ax.axhline(1.0, color="black", lw=1)
    ax.axhline(1.05, color="dimgray", lw=0.8, ls=":")
    ax.set_xticks(range(len(sizes)), [SIZES[s] for s in sizes])
    ax.set_xlim(-0.4, len(sizes) - 0.6)
    ax.set_xlabel("user record size (distinct keys); dotted: 1.05× the floor")
    ax.set_ylabel("PUT units over the floor")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    alone = [at[("boto3", s)] for s in sizes if ("boto3", s) in at]
    unaggregated = ", ".join(f"{x:,.{0 if x >= 10 else 1}f}×" for x in alone)
    title = "PUT payload units as billed, over the floor (the records' bytes in full 25 KiB units)"
    if unaggregated:
        title += f"\n{NAMES['boto3']}, a Kinesis record each: {unaggregated}"
    return {"bench-cost.png": _finish(fig, title, note=False)}


def overhead(parts: dict[str, Any]) -> Figures:
    if "overhead" not in parts:
        return {}
    sm = parts.get("throughput", {}).get("summary", {}) | parts["overhead"]["summary"]
    rows = []
    for side in ("writer", "sink", "writer_kpl", "bare_kpl", "boto3_agg"):
        v = sm.get("cpu_s_per_m_bare" if side == "bare_kpl" else f"cpu_s_per_m_{side}_net")
        rows.append((side, NAMES[side], v, _num(_mid(v)[0]) if v else ""))
    fig, ax = _plt().subplots(figsize=(7.5, 3.1))
    _bars(ax, rows, room=1.25)
    ax.set_xlabel("CPU-s per million 100 B records, net of Spark's row building")
    rate, cpu = _mid(sm.get("ratio_vs_kpl", 0))[0], _mid(sm.get("cpu_ratio_vs_kpl", 0))[0]
    title = f"CPU per record, median, whiskers min–max\n(aggregation='kpl' over the bare loop: rate {rate:.2f}×, CPU"
    return {"bench-overhead.png": _finish(fig, f"{title} {cpu:.2f}×)")}


def tuning(parts: dict[str, Any]) -> Figures:
    p = parts.get("tuning")
    if not p:
        return {}
    sm, cfg = p["summary"], p["config"]
    titles = {
        "tuning": f"unthrottled: 100 B, {cfg.get('shards', '?')} shards",
        "tuning_limited": f"behind quotas: 1 KiB, {cfg.get('limited_shards', '?')} shards at 1 MiB/s",
    }
    panels = [k for k in titles if sm.get(k)]
    n = [len(sm[k]) for k in panels]
    fig, axes = _plt().subplots(len(n), 1, figsize=(8, 0.3 * sum(n) + 1.2 * len(n) + 0.6), height_ratios=n)
    for ax, k in zip([axes] if len(n) == 1 else axes, panels):
        runs = sm[k]
        rows = []
        for name, v in runs.items():
            cpu = v["cpu_s_per_m_net"]
            rows.append(("writer", name, cpu, f"{_num(cpu)} ({v.get('cpu_vs_defaults', 1):.2f}×)"))
        _bars(ax, rows, room=1.35)
        for i, v in enumerate(runs.values()):
            ax.barh(len(rows) - 1 - i, v.get("daemon_cpu_s_per_m", 0), height=0.4, color="black", alpha=0.3)
        if "defaults" in runs:
            ax.axvline(runs["defaults"]["cpu_s_per_m_net"], color="black", ls="--", lw=0.8)
        ax.set_title(titles[k], fontsize=9)
        ax.set_xlabel("CPU-s per million records, net of Spark")
    title = "The writer with one KPL setting changed: CPU per record, median (dark: the KPL daemon's; dashed: defaults)"
    return {"bench-tuning.png": _finish(fig, title)}


def backpressure(parts: dict[str, Any]) -> Figures:
    p = parts.get("backpressure")
    if not p:
        return {}
    cfg, runs = p["config"], p["runs"]

    def name(label: str, lim: dict[str, int]) -> str:
        if label == "queue_limit":
            return f"queue_limit={lim['queue_limit']:,}"
        return f"max_outstanding_bytes={lim[label] / 2**20:g} MiB" if label == "max_outstanding_bytes" else label

    def draw(title: str, panels: dict[str, list[tuple[float, str]]]) -> Any:
        """A panel of bars per entry: its axis label, and each run's figure and text."""
        fig, axes = _plt().subplots(1, len(panels), figsize=(11, 0.45 * len(runs) + 1.5), sharey=True)
        for ax, (xlabel, figures) in zip(axes, panels.items()):
            rows = [("writer", name(k, r["limits"]), *f) for (k, r), f in zip(runs.items(), figures)]
            for bar, r in zip(_bars(ax, rows, room=1.6), runs.values()):
                if bar is not None and r.get("error"):
                    bar.set_hatch("///")
            ax.set_xlabel(xlabel)
        return _finish(fig, title + " (hatched: the query failed)")

    def failed(r: dict[str, Any]) -> str:
        return f": failed, {r['error'].rstrip(' .').rsplit(': ', 1)[-1][:30]}" if r.get("error") else ""

    link = [100 * (r.get("link_utilisation") or 0) for r in runs.values()]
    rss = [r.get("kpl_rss_mb_first_last") or [0, 0] for r in runs.values()]
    title = f"{cfg['bp_shards']} shards × 1 MiB/s, {cfg['bp_rows_per_s']:,} rows/s of {cfg['bp_payload']:,} B"
    throughput = {
        "link use, %": [(x, f"{x:.1f} %") for x in link],
        f"seconds the query ran, of {cfg['bp_seconds']:.0f}": [
            (r["seconds"], f"{r['seconds']:.0f} s{failed(r)}") for r in runs.values()
        ],
    }
    memory = {
        "peak outstanding payload, MiB": [
            (r["peak_outstanding_bytes"] / 2**20, f"{r['peak_outstanding_records']:,} records") for r in runs.values()
        ],
        "KPL daemon RSS, MiB: first → last": [(b, f"{a:.0f} → {b:.0f} MiB") for a, b in rss],
    }
    return {
        "bench-backpressure-throughput.png": draw(f"Backpressure behind shard quotas: {title}", throughput),
        "bench-backpressure-memory.png": draw("Backpressure: what is held in flight, and the daemon's memory", memory),
    }


def _shards(ax: Any, shards: list[int]) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(shards, [str(n) for n in shards])
    ax.minorticks_off()
    ax.grid(alpha=0.3)


def scale(parts: dict[str, Any]) -> Figures:
    p = parts.get("scale")
    if not p or not p.get("runs"):
        return {}
    runs, link = sorted(p["runs"], key=lambda r: r["shards"]), p["config"].get("link_bytes_per_s", {})
    sizes, shards = sorted({r["payload"] for r in runs}), sorted({r["shards"] for r in runs})
    fig, axes = _plt().subplots(2, len(sizes), figsize=(5 * len(sizes), 6.2), squeeze=False, sharex=True)
    for col, size in enumerate(sizes):
        for v, e in sorted({(r["variant"], r["executors"]) for r in runs if r["payload"] == size}):
            pts = [r for r in runs if (r["variant"], r["executors"], r["payload"]) == (v, e, size)]
            label = f"{NAMES[v]}, {e} executor{'s' * (e > 1)}"
            for ax, key, k in ((axes[0][col], "cpu_s_per_m_net", 1), (axes[1][col], "link_use", 100)):
                ys = [k * (r[key] or 0) for r in pts]
                ax.plot([r["shards"] for r in pts], ys, EXECUTORS.get(e, "d-."), color=COLORS[v], gid=v, label=label)
        mib = link.get(str(size), 0) / 2**20
        axes[0][col].set_title(f"{SIZES.get(size, size)} records, link {mib:.2f} MiB/s over the shards", fontsize=9)
        axes[0][col].set_ylabel("CPU-s per million records (net)")
        axes[1][col].set_ylabel("link use, % (steady middle)")
        axes[1][col].set_ylim(0, 105)
        axes[0][col].set_ylim(bottom=0)
        for ax in axes[:, col]:
            _shards(ax, shards)
        axes[1][col].set_xlabel("shards")
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=8, frameon=False)
    title = "The writer's cost and link use as shards per daemon grow (quotas of the fault front)"
    return {"bench-scale.png": _finish(fig, title, 0.1, note=False)}


def scale_unthrottled(parts: dict[str, Any]) -> Figures:
    free = [f for f in parts.get("scale", {}).get("free_runs", []) if f["executors"] == 1]
    if not free:
        return {}
    fig, axes = _plt().subplots(1, 2, figsize=(10, 3.6))
    for v, name, style in (("writer", "id as key", "o-"), ("writer_fixed", "partitioner='fixed'", "s--")):
        pts = sorted((f for f in free if f["variant"] == v), key=lambda f: f["shards"])
        for ax, key in zip(axes, ("cpu_s_per_m_net", "records_per_s")):
            mid, lo, hi = zip(*(_mid(f[key]) for f in pts)) if pts else ((), (), ())
            err = [[m - a for m, a in zip(mid, lo)], [b - m for m, b in zip(mid, hi)]]
            kw = {"fmt": style, "color": COLORS["writer"], "gid": "writer", "capsize": 3, "label": f"writer, {name}"}
            ax.errorbar([f["shards"] for f in pts], mid, yerr=err, **kw)
    axes[0].set_ylabel("CPU-s per million records (net)")
    axes[1].set_ylabel("records/s")
    for ax in axes:
        _shards(ax, sorted({f["shards"] for f in free}))
        ax.set_xlabel("shards")
        ax.set_ylim(bottom=0)
        ax.legend(fontsize=8)
    title = "Without quotas: 100 B records from one executor over more shards, median, whiskers min–max"
    return {"bench-scale-unthrottled.png": _finish(fig, title, note=False)}


def realtime(parts: dict[str, Any]) -> Figures:
    p = parts.get("realtime")
    if not p:
        return {}
    plt = _plt()
    from matplotlib.patches import Patch

    rates = list(dict.fromkeys(r["rate"] for r in p["runs"]))
    variants = [v for v in RT_SIDES if any(r["variant"] == v for r in p["runs"])]
    fig, axes = plt.subplots(1, len(rates), figsize=(4.6 * len(rates) + 1.8, 0.42 * len(variants) + 1.6), sharey=True)
    for ax, rate in zip(axes, rates):
        by = {r["variant"]: r for r in p["runs"] if r["rate"] == rate}

        def text(r: dict[str, Any]) -> str:
            units = r.get("put_units_per_m")
            return f"{r['p50_ms']:.0f} / {r['p99_ms']:.0f} ms" + (f"; {units / 1000:,.0f}k units" if units else "")

        for key, alpha in (("p99_ms", 0.35), ("p50_ms", 1.0)):
            rows = [(*RT_SIDES[v], (r := by.get(v)) and r[key], text(r) if r and alpha < 1 else "") for v in variants]
            _bars(ax, rows, alpha=alpha)
        ax.set_xlim(0, 2 * max(r["p99_ms"] for r in by.values()))
        ax.set_title(f"{rate:,} records/s", fontsize=9)
        ax.set_xlabel("ms from the input's Kafka timestamp")
    legend = [Patch(color="gray", label="p50"), Patch(color="gray", alpha=0.35, label="p99")]
    fig.legend(handles=legend, fontsize=8, loc="lower right", ncol=2, frameon=False)
    title = "Kafka → real-time query → sink: latency per record, p50 / p99, and PUT units per million records"
    return {"bench-realtime.png": _finish(fig, title, 0.07)}


CHARTS: tuple[Callable[[dict[str, Any]], Figures], ...] = (throughput, cost, overhead, tuning, backpressure, scale)
CHARTS += (scale_unthrottled, realtime)


def figures(parts: dict[str, Any]) -> Figures:
    """Every chart the part files have figures for, by file name (open: the caller closes them)."""
    return {name: fig for chart in CHARTS for name, fig in chart(parts).items()}


def draw(parts: dict[str, Any], img: Path) -> list[Path]:
    """Every chart into ``img``, over the earlier ones; the files written."""
    img.mkdir(parents=True, exist_ok=True)
    out = []
    for name, fig in figures(parts).items():
        fig.savefig(img / name, dpi=110)
        _plt().close(fig)
        out.append(img / name)
    return out
