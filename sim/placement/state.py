"""What a score function sees of one node: a small immutable snapshot (pure inputs, table-testable)."""
from __future__ import annotations

from dataclasses import dataclass, field

from sim.placement.pool import MILLI


@dataclass(frozen=True)
class NodeState:
    """One node before a pod is placed: whole GPUs free, free milli-GPUs of each shared GPU, its GPU
    model and how many jobs of each class already hold GPUs there."""

    capacity: int
    free: int
    shared_free: tuple[int, ...] = ()
    gpu_type: str | None = None
    classes: dict = field(default_factory=dict)

    def free_after(self, gpus: int, milli: int = 0) -> int:
        """Whole free GPUs left after one pod (a fractional pod opens a GPU only if no shared one fits)."""
        if milli:
            return self.free if any(left >= milli for left in self.shared_free) else self.free - 1
        return self.free - gpus

    def fits(self, gpus: int, milli: int = 0) -> bool:
        if milli:
            return self.free >= 1 or any(left >= milli for left in self.shared_free)
        return self.free >= gpus


__all__ = ["MILLI", "NodeState"]
