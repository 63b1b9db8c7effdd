"""Lucid's Non-intrusive Job Profiler (§3.2) as pure rules.

Jobs with at most N_prof GPUs (and no more than a profiler node holds) go to the profiling partition
first, unless already profiled. There they run exclusively and consolidated, least GPUs first
(space-aware, Alg. 1; FIFO without it), for up to T_prof seconds of training: jobs that end within
T_prof are done there (the debugging-job filter); the others are paused and carried to their VC with
their profile. Time-aware scaling lends the profiler idle VC nodes on a burst (see :mod:`.scaling`).
"""
from __future__ import annotations

from typing import Iterable


def goes_to_profiler(*, gpus: int, n_prof: int, node_gpus: int, was_profiled: bool, profiler_on: bool,
                     has_profiler: bool) -> bool:
    """Whether an arriving job is profiled first."""
    return profiler_on and has_profiler and not was_profiled and gpus <= min(n_prof, node_gpus)


def queue_key(gpus: int, job: int, space_aware: bool) -> tuple[int, int]:
    """Order in the profiler's queue: least GPUs first (space-aware), else arrival order."""
    return (gpus, job) if space_aware else (0, job)


def profile_ends(now: float, t_prof: float, load_time: float) -> float:
    """When profiling stops: T_prof of training after the job's load."""
    return now + t_prof + load_time


def lenders(partitions: Iterable[tuple[int, int, list[int]]], want: int) -> list[tuple[int, int]]:
    """Which idle VC nodes to lend the profiler on a burst: ``partitions`` gives (partition, jobs
    waiting, idle nodes). Only partitions with nothing waiting lend; each keeps one idle node; those
    with the most idle nodes lend first. Returns up to ``want`` (partition, node) pairs."""
    if want <= 0:
        return []
    options = sorted((-len(idle), p, idle) for p, waiting, idle in partitions if not waiting and len(idle) > 1)
    out: list[tuple[int, int]] = []
    for _, p, idle in options:
        for node in idle[1:]:
            if len(out) == want:
                return out
            out.append((p, node))
    return out


def recall(loans: list[list], lender: int | None) -> list[list]:
    """Loans (``[lender, node, returning]``) to start returning: all, or those of one lender."""
    return [loan for loan in loans if not loan[2] and (lender is None or loan[0] == lender)]
