"""Score: class affinity. Keep a job with jobs of its own class (e.g. spot away from hp): the share of
the jobs already on the node that have the job's class; an empty node scores 1."""
from __future__ import annotations

from sim.placement.state import NodeState


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None) -> float:
    total = sum(node.classes.values())
    if total == 0:
        return 1.0
    return node.classes.get(job_class, 0) / total
