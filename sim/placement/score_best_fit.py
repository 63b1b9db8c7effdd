"""Score: best fit (bin packing). The fuller the node after the pod, the better: 1 - free after / capacity."""
from __future__ import annotations

from sim.placement.state import NodeState


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None) -> float:
    if node.capacity <= 0:
        return 0.0
    return 1.0 - node.free_after(gpus, milli) / node.capacity
