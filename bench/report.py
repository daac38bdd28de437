"""Plots (docs/img/bench-*.png) and the results table of docs/benchmarks.md from one bench result.

Re-render from a saved result without rerunning: python bench/report.py bench/results/<ts>.json [--docs]
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
IMG = ROOT / "docs" / "img"
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN, END = "<!-- bench:results:begin -->", "<!-- bench:results:end -->"
VARIANTS = {
    "writer": "KinesisWriter (aggregation='writer')",
    "writer_kpl": "KinesisWriter, aggregation='kpl'",
    "sink": 'format("kinesis") sink',
    "writer_b": "foreach writer again, second stream (A/A control)",
    "boto3": "foreachBatch + boto3 put_records",
    "boto3_agg": "foreachBatch + aws-kinesis-agg + boto3",
    "noop": "Spark alone (noop sink)",
}
BP_COLORS = {"no limit": "tab:red", "queue_limit": "tab:blue", "max_outstanding_bytes": "tab:green"}


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _median_spread(xs: list[float]) -> tuple[float, float, float]:
    s = sorted(xs)
    mid = s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2
    return mid, mid - s[0], s[-1] - mid


def plot_throughput(result: dict[str, Any], img: Path) -> Path | None:
    runs = result.get("throughput_runs")
    if not runs:
        return None
    plt = _plt()
    panels = [(runs, 100, "100-byte records"), (runs, 10240, "10 KiB records")]
    if result.get("limited_runs"):
        shards = result["config"]["limited_shards"]
        panels.append((result["limited_runs"], 100, f"100 B behind shard quotas\n({shards} x 1 MiB/s, 1,000 rec/s)"))
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels), 4.4))
    for ax, (source, payload, title) in zip(axes, panels):
        names: list[str] = []
        mids: list[float] = []
        errs: list[list[float]] = [[], []]
        for v, label in VARIANTS.items():
            if v == "noop":  # ~20x the others: the table has it
                continue
            xs = [r["records_per_s"] for r in source if r["variant"] == v and r["payload"] == payload]
            if not xs:
                continue
            m, lo, hi = _median_spread(xs)
            names.append(label.replace(" + ", " +\n"))
            mids.append(m)
            errs[0].append(lo)
            errs[1].append(hi)
        colors = ["tab:green", "tab:gray", "tab:olive"][: len(names)]
        bars = ax.bar(range(len(names)), mids, yerr=errs, color=colors, capsize=4)
        for bar, m in zip(bars, mids):
            ax.annotate(f"{m:,.0f}", (bar.get_x() + bar.get_width() / 2, m), ha="center", va="bottom", fontsize=8)
        ax.set_xticks(range(len(names)), names, fontsize=7)
        ax.set_ylabel("records/s (median, bars: min-max)")
        ax.set_title(title)
    fig.suptitle(f"Throughput into {result['backend']['used']} (local, TLS), {result['config']['reps']} repetitions")
    fig.tight_layout()
    return _save(fig, img, "bench-throughput.png")


def plot_overhead(result: dict[str, Any], img: Path) -> Path | None:
    sm = result.get("summary", {})
    if "cpu_s_per_m_bare" not in sm:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4))
    runs = result["throughput_runs"]
    w = [r for r in runs if r["variant"] == "writer" and r["payload"] == 100]
    n = [r for r in runs if r["variant"] == "noop" and r["payload"] == 100]
    b = result["bare_kpl_runs"]
    rows = result["config"]["rows"] / 1e6

    def med(xs: list[float]) -> float:
        return _median_spread(xs)[0]

    gen = med([r["cpu_s"]["jvm"] for r in n]) / rows
    wjvm = med([r["cpu_s"]["jvm"] for r in w]) / rows - gen
    wd = med([r["cpu_s"]["kpl_daemon"] for r in w]) / rows
    bj = med([r["jvm_cpu_s"] / r["records"] * 1e6 for r in b])
    bd = med([r["daemon_cpu_s"] / r["records"] * 1e6 for r in b])
    ax.barh([1], [gen], color="lightgray", label="Spark: read + build rows (noop run)")
    ax.barh([1], [wjvm], left=[gen], color="tab:green", label="JVM: writer + KPL Java side")
    ax.barh([0], [bj], color="tab:olive", label="JVM: bare loop + KPL Java side")
    ax.barh([0, 1], [bd, wd], left=[bj, gen + wjvm], color="tab:purple", label="KPL native daemon")
    ax.set_yticks([0, 1], ["bare KPL loop", "Spark writer"])
    ax.set_xlabel("CPU seconds per million 100-byte records (user + sys, medians)")
    wall = sm.get("ratio_vs_kpl", {}).get("median")
    cpu = sm.get("cpu_ratio_vs_kpl", {}).get("median")
    ax.set_title(f"Writer vs bare KPL loop: wall throughput {wall:.2f}x, CPU (net of Spark) {cpu:.2f}x")
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return _save(fig, img, "bench-overhead.png")


def _bp_series(run: dict[str, Any]) -> dict[str, list[float]]:
    s = run["samples"]
    t = [x["t"] for x in s]
    rate = [0.0] + [(b["sent"] - a["sent"]) / max(1e-3, b["t"] - a["t"]) for a, b in zip(s, s[1:])]
    t0 = s[0]["mono"] - s[0]["t"] if s else 0.0
    f = [x for x in run.get("front", []) if x["mono"] >= t0]  # from the query's start
    ft = [x["mono"] - t0 for x in f]
    link = [0.0] + [
        (b["admitted_bytes"] - a["admitted_bytes"]) / max(1e-3, b["mono"] - a["mono"]) / 2**20 for a, b in zip(f, f[1:])
    ]
    return {
        "t": t,
        "rate": rate,
        "ft": ft,
        "link": link,
        "out_rec": [x["outstanding_records"] for x in s],
        "out_mib": [x["outstanding_bytes"] / 2**20 for x in s],
        "rss": [x["kpl_rss"] / 2**20 for x in s],
        "heap": [x["heap_used"] / 2**20 for x in s],
        "failed": [x["failed"] for x in s],
    }


def plot_backpressure(result: dict[str, Any], img: Path) -> list[Path]:
    bp = result.get("backpressure")
    if not bp:
        return []
    plt = _plt()
    cap = result["config"].get("bp_shards", 2)
    series = {k: _bp_series(v) for k, v in bp.items()}
    out = []

    fig, (a1, a2) = plt.subplots(2, 1, figsize=(10, 6), sharex=True)
    for k, s in series.items():
        c = BP_COLORS.get(k)
        a1.plot(s["ft"], s["link"], color=c, label=k, lw=1)
        a2.plot(s["t"], s["rate"], color=c, label=k, lw=1)
        _mark_end(a1, bp[k], s, c)
        _mark_end(a2, bp[k], s, c)
    a1.axhline(cap, color="black", ls="--", lw=0.8, label=f"link capacity ({cap} shards x 1 MiB/s)")
    a1.set_ylabel("MiB/s into Kinesis\n(admitted at the shard limits)")
    a2.set_ylabel("records/s confirmed\n(KPL callbacks)")
    a2.set_xlabel("seconds")
    a1.legend(fontsize=8, loc="upper right")
    fig.suptitle("Backpressure: throughput behind enforced shard limits (source ~5x faster than the link)")
    fig.tight_layout()
    out.append(_save(fig, img, "bench-backpressure-throughput.png"))

    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    panels = (
        ("out_rec", "outstanding records (KPL count, log)", True),
        ("out_mib", "outstanding payload MiB (log)", True),
        ("rss", "KPL daemon RSS, MiB", False),
        ("heap", "JVM heap used, MiB", False),
    )
    for ax, (key, label, log) in zip(axes.flat, panels):
        for k, s in series.items():
            ax.plot(s["t"], s[key], color=BP_COLORS.get(k), label=k, lw=1)
            _mark_end(ax, bp[k], s, BP_COLORS.get(k))
        if log:
            ax.set_yscale("symlog", linthresh=1 if key == "out_rec" else 0.01)
            ax.set_ylim(bottom=0)
        ax.set_ylabel(label)
    for k, v in bp.items():
        lim = v["limits"]
        if k == "queue_limit":
            axes[0][0].axhline(lim["queue_limit"], color=BP_COLORS[k], ls="--", lw=0.8)
        if k == "max_outstanding_bytes":
            axes[0][1].axhline(lim["max_outstanding_bytes"] / 2**20, color=BP_COLORS[k], ls="--", lw=0.8)
    axes[0][0].legend(fontsize=8)
    for ax in axes[1]:
        ax.set_xlabel("seconds")
    fig.suptitle(
        "Backpressure: what is held in flight, and the memory it takes (dashed: the limit; dotted: the query failed)"
    )
    fig.tight_layout()
    out.append(_save(fig, img, "bench-backpressure-memory.png"))
    return out


def _shard_axis(ax: Any, label: str) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks([4, 16, 64, 256], ["4", "16", "64", "256"])
    ax.set_xlabel(label)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)


def agg_goals(result: dict[str, Any], sm: dict[str, Any], row: Any) -> None:
    """The writer's aggregation (issue 26) against its goals: unthrottled rate and CPU over the aws-kinesis-agg + boto3
    loop and the KPL's own aggregation (aggregation='kpl'), throttling behind quotas, latency at a low steady rate."""
    net, ratio = _med(sm, "cpu_s_per_m_writer_net"), _med(sm, "cpu_ratio_vs_agg")
    if net is not None and ratio is not None:
        row(
            "CPU s per million 100 B records, net of Spark: writer / aws-kinesis-agg + boto3; their ratio",
            f"{_r(sm, 'cpu_s_per_m_writer_net', 1)} / {_r(sm, 'cpu_s_per_m_boto3_agg_net', 1)}; "
            f"{_r(sm, 'cpu_ratio_vs_agg', 2, '×')}",
            "≤ 5; ≤ 0.4×",
            net <= 5 and ratio <= 0.4,
        )
    if _med(sm, "cpu_ratio_vs_kpl_agg") is not None:
        row(
            "CPU per record (net), writer / aggregation='kpl', 100 B",
            f"{_r(sm, 'cpu_ratio_vs_kpl_agg', 2, '×')} ({_r(sm, 'cpu_s_per_m_writer_kpl_net', 1)} CPU-s per million)",
            "",
            None,
        )
    va = _med(sm, "ratio_vs_agg")
    if va is not None:
        row("rate, writer / aws-kinesis-agg + boto3, 100 B", _r(sm, "ratio_vs_agg", 2, "×"), "≥ 2.5×", va >= 2.5)
    for p, label in ((100, "100 B"), (1024, "1 KiB"), (10240, "10 KiB")):
        vk = _med(sm, f"writer_vs_kpl_agg_{p}")
        if vk is not None:
            row(
                f"rate, writer / aggregation='kpl', {label}",
                _r(sm, f"writer_vs_kpl_agg_{p}", 2, "×"),
                "" if p == 100 else "no worse (≥ 0.95×)",
                None if p == 100 else vk >= 0.95,
            )
    if _med(sm, "writer_100_records_per_aggregate") is not None:
        row("user records per aggregate, writer, 100 B", _r(sm, "writer_100_records_per_aggregate", 0), "", None)
    if "limited_writer_kpl_throttled" in sm:
        a, k = sm["limited_writer_throttled"], sm["limited_writer_kpl_throttled"]
        row(
            "behind shard quotas, 100 B: throttled records, writer / aggregation='kpl'",
            f"{a:,} / {k:,}",
            "no more than aggregation='kpl'",
            a <= k,
        )
    rt = result.get("realtime", {}).get("summary", {})
    if "rt_p50_ratio_vs_kpl_agg" in rt:
        p50, p99 = rt["rt_p50_ratio_vs_kpl_agg"], rt["rt_p99_ratio_vs_kpl_agg"]
        row(
            "latency at 1,000 records/s (real-time mode), writer / aggregation='kpl': p50; p99",
            f"{p50:.2f}×; {p99:.2f}×",
            "≤ 1.1×",
            p50 <= 1.1 and p99 <= 1.1,
        )


def plot_scale(result: dict[str, Any], img: Path) -> Path | None:
    """CPU per record (net) and link use against shards, one column per record size, a line per executor count."""
    runs = result.get("scale_runs")
    if not runs:
        return None
    agg = [r for r in runs if r["variant"] == "writer_kpl"]
    runs = [r for r in runs if r["variant"] == "writer"]
    plt = _plt()
    sizes = sorted({r["payload"] for r in runs})
    fig, axes = plt.subplots(2, len(sizes), figsize=(5 * len(sizes), 7.5), squeeze=False)
    labels = {100: "100 B", 1024: "1 KiB", 102400: "100 KiB"}
    for col, size in enumerate(sizes):
        for e, color in ((1, "tab:blue"), (2, "tab:orange")):
            pts = sorted((r["shards"], r) for r in runs if r["payload"] == size and r["executors"] == e)
            if not pts:
                continue
            xs = [x for x, _ in pts]
            name = f"{e} executor{'s' if e > 1 else ''}"
            axes[0][col].plot(xs, [r["cpu_s_per_m_net"] for _, r in pts], "o-", color=color, label=name)
            axes[1][col].plot(xs, [100 * (r["link_use"] or 0) for _, r in pts], "o-", color=color, label=name)
            pts = sorted((r["shards"], r) for r in agg if r["payload"] == size and r["executors"] == e)
            if pts:  # aggregation="kpl"
                xs, name = [x for x, _ in pts], f"{name}, aggregation='kpl'"
                axes[0][col].plot(xs, [r["cpu_s_per_m_net"] for _, r in pts], "s--", color=color, label=name)
                axes[1][col].plot(xs, [100 * (r["link_use"] or 0) for _, r in pts], "s--", color=color, label=name)
        link = runs[0]["link_bytes_per_s"] if size == runs[0]["payload"] else None
        link = next(r["link_bytes_per_s"] for r in runs if r["payload"] == size) if link is None else link
        axes[0][col].set_title(f"{labels.get(size, f'{size} B')} records, link {link / 2**20:g} MiB/s over the shards")
        axes[0][col].set_ylabel("CPU-s per million records (net of Spark)")
        axes[1][col].set_ylabel("link use, % (steady middle of the run)")
        axes[1][col].axhline(97, color="grey", ls="--", lw=0.8)
        for row in (0, 1):
            _shard_axis(axes[row][col], "shards")
    fig.suptitle("Writer cost and link use as the shards per daemon grow (fault front quotas, kinesalite)")
    fig.tight_layout()
    return _save(fig, img, "bench-scale.png")


def plot_scale_unthrottled(result: dict[str, Any], img: Path) -> Path | None:
    """Without quotas: CPU per record and rate of one executor against shards, id as key and partitioner=fixed."""
    free = [r for r in result.get("scale_free_runs", []) if r["executors"] == 1]
    if not free:
        return None
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    series = (("writer", "id as key", "tab:blue"), ("writer_fixed", 'partitioner="fixed"', "tab:green"))
    for variant, label, color in series:
        shards = sorted({r["shards"] for r in free if r["variant"] == variant})
        if not shards:
            continue
        for ax, key in ((axes[0], "cpu_s_per_m_net"), (axes[1], "records_per_s")):
            mids = [
                _median_spread([r[key] for r in free if r["variant"] == variant and r["shards"] == n])[0]
                for n in shards
            ]
            ax.plot(shards, mids, "o-", color=color, label=label)
    axes[0].set_ylabel("CPU-s per million records (net of Spark)")
    axes[1].set_ylabel("records/s")
    for ax in axes:
        _shard_axis(ax, "shards (one executor, one KPL daemon)")
    fig.suptitle("Without quotas: 100 B records from one executor spread over more shards (kinesalite, TLS)")
    fig.tight_layout()
    return _save(fig, img, "bench-scale-unthrottled.png")


def plot_tuning(result: dict[str, Any], img: Path) -> Path | None:
    """CPU per record of each tuning variant (daemon and JVM, net of Spark), unthrottled and behind quotas."""
    t = result.get("tuning")
    if not t or not t.get("runs"):
        return None
    plt = _plt()
    panels = [(t["runs"], "unthrottled: 100 B, 24 shards")]
    if t.get("limited_runs"):
        panels.append((t["limited_runs"], "behind shard quotas: 1 KiB, 4 shards at 1 MiB/s"))
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels), 0.5 * len(t["variants"]) + 2), squeeze=False)
    for ax, (runs, title) in zip(axes[0], panels):
        names = list(dict.fromkeys(r["name"] for r in runs))[::-1]
        for y, name in enumerate(names):
            xs = [r["cpu_s_per_m_net"] for r in runs if r["name"] == name]
            mid, lo, hi = _median_spread(xs)
            color = "tab:grey" if name == "defaults" else ("tab:purple" if "vDSO" in name else "tab:blue")
            ax.barh(y, mid, xerr=[[lo], [hi]], color=color, capsize=3)
            daemon = [r["daemon_cpu_s_per_m"] for r in runs if r["name"] == name and "daemon_cpu_s_per_m" in r]
            if daemon:
                ax.barh(y, _median_spread(daemon)[0], color="black", alpha=0.25, height=0.4)
        ax.set_yticks(range(len(names)), names, fontsize=8)
        ax.set_xlabel("CPU-s per million records, net of Spark (shaded: the KPL daemon's part)")
        ax.set_title(title)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle("One KPL setting changed at a time against the writer's defaults (median, min–max)")
    fig.tight_layout()
    return _save(fig, img, "bench-tuning.png")


def _mark_end(ax: Any, run: dict[str, Any], s: dict[str, list[float]], color: str | None) -> None:
    if run.get("error") and s["t"]:
        ax.axvline(s["t"][-1], color=color, ls=":", lw=1)


def _save(fig: Any, img: Path, name: str) -> Path:
    img.mkdir(parents=True, exist_ok=True)
    path = img / name
    fig.savefig(path, dpi=110)
    _plt().close(fig)
    return path


# -- the table ----------------------------------------------------------------------------------
def _r(sm: dict[str, Any], key: str, digits: int = 1, unit: str = "") -> str:
    v = sm.get(key)
    if v is None:
        return "n/a"
    if isinstance(v, dict):
        if v["n"] > 1:
            return f"**{v['median']:,.{digits}f}{unit}** ({v['min']:,.{digits}f}–{v['max']:,.{digits}f})"
        v = v["median"]
    return f"**{v:,.{digits}f}{unit}**"


def _goal(ok: bool | None) -> str:
    return "" if ok is None else ("met" if ok else "**missed**")


def _med(sm: dict[str, Any], key: str) -> float | None:
    v = sm.get(key)
    return v["median"] if isinstance(v, dict) else v


def table(result: dict[str, Any], source: str) -> str:
    sm = result.get("summary", {})
    cfg = result["config"]
    rows = []

    def row(what: str, measured: str, goal: str, ok: bool | None) -> None:
        rows.append(f"| {what} | {measured} | {goal} | {_goal(ok)} |")

    for p, label in ((100, "100 B"), (10240, "10 KiB")):
        n = cfg["rows"] if p == 100 else cfg["rows_10k"]
        for v in ("writer", "writer_kpl", "sink", "writer_b", "boto3", "boto3_agg", "noop"):
            if f"{v}_{p}_records_per_s" in sm:
                row(
                    f"{VARIANTS[v]}, {label} × {n:,}",
                    f"{_r(sm, f'{v}_{p}_records_per_s', 0)} rec/s, {_r(sm, f'{v}_{p}_mb_per_s', 1)} MB/s",
                    "",
                    None,
                )
        sv = _med(sm, f"sink_vs_writer_{p}")
        if sv is not None:
            row(
                f'ratio format("kinesis") sink / foreach writer, {label}',
                _r(sm, f"sink_vs_writer_{p}", 2, "×"),
                "0.95–1.05×",
                0.95 <= sv <= 1.05,
            )
        if _med(sm, f"writer_b_vs_writer_{p}") is not None:
            row(
                f"A/A control: foreach writer on a second stream / foreach writer, {label}",
                _r(sm, f"writer_b_vs_writer_{p}", 2, "×"),
                "the noise floor of the ratio above",
                None,
            )
        r1, r2 = _med(sm, f"ratio_vs_boto3_{p}"), _med(sm, f"ratio_vs_boto3_agg_{p}")
        row(
            f"ratio writer / boto3, {label}",
            _r(sm, f"ratio_vs_boto3_{p}", 2, "×"),
            "≥ 20×" if p == 100 else "",
            (r1 >= 20) if (r1 is not None and p == 100) else None,
        )
        row(
            f"ratio writer / aws-kinesis-agg + boto3, {label}",
            _r(sm, f"ratio_vs_boto3_agg_{p}", 2, "×"),
            "≥ 1×",
            (r2 >= 1) if r2 is not None else None,
        )
    if "limited_writer_records_per_s" in sm:
        n = cfg.get("rows_limited", 0)
        for v in ("writer", "writer_kpl", "boto3", "boto3_agg"):
            if f"limited_{v}_records_per_s" in sm:
                row(
                    f"{VARIANTS[v]}, 100 B × {n:,}, behind shard quotas",
                    f"{_r(sm, f'limited_{v}_records_per_s', 0)} rec/s, {sm[f'limited_{v}_throttled']:,} throttled",
                    "",
                    None,
                )
        row("ratio writer / boto3, behind shard quotas", _r(sm, "limited_ratio_vs_boto3", 2, "×"), "", None)
        row(
            "ratio writer / aws-kinesis-agg + boto3, behind shard quotas",
            _r(sm, "limited_ratio_vs_boto3_agg", 2, "×"),
            "",
            None,
        )
    k, c = _med(sm, "ratio_vs_kpl"), _med(sm, "cpu_ratio_vs_kpl")
    row(
        "wall throughput, writer with aggregation='kpl' / bare KPL loop (100 B)",
        _r(sm, "ratio_vs_kpl", 2, "×"),
        "≥ 0.9×",
        None if k is None else k >= 0.9,
    )
    row(
        "CPU per record, writer with aggregation='kpl' (net of Spark's row generation) / bare KPL loop",
        _r(sm, "cpu_ratio_vs_kpl", 2, "×"),
        "≤ 1.25×",
        None if c is None else c <= 1.25,
    )
    row(
        "CPU per record, writer with aggregation='kpl' incl. Spark / bare KPL loop",
        _r(sm, "cpu_ratio_vs_kpl_gross", 2, "×"),
        "",
        None,
    )
    row(
        "CPU s per million records: writer net / aggregation='kpl' net / Spark generation / bare loop",
        " / ".join(_r(sm, f"cpu_s_per_m_{k}", 1) for k in ("writer_net", "writer_kpl_net", "generation", "bare")),
        "",
        None,
    )
    sc = _med(sm, "sink_cpu_vs_writer")
    if sc is not None:
        row(
            'CPU per record (net of generation), format("kinesis") sink / foreach writer, 100 B',
            _r(sm, "sink_cpu_vs_writer", 2, "×"),
            "≤ 1.05×",
            sc <= 1.05,
        )
    if _med(sm, "writer_b_cpu_vs_writer") is not None:
        row(
            "A/A control: CPU per record (net), foreach writer on a second stream / foreach writer, 100 B",
            _r(sm, "writer_b_cpu_vs_writer", 2, "×"),
            "the noise floor of the ratio above",
            None,
        )
    row("KPL daemon share of the writer's CPU", _r(sm, "daemon_cpu_share_writer", 2), "", None)
    agg_goals(result, sm, row)
    prof = result.get("profile", {}).get("kpl_daemon", {})
    if prof.get("buckets"):
        shares = {**prof["buckets"], **prof.get("across", {})}
        row(
            f"KPL daemon's CPU by activity (perf, {prof['samples']:,} samples, bare loop, 100 B)",
            "; ".join(f"{k}: **{100 * v:.0f} %**" for k, v in shares.items()),
            "",
            None,
        )
    for part, label in (("tuning", "unthrottled, 100 B"), ("tuning_limited", "behind quotas, 1 KiB")):
        for name, v in sm.get(part, {}).items():
            measured = f"**{v['cpu_s_per_m_net']:,.1f}** CPU-s per million (net)"
            if "daemon_cpu_s_per_m" in v:
                measured += f", daemon {v['daemon_cpu_s_per_m']:,.1f}"
            if "link_use" in v:
                measured += f", link {100 * v['link_use']:.1f} %, {v['throttled']:,.0f} throttled"
            if "cpu_vs_defaults" in v:
                measured += f"; vs defaults: CPU **{v['cpu_vs_defaults']:.2f}×**, rate {v['rate_vs_defaults']:.2f}×"
            row(f"tuning ({label}): {name}", measured, "", None)
    for k2, v in result.get("backpressure", {}).items():
        s = v["summary"]
        util = s["link_utilisation"]
        rss = s["kpl_rss_mb_first_last"]
        measured = (
            f"link {util:.1%} used; peak outstanding {s['peak_outstanding_records']:,} records / "
            f"{s['peak_outstanding_bytes'] / 2**20:,.1f} MiB; KPL RSS {rss[0]:,.0f} → {rss[1]:,.0f} MiB "
            f"(max {s['kpl_rss_mb_max']:,.0f}); failed records {s['failed']:,}; {s['seconds']:.0f} s"
            if util is not None and rss
            else json.dumps(s)
        )
        if s["error"]:
            why = s["error"].partition("KinesisWriteException: ")[2] or s["error"]
            measured += f"; the query failed: `{why[:110]}…`"
        if k2 == "no limit":
            row(f"backpressure, {k2}", measured, "shows the growth", None)
        else:
            ok = (
                util is not None
                and util >= 0.95
                and s["peak_over_limit"] <= 1.0
                and s["failed"] == 0
                and not s["error"]
            )
            row(
                f"backpressure, {k2}",
                measured + f"; peak/limit {s['peak_over_limit']:.3f}",
                "≤ limit, flat RSS, no expiry, ≥ 95 % of link",
                ok,
            )
    all_scale = result.get("scale_runs", [])
    runs = [r for r in all_scale if r["variant"] == "writer"]
    if runs:
        sizes = {100: "100 B", 1024: "1 KiB", 102400: "100 KiB"}
        for size, e, v in sorted({(r["payload"], r["executors"], r["variant"]) for r in all_scale}):
            mine = [r for r in all_scale if (r["payload"], r["executors"], r["variant"]) == (size, e, v)]
            pts = sorted((r["shards"], r) for r in mine)
            cells = ", ".join(
                f"{n}: {r['cpu_s_per_m_net']:,.1f} ({r.get('cpu_s_per_m_steady') or 0:,.1f}) / "
                f"{100 * (r['link_use'] or 0):.1f} %"
                for n, r in pts
            )
            uses = [r["link_use"] or 0 for _, r in pts]
            bad = sum(r["failed"] + r["verify"]["missing"] for _, r in pts)
            throttled = sum(r["throttled"] for _, r in pts)
            row(
                f"scale, {sizes.get(size, size)}, {e} executor{'s' if e > 1 else ''}"
                f"{', aggregation=kpl' if v == 'writer_kpl' else ''}: shards: CPU-s per million "
                "(net; steady window) / link use",
                cells + f"; throttled {throttled:,}; failed or missing {bad}",
                "≥ 97 % link, 0 expired",
                min(uses) >= 0.97 and bad == 0,
            )
        if _med(sm, "scale_cpu_vs_kpl_agg") is not None:
            t_w, t_k = sm.get("scale_throttled", 0), sm.get("scale_kpl_agg_throttled", 0)
            row(
                "scale behind quotas, writer / aggregation='kpl' (the same configurations): CPU per record; "
                "throttled records, all runs",
                f"{_r(sm, 'scale_cpu_vs_kpl_agg', 2, '×')}; {t_w:,} / {t_k:,}",
                "throttled no more than aggregation='kpl'",
                t_w <= t_k,
            )
        ratio = _med(sm, "scale_cost_ratio")
        row(
            "scale_cost_ratio: CPU per record, 256 / 4 shards, 100 B, 1 executor (whole runs; steady windows)",
            f"{_r(sm, 'scale_cost_ratio', 2, '×')} ({_r(sm, 'scale_cost_ratio_steady', 2, '×')})",
            "≤ 1.25×",
            None if ratio is None else ratio <= 1.25,
        )
    free = result.get("scale_free_runs", [])
    if free:
        two = _med(sm, "two_executors_vs_one")
        row(
            "rate, 2 executors / 1 executor, 100 B, no quotas (CPU per record, 2 / 1)",
            f"{_r(sm, 'two_executors_vs_one', 2, '×')} ({_r(sm, 'two_executors_cpu_vs_one', 2, '×')})",
            "≥ 1.8×",
            None if two is None else two >= 1.8,
        )
        row(
            "CPU per record, 256 / 4 shards, 100 B, 1 executor, no quotas (aggregation alone)",
            _r(sm, "scale_cost_ratio_unthrottled", 2, "×"),
            "",
            None,
        )
        for key in dict.fromkeys((r["executors"], r["shards"], r["variant"]) for r in free):
            mine = [r for r in free if (r["executors"], r["shards"], r["variant"]) == key]
            rate = [r["records_per_s"] for r in mine]
            cpu = [r["cpu_s_per_m_net"] for r in mine]
            row(
                f"no quotas, 100 B × {mine[0]['rows']:,}, {key[1]} shards, {key[0]} executor(s), "
                f"{'partitioner=fixed' if key[2] == 'writer_fixed' else 'id as key'}",
                f"**{_median_spread(rate)[0]:,.0f}** ({min(rate):,.0f}–{max(rate):,.0f}) rec/s, "
                f"**{_median_spread(cpu)[0]:.1f}** ({min(cpu):.1f}–{max(cpu):.1f}) CPU-s per million (net)",
                "",
                None,
            )
    for j in result.get("jmh", []):
        row(
            f"hot path `process()` (JMH, stub producer, 100 B), aggregation='{j['params'].get('aggregation', 'kpl')}', "
            f"limit check {j['params'].get('limit', '?')}",
            f"**{j['ns_per_op']:.0f}** ± {j['error']:.0f} ns/record",
            "≤ 1,000 ns",
            j["ns_per_op"] <= 1000,
        )
    head = (
        f"Run `{result['started']}` ({source}), {result['machine']['cpus']} CPUs, backend "
        f"{result.get('backend', {}).get('used', 'n/a')}; medians with (min–max) over {cfg['reps']} repetitions.\n\n"
        "| Measure | Measured | Goal | |\n|---|---|---|---|\n"
    )
    return head + "\n".join(rows) + "\n"


def write(result: dict[str, Any], path: Path, to_docs: bool = True) -> None:
    """Plots and table. ``to_docs``: into docs/ (a full run); else the plots go beside the result
    (``<result>/``) and docs/benchmarks.md is left alone, so a partial run never replaces it."""
    img = IMG if to_docs else path.with_suffix("")
    plots = [
        plot_throughput(result, img),
        plot_overhead(result, img),
        *plot_backpressure(result, img),
        plot_tuning(result, img),
        plot_scale(result, img),
        plot_scale_unthrottled(result, img),
    ]
    for p in plots:
        if p is not None:
            print(f"bench: plot {p.relative_to(ROOT) if p.is_relative_to(ROOT) else p}", flush=True)
    if to_docs and DOC.exists():
        text = DOC.read_text()
        if BEGIN in text and END in text:
            rel = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
            new = BEGIN + "\n" + table(result, rel) + END
            DOC.write_text(re.sub(re.escape(BEGIN) + ".*?" + re.escape(END), lambda _: new, text, flags=re.S))
            print(f"bench: table in {DOC.relative_to(ROOT)}", flush=True)


if __name__ == "__main__":
    p = Path(sys.argv[1]).resolve()
    write(json.loads(p.read_text()), p, to_docs="--docs" in sys.argv[2:])
