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


#: Time units a page may show a seconds metric in: (name, seconds per unit, format).
_TIME_UNITS = (("s", 1.0, "{:.1f}"), ("min", 60.0, "{:.2f}"), ("h", 3600.0, "{:.3f}"))


def page_units(board: pd.DataFrame, metrics: Sequence[str]) -> dict[str, tuple[str, float, str]]:
    """(header, scale, format) per metric for one page: a seconds metric gets ONE unit for every table
    and chart of the page (s below 2 min, min below 2 h, else h, by the largest mean on the page), so the
    queueing chart and the table beside it read in the same unit; other metrics as :func:`display`."""
    from evaluation.catalog import lookup

    out = {}
    for m in metrics:
        header, scale, fmt = display(m)
        entry = lookup(m)
        if entry is not None and entry.unit == "s" and m in board and len(board):
            top = float(np.nanmax(np.abs(board[m].to_numpy(dtype=float)), initial=0.0))
            unit, per, fmt = _TIME_UNITS[0] if top < 120 else _TIME_UNITS[1] if top < 7200 else _TIME_UNITS[2]
            base = header.rsplit(" (", 1)[0] if header.endswith(")") else header
            header, scale = f"{base} ({unit})", 1.0 / per
        out[m] = (header, scale, fmt)
    return out


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
        offered = (rec.get("meta") or {}).get("offered_load")
        if isinstance(offered, (int, float)) and not isinstance(offered, bool) and rec.get("status") == "ok":
            row["offered_load"] = float(offered)  # the workload's, beside the load each replay reached
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


#: Line colours of the CDF panels: tab10 without its grey (the other entries are drawn in grey).
_PALETTE = ("C0", "C1", "C2", "C3", "C4", "C5", "C6", "C8", "C9", "#1b1b8f", "#8f1b5c", "#2f6f2f")


def cdf_figure(run_dir: Path, ok: pd.DataFrame, workload: str, max_lines: int = 12, ncols: int = 3) -> str | None:
    """JCT CDFs of one workload (seeds pooled) as small multiples: one panel per entry (the best
    ``max_lines`` by mean JCT), the entry in colour over the others in light grey, so each curve can be
    told apart however many overlap."""
    sub = ok[ok["workload"] == workload]
    if not len(sub):
        return None
    order = sub.groupby(["policy", "predictor"], sort=False)["jct_mean"].mean().sort_values() if "jct_mean" in sub else None
    keys = list(order.index[:max_lines]) if order is not None else []
    curves = []
    for policy, predictor in keys:
        ids = sub[(sub["policy"] == policy) & (sub["predictor"] == predictor)]["cell"]
        jct = np.maximum(np.sort(_jobs_jct(run_dir, ids)), 1.0)
        if len(jct):
            idx = np.unique(np.linspace(0, len(jct) - 1, min(len(jct), 400)).astype(int))
            curves.append((entry_label(policy, predictor), jct[idx], (idx + 1) / len(jct)))
    if not curves:
        return None
    lo = min(float(c[1][0]) for c in curves)
    hi = max(float(c[1][-1]) for c in curves)
    cols = min(ncols, len(curves))
    rows = math.ceil(len(curves) / cols)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(3.2 * cols + 0.6, 2.3 * rows + 0.7))
    FigureCanvasAgg(fig)
    axes = np.atleast_1d(fig.subplots(rows, cols, sharex=True, sharey=True, squeeze=False)).ravel()
    colours = [_PALETTE[i % len(_PALETTE)] for i in range(len(curves))]
    for i, ax in enumerate(axes):
        if i >= len(curves):
            ax.set_visible(False)
            continue
        for j, (_, x, y) in enumerate(curves):
            if j != i:
                ax.step(x, y, where="post", color="#cccccc", lw=0.8, zorder=1)
        label, x, y = curves[i]
        ax.step(x, y, where="post", color=colours[i], lw=1.8, zorder=2)
        ax.set_title(f"{i + 1}. {label}", fontsize=8, loc="left")
        ax.set_xscale("log")
        _time_axis(ax, lo, hi)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        if i % cols == 0:
            ax.set_ylabel("share of jobs", fontsize=8)
        if i >= len(curves) - cols:
            ax.set_xlabel("JCT (log scale)", fontsize=8)
            ax.tick_params(labelbottom=True)
    fig.suptitle(f"JCT CDF: {workload} (seeds pooled; best {len(curves)} by avg JCT, each in colour over the "
                 "others in grey)", fontsize=9)
    fig.tight_layout()
    return _png(fig)


def queue_figure(board: pd.DataFrame, workload: str,
                 units: dict[str, tuple[str, float, str]] | None = None) -> str | None:
    """Average queueing per entry of one workload: the mean as a dot with its symmetric 95 % interval
    (both whiskers drawn, below zero too: it is the Student-t interval the table gives), in the unit the
    page's table uses for the same metric."""
    sub = board[board["workload"] == workload]
    if not len(sub) or "wait_mean" not in sub:
        return None
    sub = sub.sort_values("wait_mean")
    labels = [entry_label(p, pr) for p, pr in zip(sub["policy"], sub["predictor"])]
    header, scale, _ = (units or page_units(sub, ["wait_mean"]))["wait_mean"]
    unit = header.rsplit("(", 1)[-1].rstrip(")") if header.endswith(")") else ""
    fig, ax = figure_axes((7.5, max(2.2, 0.28 * len(sub) + 1)))
    mean = sub["wait_mean"].to_numpy(dtype=float) * scale
    half = sub["wait_mean_ci95"].to_numpy(dtype=float) * scale
    pos = np.arange(len(sub))
    has = np.isfinite(half)
    ax.errorbar(mean[has], pos[has], xerr=half[has], fmt="o", color="#4c72b0", ecolor="#333", elinewidth=1.2,
                capsize=4, markersize=5)
    ax.plot(mean[~has], pos[~has], "o", color="#4c72b0", markersize=5)
    ax.axvline(0.0, color="#999", lw=0.8)
    ax.set_yticks(pos)
    ax.set_yticklabels(labels, fontsize=7)
    ax.invert_yaxis()
    left = float(np.nanmin(np.where(has, mean - half, mean), initial=0.0))
    right = float(np.nanmax(np.where(has, mean + half, mean), initial=0.0))
    pad = 0.05 * max(right - min(left, 0.0), 1e-9)
    ax.set_xlim(min(left, 0.0) - pad, right + pad)
    ax.set_xlabel(f"average queueing delay ({unit}): mean and 95 % interval over seeds")
    ax.set_title(f"Queueing: {workload}")
    ax.grid(axis="x", alpha=0.3)
    return _png(fig)


# -- HTML ---------------------------------------------------------------------------------------------
_CSS = """body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:24px;color:#222;max-width:1200px}
table{border-collapse:collapse;margin:8px 0 20px;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}
th{background:#f0f0f0}td.l,th.l{text-align:left}tr.best td{background:#e8f5e9;font-weight:600}
.muted{color:#666;font-size:12px}dl.columns{font-size:13px;display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}dl.columns dt{font-weight:600}dl.columns dd{margin:0}.warn{background:#fff4e5;border-left:4px solid #f0a030;padding:6px 10px}img{max-width:100%;border:1px solid #eee;margin:4px 0 16px}h2{margin-top:32px}"""


def _fmt(metric: str, mean: float, half: float, units: dict[str, tuple[str, float, str]] | None = None) -> str:
    _, scale, fmt = (units or {}).get(metric) or display(metric)
    if not np.isfinite(mean):
        return "&ndash;"
    text = fmt.format(mean * scale)
    if np.isfinite(half) and metric != "offered_load":  # the workload's: the same in every seed
        text += f" &plusmn; {fmt.format(half * scale)}"
    return text


def _cell_links(cells: pd.DataFrame | None, workload: str, policy: str, predictor: str) -> str:
    """Links to the cell folders of one entry's seeds (relative: the page sits in the run folder)."""
    if cells is None or not len(cells):
        return ""
    sel = cells[(cells["workload"] == workload) & (cells["policy"] == policy) & (cells["predictor"] == predictor)]
    return " ".join(f'<a href="cells/{html.escape(str(c))}/" title="cells/{html.escape(str(c))}/">{html.escape(str(s))}</a>'
                    for c, s in zip(sel["cell"], sel["seed"]))


def _board_table(sub: pd.DataFrame, metrics: Sequence[str], rank_by: str, cells: pd.DataFrame | None = None,
                 units: dict[str, tuple[str, float, str]] | None = None) -> str:
    units = units or page_units(sub, metrics)
    head = "".join(f"<th>{html.escape(units[m][0])}</th>" for m in metrics)
    rows = []
    for _, r in sub.iterrows():
        cells_html = "".join(f"<td>{_fmt(m, r.get(m, float('nan')), r.get(f'{m}_ci95', float('nan')), units)}</td>"
                             for m in metrics)
        cls = ' class="best"' if r.get("rank") == 1 else ""
        links = _cell_links(cells, r["workload"], r["policy"], r["predictor"])
        rows.append(f"<tr{cls}><td>{r.get('rank', '')}</td><td class=l>{html.escape(str(r['policy']))}</td>"
                    f"<td class=l>{_predictor_cell(r['predictor'])}</td><td>{r['seeds']}</td>{cells_html}"
                    f"<td class=l>{links}</td></tr>")
    return (f'<table class="leaderboard"><thead><tr><th>rank</th><th class=l>policy</th><th class=l>predictor</th>'
            f"<th>seeds</th>{head}<th class=l>cells (seed)</th></tr></thead><tbody>{''.join(rows)}</tbody></table>")


def column_definitions(metrics: Sequence[str], units: dict[str, tuple[str, float, str]], rank_by: str) -> list[tuple[str, str]]:
    """(header, definition) of every column the page's tables show, from the metric catalog."""
    from evaluation.catalog import LOADS, lookup

    loads = {v["name"]: v["meaning"] for v in LOADS.values()}
    out = [("rank", f"position within the workload by the mean of {units.get(rank_by, display(rank_by))[0]} "
                    "(ties share a rank); the best row is green"),
           ("policy", "the policy and its parameters (docs/policies.md)"),
           ("predictor", "the duration predictor the policy read; &ndash; when it reads none"),
           ("seeds", "seeds (replays) averaged; each number is their mean &plusmn; the 95 % Student-t half-width "
                     "mean &plusmn; t(0.975, n-1) &middot; sd / &radic;n, a symmetric interval")]
    for m in metrics:
        entry = lookup(m)
        meaning = loads.get(m) or (entry.description if entry is not None else m)
        if m == "offered_load":
            meaning += " The same for every policy of a workload: it is the workload's."
        better = {"lower": " Lower is better.", "higher": " Higher is better."}.get(entry.direction if entry else "", "")
        meaning = meaning.rstrip(". ") + "."
        if m == "gpu_utilisation":
            meaning += (" It includes the tail in which the last jobs run alone, so its spread over seeds is mostly "
                        "that tail's length; the reached load measures the same over the submission window.")
        out.append((units[m][0], html.escape(meaning) + better))
    out.append(("cells (seed)", "links to each seed's cell folder (the files of `schedcast simulate`)"))
    return out


def render_html(board: pd.DataFrame, results: pd.DataFrame, metrics: Sequence[str], rank_by: str, title: str,
                description: str = "", run_dir: Path | None = None, plots: bool = True, meta: dict | None = None) -> str:
    """The whole page as one string (images inline)."""
    parts = [f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)} leaderboard</title>"
             f"<style>{_CSS}</style></head><body>", f"<h1>Leaderboard: {html.escape(title)}</h1>"]
    if description:
        parts.append(f"<p>{html.escape(description)}</p>")
    units = page_units(board, metrics)
    counts = results["status"].value_counts().to_dict() if len(results) else {}
    parts.append(f'<p class=muted>{len(results)} cells: {", ".join(f"{v} {k}" for k, v in counts.items())}. Values are means '
                 f"over seeds &plusmn; the 95 % Student-t half-width; ranked by {html.escape(units[rank_by][0])} "
                 f"per workload.{' Run: ' + html.escape(', '.join(f'{k} {v}' for k, v in (meta or {}).items())) if meta else ''}</p>")
    few = seeds_warning(board)
    if few:
        parts.append(f'<p class=warn>{html.escape(few)}</p>')
    parts.append('<details open class=columns><summary>What each column means</summary><dl class=columns>'
                 + "".join(f"<dt>{html.escape(h)}</dt><dd>{d}</dd>" for h, d in column_definitions(metrics, units, rank_by))
                 + "</dl></details>")
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
        if "offered_load" in sub or "load_reached" in sub:
            from evaluation.catalog import LOAD_MEANING

            offered = float(sub["offered_load"].mean()) if "offered_load" in sub else None
            reached = sub["load_reached"].to_numpy(dtype=float) if "load_reached" in sub else np.array([])
            text = f"offered load {offered:.2f}" if offered is not None and np.isfinite(offered) else ""
            if len(reached) and np.isfinite(reached).any():
                span = f"{np.nanmin(reached):.2f}" + (f"&ndash;{np.nanmax(reached):.2f}" if np.nanmax(reached) -
                                                      np.nanmin(reached) >= 0.005 else "")
                text += (", " if text else "") + f"reached {span} across policies"
            parts.append(f"<p class=muted>{text} ({html.escape(LOAD_MEANING)})</p>")
        parts.append(_board_table(sub, metrics, rank_by, ok, units))
        if plots and run_dir is not None:
            for img, alt in ((cdf_figure(run_dir, ok, workload), "JCT CDF"),
                             (queue_figure(board, workload, units), "queueing")):
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
    """The first ``top`` entries of each workload as plain text (printed at the end of `experiment run`),
    with the workload's offered and reached load, and what they mean, once."""
    if not len(board):
        return "leaderboard: no cell succeeded"
    shown = [m for m in dict.fromkeys([rank_by, *metrics]) if m in board and m not in ("offered_load", "load_reached")]
    units = page_units(board, shown)
    lines = []
    loads = False
    for workload, sub in board.groupby("workload", sort=False):
        parts = []
        if "offered_load" in sub and np.isfinite(sub["offered_load"]).any():
            parts.append(f"offered load {sub['offered_load'].mean():.2f}")
        if "load_reached" in sub and np.isfinite(sub["load_reached"]).any():
            parts.append(f"reached load {sub['load_reached'].mean():.2f}")
        loads = loads or bool(parts)
        lines.append(f"leaderboard {workload}" + (f" ({', '.join(parts)})" if parts else "") + ":")
        rows = [["rank", "entry", "seeds", *(units[m][0] for m in shown)]]
        for _, r in sub.head(top).iterrows():
            rows.append([str(r.get("rank", "")), entry_label(r["policy"], r["predictor"]), str(r["seeds"]),
                         *(_fmt(m, r.get(m, float("nan")), float("nan"), units).replace("&ndash;", "-") for m in shown)])
        widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
        lines += ["  " + "  ".join(c.ljust(w) if i == 1 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths)))
                  for row in rows]
    if loads:
        from evaluation.catalog import LOAD_MEANING

        lines.append(f"loads: {LOAD_MEANING}; reached is the mean over the policies shown")
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
    for name in ("offered_load", "load_reached"):  # the two loads, side by side, after the spec's metrics
        if name in results and name not in metrics:
            metrics = [*metrics, name]
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


__all__ = ["column_definitions", "entry_label", "leaderboard", "overall", "page_units", "render_html", "results_frame", "seeds_warning", "top_text",
           "write_report"]
