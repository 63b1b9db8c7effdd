"""GFS Score1, packing (Eq. 13; our reading): the node's effective allocation after the pod, as a share of
its GPUs, so fuller nodes rank first (best fit) and whole nodes stay free for large HP pods. Whole GPUs in use
count 1 each, shared GPUs by their used milli-GPUs; a fractional pod adds its share (to the shared GPU that
fits it, else to a newly opened GPU)."""
from __future__ import annotations

from sim.placement.state import MILLI, NodeState


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None) -> float:
    if node.capacity <= 0:
        return 0.0
    shared_used = sum(MILLI - left for left in node.shared_free) / MILLI
    used = node.capacity - node.free - len(node.shared_free) + shared_used
    used += milli / MILLI if milli else gpus
    return max(0.0, min(1.0, used / node.capacity))
