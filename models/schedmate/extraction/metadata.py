"""What a job says about itself: the fields the extractor fills and the canonical text the Advisor embeds."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

FIELDS = ("model", "task", "dataset", "iterations", "iteration_unit", "batch_size", "gpus", "nodes")



@dataclass
class JobMetadata:
    """What a job says about itself. None = not found. `sources` names the rule behind each value."""

    model: str | None = None
    task: str | None = None
    dataset: str | None = None
    iterations: int | None = None
    iteration_unit: str | None = None
    batch_size: int | None = None
    gpus: int | None = None
    nodes: int | None = None
    entry: str | None = None
    sources: dict[str, str] = field(default_factory=dict)

    def canonical_text(self) -> str:
        """One line in a fixed order and vocabulary: what the Advisor embeds."""
        def v(x):
            return "unknown" if x is None else str(x)
        it = "unknown" if self.iterations is None else f"{self.iterations} {self.iteration_unit or 'iterations'}"
        task = v(self.task).replace("-", " ")
        return (f"model: {v(self.model)}; task: {task}; dataset: {v(self.dataset)}; iterations: {it}; "
                f"batch size: {v(self.batch_size)}; gpus: {v(self.gpus)}; nodes: {v(self.nodes)}")

    def to_dict(self) -> dict:
        return asdict(self)
