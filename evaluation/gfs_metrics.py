"""GFS metrics (ASPLOS '26 §6): HP and spot completion and queueing times, spot eviction rates, GPU allocation
over time, per pool, and the quota allocator's fidelity.

Definitions (all seconds unless named otherwise):
- HP JCT mean / P99 and HP JQT (queueing: the sum of all waits) over completed HP tasks; spot JCT and JQT the
  same over spot tasks (an evicted task's JQT sums every wait, its JCT runs from first submission to the end).
- Eviction rate, two ways: ``evict_rate_runs`` = evictions / spot runs (a run is a start; every eviction
  ends one run), and ``evict_rate_hours`` = spot GPU-hours lost to evictions / spot GPU-hours run (the share
  of the guaranteed spot hours that did not count).
- GPU allocation rate over time: job-GPUs running / GPUs of the cluster, time-weighted per hour; ``alloc_mean``
  averages the hours from the first to the last measured submission (the drain after it is left out).
- Pools: GPU model within a partition (jobs without a model: the partition's "*").
- Measured window: tasks with ``warmup`` False (the generator marks its HP-only warm-up) or, if given,
  submitted in ``window``.
- Quota fidelity: share of hours whose observed HP demand (summed hourly maxima) stayed at or below the
  forecast quantile made for that hour (the SQA's own record).
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from evaluation.metrics import job_table
from sim.engine import SimResult
from sim.workload import is_spot


def gfs_jobs(result: SimResult, window: tuple[float, float] | None = None) -> pd.DataFrame:
    """The job table with class (hp / spot), pool and a ``measured`` flag."""
    jobs = job_table(result)
    w = result.workload
    frame = w.frame
    spot = np.array([is_spot(c) for c in w.job_class], dtype=bool)
    jobs["klass"] = np.where(spot, "spot", "hp")
    types = [t if t is not None else "*" for t in w.gpu_type]
    jobs["pool"] = [f"{p}:{t}" for p, t in zip(jobs["partition"], types)]
    if window is not None:
        measured = (jobs["submit"] >= window[0]) & (jobs["submit"] < window[1])
    elif "warmup" in frame:
        measured = ~frame["warmup"].fillna(False).astype(bool).to_numpy()
    else:
        measured = np.ones(len(jobs), dtype=bool)
    jobs["measured"] = measured
    jobs["run_gpu_h"] = jobs["train"] * jobs["gpu_demand"] / 3600.0
    jobs["lost_gpu_h"] = jobs["lost"] * jobs["gpu_demand"] / 3600.0
    return jobs


def _class_stats(rows: pd.DataFrame, prefix: str) -> dict[str, float]:
    done = rows[rows["status"] == "done"]
    if done.empty:
        return {f"{prefix}_jobs": 0}
    return {f"{prefix}_jobs": int(len(done)), f"{prefix}_jct_mean": float(done["jct"].mean()),
            f"{prefix}_jct_p99": float(np.percentile(done["jct"], 99)), f"{prefix}_jqt_mean": float(done["wait"].mean()),
            f"{prefix}_jqt_p99": float(np.percentile(done["wait"], 99))}


def pool_summary(jobs: pd.DataFrame) -> dict[str, Any]:
    """The GFS table row of one set of jobs (one pool or all)."""
    m = jobs[jobs["measured"]]
    hp, spot = m[m["klass"] == "hp"], m[m["klass"] == "spot"]
    out: dict[str, Any] = {**_class_stats(hp, "hp"), **_class_stats(spot, "spot")}
    runs = int(spot["evictions"].sum() + len(spot))
    out["evictions"] = int(spot["evictions"].sum())
    out["spot_runs"] = runs  # spot starts (each eviction ends one run): 0 means no spot task ran
    out["hp_evictions"] = int(hp["evictions"].sum())
    out["evict_rate_runs"] = float(spot["evictions"].sum() / runs) if runs else 0.0
    run_h = float(spot["run_gpu_h"].sum())
    out["evict_rate_hours"] = float(spot["lost_gpu_h"].sum() / run_h) if run_h else 0.0
    return out


def allocation_series(result: SimResult, bin_s: float = 3600.0, capacity: float | None = None) -> pd.DataFrame:
    """Time-weighted GPU allocation rate per bin (job-GPUs running / GPUs)."""
    times = np.asarray(result.alloc_times, dtype=float)
    used = np.asarray(result.alloc_used, dtype=float)
    cap = capacity or float(sum(p.gpus for p in result.workload.cluster.partitions))
    if len(times) == 0:
        return pd.DataFrame({"time": [], "allocation": []})
    end = float(np.nanmax(np.where(np.isfinite(result.end), result.end, 0.0)))
    edges = np.append(times, max(end, times[-1]))
    dur = np.diff(edges)
    bins = np.arange(0.0, edges[-1] + bin_s, bin_s)
    acc = np.zeros(len(bins) - 1)
    # Split each constant segment over the bins it covers.
    for t0, d, u in zip(times, dur, used):
        t1 = t0 + d
        b = int(t0 // bin_s)
        while t0 < t1 and b < len(acc):
            stop = min(t1, (b + 1) * bin_s)
            acc[b] += u * (stop - t0)
            t0 = stop
            b += 1
    return pd.DataFrame({"time": bins[:-1], "allocation": acc / (bin_s * cap)})


def quota_fidelity(result: SimResult) -> dict[str, Any]:
    """Forecast quantile coverage and the number of scored hours, from the SQA's record."""
    cov = result.policy_stats.get("sqa_coverage") or []
    if not cov:
        return {"hours": 0, "coverage": float("nan")}
    ok = sum(1 for _, _, q, o in cov if o <= q + 1e-9)
    return {"hours": len(cov), "coverage": ok / len(cov)}


def quota_frame(result: SimResult) -> pd.DataFrame:
    """The quota over time: pool, time, quota, inventory f, eta."""
    rows = result.policy_stats.get("sqa_quota_log") or []
    return pd.DataFrame(rows, columns=["pool", "time", "quota", "f", "eta"])


def gfs_summary(result: SimResult, window: tuple[float, float] | None = None) -> dict[str, Any]:
    """All metrics of one replay: overall, per pool, allocation, quota fidelity and SQA timings."""
    jobs = gfs_jobs(result, window)
    out = {"policy": result.policy, **pool_summary(jobs)}
    alloc = allocation_series(result)
    if jobs["measured"].any():  # from the first to the last measured submission (not the drain)
        sub = jobs.loc[jobs["measured"], "submit"]
        alloc = alloc[(alloc["time"] >= float(sub.min()) - 3600.0) & (alloc["time"] < float(sub.max()))]
    out["alloc_mean"] = float(alloc["allocation"].mean()) if len(alloc) else 0.0
    pools = sorted(jobs["pool"].unique())
    if len(pools) > 1:
        out["pools"] = {p: pool_summary(jobs[jobs["pool"] == p]) for p in pools}
    out.update({f"quota_{k}": v for k, v in quota_fidelity(result).items()})
    stats = result.policy_stats
    out["sqa_seconds"] = float(stats.get("sqa_forecast_seconds", 0.0)) + float(stats.get("sqa_fit_seconds", 0.0))
    out["wall_seconds"] = float(result.wall_seconds)
    return out


def plot_quota(results: dict[str, SimResult], path: str, capacity: float | None = None) -> None:
    """Quota (and inventory f) over time per policy, with the HP allocation for reference, as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 4))
    ax = fig.add_subplot(1, 1, 1)
    for name, r in results.items():
        q = quota_frame(r)
        if q.empty:
            continue
        for pool, g in q.groupby("pool"):
            ax.step(g["time"] / 3600.0, np.minimum(g["quota"], 1e9), where="post", label=f"{name} quota ({pool})")
            ax.step(g["time"] / 3600.0, g["f"], where="post", linestyle=":", label=f"{name} f(p, H) ({pool})")
    cap = capacity or (sum(p.gpus for p in next(iter(results.values())).workload.cluster.partitions)
                       if results else None)
    if cap:
        ax.axhline(cap, color="grey", linewidth=0.8)
    ax.set_xlabel("time (h)")
    ax.set_ylabel("GPUs")
    ax.set_title("GFS spot quota over time")
    ax.legend(fontsize=7, loc="upper right")
    fig.savefig(path, dpi=110, bbox_inches="tight")


def hp_held_share(frame: pd.DataFrame, capacity: float, step_s: float = 600.0) -> float:
    """Mean share of ``capacity`` held by HP tasks over the measured window (the first to the last submission
    not marked ``warmup``), read from the job table as if every HP task ran from its submission (HP tasks
    preempt spot ones and hardly wait): the figure to set against GFS Table 1's allocation rate."""
    spot = frame["job_class"].astype("string").str.lower().isin(["spot", "lp", "be"]).to_numpy()
    warm = frame["warmup"].fillna(False).astype(bool).to_numpy() if "warmup" in frame else np.zeros(len(frame), bool)
    sub = frame["submit_time"].to_numpy(dtype=float)
    if (~warm).sum() == 0 or capacity <= 0:
        return float("nan")
    grid = np.arange(sub[~warm].min(), sub[~warm].max(), step_s)
    hp = ~spot
    s, e = sub[hp], sub[hp] + frame["duration"].to_numpy(dtype=float)[hp]
    g = frame["num_gpus"].to_numpy(dtype=float)[hp]
    order = np.argsort(s)
    s, e, g = s[order], e[order], g[order]
    held = []
    for t in grid:
        k = int(np.searchsorted(s, t, "right"))  # tasks submitted by t
        held.append(float(g[:k][e[:k] > t].sum()))
    return float(np.mean(held)) / capacity if held else float("nan")
