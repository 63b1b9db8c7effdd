"""Score: fill shared GPUs (less fragmentation, FGD's intent). A fractional pod scores by how full the
best-fitting shared GPU is after it (1: the GPU is full) and 0 when it must open a whole free GPU;
whole-GPU pods are neutral (0.5)."""
from __future__ import annotations

from sim.placement.state import MILLI, NodeState


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None) -> float:
    if not milli:
        return 0.5
    fitting = [left for left in node.shared_free if left >= milli]
    if not fitting:
        return 0.0
    return 1.0 - (min(fitting) - milli) / MILLI
