"""The result of one replay: per-job accumulators and run statistics (evaluation.metrics reads it)."""
from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sim.workload import Workload

#: Per-job accumulators and the numpy dtype :meth:`SimResult.array` gives each.
JOB_FIELDS = {"first_start": np.float64, "end": np.float64, "wait": np.float64, "load": np.float64,
              "train": np.float64, "save": np.float64, "futile": np.float64, "preemptions": np.int64,
              "work_done": np.float64, "evictions": np.int64, "lost": np.float64, "failures": np.int64,
              "lost_work": np.float64, "failed": np.bool_}


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
    loop: str = "general"  # which loop replayed: "kernel" (sim.kernel), "tiresias-kernel" or "general"
    #: Per-job accumulators the loop already holds as numpy arrays (the kernel computes them so), equal
    #: element for element to the lists above; read them with :meth:`array`.
    arrays: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        # A field given as an array is kept as one and becomes its list when first read (__getattr__):
        # a replay scored from arrays never builds the lists (1.75 M jobs: 0.1 s and 40 MB per field).
        self.arrays = dict(self.arrays)
        for name in JOB_FIELDS:
            values = self.__dict__.get(name)
            if isinstance(values, np.ndarray):
                self.arrays[name] = values
                del self.__dict__[name]

    def __getattr__(self, name: str) -> Any:
        """A per-job field kept as an array, as the list the general loop gives (then kept)."""
        arrays = self.__dict__.get("arrays")
        if arrays is None or name not in JOB_FIELDS or name not in arrays:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        values = arrays[name].tolist()
        self.__dict__[name] = values
        return values

    def array(self, name: str) -> np.ndarray:
        """A per-job accumulator (a name of :data:`JOB_FIELDS`) as a new numpy array of its dtype.

        Why: the lists are the result's public form, but tables want arrays; converting a 1.75 M-element
        list costs about 0.1 s per field, and the kernel hands over the arrays it computed the lists from.
        A field left empty by the loop (``evictions`` and the failure fields of a replay without them) is
        zeros. Times are float64 whatever numbers the lists hold (a hand-made workload of whole seconds
        gives int start times), so both loops give the same table. The array is the caller's own."""
        dtype = JOB_FIELDS[name]
        kept = self.arrays.get(name)
        if kept is not None:
            return np.array(kept, dtype=dtype)
        values = getattr(self, name)
        n = len(self.workload)
        if not len(values) and n:
            return np.zeros(n, dtype=dtype)
        if isinstance(values, list):  # half the time of np.array on a list of Python numbers
            return np.fromiter(values, dtype=dtype, count=len(values))
        return np.array(values, dtype=dtype)
