"""Leaderboard of an experiment run: mean and 95 % interval over seeds per (workload, policy, predictor),
ranks per workload and overall, and one static HTML page (tables, JCT CDFs and queueing plots embedded
as base64 PNG: it opens from disk, no server).

Intervals are Student-t: mean +/- t(0.975, n-1) * sd / sqrt(n) over the seeds of a cell group (none for
one seed; with fewer than MIN_SEEDS seeds the page says they are wide: t is 12.7 for two seeds). Ranks are
per workload on the mean of ``rank_by`` (the metric catalog says which way is better); the overall rank
orders policies by their mean rank over the workloads they ran on.

Column names in results.csv and leaderboard.csv follow the catalog's unit rule (``jct_mean_s``,
``jct_mean_ci95_s``, ``gpu_utilisation_frac``); in memory the keys stay unit-less. Each row links to the
cell folders of its seeds (``cells/ID/``: the files of `schedcast simulate`).
"""
from __future__ import annotations

import base64
import html
import io
import json
import math
from pathlib import Path
from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd

from evaluation.catalog import CATALOG, DISPLAY, file_name, higher_is_better
from evaluation.plots import figure_axes

#: Kept for callers of the old constant (the catalog's metrics where higher is better); ranking reads the
#: catalog's direction.
HIGHER_IS_BETTER = {m.name for m in CATALOG.values() if m.direction == "higher"}
#: Fewer seeds than this: the page warns that the 95 % intervals are wide.
MIN_SEEDS = 5
#: Predictor labels the tables show ('unused': the policy takes no prediction).
_NO_PREDICTOR = ("unused",)
#: Display: column -> (header, scale, format), the metric catalog's (evaluation.catalog.DISPLAY).
_DISPLAY = DISPLAY


def display(metric: str) -> tuple[str, float, str]:
    """(header, scale, format) of a metric; a group metric 'class/spot/jct_mean' is 'spot: avg JCT (h)'."""
    if metric in _DISPLAY:
        return _DISPLAY[metric]
    if "/" in metric:
        _, group, base = metric.split("/", 2) if metric.count("/") >= 2 else ("", *metric.split("/", 1))
        head, scale, fmt = _DISPLAY.get(base, (base, 1.0, "{:.4g}"))
        return f"{group}: {head}", scale, fmt
    return metric, 1.0, "{:.4g}"


def results_frame(records: Iterable[dict[str, Any]]) -> pd.DataFrame:
    """One row per cell: workload, policy label, predictor, seed, status, error and summary columns."""
    rows = []
    for rec in records:
        cell = rec.get("cell") or {}
        row = {"workload": cell.get("workload"), "policy": cell.get("label"), "spec": cell.get("policy"),
               "predictor": cell.get("predictor"), "seed": cell.get("seed"), "status": rec.get("status"),
               "error": rec.get("error", ""), "cell": rec.get("id"), "wall_s": rec.get("wall_s"),
               "cpu_s": rec.get("cpu_s")}
        for k, v in (rec.get("summary") or {}).items():
            if k != "policy" and isinstance(v, (int, float)) and not isinstance(v, bool):
                row[k] = v
        for k, v in (rec.get("metrics") or {}).items():  # per-group columns: partition/NAME/..., class/NAME/...
            if "/" in k and isinstance(v, (int, float)):
                row[k] = v
        rows.append(row)
    return pd.DataFrame(rows)


def _t975(n: int) -> float:
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1))


def leaderboard(results: pd.DataFrame, metrics: Sequence[str], rank_by: str = "jct_mean") -> pd.DataFrame:
    """Per (workload, policy, predictor) over seeds: n, and per metric mean, ci95 (half-width), lo, hi;
    ``rank`` within the workload by the mean of ``rank_by``."""
    ok = results[results["status"] == "ok"] if len(results) else results
    cols = ["workload", "policy", "predictor", "seeds"]
    if not len(ok):
        return pd.DataFrame(columns=cols + ["rank"])
    rows = []
    for (w, p, pr), g in ok.groupby(["workload", "policy", "predictor"], sort=False):
        row: dict[str, Any] = {"workload": w, "policy": p, "predictor": pr, "seeds": int(len(g))}
        for m in metrics:
            v = pd.to_numeric(g[m], errors="coerce").dropna().to_numpy(dtype=float) if m in g else np.array([])
            mean = float(v.mean()) if len(v) else float("nan")
            half = _t975(len(v)) * float(v.std(ddof=1)) / math.sqrt(len(v)) if len(v) >= 2 else float("nan")
            row.update({m: mean, f"{m}_ci95": half, f"{m}_lo": mean - half, f"{m}_hi": mean + half})
        rows.append(row)
    board = pd.DataFrame(rows)
    if rank_by in board:
        asc = not higher_is_better(rank_by)
        board["rank"] = board.groupby("workload")[rank_by].rank(method="min", ascending=asc).astype("Int64")
        board = board.sort_values(["workload", "rank"], kind="stable").reset_index(drop=True)
    return board


def overall(board: pd.DataFrame) -> pd.DataFrame:
    """Mean rank per (policy, predictor) over the workloads it ran on; first = best."""
    if not len(board) or "rank" not in board:
        return pd.DataFrame(columns=["policy", "predictor", "workloads", "mean_rank", "overall_rank"])
    g = board.groupby(["policy", "predictor"], sort=False)["rank"]
    out = pd.DataFrame({"workloads": g.count(), "mean_rank": g.mean().astype(float)}).reset_index()
    out = out.sort_values(["mean_rank", "workloads"], ascending=[True, False], kind="stable").reset_index(drop=True)
    out["overall_rank"] = out["mean_rank"].rank(method="min").astype(int)
    return out


# -- plots ----------------------------------------------------------------------------------------------
def entry_label(policy: str, predictor: str) -> str:
    """How a (policy, predictor) entry is named in legends: ``spjf [oracle]``; a policy without
    predictions by its name alone."""
    return str(policy) if predictor in _NO_PREDICTOR else f"{policy} [{predictor}]"


def _predictor_cell(predictor: str) -> str:
    return "&ndash;" if predictor in _NO_PREDICTOR else html.escape(str(predictor))


#: Tick positions (s) and labels of time axes: seconds, minutes, hours.
_TIME_TICKS = [(1, "1 s"), (10, "10 s"), (60, "1 min"), (600, "10 min"), (3600, "1 h"), (36000, "10 h"),
               (360000, "100 h"), (3600000, "1,000 h")]


def _time_axis(ax, lo_s: float, hi_s: float) -> None:
    """A log time axis in seconds with s / min / h tick labels."""
    from matplotlib.ticker import FixedLocator, NullFormatter

    ticks = [(t, label) for t, label in _TIME_TICKS if lo_s / 1.5 <= t <= hi_s * 1.5] or [(3600, "1 h")]
    ax.xaxis.set_major_locator(FixedLocator([t for t, _ in ticks]))
    ax.set_xticklabels([label for _, label in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())


def _time_unit(max_s: float) -> tuple[str, float]:
    """(unit, seconds per unit) that keeps a linear axis of values up to ``max_s`` readable."""
    if max_s < 120:
        return "s", 1.0
    if max_s < 7200:
        return "min", 60.0
    return "h", 3600.0


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _jobs_jct(run_dir: Path, cell_ids: Iterable[str]) -> np.ndarray:
    """Measured jobs' JCT (s) pooled over the given cells' job tables (completed jobs only)."""
    parts = []
    for cid in cell_ids:
        folder = run_dir / "cells" / str(cid)
        for path in folder.glob("jobs_*.parquet"):
            try:
                frame = pd.read_parquet(path)
            except (OSError, ValueError):
                continue
            if "in_window" in frame:
                frame = frame[frame["in_window"]]
            if "status" in frame:
                frame = frame[frame["status"] == "done"]
            col = "jct_s" if "jct_s" in frame else "jct" if "jct" in frame else None
            if col is not None:
                parts.append(frame[col].to_numpy(dtype=float))
    return np.concatenate(parts) if parts else np.array([])


def cdf_figure(run_dir: Path, ok: pd.DataFrame, workload: str, max_lines: int = 12) -> str | None:
    """JCT CDF of each entry of one workload (seeds pooled), the best ``max_lines`` by mean JCT."""
    sub = ok[ok["workload"] == workload]
    if not len(sub):
        return None
    order = sub.groupby(["policy", "predictor"], sort=False)["jct_mean"].mean().sort_values() if "jct_mean" in sub else None
    keys = list(order.index[:max_lines]) if order is not None else []
    fig, ax = figure_axes((8.5, 4.2))
    drawn, lo, hi = 0, float("inf"), 0.0
    for policy, predictor in keys:
        ids = sub[(sub["policy"] == policy) & (sub["predictor"] == predictor)]["cell"]
        jct = np.maximum(np.sort(_jobs_jct(run_dir, ids)), 1.0)
        if not len(jct):
            continue
        idx = np.unique(np.linspace(0, len(jct) - 1, min(len(jct), 400)).astype(int))
        ax.step(jct[idx], (idx + 1) / len(jct), where="post", label=entry_label(policy, predictor), lw=1.3)
        lo, hi = min(lo, float(jct[0])), max(hi, float(jct[-1]))
        drawn += 1
    if not drawn:
        return None
    ax.set_xscale("log")
    _time_axis(ax, lo, hi)
    ax.set_xlabel("job completion time (log scale)")
    ax.set_ylabel("share of jobs")
    ax.set_title(f"JCT CDF: {workload} (seeds pooled; best {drawn} by avg JCT)", fontsize=10)
    ax.grid(alpha=0.3)
    # beside the axes, not over the curves (they end at the top right, where a legend would sit)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    return _png(fig)


def queue_figure(board: pd.DataFrame, workload: str) -> str | None:
    """Average queueing per entry of one workload with its 95 % interval."""
    sub = board[board["workload"] == workload]
    if not len(sub) or "wait_mean" not in sub:
        return None
    sub = sub.sort_values("wait_mean")
    labels = [entry_label(p, pr) for p, pr in zip(sub["policy"], sub["predictor"])]
    fig, ax = figure_axes((7.5, max(2.2, 0.28 * len(sub) + 1)))
    unit, scale = _time_unit(float(np.nanmax(sub["wait_mean"].to_numpy(dtype=float), initial=0.0)))
    err = sub["wait_mean_ci95"].to_numpy(dtype=float) / scale
    ax.barh(range(len(sub)), sub["wait_mean"].to_numpy(dtype=float) / scale,
            xerr=np.where(np.isfinite(err), err, 0.0), color="#4c72b0", ecolor="#333", capsize=2)
    ax.set_yticks(range(len(sub)))
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(left=0)
    ax.set_xlabel(f"average queueing delay ({unit}), 95 % interval over seeds")
    ax.set_title(f"Queueing: {workload}")
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


# -- HTML ---------------------------------------------------------------------------------------------
_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:8px 0 20px;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f0f0f0}td.l,th.l{text-align:left}tr.best td{background:#e8f5e9;font-weight:600}
.muted{color:#666;font-size:12px}.warn{background:#fff4e5;border-left:4px solid #f0a030;padding:6px 10px}img{max-width:100%;border:1px solid #eee;margin:4px 0 16px}h2{margin-top:32px}"""


def _fmt(metric: str, mean: float, half: float) -> str:
    _, scale, fmt = display(metric)
    if not np.isfinite(mean):
        return "&ndash;"
    text = fmt.format(mean * scale)
    if np.isfinite(half):
        text += f" &plusmn; {fmt.format(half * scale)}"
    return text


def _cell_links(cells: pd.DataFrame | None, workload: str, policy: str, predictor: str) -> str:
    """Links to the cell folders of one entry's seeds (relative: the page sits in the run folder)."""
    if cells is None or not len(cells):
        return ""
    sel = cells[(cells["workload"] == workload) & (cells["policy"] == policy) & (cells["predictor"] == predictor)]
    return " ".join(f'<a href="cells/{html.escape(str(c))}/" title="cells/{html.escape(str(c))}/">{html.escape(str(s))}</a>'
                    for c, s in zip(sel["cell"], sel["seed"]))


def _board_table(sub: pd.DataFrame, metrics: Sequence[str], rank_by: str, cells: pd.DataFrame | None = None) -> str:
    head = "".join(f"<th>{html.escape(display(m)[0])}</th>" for m in metrics)
    rows = []
    for _, r in sub.iterrows():
        cells_html = "".join(f"<td>{_fmt(m, r.get(m, float('nan')), r.get(f'{m}_ci95', float('nan')))}</td>"
                             for m in metrics)
        cls = ' class="best"' if r.get("rank") == 1 else ""
        links = _cell_links(cells, r["workload"], r["policy"], r["predictor"])
        rows.append(f"<tr{cls}><td>{r.get('rank', '')}</td><td class=l>{html.escape(str(r['policy']))}</td>"
                    f"<td class=l>{_predictor_cell(r['predictor'])}</td><td>{r['seeds']}</td>{cells_html}"
                    f"<td class=l>{links}</td></tr>")
    return (f'<table class="leaderboard"><thead><tr><th>rank</th><th class=l>policy</th><th class=l>predictor</th>'
            f"<th>seeds</th>{head}<th class=l>cells (seed)</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def render_html(board: pd.DataFrame, results: pd.DataFrame, metrics: Sequence[str], rank_by: str, title: str,
                description: str = "", run_dir: Path | None = None, plots: bool = True, meta: dict | None = None) -> str:
    """The whole page as one string (images inline)."""
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)} leaderboard</title>"
             f"<style>{_CSS}</style></head><body>", f"<h1>Leaderboard: {html.escape(title)}</h1>"]
    if description:
        parts.append(f"<p>{html.escape(description)}</p>")
    counts = results["status"].value_counts().to_dict() if len(results) else {}
    parts.append(f'<p class=muted>{len(results)} cells: {", ".join(f"{v} {k}" for k, v in counts.items())}. Values are means '
                 f"over seeds &plusmn; the 95 % Student-t half-width; ranked by {html.escape(display(rank_by)[0])} "
                 f"per workload.{' Run: ' + html.escape(', '.join(f'{k} {v}' for k, v in (meta or {}).items())) if meta else ''}</p>")
    few = seeds_warning(board)
    if few:
        parts.append(f'<p class=warn>{html.escape(few)}</p>')
    ov = overall(board)
    if len(ov) and board["workload"].nunique() > 1:
        parts.append("<h2>Overall</h2><table class=overall><thead><tr><th>rank</th><th class=l>policy</th>"
                     "<th class=l>predictor</th><th>workloads</th><th>mean rank</th></tr></thead><tbody>")
        for _, r in ov.iterrows():
            parts.append(f"<tr><td>{r['overall_rank']}</td><td class=l>{html.escape(str(r['policy']))}</td>"
                         f"<td class=l>{_predictor_cell(r['predictor'])}</td><td>{r['workloads']}</td><td>{r['mean_rank']:.2f}</td></tr>")
        parts.append("</tbody></table>")
    ok = results[results["status"] == "ok"] if len(results) else results
    for workload in board["workload"].unique() if len(board) else []:
        sub = board[board["workload"] == workload]
        parts.append(f"<h2>{html.escape(str(workload))}</h2>")
        parts.append(_board_table(sub, metrics, rank_by, ok))
        if plots and run_dir is not None:
            for img, alt in ((cdf_figure(run_dir, ok, workload), "JCT CDF"), (queue_figure(board, workload), "queueing")):
                if img:
                    parts.append(f'<img alt="{alt} {html.escape(str(workload))}" src="data:image/png;base64,{img}">')
    bad = results[results["status"] != "ok"] if len(results) else results
    if len(bad):
        parts.append("<h2>Cells not run</h2><p class=muted>skipped: the policy cannot run on that workload (reason "
                     "below); failed: an error (traceback in cells/ID.json); missing: not run yet.</p>"
                     "<table class=notrun><thead><tr><th class=l>workload</th><th class=l>policy</th>"
                     "<th class=l>predictor</th><th>seed</th><th class=l>status</th><th class=l>reason</th></tr></thead><tbody>")
        for _, r in bad.iterrows():
            parts.append(f"<tr><td class=l>{html.escape(str(r['workload']))}</td><td class=l>{html.escape(str(r['policy']))}</td>"
                         f"<td class=l>{html.escape(str(r['predictor']))}</td><td>{r['seed']}</td>"
                         f"<td class=l>{html.escape(str(r['status']))}</td><td class=l>{html.escape(str(r['error'])[:300])}</td></tr>")
        parts.append("</tbody></table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def seeds_warning(board: pd.DataFrame) -> str:
    """One line when 95 % intervals rest on fewer than MIN_SEEDS seeds (t(0.975, 1) = 12.7: with two
    seeds a wait's lower bound is often negative), else ''."""
    if not len(board) or "seeds" not in board:
        return ""
    few = int(board["seeds"].min())
    if few >= MIN_SEEDS:
        return ""
    if few < 2:
        return f"some entries ran with 1 seed: no interval; use {MIN_SEEDS} or more seeds to compare policies"
    return (f"95 % intervals from {few} seeds are wide (Student t = {_t975(few):.1f}; lower bounds may fall below 0): "
            f"use {MIN_SEEDS} or more seeds before reading a ranking from them")


def top_text(board: pd.DataFrame, metrics: Sequence[str], rank_by: str, top: int = 5) -> str:
    """The first ``top`` entries of each workload as plain text (printed at the end of `experiment run`)."""
    if not len(board):
        return "leaderboard: no cell succeeded"
    shown = [m for m in dict.fromkeys([rank_by, *metrics, "load_reached"]) if m in board]
    lines = []
    for workload, sub in board.groupby("workload", sort=False):
        reached = f" (reached load {sub['load_reached'].mean():.2f})" if "load_reached" in sub else ""
        lines.append(f"leaderboard {workload}{reached}:")
        rows = [["rank", "entry", "seeds", *(display(m)[0] for m in shown)]]
        for _, r in sub.head(top).iterrows():
            rows.append([str(r.get("rank", "")), entry_label(r["policy"], r["predictor"]), str(r["seeds"]),
                         *(_fmt(m, r.get(m, float("nan")), float("nan")).replace("&ndash;", "-") for m in shown)])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines += ["  " + "  ".join(c.ljust(w) if i == 1 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                  for row in rows]
    few = seeds_warning(board)
    return "\n".join(lines + ([f"note: {few}"] if few else []))


def _file_columns(frame: pd.DataFrame, metrics: Sequence[str] = ()) -> pd.DataFrame:
    """``frame`` with the catalog's unit-bearing column names (``jct_mean_ci95`` -> ``jct_mean_ci95_s``)."""
    names = {c: file_name(c) for c in frame.columns}
    for m in metrics:
        unit = file_name(m)[len(m):] if file_name(m).startswith(m) else ""
        for part in ("_ci95", "_lo", "_hi"):
            if f"{m}{part}" in frame.columns:
                names[f"{m}{part}"] = f"{m}{part}{unit}"
    return frame.rename(columns=names)


def write_report(run_dir: str | Path, records: Iterable[dict[str, Any]], *, metrics: Sequence[str],
                 rank_by: str = "jct_mean", title: str = "experiment", description: str = "",
                 plots: bool = True) -> dict[str, Path]:
    """results.csv (one row per cell), leaderboard.csv, overall.csv and leaderboard.html in ``run_dir``."""
    run_dir = Path(run_dir)
    results = results_frame(records)
    if "load_reached" in results and "load_reached" not in metrics:  # beside the offered load (workload name)
        metrics = [*metrics, "load_reached"]
    board = leaderboard(results, metrics, rank_by)
    paths = {"results": run_dir / "results.csv", "leaderboard": run_dir / "leaderboard.csv",
             "overall": run_dir / "overall.csv", "html": run_dir / "leaderboard.html", "top": run_dir / "leaderboard.txt"}
    _file_columns(results).to_csv(paths["results"], index=False)
    _file_columns(board, metrics).to_csv(paths["leaderboard"], index=False)
    paths["top"].write_text(top_text(board, metrics, rank_by) + "\n", encoding="utf-8")
    overall(board).to_csv(paths["overall"], index=False)
    meta = {}
    try:
        meta = {k: v for k, v in json.loads((run_dir / "run.json").read_text()).items()
                if k in ("code_version", "engine", "workers", "started", "parent_run_id")}
    except (OSError, ValueError):
        pass
    page = render_html(board, results, metrics, rank_by, title, description, run_dir, plots, meta)
    tmp = paths["html"].with_suffix(".html.tmp")
    tmp.write_text(page, encoding="utf-8")
    tmp.replace(paths["html"])
    return paths


__all__ = ["entry_label", "leaderboard", "overall", "render_html", "results_frame", "seeds_warning", "top_text",
           "write_report"]
