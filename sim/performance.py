"""Placement-dependent speed: the performance-model hook of the engine.

A model answers ``speed(job, placement, colocated)``: the rate (work seconds per wall second, > 0) at
which ``job`` trains on ``placement`` while the jobs in ``colocated`` share at least one of its GPUs
(fractional pods on the same GPU). The engine asks when a job starts and again whenever the set of
jobs sharing its GPUs changes; without a model every job runs at speed 1. Jobs packed explicitly by a
policy (``ctx.pack``) run at the speeds the policy gave. Implementations: :class:`ConstantSpeed` (tests),
:class:`sim.interference.PairInterference` (Lucid's measured pair speeds), A-SRPT's per-iteration model
(later).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

if TYPE_CHECKING:
    from sim.engine import Engine


class PerformanceModel:
    """Base class: every job at speed 1. ``bind`` gives the model the engine (workload, pools)."""

    name = "solo"
    engine: "Engine | None" = None

    def bind(self, engine: "Engine") -> None:
        self.engine = engine

    def speed(self, job: int, placement: list[tuple], colocated: Sequence[int]) -> float:
        return 1.0


class ConstantSpeed(PerformanceModel):
    """``solo`` speed alone, ``shared`` speed while sharing GPUs with others, and ``per_extra_node``
    lost per node beyond the first (a crude communication cost). For tests and what-if studies."""

    name = "constant"

    def __init__(self, solo: float = 1.0, shared: float = 1.0, per_extra_node: float = 0.0):
        if solo <= 0 or shared <= 0:
            raise ValueError("speeds must be positive")
        self.solo, self.shared, self.per_extra_node = float(solo), float(shared), float(per_extra_node)

    def speed(self, job: int, placement: list[tuple], colocated: Sequence[int]) -> float:
        base = self.shared if colocated else self.solo
        nodes = len({entry[0] for entry in placement})
        return max(1e-6, base * (1.0 - self.per_extra_node * max(0, nodes - 1)))
