"""What a job says about itself: the fields the extractor fills and the canonical text the Advisor embeds."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

FIELDS = ("model", "task", "dataset", "iterations", "iteration_unit", "batch_size", "gpus", "nodes")
#: the batch model beside FIELDS (not in the canonical text, so the Advisor's texts stay as they were)
BATCH_FIELDS = ("batch_scope", "batch_unit", "grad_accum", "global_batch")

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
    # the batch model: batch_size is per device and per step (micro batch); batch_scope says which one
    # the job stated ("per-device" or "global"); batch_unit "samples" or "tokens" (fairseq --max-tokens);
    # grad_accum the steps accumulated per update; global_batch = batch_size x gpus x grad_accum
    batch_scope: str | None = None
    batch_unit: str | None = None
    grad_accum: int | None = None
    global_batch: int | None = None
    sources: dict[str, str] = field(default_factory=dict)
    # per field: {"value", "evidence" (file:line or the command's argument), "kind", "confidence", "rule"}
    # (features.schedmate_text.evidence); `unknown`: field -> why it is answered None (below the threshold)
    evidence: dict[str, dict] = field(default_factory=dict)
    unknown: dict[str, str] = field(default_factory=dict)

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
