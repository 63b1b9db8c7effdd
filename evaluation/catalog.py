"""The metric catalog: every summary metric schedcast reports, with its unit, which way is better and
what it means. One naming rule comes from it for everything written out (summary.csv, breakdown CSVs,
results.csv, leaderboard.csv, MLflow metrics): the in-memory key plus its unit suffix, ``_s`` for
seconds and ``_frac`` for a share in [0, 1]; names that already end in a unit (``_ms``, ``_s``,
``_seconds``, ``_min``, ``per_second``, ``_frac``) and unitless counts / ratios are written as they are.

In memory (``evaluation.metrics.summarize``, experiment specs' ``metrics`` / ``rank_by``) the keys stay
unit-less (``jct_mean``); :func:`file_name` turns them into the written names (``jct_mean_s``). A group
metric ``size/le8/jct_mean`` keeps its prefix: ``size/le8/jct_mean_s``.
"""
from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict

Unit = Literal["s", "ms", "min", "frac", "count", "ratio", "per_s"]
Direction = Literal["lower", "higher", "none"]

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


def _m(name: str, unit: Unit, direction: Direction, description: str) -> Metric:
    return Metric(name=name, unit=unit, direction=direction, description=description)


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
    _m("gpu_utilisation", "frac", "higher", "time-weighted share of physical GPUs held, first submission to last end"),
    _m("gpu_sharing_factor", "ratio", "higher", "job-GPUs served per physical GPU held (packing), time-weighted"),
    _m("load_reached", "frac", "none", "share of GPUs held over the submission window of the measured jobs: "
       "the load the replay actually reached, beside the offered load it was sized for"),
    _m("top5_gpu_share", "frac", "none", "share of the measured jobs' GPU-seconds held by the 5 largest jobs"),
    _m("events", "count", "none", "simulator events processed"),
    _m("sim_seconds", "s", "lower", "wall time of the replay"),
    _m("events_per_second", "per_s", "higher", "simulator events per wall second"),
    _m("decision_p50_ms", "ms", "lower", "policy decision time, median"),
    _m("decision_p99_ms", "ms", "lower", "policy decision time, 99th percentile"),
    _m("jct_p50_min", "min", "lower", "median JCT in minutes (Lucid's tables)"),
]
CATALOG: dict[str, Metric] = {m.name: m for m in _ENTRIES}

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


__all__ = ["CATALOG", "Metric", "file_name", "group_label", "higher_is_better", "lookup"]
