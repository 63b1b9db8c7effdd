"""Results of several policies side by side: printed table, CSV/parquet files and plots."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from evaluation.outdir import MARKER, OutputError, check_output  # noqa: F401 - one helper for every --out

if TYPE_CHECKING:
    import pandas as pd

#: Columns of the printed comparison (label, key, scale): times shown in hours.
TABLE_COLUMNS = [
    ("avg JCT h", "jct_mean", 1 / 3600), ("P50 JCT h", "jct_p50", 1 / 3600), ("P95 JCT h", "jct_p95", 1 / 3600),
    ("P99 JCT h", "jct_p99", 1 / 3600), ("avg wait h", "wait_mean", 1 / 3600),
    ("P95 wait h", "wait_p95", 1 / 3600), ("P99.9 wait h", "wait_p99.9", 1 / 3600),
    ("futile P95 min", "futile_p95", 1 / 60), ("preempt", "preemptions", 1),
    ("makespan h", "makespan", 1 / 3600), ("util %", "gpu_utilisation", 100), ("sim s", "sim_seconds", 1),
]

#: Columns of the HP / spot table printed for workloads with spot tasks (GFS metrics, measured tasks only).
HP_SPOT_COLUMNS = [
    ("HP jobs", "hp_jobs", 1), ("HP JCT h", "hp_jct_mean", 1 / 3600), ("HP P99 JCT h", "hp_jct_p99", 1 / 3600),
    ("HP JQT s", "hp_jqt_mean", 1), ("spot jobs", "spot_jobs", 1), ("spot JCT h", "spot_jct_mean", 1 / 3600),
    ("spot JQT h", "spot_jqt_mean", 1 / 3600), ("evictions", "evictions", 1),
    ("evict/run %", "evict_rate_runs", 100), ("lost GPU-h %", "evict_rate_hours", 100),
]

#: Columns in seconds in the per-job tables (written as <name>_s).
JOB_SECONDS = ("submit", "first_start", "end", "wait", "load", "train", "save", "jct", "duration", "futile", "lost")
#: Summary / breakdown keys in seconds besides the jct_*, wait_* and futile_* statistics.
SUMMARY_SECONDS = ("load_total", "makespan", "total_flow_time")


#: Wall-clock summary keys: they differ between identical runs, so they go to meta.json ("timings"),
#: never into summary.csv (which is byte-identical for identical seeded runs). SchedMate's count of texts
#: built depends on what an earlier process left in the disk cache, so it is a timing too.
TIMING_KEYS = frozenset({"sim_seconds", "events_per_second", "wall_seconds", "sqa_seconds",
                         "schedmate_texts_built"})


def is_timing(column: str) -> bool:
    """Whether a summary key is a wall-clock measurement (see TIMING_KEYS; also ``bo_*_seconds``,
    ``sqa_*_seconds``, ``decision_*_ms``, ``*_wall_seconds``, ``*_cpu_seconds``)."""
    return (column in TIMING_KEYS or (column.startswith(("bo_", "sqa_")) and column.endswith("_seconds"))
            or (column.startswith("decision_") and column.endswith("_ms"))
            or column.endswith(("_wall_seconds", "_cpu_seconds", "_wall_s")))


def unit_name(column: str) -> str:
    """The file column name of a summary key: seconds get ``_s``, the utilisation share ``_frac``;
    names that already carry a unit (``_ms``, ``_seconds``, ``per_second``) and counts are kept. The rule
    and the units are evaluation.catalog's (one naming rule for files and MLflow metrics)."""
    from evaluation.catalog import file_name

    return file_name(column)


def with_units(frame: pd.DataFrame, job_table: bool = False) -> pd.DataFrame:
    """``frame`` with unit-bearing column names (files only; in-memory keys stay as metrics makes them)."""
    if job_table:
        names = {c: f"{c}_s" for c in JOB_SECONDS if c in frame.columns}
    else:
        names = {c: unit_name(c) for c in frame.columns}
    out = frame.copy(deep=False)  # new labels on the same columns (rename copied every row of a job table)
    out.columns = [names.get(c, c) for c in frame.columns]
    return out


def comparison_frame(summaries: list[dict[str, Any]], columns: list[tuple[str, str, float]] | None = None
                     ) -> pd.DataFrame:
    import pandas as pd

    rows = []
    for s in summaries:
        row = {"policy": s["policy"]}
        for label, key, scale in columns or TABLE_COLUMNS:
            v = s.get(key, float("nan"))
            row[label] = v * scale if isinstance(v, (int, float)) else v
        rows.append(row)
    return pd.DataFrame(rows)


def render_table(summaries: list[dict[str, Any]], title: str = "",
                 columns: list[tuple[str, str, float]] | None = None, width: int | None = None) -> str:
    """A fixed-width table (plain text, so it reads the same in logs and terminals); ``columns``
    (label, key, scale) default to TABLE_COLUMNS. ``width`` (a terminal's columns): a wider table is cut
    into blocks of whole columns, the policy column repeated in each, so no line wraps and no word is
    broken; None (a log, a pipe) keeps one block of full lines."""
    import pandas as pd

    frame = comparison_frame(summaries, columns)

    def text_of(part: pd.DataFrame) -> str:
        with pd.option_context("display.width", 10_000, "display.max_columns", 200):
            return part.to_string(index=False, float_format=lambda v: f"{v:,.3f}")

    text = text_of(frame)
    if width is not None and max(map(len, text.splitlines()), default=0) > width and frame.shape[1] > 2:
        key, rest = frame.columns[0], list(frame.columns[1:])
        blocks, current = [], []
        for col in rest:
            trial = text_of(frame[[key, *current, col]])
            if current and max(map(len, trial.splitlines())) > width:
                blocks.append(current)
                current = [col]
            else:
                current.append(col)
        blocks.append(current)
        text = "\n\n".join(text_of(frame[[key, *cols]]) for cols in blocks)
    return f"{title}\n{text}" if title else text


def safe_name(name: str) -> str:
    """A policy label as part of a file name (jobs_LABEL.parquet): no ":", "/", "=" or ",", no control
    characters, and at most 200 characters (a longer label keeps its first 180 and a hash of the whole)."""
    out = name.replace(":", "_").replace("/", "_").replace("=", "-").replace(",", "_")
    out = "".join("_" if ord(ch) < 32 or ord(ch) == 127 else ch for ch in out)
    if len(out.encode("utf-8")) > 200:
        import hashlib

        digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        out = out.encode("utf-8")[:180].decode("utf-8", "ignore") + "-" + digest
    return out


_safe = safe_name  # the old private name


def write_results(out_dir: str | Path, runs: dict[str, dict[str, Any]], meta: dict[str, Any], *,
                  force: bool = False, plots: bool = True, plotter: PlotWorker | None = None,
                  encoded: dict[str, JobsParquet] | None = None) -> list[Path]:
    """Write a whole result folder or none: summary.csv, per-policy job tables and GPU allocation
    (parquet), breakdowns (CSV), meta.json and, with ``plots``, jct_cdf.png and gpu_allocation.png.

    Everything is written into a hidden temporary folder beside ``out_dir`` that is renamed into place
    once complete, so an interrupted run leaves no (or the previous) ``out_dir``, never a mix. An
    existing non-empty ``out_dir`` is refused unless ``force``, which replaces it whole (no stale file
    of an earlier run survives) and only when it is schedcast's own output (evaluation.outdir). ``meta['window']`` (start, end) marks measured jobs: job tables get an
    ``in_window`` column and the JCT plot shows only measured jobs. ``plotter``: a PlotWorker started
    earlier draws the plots while the tables are written (else they are drawn here). ``encoded``: per
    policy, its job table already being encoded (:class:`JobsParquet`, started when the replay's job table
    was made); a policy without one is encoded here.
    """
    from evaluation.outdir import replace_folder

    out = Path(out_dir)
    names = replace_folder(out, lambda tmp: _write_files(tmp, runs, meta, plots, plotter, encoded),
                           kind=str(meta.get("kind") or "simulate"), force=force)
    return [out / n for n in names]


def job_file_frame(jobs: pd.DataFrame, window: tuple[float, float] | None) -> pd.DataFrame:
    """The job table as ``jobs_<policy>.parquet`` holds it: times named ``<name>_s`` and, with a measurement
    window, an ``in_window`` column (submitted in [start, end))."""
    if window is not None:
        from evaluation.metrics import window_mask

        jobs = jobs.assign(in_window=window_mask(jobs, window))
    return with_units(jobs, job_table=True)


def allocation_file_frame(allocation: pd.DataFrame) -> pd.DataFrame:
    """The allocation series as ``allocation_<policy>.parquet`` holds it (``time`` named ``time_s``): new
    labels on the same columns (``rename`` copied every row: 0.17 s for a 1.75 M-job replay)."""
    out = allocation.copy(deep=False)
    out.columns = ["time_s" if c == "time" else c for c in allocation.columns]
    return out


def arrow_table(frame: pd.DataFrame) -> Any:
    """``pa.Table.from_pandas(frame, preserve_index=False)``, the table ``frame.to_parquet(index=False)``
    writes: the same schema (pandas metadata included) and values, with object columns of a few labels
    (evaluation.metrics.label_codes) built from their codes instead of one Python object per row.

    Why: pyarrow converts an object column by stepping through its Python objects while holding the GIL
    (0.07 s per column of 1.75 M rows, 5 label columns in a job table); the job file is encoded in a thread
    beside the scoring, which that conversion slowed down. The schema is the one pyarrow derives from a
    one-row frame of the same columns, dtypes and value kinds, and must give every column's type, else
    the frame is converted by pyarrow itself (tests/test_command_speed_paths.py compares the bytes)."""
    import pandas as pd
    import pyarrow as pa

    from evaluation.metrics import label_codes

    labelled: dict[str, Any] = {}
    for name in frame.columns:
        column = frame[name]
        found = label_codes(column.to_numpy()) if column.dtype == object else None
        if found is None:
            continue
        codes, labels = found
        labelled[name] = (pa.nulls(len(column)) if all(v is None for v in labels)
                          else pa.array(labels, type=pa.string()).take(pa.array(codes)))
    if (not labelled or not len(frame) or frame.attrs or not frame.columns.is_unique
            or not all(isinstance(c, str) for c in frame.columns)):
        return pa.Table.from_pandas(frame, preserve_index=False)
    rest = pa.Table.from_pandas(pd.DataFrame({c: frame[c] for c in frame.columns if c not in labelled}, copy=False),
                                preserve_index=False) if len(labelled) < len(frame.columns) else None
    arrays = [labelled[c] if c in labelled else rest.column(c) for c in frame.columns]
    sample = frame.iloc[:1].copy()
    for name, arr in zip(frame.columns, arrays):
        if sample[name].dtype == object:  # a value of the kind the column holds (None where it holds none)
            valid = arr.drop_null()
            sample[name] = pd.Series([valid[0].as_py() if len(valid) else None], index=sample.index, dtype=object)
    schema = pa.Schema.from_pandas(sample, preserve_index=False)
    if schema.types != [a.type for a in arrays]:
        return pa.Table.from_pandas(frame, preserve_index=False)
    return pa.Table.from_arrays(arrays, schema=schema)


#: Rows of a column's start that :func:`repeating_columns` reads.
DICTIONARY_SAMPLE = 65_536


def repeating_columns(table: Any) -> list[str]:
    """The columns worth parquet's dictionary encoding: at most half of the first DICTIONARY_SAMPLE values
    distinct (labels, GPU counts, whole-second times), not ids or float times that never repeat.

    Why: parquet writers dictionary-encode every column by default and fall back to plain values once a
    column's dictionary outgrows its page; for the unique columns of a job file (id, submit, start and end
    times) that is a hash insert per value for nothing and a larger file (1.75 M jobs: 0.25 s and 2 MB)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    out = []
    for name, column in zip(table.column_names, table.columns):
        sample = column.slice(0, DICTIONARY_SAMPLE)
        try:
            repeats = len(sample) < 2 or pc.count_distinct(sample, mode="all").as_py() <= len(sample) // 2
        except (pa.ArrowNotImplementedError, pa.ArrowTypeError):  # no distinct count for the type (nulls only,
            repeats = True  # say): the writer's default, a dictionary
        if repeats:
            out.append(name)
    return out


def write_parquet(frame: pd.DataFrame, where: Any) -> None:
    """The table ``frame.to_parquet(where, index=False)`` writes (schema, pandas metadata, values; through
    :func:`arrow_table`), dictionary-encoded only in the columns whose values repeat (repeating_columns)."""
    import pyarrow.parquet as pq

    table = arrow_table(frame)
    pq.write_table(table, where, compression="snappy", use_dictionary=repeating_columns(table))


def _window_key(window: Any) -> tuple[float, float] | None:
    return None if window is None else (float(window[0]), float(window[1]))


class JobsParquet:
    """A job table being encoded as parquet in a background thread, started as soon as the replay has made
    the table: pyarrow encodes and compresses without holding the GIL, so on a second core this runs
    beside the rest of the scoring (and the next policy's replay) instead of after it. The bytes are those
    ``write_parquet(job_file_frame(jobs, window), path)`` writes (tests/test_jobs_parquet.py).
    The table must not be changed while it is encoded (scoring only reads it)."""

    def __init__(self, jobs: pd.DataFrame, window: tuple[float, float] | None) -> None:
        from features.background import in_background

        self.window = _window_key(window)
        self._encoded = in_background(lambda: self._encode(jobs), "jobs-parquet")

    def _encode(self, jobs: pd.DataFrame) -> Any:
        import pyarrow as pa

        sink = pa.BufferOutputStream()  # native memory: the writes never take the GIL (BytesIO would)
        write_parquet(job_file_frame(jobs, self.window), sink)
        return sink.getvalue()

    def write_to(self, path: Path) -> None:
        """Wait for the encoding and write the file (the encoding's error, if any, is raised here)."""
        buffer = self._encoded()
        with open(path, "wb") as f:
            f.write(buffer)


def _write_files(folder: Path, runs: dict[str, dict[str, Any]], meta: dict[str, Any], plots: bool,
                 plotter: PlotWorker | None = None, encoded: dict[str, JobsParquet] | None = None) -> list[str]:
    import pandas as pd

    from evaluation.metrics import in_window

    window = meta.get("window")
    names: list[str] = []
    measured = {name: in_window(r["jobs"], window) for name, r in runs.items()}
    drawn = None  # the worker's drawing, waited for once the tables are written
    if plots:
        title = _plot_title(meta)
        tasks = [("jct_cdf", cdf_data(measured), str(folder / "jct_cdf.png"), {"title": title, "window": window}),
                 ("allocation", allocation_data({n: r["allocation"] for n, r in runs.items()}, meta.get("cluster_gpus")),
                  str(folder / "gpu_allocation.png"), {"title": title, "window": window})]
        if plotter is None:
            draw_here(tasks)
        else:  # the worker draws while the tables are written below
            from features.background import in_background

            drawn = in_background(lambda: plotter.draw(tasks), "plots")
        names += ["jct_cdf.png", "gpu_allocation.png"]
    try:
        for name, r in runs.items():
            safe = safe_name(name)
            # the allocation file and the breakdowns first: a job file being encoded (JobsParquet) goes on
            # meanwhile in its thread, and is waited for last
            write_parquet(allocation_file_frame(r["allocation"]), folder / f"allocation_{safe}.parquet")
            tables = [f"{key}_{safe}.csv" for key in ("by_partition", "by_size", "by_class")]
            for key, file in zip(("by_partition", "by_size", "by_class"), tables):
                with_units(r[key]).to_csv(folder / file, index=False)
            pending = (encoded or {}).get(name)
            if pending is not None and pending.window == _window_key(window):
                pending.write_to(folder / f"jobs_{safe}.parquet")
            else:
                write_parquet(job_file_frame(r["jobs"], window), folder / f"jobs_{safe}.parquet")
            names += [f"jobs_{safe}.parquet", f"allocation_{safe}.parquet", *tables]
    except BaseException:
        if drawn is not None:  # the drawing ends before the folder goes; the writing's error is the one raised
            try:
                drawn()
            except BaseException:  # noqa: BLE001
                pass
        raise
    if drawn is not None:
        drawn()  # raises the drawing's error, if any
    summary = pd.DataFrame([r["summary"] for r in runs.values()])
    summary = summary[["policy", *[c for c in summary.columns if c != "policy"]]]
    timing = [c for c in summary.columns if is_timing(c)]
    with_units(summary.drop(columns=timing)).to_csv(folder / "summary.csv", index=False)
    names.insert(0, "summary.csv")
    timings = {name: {c: r["summary"][c] for c in timing if c in r["summary"]} for name, r in runs.items()}
    meta = {**meta, "timings": timings, "files": sorted(names + ["meta.json", MARKER]), "complete": True}
    (folder / "meta.json").write_text(json.dumps(meta, indent=2, default=str))
    names.append("meta.json")
    return names


def _plot_title(meta: dict[str, Any]) -> str:
    trace = meta.get("trace_name") or Path(str((meta.get("trace") or {}).get("source", "trace"))).name
    cluster = meta.get("cluster_name") or str(meta.get("cluster", "")).split(":")[0]
    if cluster and meta.get("cluster_gpus"):
        cluster += f" ({meta['cluster_gpus']:,} GPUs)"
    if str(trace).startswith("synthetic "):  # "synthetic demo on demo" read as a typo: say which is which
        trace = f"{trace} workload"
    return f"{trace} on cluster {cluster}" if cluster else str(trace)


def _figure(figsize: tuple[float, float]):
    """A matplotlib Figure without pyplot (no global state, no GUI backend, faster import)."""
    from matplotlib.figure import Figure

    return Figure(figsize=figsize)


def _binned_step(t: np.ndarray, v: np.ndarray, bins: int) -> tuple[np.ndarray, np.ndarray]:
    """A step function (v holds from t[i] to t[i+1]) as its exact time-weighted mean over ``bins``
    equal bins; short series are returned unchanged."""
    if len(t) <= 2 * bins or t[-1] <= t[0]:
        return t, v
    area = np.concatenate([[0.0], np.cumsum(v[:-1] * np.diff(t))])
    edges = np.linspace(t[0], t[-1], bins + 1)
    mean = np.diff(np.interp(edges, t, area)) / np.diff(edges)
    return edges, np.append(mean, mean[-1])


def allocation_data(alloc_by_policy: dict[str, pd.DataFrame], capacity: int | None, bins: int = 600) -> dict:
    """What the allocation plot draws: per policy (days, GPUs held) as at most ``bins`` bin means."""
    series, binned = {}, False
    for name, alloc in alloc_by_policy.items():
        t = alloc["time"].to_numpy(dtype=float)
        v = alloc.get("gpus_held", alloc["gpus_used"]).to_numpy(dtype=float)
        x, y = _binned_step(t, v, bins)
        binned |= len(x) != len(t)
        series[name] = (x / 86400.0, y, float(v.max(initial=1)))
    return {"series": series, "binned": binned, "capacity": capacity}


def draw_allocation(data: dict, path: str | Path, title: str = "", window: tuple[float, float] | None = None) -> Path:
    """Small multiples: one panel per policy, shared axes, capacity dashed, measured window shaded."""
    series, capacity = data["series"], data["capacity"]
    n = max(len(series), 1)
    height = 1.1 + 1.35 * n
    fig = _figure((8, height))
    axes = fig.subplots(n, 1, sharex=True, sharey=True, squeeze=False)[:, 0]
    top = max([capacity or 0.0] + [vmax for _, _, vmax in series.values()] + [1.0])
    for ax, (name, (x, y, _)) in zip(axes, series.items()):
        ax.step(x, y, where="post", lw=0.8, color="C0")
        ax.fill_between(x, y, step="post", alpha=0.25, color="C0", lw=0)
        if capacity:
            ax.axhline(capacity, color="k", ls="--", lw=0.7)
        if window is not None:
            ax.axvspan(window[0] / 86400.0, window[1] / 86400.0, color="C2", alpha=0.08, lw=0)
        ax.text(0.006, 0.8, name, transform=ax.transAxes, va="top", fontsize=9, weight="bold",
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1.5})
    axes[0].set_ylim(0, top * 1.12)
    axes[-1].set_xlabel("time since first submission (days)")
    axes[n // 2].set_ylabel("GPUs held" + (" (bin mean)" if data["binned"] else ""))
    head = "GPUs held over time" + (f": {title}" if title else "")
    notes = [s for s in ("dashed: capacity" if capacity else "", "shaded green: measured window" if window else "")
             if s]
    fig.suptitle(head + (f"\n({'; '.join(notes)})" if notes else ""), fontsize=10)
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.45 / height + 0.02,
                        top=1 - (0.42 + 0.17 * bool(notes)) / height, hspace=0.12)
    fig.savefig(path, dpi=110)
    return Path(path)


def plot_allocation(alloc_by_policy: dict[str, pd.DataFrame], capacity: int | None, path: str | Path,
                    title: str = "", window: tuple[float, float] | None = None, bins: int = 600) -> list[Path]:
    """Physical GPUs held over time, one panel per policy (shared axes, days on the x axis; packed
    jobs share a GPU). Long series are drawn as exact time-weighted means over ``bins`` bins."""
    return [draw_allocation(allocation_data(alloc_by_policy, capacity, bins), path, title, window)]


#: Tick positions (hours) and labels of the JCT axis.
_TIME_TICKS = [(1 / 3600, "1 s"), (10 / 3600, "10 s"), (1 / 60, "1 min"), (1 / 6, "10 min"), (1.0, "1 h"),
               (10.0, "10 h"), (100.0, "100 h"), (1000.0, "1,000 h"), (10000.0, "10,000 h")]


def cdf_data(jobs_by_policy: dict[str, pd.DataFrame], points: int = 400) -> dict:
    """What the JCT CDF draws: per policy the JCT (hours) at ``points`` evenly spaced quantiles."""
    q = np.linspace(0.0, 1.0, points)
    curves, count = {}, 0
    for name, jobs in jobs_by_policy.items():
        column = "jct" if "jct" in jobs else "jct_s"
        jct = jobs[column].to_numpy(dtype=float) / 3600.0
        count = max(count, len(jct))
        if len(jct):  # sorted first: numpy then finds the 400 order statistics in a sorted array (a third of the time)
            curves[name] = (np.maximum(np.quantile(np.sort(jct), q), 1e-4), q)
    return {"curves": curves, "count": count}


def draw_jct_cdf(data: dict, path: str | Path, title: str = "", window: tuple[float, float] | None = None) -> Path:
    """One line per policy on a log time axis with plain-text ticks (1 min, 1 h, ...)."""
    from matplotlib.ticker import FixedLocator, NullLocator

    fig = _figure((7, 4.5))
    ax = fig.subplots()
    for name, (x, q) in data["curves"].items():
        ax.plot(x, q, label=name, lw=1.5)
    ax.set_xscale("log")
    # Log tick labels are mathtext, slow to lay out: fixed readable times instead.
    lo, hi = ax.get_xlim()
    ticks = [(t, label) for t, label in _TIME_TICKS if lo <= t <= hi] or [(1.0, "1 h")]
    ax.xaxis.set_major_locator(FixedLocator([t for t, _ in ticks]))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([label for _, label in ticks])
    ax.set_xlabel("job completion time (log scale)")
    ax.set_ylabel("fraction of jobs")
    what = f"{data['count']:,} jobs"
    if window:
        what += f" submitted in {window[0] / 86400:g}-{window[1] / 86400:g} d"
    import textwrap

    # a real trace's file name makes the title longer than the figure: wrapped, with room made above
    head = textwrap.fill(f"JCT CDF by policy: {title} ({what})" if title else f"JCT CDF by policy ({what})", 78,
                         break_on_hyphens=False, break_long_words=False)
    ax.set_title(head, fontsize=10)
    ax.grid(True, which="major", alpha=0.3)
    if data["curves"]:
        ax.legend(fontsize=8, loc="lower right")
    fig.subplots_adjust(left=0.1, right=0.97, bottom=0.12, top=0.92 - 0.045 * head.count("\n"))
    fig.savefig(path, dpi=110)
    return Path(path)


def plot_jct_cdf(jobs_by_policy: dict[str, pd.DataFrame], path: str | Path, title: str = "",
                 window: tuple[float, float] | None = None, points: int = 400) -> list[Path]:
    """CDF of JCT per policy on a log time axis, drawn through ``points`` exact quantiles."""
    return [draw_jct_cdf(cdf_data(jobs_by_policy, points), path, title, window)]


_DRAW = {"jct_cdf": draw_jct_cdf, "allocation": draw_allocation}


def draw_here(tasks: list[tuple[str, dict, str, dict]]) -> None:
    """Draw (plot kind, data, path, options) tasks in this process, with the objects that exist now
    frozen out of the garbage collector's reach (gc.freeze): matplotlib allocates enough to trigger
    collections, and each would walk every object of a replay still held (1.75 M jobs: millions)."""
    import gc

    gc.freeze()
    try:
        for kind, data, path, options in tasks:
            _DRAW[kind](data, path, **options)
    finally:
        gc.unfreeze()


class PlotWorker:
    """Draws the result plots in a second Python process started early (before the trace is read), so
    that importing matplotlib and drawing run beside the replay on another core instead of after it.
    The parent sends only the small arrays the plots need (quantiles, bin means). If the worker cannot
    start or fails, ``draw`` raises and nothing is half-written (the result folder is temporary)."""

    def __init__(self) -> None:
        import subprocess
        import sys

        root = str(Path(__file__).resolve().parents[1])
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])),
               "MPLBACKEND": "Agg"}
        # `python -c` puts the working directory first on sys.path: a user's timeit.py or pickle.py there
        # would shadow the standard library inside matplotlib, so the worker drops it before importing.
        # It runs at a lower priority (nice 10): its imports then take only a core the command leaves idle,
        # not one of the CSV reader's threads (1.75 M rows: 0.6-1 s of loading on 2 cores otherwise).
        code = ("import os, sys; sys.path[:] = [p for p in sys.path if p not in ('', '.')]; "
                "os.nice(10) if hasattr(os, 'nice') else None; "
                "from evaluation.report import _plot_worker; _plot_worker()")
        self.proc = subprocess.Popen([sys.executable, "-P", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, env=env)

    def draw(self, tasks: list[tuple[str, dict, str, dict]]) -> None:
        """Send (plot kind, data, path, options) tasks and wait until all are written."""
        import pickle

        try:
            _, err = self.proc.communicate(pickle.dumps(tasks, protocol=pickle.HIGHEST_PROTOCOL), timeout=600)
        except BaseException:
            self.close()
            raise
        if self.proc.returncode != 0:
            lines = err.decode("utf-8", "replace").strip().splitlines()
            raise RuntimeError(f"plotting failed: {lines[-1] if lines else f'exit {self.proc.returncode}'}")

    def close(self) -> None:
        """Stop the worker if it is still waiting (the command ended before plotting)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()


def _plot_worker() -> None:
    """Entry point of the PlotWorker process: import and warm matplotlib, then draw what arrives."""
    import pickle
    import sys

    from matplotlib.backends import backend_agg  # noqa: F401 - imported now, while the parent replays
    from matplotlib.ticker import FixedLocator  # noqa: F401

    warm = _figure((1, 1))
    warm.text(0.5, 0.5, "0")
    backend_agg.FigureCanvasAgg(warm).draw()  # loads the font once
    data = sys.stdin.buffer.read()
    if not data:
        return
    for kind, payload, path, options in pickle.loads(data):
        _DRAW[kind](payload, path, **options)


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
