"""The result of one replay: per-job accumulators and run statistics (evaluation.metrics reads it)."""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

from sim.workload import Workload


@dataclass
class SimResult:
    """Per-job accumulators and run statistics; evaluation.metrics turns these into tables."""

    workload: Workload
    policy: str
    first_start: list[float]
    end: list[float]
    wait: list[float]
    load: list[float]
    train: list[float]
    save: list[float]
    futile: list[float]
    preemptions: list[int]
    work_done: list[float]
    alloc_times: array
    alloc_used: array  # job-GPUs running (a GPU shared by two packed jobs counts twice)
    events: int
    wall_seconds: float
    decision_seconds: list[float] = field(default_factory=list)
    evictions: list[int] = field(default_factory=list)
    lost: list[float] = field(default_factory=list)
    event_log: list[tuple] | None = None
    policy_stats: dict[str, Any] = field(default_factory=dict)
    alloc_held: array = field(default_factory=lambda: array("d"))  # physical GPUs held, per alloc_times row
    failures: list[int] = field(default_factory=list)  # failed attempts per job
    lost_work: list[float] = field(default_factory=list)  # work (s at speed 1) lost to failures and checkpointed evictions, redone
    failed: list[bool] = field(default_factory=list)  # ended in the terminal FAILED state
    seed: int = 0
    loop: str = "general"  # which loop replayed: "kernel" (sim.kernel) or "general"
