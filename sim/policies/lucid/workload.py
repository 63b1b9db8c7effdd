"""Lucid's workload preparation: the profiling partition and the jobs' workload profiles.

Neither step is random except the profile draw, which takes its generator from the caller (the run's
``ctx.rng``), so that ``--seed`` reaches it.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from sim.profiler_partition import PROFILER, profiler_size, with_profiler  # noqa: F401  (re-exported)

PROFILE_COLUMNS = ("gpu_util", "gmem_util", "gmem", "amp", "label")


@dataclass(frozen=True)
class Profiles:
    """Each job's Lucid workload profile: the measured key (model|batch|amp) and its solo features."""

    keys: list[str]
    gpu_util: np.ndarray
    gmem_util: np.ndarray
    gmem: np.ndarray
    amp: np.ndarray
    label: np.ndarray

    def features(self, names: tuple[str, ...]) -> Any:
        """The packing classifier's input frame (columns ``names``)."""
        import pandas as pd

        return pd.DataFrame({n: np.asarray(getattr(self, n), dtype=float) for n in names})


def draw_profiles(work: np.ndarray, interference: Any, rng: np.random.Generator | int,
                  strength: float = 1.0) -> list[str]:
    """A profile key per job by hierarchical sampling (see sim.interference): ``rng`` is the run's
    generator (an int seed only for tools outside a replay)."""
    return interference.assign(np.asarray(work, dtype=float), seed=rng, strength=strength)


def profiles_from_keys(keys: list[str], interference: Any) -> Profiles:
    solo = interference.solo
    cols = {c: solo.loc[keys, c].to_numpy() for c in PROFILE_COLUMNS}
    return Profiles(list(keys), **cols)


def job_profiles(workload: Any, interference: Any, rng: np.random.Generator | int) -> Profiles:
    """The jobs' profiles: the ones the workload carries (a ``profile_key`` column, e.g. from
    :func:`attach_profiles` or a trace with measured profiles), else drawn with ``rng``."""
    frame = workload.frame
    if "profile_key" in frame:
        return profiles_from_keys(frame["profile_key"].tolist(), interference)
    work = np.asarray(workload.duration) * np.asarray(workload.gpus)
    return profiles_from_keys(draw_profiles(work, interference, rng), interference)


def attach_profiles(workload: Any, interference: Any, seed: int | np.random.Generator = 0, strength: float = 1.0):
    """A copy of the workload whose jobs carry a Lucid workload profile (columns ``profile_*``), for
    tools and tests that want fixed profiles; a replay without them draws its own from the run seed."""
    workload = replace(workload, partition=list(workload.partition))
    work = np.asarray(workload.duration) * np.asarray(workload.gpus)
    keys = draw_profiles(work, interference, seed, strength)
    solo = interference.solo
    frame = workload.frame.copy()
    frame["profile_key"] = keys
    for col in PROFILE_COLUMNS:
        frame[f"profile_{col}"] = solo.loc[keys, col].to_numpy()
    workload.frame = frame
    return workload


def origin(frame: Any) -> Any:
    """Wall-clock time of the replay's time zero (tz-naive local clock), or a fixed Monday when the
    trace has no timestamps, so that calendar features stay defined."""
    import pandas as pd

    ts = frame["submit_ts"] if "submit_ts" in frame else None
    if ts is not None and ts.notna().any():
        first = pd.Timestamp(ts.min())
        return first.tz_localize(None) if first.tzinfo is not None else first
    return pd.Timestamp("2020-01-06")
