"""Score: least allocated (spreading). The emptier the node after the pod, the better: free after / capacity."""
from __future__ import annotations

from sim.placement.state import NodeState


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None) -> float:
    if node.capacity <= 0:
        return 0.0
    return max(0.0, node.free_after(gpus, milli) / node.capacity)
