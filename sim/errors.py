"""The replay's errors: a leaf module, so placements and policies raise them without importing the engine."""
from __future__ import annotations


class SimulationError(RuntimeError):
    """A policy asked for something impossible (the message names the job and the time)."""


class ReplayStalled(SimulationError):
    """The engine's watchdog stopped a replay that would not end: simulated time stopped advancing, or
    events came faster per simulated second than the workload can explain (the message names the policy
    and the simulated time). Not a "this policy cannot run here" skip: a sweep records the cell as failed."""


class InvariantViolation(SimulationError):
    """An invariant of the replay does not hold (raised by ``check_invariants``, also under
    ``python -O``): the message names the invariant, the job, the node and the time."""

    def __init__(self, invariant: str, *, time: float | None = None, job: int | None = None,
                 node: int | None = None, partition: int | None = None, detail: str = ""):
        self.invariant, self.time, self.job, self.node, self.partition = invariant, time, job, node, partition
        self.detail = detail
        super().__init__(self._message())

    def _message(self) -> str:
        where = [f"t={self.time:g}" if self.time is not None else None,
                 f"job {self.job}" if self.job is not None else None,
                 f"partition {self.partition}" if self.partition is not None else None,
                 f"node {self.node}" if self.node is not None else None]
        text = f"invariant violated: {self.invariant}"
        loc = ", ".join(w for w in where if w)
        if loc:
            text += f" ({loc})"
        return text + (f": {self.detail}" if self.detail else "")

    def at(self, time: float, partition: int | None = None) -> "InvariantViolation":
        """The same violation with the time (and partition) filled in."""
        if self.time is None:
            self.time = time
        if self.partition is None:
            self.partition = partition
        self.args = (self._message(),)
        return self
