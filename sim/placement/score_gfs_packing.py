"""GFS Score1, packing (Eq. 13; our reading): the share of the node's GPUs allocated after the pod is
placed, so fuller nodes rank first (best fit) and whole nodes stay free for large HP pods. A fractional pod
that fits on a shared GPU leaves the whole-GPU count unchanged and scores the node's current allocation
plus the share it takes."""
from __future__ import annotations

from sim.placement.state import MILLI, NodeState


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None) -> float:
    if node.capacity <= 0:
        return 0.0
    used_after = node.capacity - node.free_after(gpus, milli)
    if milli and any(left >= milli for left in node.shared_free):
        # Partly used shared GPUs count by their used share: filling one scores higher than opening one.
        best = min(left for left in node.shared_free if left >= milli)
        used_after -= (best - milli) / MILLI
    return max(0.0, min(1.0, used_after / node.capacity))
