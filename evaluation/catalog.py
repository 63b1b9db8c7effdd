"""The metric catalog: every summary metric schedcast reports, with its unit, which way is better and
what it means. One naming rule comes from it for everything written out (summary.csv, breakdown CSVs,
results.csv, leaderboard.csv, MLflow metrics): the in-memory key plus its unit suffix, ``_s`` for
seconds and ``_frac`` for a share in [0, 1]; names that already end in a unit (``_ms``, ``_s``,
``_seconds``, ``_min``, ``per_second``, ``_frac``) and unitless counts / ratios are written as they are.

In memory (``evaluation.metrics.summarize``, experiment specs' ``metrics`` / ``rank_by``) the keys stay
unit-less (``jct_mean``); :func:`file_name` turns them into the written names (``jct_mean_s``). A group
metric ``size/le8/jct_mean`` keeps its prefix: ``size/le8/jct_mean_s``.

The catalog is the one table of metric names: what an experiment spec may list and rank by
(pipelines.experiments.spec), what MLflow logs of a replay (pipelines.tracking: nothing it does not
name), the leaderboard's headers and scales (:data:`DISPLAY`) and the units of every written column.
Each entry says which workloads have it (``workloads``): ``all``, ``spot`` (workloads with spot /
preemptible jobs: GFS's HP / spot metrics, over the measured tasks) or ``timed`` (replays that time the
policy's decisions).
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

Unit = Literal["s", "ms", "min", "frac", "count", "ratio", "per_s"]
Direction = Literal["lower", "higher", "none"]
Workloads = Literal["all", "spot", "timed"]

#: Name endings that already say the unit: such names are written unchanged.
UNIT_ENDINGS = ("_ms", "_s", "_seconds", "_min", "per_second", "_frac")
#: Written suffix per unit (units without one are counts, ratios or already in the name).
SUFFIX = {"s": "_s", "frac": "_frac"}


class Metric(BaseModel):
    """One catalog entry (frozen: the catalog is read-only)."""

    model_config = ConfigDict(frozen=True)
    name: str
    unit: Unit
    direction: Direction
    description: str
    workloads: Workloads = "all"


def _m(name: str, unit: Unit, direction: Direction, description: str, workloads: Workloads = "all") -> Metric:
    return Metric(name=name, unit=unit, direction=direction, description=description, workloads=workloads)


def _hp_spot() -> list[Metric]:
    """GFS's HP / spot metrics (evaluation.gfs_metrics.pool_summary) over the measured tasks. Their units keep
    the written names they always had (the rates are ratios, not ``_frac`` shares)."""
    out = []
    for cls, who in (("hp", "high-priority"), ("spot", "spot")):
        out += [_m(f"{cls}_jobs", "count", "none", f"{who} tasks completed (measured)", "spot"),
                _m(f"{cls}_jct_mean", "s", "lower", f"{who} tasks' JCT, mean", "spot"),
                _m(f"{cls}_jct_p99", "s", "lower", f"{who} tasks' JCT, 99th percentile", "spot"),
                _m(f"{cls}_jqt_mean", "s", "lower", f"{who} tasks' queueing (sum of all waits), mean", "spot"),
                _m(f"{cls}_jqt_p99", "s", "lower", f"{who} tasks' queueing, 99th percentile", "spot")]
    return out + [
        _m("evictions", "count", "lower", "evictions of spot tasks", "spot"),
        _m("hp_evictions", "count", "lower", "evictions of high-priority tasks (should be 0)", "spot"),
        _m("evict_rate_runs", "ratio", "lower", "evictions / spot runs (GFS's eviction rate)", "spot"),
        _m("spot_runs", "count", "none", "spot task starts (each eviction ends one run; 0: no spot task ran)", "spot"),
        _m("evict_rate_hours", "ratio", "lower", "spot GPU-hours lost to evictions / spot GPU-hours run", "spot"),
    ]


_ENTRIES = [
    _m("jobs", "count", "higher", "measured jobs (submitted inside the window)"),
    *(_m(f"jct_{s}", "s", "lower", f"job completion time (submit to end), {d}, completed jobs")
      for s, d in (("mean", "mean"), ("p50", "median"), ("p95", "95th percentile"), ("p99", "99th percentile"),
                   ("p99.9", "99.9th percentile"))),
    *(_m(f"wait_{s}", "s", "lower", f"queueing delay (time spent queued), {d}, completed jobs")
      for s, d in (("mean", "mean"), ("p50", "median"), ("p95", "95th percentile"), ("p99", "99th percentile"),
                   ("p99.9", "99.9th percentile"))),
    _m("futile_p50", "s", "lower", "futile preemption (load wasted by a preemption before training), median"),
    _m("futile_p95", "s", "lower", "futile preemption, 95th percentile"),
    _m("futile_total", "s", "lower", "futile preemption, sum over jobs"),
    _m("preemptions", "count", "lower", "preemptions, sum over jobs"),
    _m("load_total", "s", "lower", "time spent loading (checkpoint restore / start-up), sum over jobs"),
    _m("makespan", "s", "lower", "first submission to last end of the measured jobs"),
    _m("total_flow_time", "s", "lower", "sum of JCTs of completed jobs"),
    _m("mean_slowdown", "ratio", "lower", "mean of JCT / max(duration, 1 s)"),
    _m("failed_jobs", "count", "lower", "jobs that ended FAILED"),
    _m("failures", "count", "lower", "failure events that hit a job"),
    _m("lost_work_total", "s", "lower", "work (s at speed 1) thrown away by failures and redone, sum over jobs"),
    _m("gpu_utilisation", "frac", "higher", "time-weighted share of physical GPUs held, first submission to last "
       "end (the tail in which the last jobs run alone included; load_reached is the same share over the "
       "submission window)"),
    _m("gpu_sharing_factor", "ratio", "higher", "job-GPUs served per physical GPU held (packing), time-weighted"),
    _m("offered_load", "ratio", "none", "GPU-seconds submitted / (submission window x the cluster's GPUs): the "
       "share of the cluster the jobs need just to keep up (above 1 the queue must grow)"),
    _m("load_reached", "frac", "none", "share of the cluster's GPUs held by jobs during the submission window: "
       "the load the replay reached (below the offered load when jobs wait or run after the window)"),
    _m("top5_gpu_share", "frac", "none", "share of the measured jobs' GPU-seconds held by the 5 largest jobs"),
    _m("events", "count", "none", "simulator events processed"),
    _m("sim_seconds", "s", "lower", "wall time of the replay"),
    _m("events_per_second", "per_s", "higher", "simulator events per wall second"),
    _m("decision_p50_ms", "ms", "lower", "policy decision time, median", "timed"),
    _m("decision_p99_ms", "ms", "lower", "policy decision time, 99th percentile", "timed"),
    _m("jct_p50_min", "min", "lower", "median JCT in minutes (Lucid's tables)"),
    *_hp_spot(),
]
CATALOG: dict[str, Metric] = {m.name: m for m in _ENTRIES}

#: The two loads, defined once: every place that prints one prints both, with :data:`LOAD_MEANING`.
LOADS: dict[str, dict[str, str]] = {
    "offered": {"name": "offered_load", "label": "offered load",
                "meaning": "GPU-seconds the jobs submit / (submission window x the cluster's GPUs): the share of "
                           "the cluster they need just to keep up; above 1 the queue must grow, around 0.1 nothing "
                           "waits and policies tie. `--offered-load X` resizes the cluster so that it is X."},
    "reached": {"name": "load_reached", "label": "reached load",
                "meaning": "share of the cluster's GPUs held by jobs during the same submission window: what the "
                           "replay reached. It stays below the offered load when jobs wait (a queue building up, "
                           "fragmentation, a strict queue's blocked head) or run on after the window."},
}
#: The one-line meaning printed beside the two numbers (console, meta.json, leaderboard; the ledger should too).
LOAD_MEANING = ("offered = GPU-seconds submitted / (submission window x GPUs), the load needed to keep up; "
                "reached = share of GPUs held during that window")


#: How tables show a metric: name -> (header, scale, format) (the leaderboard's columns; times in hours).
DISPLAY: dict[str, tuple[str, float, str]] = {
    "jct_mean": ("avg JCT (h)", 1 / 3600, "{:.3f}"), "jct_p50": ("P50 JCT (h)", 1 / 3600, "{:.3f}"),
    "jct_p95": ("P95 JCT (h)", 1 / 3600, "{:.3f}"), "jct_p99": ("P99 JCT (h)", 1 / 3600, "{:.3f}"),
    "wait_mean": ("avg queueing (h)", 1 / 3600, "{:.4f}"), "wait_p99": ("P99 queueing (h)", 1 / 3600, "{:.3f}"),
    "wait_p99.9": ("P99.9 queueing (h)", 1 / 3600, "{:.3f}"),
    "gpu_utilisation": ("GPU utilisation (%)", 100.0, "{:.1f}"), "mean_slowdown": ("slowdown", 1.0, "{:.2f}"),
    "makespan": ("makespan (h)", 1 / 3600, "{:.2f}"), "preemptions": ("preemptions", 1.0, "{:.0f}"),
    "total_flow_time": ("total JCT (h)", 1 / 3600, "{:,.1f}"), "failures": ("failures", 1.0, "{:.1f}"),
    "failed_jobs": ("failed jobs", 1.0, "{:.1f}"), "lost_work_total": ("lost work (GPU-h)", 1 / 3600, "{:.2f}"),
    "futile_total": ("futile (h)", 1 / 3600, "{:.2f}"), "futile_p50": ("futile P50 (min)", 1 / 60, "{:.2f}"),
    "futile_p95": ("futile P95 (min)", 1 / 60, "{:.2f}"), "jct_p50_min": ("P50 JCT (min)", 1 / 60, "{:.1f}"),
    "wait_p50": ("P50 queueing (h)", 1 / 3600, "{:.3f}"), "wait_p95": ("P95 queueing (h)", 1 / 3600, "{:.3f}"),
    "gpu_sharing_factor": ("sharing factor", 1.0, "{:.3f}"), "jobs": ("jobs", 1.0, "{:.0f}"),
    "load_reached": ("reached load", 1.0, "{:.2f}"), "offered_load": ("offered load", 1.0, "{:.2f}"),
    "hp_jct_mean": ("HP JCT (h)", 1 / 3600, "{:.3f}"), "hp_jqt_mean": ("HP JQT (s)", 1.0, "{:.1f}"),
    "spot_jct_mean": ("spot JCT (h)", 1 / 3600, "{:.3f}"), "spot_jqt_mean": ("spot JQT (h)", 1 / 3600, "{:.3f}"),
    "evictions": ("evictions", 1.0, "{:.0f}"), "evict_rate_runs": ("evict/run (%)", 100.0, "{:.2f}"),
    "evict_rate_hours": ("lost GPU-h (%)", 100.0, "{:.2f}"),
}

#: Families named by prefix (GFS's HP / spot metrics): (prefix, unit, direction, description).
_PREFIXES: tuple[tuple[str, Unit, Direction, str], ...] = (
    ("hp_jct_", "s", "lower", "high-priority tasks' JCT"), ("hp_jqt_", "s", "lower", "high-priority tasks' queueing"),
    ("spot_jct_", "s", "lower", "spot tasks' JCT"), ("spot_jqt_", "s", "lower", "spot tasks' queueing"),
    ("jct_", "s", "lower", "job completion time"), ("wait_", "s", "lower", "queueing delay"),
    ("futile_", "s", "lower", "futile preemption"),
)


def lookup(key: str) -> Metric | None:
    """The catalog entry of a metric key (a group metric by its last part), or None if unknown."""
    base = key.rsplit("/", 1)[-1]
    if base in CATALOG:
        return CATALOG[base]
    for prefix, unit, direction, description in _PREFIXES:
        if base.startswith(prefix):
            return Metric(name=base, unit=unit, direction=direction, description=description)
    return None


def known(key: str) -> bool:
    """Whether ``key`` (in-memory, unit-less; a group metric by its last part) names a catalog metric or
    one of its families: what MLflow may log of a replay."""
    return lookup(key) is not None


def names(workloads: str | None = None) -> list[str]:
    """The catalog's metric names, sorted; ``workloads`` keeps those of one kind (``all``, ``spot``, ``timed``)."""
    return sorted(m.name for m in CATALOG.values() if workloads is None or m.workloads == workloads)


def file_name(key: str) -> str:
    """The written name of an in-memory metric key: ``jct_mean`` -> ``jct_mean_s``,
    ``gpu_utilisation`` -> ``gpu_utilisation_frac``, ``size/le8/wait_p99`` -> ``size/le8/wait_p99_s``;
    counts, ratios and names that already carry a unit are unchanged."""
    head, _, base = key.rpartition("/")
    if base.endswith(UNIT_ENDINGS):
        return key
    entry = lookup(base)
    suffix = SUFFIX.get(entry.unit, "") if entry is not None else ""
    return f"{head}/{base}{suffix}" if head else f"{base}{suffix}"


def higher_is_better(key: str) -> bool:
    """Whether a larger value of ``key`` ranks first (utilisation, sharing); unknown keys: lower is better."""
    entry = lookup(key)
    return entry is not None and entry.direction == "higher"


def group_label(value: object) -> str:
    """A group name fit for a metric key: the size groups ``<=8 GPUs`` -> ``le8`` and ``>8 GPUs`` -> ``gt8``
    (a comparison is not a character MLflow allows); other names as they are."""
    text = str(value).strip()
    for op, word in (("<=", "le"), (">=", "ge"), ("<", "lt"), (">", "gt")):
        if text.startswith(op):
            return word + re.sub(r"\s*GPUs?$", "", text[len(op):].strip())
    return text


__all__ = ["CATALOG", "DISPLAY", "LOADS", "LOAD_MEANING", "Metric", "file_name", "group_label", "higher_is_better", "known", "lookup", "names"]
