"""GFS Score2, same-class co-location (Eq. 14; our reading): the share of the node's allocated GPUs held by
tasks of the pod's own class (HP with HP, spot with spot), so that HP tasks do not land among spot tasks
they may later have to evict and spot tasks gather where HP tasks are not. An empty node scores 1.

The node snapshot gives job counts per class (``NodeState.classes``); a :class:`GpuClassState` (what the
GFS placement builds) gives GPUs per class, which this score prefers when present."""
from __future__ import annotations

from dataclasses import dataclass, field

from sim.placement.state import NodeState


@dataclass(frozen=True)
class GpuClassState(NodeState):
    """A node snapshot with GPUs (not jobs) per class and the node's recent evictions (1 h, 24 h)."""

    class_gpus: dict = field(default_factory=dict)
    evictions_1h: int = 0
    evictions_24h: int = 0


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None) -> float:
    weights = getattr(node, "class_gpus", None) or node.classes
    total = sum(weights.values())
    if total <= 0:
        return 1.0
    return weights.get(job_class, 0) / total
