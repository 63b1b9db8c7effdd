"""Failures in the job lifecycle: timed failure events (trace-driven or a seeded generator) and the
restart rule.

A :class:`Failure` at time ``time`` hits a job (``job``: index or job id), a node (``node`` of
``partition``) or both. A job hit while loading or running stops at once: its GPUs free now, the
training since its last checkpoint is lost (``checkpoint_interval`` s of training between checkpoints,
per job; none: the whole attempt, i.e. everything since it last started, is lost), and the
:class:`RestartRule` decides: requeue after ``delay`` s (the job waits meanwhile), or, after
``max_attempts`` failures, give up: the job ends in the terminal FAILED state. A job that is saving
when hit keeps its checkpoint (it is written to remote storage) and is requeued as after a normal
save. Queued or finished jobs are not affected. A node failure fails every job holding GPUs on the
node, takes the node down (no placements, its GPUs out of the totals) and brings it back ``repair``
seconds later. A failure may carry a ``cause`` (what the policy sees through ``ctx.failure_cause``) and
its own ``restart_delay``; a policy's ``on_failure(job)`` may also return a delay (seconds) that then
wins: e.g. SchedMate's failure handler restarts a recognised infrastructure failure after diagnosis and
recovery instead of after a human's reaction time.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np


@dataclass(frozen=True)
class Failure:
    """One failure event. ``node`` numbers a node of ``partition`` (index or name); ``repair`` is how
    long a failed node stays down (s)."""

    time: float
    job: int | str | None = None
    node: int | None = None
    partition: int | str = 0
    repair: float = 0.0
    cause: str = ""  # e.g. "infrastructure/nccl": policies read it as ctx.failure_cause(job)
    restart_delay: float | None = None  # overrides the RestartRule's delay for the jobs it fails

    def __post_init__(self) -> None:
        if not math.isfinite(self.time) or self.time < 0:
            raise ValueError(f"failure time must be a finite number >= 0, got {self.time}")
        if self.job is None and self.node is None:
            raise ValueError("a failure names a job, a node or both")
        if self.repair < 0 or not math.isfinite(self.repair):
            raise ValueError(f"repair time must be finite and >= 0, got {self.repair}")
        if self.restart_delay is not None and (self.restart_delay < 0 or not math.isfinite(self.restart_delay)):
            raise ValueError(f"restart delay must be finite and >= 0, got {self.restart_delay}")


@dataclass(frozen=True)
class RestartRule:
    """Requeue a failed job after ``delay`` s; after ``max_attempts`` failures (None: never) it fails
    for good."""

    delay: float = 0.0
    max_attempts: int | None = None

    def __post_init__(self) -> None:
        if self.delay < 0 or not math.isfinite(self.delay):
            raise ValueError(f"restart delay must be finite and >= 0, got {self.delay}")
        if self.max_attempts is not None and self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1 (or None for always restart)")

    def restart(self, failures_so_far: int) -> bool:
        return self.max_attempts is None or failures_so_far < self.max_attempts


def node_failures(nodes: Sequence[tuple[int | str, int]], rate_per_hour: float, repair_s: float,
                  horizon_s: float, seed: int = 0, start_s: float = 0.0) -> list[Failure]:
    """A seeded parametric generator: each (partition, node) fails as a Poisson process of
    ``rate_per_hour`` while up, stays down ``repair_s`` seconds, until ``horizon_s``. Sorted by time."""
    if rate_per_hour < 0 or repair_s < 0 or horizon_s < start_s:
        raise ValueError("rate, repair time and horizon must be >= 0 (horizon after start)")
    out: list[Failure] = []
    if rate_per_hour == 0:
        return out
    rng = np.random.default_rng(seed)
    mean_up = 3600.0 / rate_per_hour
    for partition, node in nodes:
        t = start_s
        while True:
            t += float(rng.exponential(mean_up))
            if t >= horizon_s:
                break
            out.append(Failure(time=t, node=node, partition=partition, repair=repair_s))
            t += repair_s
    out.sort(key=lambda f: (f.time, str(f.partition), f.node))
    return out


def cluster_nodes(cluster) -> list[tuple[int, int]]:
    """Every (partition index, node) of a built cluster, for :func:`node_failures`."""
    return [(p, n) for p, part in enumerate(cluster.partitions) for n in range(len(part.capacities))]
