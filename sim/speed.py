"""The performance-model interface (placement-dependent speed) and its simplest models: a leaf module,
so that models such as A-SRPT's (sim.asrpt.performance) and Lucid's pair interference subclass it
without importing the ``--performance`` registry (sim.performance), which builds them."""
from __future__ import annotations

from typing import Any, Sequence


class PerformanceModel:
    """Base class: every job at speed 1. ``bind`` gives the model the replay's workload and the
    placements of its partitions when the replay starts (never the engine)."""

    name = "solo"
    workload: Any = None  # the replay's sim.workload.Workload once bound

    def bind(self, workload: Any, placements: Sequence[Any] = ()) -> None:
        """Called when the replay starts (and again if the model is reused) with its Workload and the
        sim.placement.Placement of each partition."""
        self.workload = workload

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
