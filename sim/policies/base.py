"""The policy plug-in protocol: react to events, decide through the Context, never advance time."""
from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from sim.coordinator import Coordinator
    from sim.context import Context


class Policy:
    """Base policy. One instance per partition; the engine calls the hooks, then ``schedule``.

    Class attributes describe the policy for the registry and the CLI:
    - ``preemptive``: the policy may stop a job it started before the job finishes, by a pause with
      save (``ctx.preempt``) or an eviction (``ctx.evict``). Lucid is preemptive (its profiler pauses
      jobs after T_prof and its binder evicts the guest of an unstable pair); so is Horus (evictions).
      Non-preemptive policies never stop a started job (the property tests check it).
    - ``uses_predictions``: reads duration predictions (``--predictor``).
    - ``coordinator_class``: a :class:`sim.coordinator.Coordinator` the engine makes once per replay
      (``ctx.coordinator``), for decisions that span partitions.
    Parameters are the typed arguments of ``__init__`` (no ``**kwargs``): the registry derives a
    pydantic model from the signature, or uses a class-level ``Params`` model; ``param_docs`` (name ->
    one line) describes them for ``schedcast policies -v``.
    """

    name = "base"
    summary = ""
    citation = ""
    preemptive = False
    uses_predictions = False
    coordinator_class: "type[Coordinator] | None" = None
    param_docs: dict[str, str] = {}

    ctx: "Context"

    def bind(self, ctx: "Context") -> None:
        self.ctx = ctx

    def on_start(self) -> None:
        """Called once before the first event (set initial timers here)."""

    def on_arrival(self, job: int) -> None:
        raise NotImplementedError

    def on_requeue(self, job: int) -> None:
        """A preempted job is waiting again (after its save, or at once if it was loading)."""
        self.on_arrival(job)

    def on_transfer(self, job: int) -> None:
        """A waiting job was handed over from another partition."""
        self.on_arrival(job)

    def on_finish(self, job: int) -> None:
        """A job finished and its GPUs are free."""

    def on_loaded(self, job: int) -> None:
        """A job finished loading and started training."""

    def on_timer(self, payload: Any) -> None:
        """A timer this policy set has fired."""

    def on_failure(self, job: int) -> float | None:
        """A job of this partition failed (its GPUs are free); the engine's restart rule will hand it
        back through ``on_requeue`` after the restart delay, or it ended in the terminal FAILED state.
        Timers the policy set for the failed attempt must be ignored when they fire. Returning a number
        sets this restart's delay in seconds (``ctx.failure_cause(job)`` says what failed); None keeps the
        failure's or the restart rule's delay."""
        return None

    def schedule(self) -> None:
        """Make decisions after the events of one instant (start, preempt, pack, set timers)."""
        raise NotImplementedError

    def on_end(self) -> None:
        """Called once after the last event."""

    def stats(self) -> dict[str, Any]:
        return {}

    def waiting_count(self) -> int:
        """Jobs waiting here (a coordinator's view reads it): ``len(self.queue)`` if there is a queue."""
        queue = getattr(self, "queue", None)
        return len(queue) if queue is not None else 0

    def release(self, job: int) -> bool:
        """Give up a waiting job (a coordinator moves it elsewhere): True if it was in ``self.queue``."""
        queue = getattr(self, "queue", None)
        items = getattr(queue, "items", None)
        if items is None:
            return False
        for i, entry in enumerate(items):
            if entry[1] == job:
                del items[i]
                return True
        return False


class SortedQueue:
    """Waiting jobs ordered by a static key (ties by job index = arrival order)."""

    __slots__ = ("items",)

    def __init__(self) -> None:
        self.items: list[tuple[Any, int]] = []

    def add(self, key: Any, job: int) -> None:
        bisect.insort(self.items, (key, job))

    def __len__(self) -> int:
        return len(self.items)

    def __bool__(self) -> bool:
        return bool(self.items)


def start_in_order(ctx: "Context", queue: SortedQueue, *, work_conserving: bool,
                   on_start: "Callable[[int], None] | None" = None) -> None:
    """Start waiting jobs in key order. Strict: stop at the first job that does not fit (head-of-line
    blocking, no backfilling). Work-conserving: skip it and keep starting any later job that fits.
    ``on_start(job)`` is called after each start, in either mode."""
    items = queue.items
    if not items:
        return
    gpus = ctx.jobs.gpus
    pool = ctx.pool
    if not work_conserving:
        started = 0
        for _, job in items:
            if gpus[job] > pool.total_free or not ctx.try_start(job):
                break
            if on_start is not None:
                on_start(job)
            started += 1
        if started:
            del items[:started]
        return
    keep = []
    for i, entry in enumerate(items):
        free = pool.total_free
        if free == 0:
            keep.extend(items[i:])
            break
        job = entry[1]
        if gpus[job] > free or not ctx.try_start(job):
            keep.append(entry)
        elif on_start is not None:
            on_start(job)
    queue.items = keep
