"""Event accumulators -> per-job table and summaries (JCT, queueing delay, futile preemption, ...).

All times are seconds. Percentiles use numpy's linear interpolation. A measurement window keeps
only the jobs submitted inside it (to exclude warm-up and drain) but never changes the replay.

Failures: a job that ended in the terminal FAILED state has ``status`` "failed" and its ``end`` at the
failure; JCT and queueing statistics cover completed jobs only (a failed job has no completion time),
``failed_jobs`` counts the others. ``lost`` is the wall time of training lost to evictions and failures
(inside ``train``, so JCT = wait + load + train + save holds for every job, failed ones included) and
``lost_work`` the work (s at speed 1) that failures threw away and that was redone.
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np
import pandas as pd

from sim.engine import SimResult
from sim.workload import JobIds

PERCENTILES = (50, 95, 99, 99.9)


def _labels(mask: np.ndarray, yes: str, no: str) -> np.ndarray:
    """``np.where(mask, yes, no)`` as the object column pandas makes of it, without converting a
    fixed-width string array one element at a time (1.75 M jobs: two labels, two Python strings)."""
    return np.array([no, yes], dtype=object)[mask.astype(np.intp)]


def _objects(values) -> pd.Series:
    """An object column as pandas builds it from ``values`` (a list or an object array), without the
    scan pandas makes of every object array for dates when the dtype is left to it."""
    if not isinstance(values, np.ndarray):
        out = np.empty(len(values), dtype=object)
        out[:] = values
        values = out
    return pd.Series(values, dtype=object, copy=False)


def job_id_column(ids) -> pd.Series:
    """The job table's ``job_id``: pyarrow-backed text (the job table's and the trace tables' own dtype),
    taken from a workload's JobIds without one Python string per job."""
    if isinstance(ids, JobIds):
        return pd.Series(ids.array, copy=False)
    return pd.Series(pd.array([str(j) for j in ids], dtype=pd.StringDtype("pyarrow")), copy=False)


#: Most distinct labels :func:`label_codes` peels off before it leaves a column to a hash pass.
MAX_LABELS = 8


def label_codes(values: np.ndarray, max_labels: int = MAX_LABELS) -> tuple[np.ndarray, list[str | None]] | None:
    """(codes, labels) of an object array holding at most ``max_labels`` distinct objects, each a ``str``
    or None: ``labels[codes[i]] == values[i]``, labels distinct and in order of first appearance; None
    for any other array (more objects, numbers, NaN, pd.NA, ...), which the caller then reads element by
    element.

    Why: the job table's text columns (status, size, partition, class, model) hold one or two label
    objects repeated 1.75 M times. An object array is an array of object addresses (CPython's ``id``),
    so the labels are found by comparing addresses, a few integer passes at C speed, where a hash pass
    (pd.factorize) or pyarrow's conversion steps through every Python object (0.05-0.1 s a column).
    Distinct objects holding equal strings get one label."""
    if values.dtype != object or values.ndim != 1:
        return None
    values = np.ascontiguousarray(values)
    # the pointers themselves, read through the buffer protocol (the view keeps ``values`` alive)
    addresses = np.frombuffer(memoryview(values).cast("B"), dtype=np.uintp)
    if len(np.unique(addresses[:4096])) > max_labels:  # ids and the like: no full pass per label
        return None
    codes = np.empty(len(values), dtype=np.int8)
    objects: list[str | None] = []
    rest: np.ndarray | None = None  # positions not labelled yet (None: all of them)
    left = addresses
    while len(left):
        obj = values[0 if rest is None else rest[0]]
        if len(objects) == max_labels or not (obj is None or type(obj) is str):
            return None
        hit = left == left[0]
        codes[hit if rest is None else rest[hit]] = len(objects)
        objects.append(obj)
        miss = np.flatnonzero(~hit)
        rest, left = (miss if rest is None else rest[miss]), left[miss]
    labels = list(dict.fromkeys(objects))
    if len(labels) < len(objects):  # equal strings in distinct objects: one code
        codes = np.array([labels.index(o) for o in objects], dtype=np.int8)[codes]
    return codes, labels


def _one_text(column: pd.Series) -> str | None:
    """The one value of pyarrow-backed text that holds it in every row (no missing one), else None."""
    if not (isinstance(column.dtype, pd.StringDtype) and column.dtype.storage == "pyarrow"):
        return None
    import pyarrow.compute as pc

    values = column.array.__arrow_array__()  # the column's own Arrow data (no copy)
    if values.null_count:
        return None
    bounds = pc.min_max(values).as_py()
    return bounds["min"] if bounds["min"] == bounds["max"] else None


def _repeat(value: Any, n: int) -> np.ndarray:
    """An object array holding ``value`` itself n times. (``np.full(n, "pool", dtype=object)`` casts a
    string through a fixed-width array and makes a new Python string per element: 20 times slower, and
    the copies defeat the identity shortcuts of later comparisons.)"""
    out = np.empty(n, dtype=object)
    out.fill(value)
    return out


def _text_or(column: pd.Series, fill) -> np.ndarray:
    """``column.astype(object).fillna(fill).to_numpy()`` (``fill`` None: no fill), at once for a column
    that is missing throughout (traces without job classes or models)."""
    if len(column) and column.isna().all():
        if fill is None:
            return _repeat(column.iloc[:1].astype(object).iloc[0], len(column))
        return _repeat(fill, len(column))
    only = _one_text(column)
    if only is not None:  # one label throughout: one Python string, not one per job
        return _repeat(only, len(column))
    values = column.astype(object)
    return (values.fillna(fill) if fill is not None else values).to_numpy()


def job_table(result: SimResult) -> pd.DataFrame:
    """One row per job: times in each state, JCT, preemptions, futile preemption time.

    Built column by column without consolidating them into one block (a copy of every number) and
    without pandas' date scan of the text columns: the same frame, values and dtypes (1.75 M jobs: 3 s
    less on a loaded machine)."""
    w = result.workload
    column = getattr(w, "column", None) or (lambda name: getattr(w, name))  # arrays built with the workload
    submit = np.array(column("submit"))  # a copy: the frame's columns are its own
    acc = result.array  # each a new array (the kernel hands its arrays over: no list is converted)
    end = acc("end")
    columns = {
        "job_id": job_id_column(w.job_id),
        "submit": submit,
        "first_start": acc("first_start"),
        "end": end,
        "wait": acc("wait"),
        "load": acc("load"),
        "train": acc("train"),
        "save": acc("save"),
        "jct": end - submit,
        "duration": np.array(column("duration")),
        "gpus": np.array(column("gpus")),
        "gpu_demand": np.array(column("gpu_demand" if w.gpu_demand is not None else "gpus"), dtype=float),
        "preemptions": acc("preemptions"),
        "futile": acc("futile"),
        "evictions": acc("evictions"),
        "lost": acc("lost"),
        "failures": acc("failures"),
        "lost_work": acc("lost_work"),
        "status": _objects(_labels(acc("failed"), "failed", "done")),
        "partition": _objects(w.frame["partition"].to_numpy()),
        "job_class": _objects(_text_or(w.frame["job_class"], "all")),
        "model": _objects(_text_or(w.frame["model"], None)),
    }
    columns["size"] = _objects(_labels(columns["gpus"] > 8, ">8 GPUs", "<=8 GPUs"))
    columns["slowdown"] = columns["jct"] / np.maximum(columns["duration"], 1.0)
    return pd.DataFrame(columns, copy=False)


def window_mask(jobs: pd.DataFrame, window: tuple[float | None, float | None]) -> np.ndarray:
    """Which jobs were submitted in [start, end) seconds; None leaves a side open."""
    start, stop = window
    mask = np.ones(len(jobs), dtype=bool)
    if start is not None:
        mask &= jobs["submit"].to_numpy() >= start
    if stop is not None:
        mask &= jobs["submit"].to_numpy() < stop
    return mask


def in_window(jobs: pd.DataFrame, window: tuple[float | None, float | None] | None) -> pd.DataFrame:
    """Jobs submitted in [start, end) seconds; None leaves a side open."""
    return jobs if window is None else jobs[window_mask(jobs, window)]


def _pcts(values: np.ndarray, prefix: str, out: dict[str, Any]) -> None:
    out[f"{prefix}_mean"] = float(values.mean()) if len(values) else float("nan")
    # all percentiles from one partition of the values (the same numbers as one np.percentile call each:
    # the same order statistics, interpolated element by element; tests/test_jobtable_speed_paths.py)
    pcts = np.percentile(values, PERCENTILES) if len(values) else [float("nan")] * len(PERCENTILES)
    for p, v in zip(PERCENTILES, pcts):
        out[f"{prefix}_p{p:g}"] = float(v)


def _futile_percentiles(futile: np.ndarray) -> tuple[float, float]:
    """P50 and P95 of the futile preemption time: ``np.percentile(futile, (50, 95))``, at once where every
    value is +0.0 (no preemption wasted anything, as in every non-preemptive replay): numpy interpolates
    between equal zeros to +0.0. Why: each percentile call partitions a copy of the column (1.75 M jobs:
    about 15 ms, three times per replay with the size breakdown)."""
    if not len(futile):
        return float("nan"), float("nan")
    if _all_plus_zero(futile):
        return 0.0, 0.0
    p50, p95 = np.percentile(futile, (50, 95))
    return p50, p95


def _failed(jobs: pd.DataFrame) -> np.ndarray:
    """Jobs whose status is "failed" (numpy's element-wise == on the labels: pandas' object comparison
    gives the same mask at four times the cost)."""
    if "status" not in jobs:
        return np.zeros(len(jobs), dtype=bool)
    status = jobs["status"]
    if status.dtype != object:
        return (status == "failed").to_numpy(dtype=bool, na_value=False)
    values = status.to_numpy()
    found = label_codes(values)  # the job table's two label objects: no string comparison per job
    if found is not None:
        codes, labels = found
        return np.isin(codes, [k for k, label in enumerate(labels) if label == "failed"])
    return np.asarray(values == "failed", dtype=bool)


def summarize(jobs: pd.DataFrame, *, failed: np.ndarray | None = None) -> dict[str, Any]:
    """Mean and P50/P95/P99/P99.9 of JCT and queueing delay, futile preemption P50/P95, makespan, flow.
    ``failed``: the mask of failed jobs when the caller has it (a breakdown's groups carry no labels)."""
    out: dict[str, Any] = {"jobs": int(len(jobs))}
    failed = _failed(jobs) if failed is None else failed
    done = jobs[~failed] if failed.any() else jobs
    _pcts(done["jct"].to_numpy(), "jct", out)
    _pcts(done["wait"].to_numpy(), "wait", out)
    futile = jobs["futile"].to_numpy()
    p50, p95 = _futile_percentiles(futile)
    out["futile_p50"], out["futile_p95"] = float(p50), float(p95)
    out["futile_total"] = float(futile.sum())
    out["preemptions"] = int(jobs["preemptions"].sum())
    out["load_total"] = float(jobs["load"].sum())
    out["makespan"] = float(jobs["end"].max() - jobs["submit"].min()) if len(jobs) else 0.0
    out["total_flow_time"] = float(done["jct"].sum())
    out["mean_slowdown"] = float(done["slowdown"].mean()) if len(done) else float("nan")
    out["failed_jobs"] = int(failed.sum())
    out["failures"] = int(jobs["failures"].sum()) if "failures" in jobs else 0
    out["lost_work_total"] = float(jobs["lost_work"].sum()) if "lost_work" in jobs else 0.0
    return out


def _series(result: SimResult) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The allocation series as read-only views of the result's buffers: time, GPUs used, GPUs held.
    (The scores below read these: a DataFrame of them copies every value into one block, 80 MB for a
    1.75 M-job replay, and was built once per score.)"""
    used = np.frombuffer(result.alloc_used, dtype=float)
    held = np.frombuffer(result.alloc_held, dtype=float) if len(result.alloc_held) == len(used) else used
    return np.frombuffer(result.alloc_times, dtype=float), used, held


def allocation(result: SimResult) -> pd.DataFrame:
    """GPUs in use over time (a step function: the value holds until the next row): ``gpus_used``
    counts job-GPUs (a GPU shared by two packed jobs twice), ``gpus_held`` physical GPUs."""
    t, used, held = _series(result)
    return pd.DataFrame({"time": t, "gpus_used": used, "gpus_held": held})


def _allocation_scores(result: SimResult) -> tuple[float, float]:
    """(utilisation, sharing factor) from one reading of the allocation series: both weigh the GPUs held
    by the same time steps, so the steps (np.diff of 3.5 M times for a 1.75 M-job replay) and the held
    area are computed once, not three and two times; the same operations on the same values."""
    t, used, held = _series(result)
    if len(t) < 2:
        return 0.0, 1.0
    steps = np.diff(t)
    held_area = float(np.sum(held[:-1] * steps))
    used_area = held_area if used is held else float(np.sum(used[:-1] * steps))
    span = float(t[-1] - t[0])
    share = held_area / (span * result.workload.cluster.gpus) if span > 0 else 0.0
    return share, (used_area / held_area if held_area > 0 else 1.0)


def utilisation(result: SimResult) -> float:
    """Time-weighted mean share of the cluster's physical GPUs held by jobs, first submission to last
    completion (packed jobs share their GPUs, so packing lowers it for the same work)."""
    return _allocation_scores(result)[0]


def utilisation_between(result: SimResult, start: float, end: float) -> float:
    """Share of the cluster's physical GPUs held, time-weighted over [start, end) seconds: over the
    submission window this is the load the replay actually reached (the offered load is what the
    cluster was sized for; a few long jobs can hold most of their GPU-seconds after the window)."""
    t, _, v = _series(result)
    gpus = result.workload.cluster.gpus
    if len(t) < 1 or end <= start or gpus <= 0:
        return 0.0
    # each value holds until the next row, the last one to `end`; computed in one buffer (the series has
    # two rows a job: five temporaries of 28 MB each for 1.75 M jobs), the same operations in the same order
    overlap = np.empty_like(t)
    overlap[:-1] = t[1:]
    overlap[-1] = max(end, t[-1])
    np.minimum(overlap, end, out=overlap)
    np.subtract(overlap, np.maximum(t, start), out=overlap)
    np.clip(overlap, 0.0, None, out=overlap)
    np.multiply(v, overlap, out=overlap)
    return float(np.sum(overlap) / ((end - start) * gpus))


def top_share(jobs: pd.DataFrame, k: int = 5) -> float:
    """Share of the jobs' GPU-seconds (duration x GPUs) held by the ``k`` largest jobs."""
    if not len(jobs):
        return 0.0
    demand = jobs["gpu_demand"] if "gpu_demand" in jobs else jobs["gpus"]
    work = np.sort((jobs["duration"].to_numpy(dtype=float) * demand.to_numpy(dtype=float)))[::-1]
    total = float(work.sum())
    return float(work[:k].sum() / total) if total > 0 else 0.0


def sharing_factor(result: SimResult) -> float:
    """Job-GPUs served per physical GPU held, time-weighted: 1.0 without packing, up to 2.0 when every
    held GPU runs a packed pair."""
    return _allocation_scores(result)[1]


#: The job-table columns summarize reads (a breakdown hands its groups only these).
SUMMARY_COLUMNS = ("status", "jct", "wait", "futile", "preemptions", "load", "end", "submit", "slowdown", "failures",
                   "lost_work")


def breakdown(jobs: pd.DataFrame, by: str, whole: dict[str, Any] | None = None) -> pd.DataFrame:
    """Summary per group (by = 'partition', 'size', 'job_class' or any job-table column).

    The groups carry only the columns summarize reads (copying every column of 1.75 M jobs per group cost
    seconds); a text column holding one value throughout is one group: the jobs themselves, uncopied,
    whose summary is ``whole`` when the caller has it already (``summarize(jobs)``)."""
    keys = jobs[by]
    if keys.dtype != object:
        slim = jobs[[c for c in SUMMARY_COLUMNS if c in jobs and c != by] + [by]]
        return pd.DataFrame([{by: key, **summarize(group)} for key, group in slim.groupby(by, sort=True)])
    # Text labels (the job table's are object columns of a few distinct strings): the groups groupby(sort=True)
    # makes, in its order, from one hash pass (pandas' object groupby and comparisons work element by element
    # in Python: 1.2 s for the two sizes of 1.75 M jobs on a loaded machine). Missing labels are left out, as
    # groupby leaves them; rows keep their order inside a group, so every sum and percentile is the same.
    labels = keys.to_numpy()
    found = label_codes(labels)  # a few label objects (the job table's columns): codes from their addresses
    if found is None:
        codes, uniques = pd.factorize(labels, sort=True)
    else:
        codes, found_labels = found
        # One label throughout (most traces' partition, class and size): the jobs themselves are the group.
        if len(found_labels) == 1 and found_labels[0] is not None:
            return pd.DataFrame([{by: found_labels[0], **(whole if whole is not None else summarize(jobs))}])
        # groupby(sort=True)'s groups: the labels sorted, missing ones (None) left out
        order = sorted((label, k) for k, label in enumerate(found_labels) if label is not None)
        recode = np.full(len(found_labels), -1, dtype=np.intp)
        recode[[k for _, k in order]] = np.arange(len(order))
        codes, uniques = recode[codes], [label for label, _ in order]
    failed = _failed(jobs)
    arrays = {c: jobs[c].to_numpy() for c in SUMMARY_COLUMNS if c in jobs and c not in (by, "status")}
    zero = {c: np.zeros(1, dtype=a.dtype) for c, a in arrays.items() if _all_plus_zero(a)}
    rows = []
    for k, key in enumerate(uniques):
        rows_k = np.flatnonzero(codes == k)  # positions: ten gathers from one index beat ten mask scans
        group = pd.DataFrame({c: np.broadcast_to(zero[c], rows_k.shape) if c in zero else a[rows_k]
                              for c, a in arrays.items()}, copy=False)
        rows.append({by: key, **summarize(group, failed=failed[rows_k])})
    return pd.DataFrame(rows)


def _all_plus_zero(values: np.ndarray) -> bool:
    """Whether every value is +0 (a float -0.0 or NaN is not). Why: a breakdown's group of such a column is
    then a read-only view of one zero instead of a gathered copy. The columns summarize only sums or reads
    for percentiles (futile time, preemptions, load, failures, lost work) are all zeros in every replay
    without preemption, costs or failures, and their copies were half of the size breakdown's 1.75 M-job
    gathers; a sum of +0 values is +0 in any order, so every figure stays the same to the bit."""
    if values.dtype.kind not in "biuf" or values.any():
        return False
    return values.dtype.kind != "f" or not np.signbit(values).any()


def _submission_window(jobs: pd.DataFrame, window: tuple[float | None, float | None] | None) -> tuple[float, float]:
    """The measurement window, its open sides closed by the measured jobs' first / last submission."""
    submit = jobs["submit"].to_numpy(dtype=float)
    lo = float(submit.min()) if len(submit) else 0.0
    hi = float(submit.max()) if len(submit) else 0.0
    start, end = window if window is not None else (None, None)
    return (lo if start is None else float(start)), (hi if end is None else float(end))


def evaluate(result: SimResult, window: tuple[float | None, float | None] | None = None, *,
             on_jobs: Callable[[pd.DataFrame], None] | None = None) -> dict[str, Any]:
    """Everything a report needs for one run: summary, breakdowns, utilisation, run statistics.
    ``on_jobs(jobs)`` is called with the job table as soon as it is made, before the rest is scored (a
    writer starts encoding it there: evaluation.report.JobsParquet); it must not change the table."""
    jobs = job_table(result)
    if on_jobs is not None:
        on_jobs(jobs)
    sel = in_window(jobs, window)
    whole = summarize(sel)
    scores = _allocation_scores(result)
    summary = dict(whole)
    summary.update({
        "policy": result.policy,
        "gpu_utilisation": scores[0],
        "gpu_sharing_factor": scores[1],
        "load_reached": utilisation_between(result, *_submission_window(sel, window)),
        "top5_gpu_share": top_share(sel, 5),
        "events": result.events,
        "sim_seconds": result.wall_seconds,
        "events_per_second": result.events / result.wall_seconds if result.wall_seconds > 0 else float("nan"),
        **{k: v for k, v in result.policy_stats.items() if isinstance(v, (int, float))},
    })
    if result.decision_seconds:
        d = np.asarray(result.decision_seconds)
        summary["decision_p50_ms"] = float(np.percentile(d, 50) * 1e3)
        summary["decision_p99_ms"] = float(np.percentile(d, 99) * 1e3)
    return {
        "summary": summary,
        "jobs": jobs,
        "by_partition": breakdown(sel, "partition", whole),
        "by_size": breakdown(sel, "size", whole),
        "by_class": breakdown(sel, "job_class", whole),
        "allocation": allocation(result),
    }


def check_identities(jobs: pd.DataFrame, tol: float = 1e-6) -> None:
    """JCT = wait + load + train + save for every job (relative tolerance for float sums)."""
    lhs = jobs["jct"].to_numpy()
    # numpy on the columns' arrays: pandas' additions align indexes and build three Series on the way
    rhs = ((jobs["wait"].to_numpy() + jobs["load"].to_numpy()) + jobs["train"].to_numpy()) + jobs["save"].to_numpy()
    bad = np.abs(lhs - rhs) > tol * np.maximum(1.0, np.abs(lhs))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise AssertionError(f"JCT identity broken for job {jobs['job_id'].iloc[i]}: jct {lhs[i]} != "
                             f"wait+load+train+save {rhs[i]}")
