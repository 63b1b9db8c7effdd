"""Results of several policies side by side: printed table, CSV/parquet files and plots."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Columns of the printed comparison (label, key, scale): times shown in hours.
TABLE_COLUMNS = [
    ("avg JCT h", "jct_mean", 1 / 3600), ("P50 JCT h", "jct_p50", 1 / 3600), ("P95 JCT h", "jct_p95", 1 / 3600),
    ("P99 JCT h", "jct_p99", 1 / 3600), ("avg wait h", "wait_mean", 1 / 3600),
    ("P95 wait h", "wait_p95", 1 / 3600), ("P99.9 wait h", "wait_p99.9", 1 / 3600),
    ("futile P95 min", "futile_p95", 1 / 60), ("preempt", "preemptions", 1),
    ("util %", "gpu_utilisation", 100), ("sim s", "sim_seconds", 1),
]


def comparison_frame(summaries: list[dict[str, Any]]) -> pd.DataFrame:
    rows = []
    for s in summaries:
        row = {"policy": s["policy"]}
        for label, key, scale in TABLE_COLUMNS:
            v = s.get(key, float("nan"))
            row[label] = v * scale if isinstance(v, (int, float)) else v
        rows.append(row)
    return pd.DataFrame(rows)


def render_table(summaries: list[dict[str, Any]], title: str = "") -> str:
    """A fixed-width table (plain text, so it reads the same in logs and terminals)."""
    frame = comparison_frame(summaries)
    with pd.option_context("display.width", 200, "display.max_columns", 50):
        text = frame.to_string(index=False, float_format=lambda v: f"{v:,.3f}")
    return f"{title}\n{text}" if title else text


def write_results(out_dir: str | Path, runs: dict[str, dict[str, Any]], meta: dict[str, Any]) -> list[Path]:
    """Write summary.csv, per-policy job tables (parquet), breakdowns, meta.json and the plots."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    summaries = [r["summary"] for r in runs.values()]
    p = out / "summary.csv"
    pd.DataFrame(summaries).to_csv(p, index=False)
    written.append(p)
    for name, r in runs.items():
        safe = name.replace(":", "_").replace("/", "_").replace("=", "-").replace(",", "_")
        p = out / f"jobs_{safe}.parquet"
        r["jobs"].to_parquet(p, index=False)
        written.append(p)
        p = out / f"allocation_{safe}.parquet"
        r["allocation"].to_parquet(p, index=False)
        written.append(p)
        for key in ("by_partition", "by_size", "by_class"):
            p = out / f"{key}_{safe}.csv"
            r[key].to_csv(p, index=False)
            written.append(p)
    p = out / "meta.json"
    p.write_text(json.dumps(meta, indent=2, default=str))
    written.append(p)
    written += plot_jct_cdf({n: r["jobs"] for n, r in runs.items()}, out / "jct_cdf.png")
    written += plot_allocation({n: r["allocation"] for n, r in runs.items()}, meta.get("cluster_gpus"),
                               out / "gpu_allocation.png")
    return written


def plot_allocation(alloc_by_policy: dict[str, pd.DataFrame], capacity: int | None,
                    path: str | Path) -> list[Path]:
    """Physical GPUs held over time per policy (step plot, days on the x axis; packed jobs share)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 4))
    for name, alloc in alloc_by_policy.items():
        ax.step(alloc["time"] / 86400.0, alloc.get("gpus_held", alloc["gpus_used"]), where="post", label=name, lw=0.8, alpha=0.8)
    if capacity:
        ax.axhline(capacity, color="k", ls="--", lw=0.8, label="capacity")
    ax.set_xlabel("time since first submission (days)")
    ax.set_ylabel("GPUs held")
    ax.set_title("GPU allocation over time")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [Path(path)]


def plot_jct_cdf(jobs_by_policy: dict[str, pd.DataFrame], path: str | Path) -> list[Path]:
    """CDF of JCT per policy on a log time axis (hours)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for name, jobs in jobs_by_policy.items():
        jct = np.sort(jobs["jct"].to_numpy()) / 3600.0
        y = np.arange(1, len(jct) + 1) / len(jct)
        ax.plot(np.maximum(jct, 1e-4), y, label=name, lw=1.5)
    ax.set_xscale("log")
    ax.set_xlabel("job completion time (hours, log scale)")
    ax.set_ylabel("fraction of jobs")
    ax.set_title("JCT CDF by policy")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [Path(path)]


def plot_grouped_bars(frame: pd.DataFrame, group: str, bar: str, values: list[str], path: str | Path,
                      title: str = "", normalise_to: str | None = None) -> list[Path]:
    """One panel per value column; bars per ``bar`` (e.g. policy variant) within each ``group`` (e.g.
    trace). ``normalise_to``: divide each group's values by that bar's (Lucid's Fig. 11 shows
    ablations relative to Lucid), so that groups of different scales share an axis."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups, bars = list(dict.fromkeys(frame[group])), list(dict.fromkeys(frame[bar]))
    fig, axes = plt.subplots(1, len(values), figsize=(4.5 * len(values), 4), squeeze=False)
    width = 0.8 / max(len(bars), 1)
    for ax, value in zip(axes[0], values):
        table = frame.pivot_table(index=group, columns=bar, values=value).reindex(index=groups, columns=bars)
        if normalise_to is not None:
            table = table.div(table[normalise_to], axis=0)
        for i, name in enumerate(bars):
            ax.bar(np.arange(len(groups)) + (i - (len(bars) - 1) / 2) * width, table[name].to_numpy(), width,
                   label=name)
        ax.set_xticks(np.arange(len(groups)), groups, rotation=20, ha="right")
        ax.set_ylabel(f"{value} / {normalise_to}" if normalise_to else value)
        ax.grid(True, axis="y", alpha=0.3)
    fig.legend(*axes[0][0].get_legend_handles_labels(), loc="lower center", ncol=min(len(bars), 5), fontsize=8)
    if title:
        fig.suptitle(title)
    fig.tight_layout(rect=(0, 0.08, 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return [Path(path)]
