"""The policy plug-in protocol: react to events, decide through the Context, never advance time."""
from __future__ import annotations

import bisect
import heapq
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
    - ``memory_s``: how many simulated seconds of the past the policy's decisions may rest on (a quota
      from the past week's demand: a week). The engine's watchdog lets such a policy hold queued jobs
      that long with nothing but its timers running before it calls the replay stalled.
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
    memory_s: float = 0.0

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
        if isinstance(queue, ShapedQueue):
            return queue.remove(job)
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


def request_shape(ctx: "Context", job: int) -> Any:
    """The shape under which :class:`ShapedQueue` files ``job``: its GPU count for a plain request (one
    pod of whole GPUs that may span nodes, any GPU model: the engine places these by count alone),
    else its whole typed request without the class (gangs, pipelines), or None (a shape of its own)
    for a fractional request."""
    w = ctx.jobs
    if w.simple:
        return w.gpus[job]
    r = ctx.request(job)
    if r.milli:
        return None
    if r.spread and r.pods == 1 and r.gpu_type is None:
        return r.gpus_per_pod
    return ("request", r.pods, r.gpus_per_pod, r.gpu_type, r.stages, r.spread, r.job_class)


def misfits_stay(ctx: "Context") -> bool:
    """Whether a whole-GPU request that does not fit now cannot fit later in the same scheduling pass
    (while starts only take GPUs away), for this partition's placement. True for the built-in
    ``consolidate`` (strict or not: a fit needs a node with g free GPUs, the emptiest ceil(g / node
    size) nodes holding g, or g free GPUs in all; a gang of equal pods fits iff the nodes hold that
    many pods) and the placements that declare ``misfits_stay = True`` on their own class
    (``heavy-edge``), on an untyped pool. A placement with filters or scores of its own may refuse a
    request now and accept it after another start, so it is not assumed."""
    from sim.placement import Consolidate

    placement = type(ctx.placement)
    return ((placement is Consolidate or placement.__dict__.get("misfits_stay", False) is True)
            and not ctx.pool.typed)


class ShapedQueue:
    """Waiting jobs ordered by a static key (ties by job index), kept in one sorted list per request
    shape (:func:`request_shape`) so that a work-conserving pass of :func:`start_in_order` costs
    O(jobs started + shapes looked at) instead of O(queue): it looks at the head of each shape only,
    skips a shape needing more GPUs than are free, and drops a shape for the rest of the pass once its
    head does not fit (:func:`misfits_stay`). The order it starts jobs in is the one a single sorted
    list gives (tests/test_queue_shapes.py replays both).

    ``items`` (the merged order, a new list) is built when read; assigning it refiles the jobs. Add and
    remove jobs with :meth:`add` / :meth:`remove`."""

    __slots__ = ("shapes", "where")

    def __init__(self) -> None:
        self.shapes: dict[Any, list[tuple[Any, int]]] = {}
        self.where: dict[int, tuple[Any, Any]] = {}  # job -> (shape, key)

    def add(self, key: Any, job: int, shape: Any = None) -> None:
        """Queue ``job`` under ``key``; ``shape`` None gives it a shape of its own."""
        if shape is None:
            shape = ("job", job)
        self.where[job] = (shape, key)
        bucket = self.shapes.get(shape)
        if bucket is None:
            self.shapes[shape] = [(key, job)]
        else:
            bisect.insort(bucket, (key, job))

    def remove(self, job: int) -> bool:
        """Take ``job`` out of the queue: True if it was in it."""
        found = self.where.pop(job, None)
        if found is None:
            return False
        shape, key = found
        bucket = self.shapes[shape]
        del bucket[bisect.bisect_left(bucket, (key, job))]
        if not bucket:
            del self.shapes[shape]
        return True

    def _drop_heads(self, counts: dict[Any, int]) -> None:
        """Remove the first ``counts[shape]`` jobs of each shape (the ones a pass started)."""
        shapes, where = self.shapes, self.where
        for shape, k in counts.items():
            bucket = shapes[shape]
            for _, job in bucket[:k]:
                del where[job]
            if k >= len(bucket):
                del shapes[shape]
            else:
                del bucket[:k]

    @property
    def items(self) -> list[tuple[Any, int]]:
        return list(heapq.merge(*self.shapes.values()))

    @items.setter
    def items(self, entries: list[tuple[Any, int]]) -> None:
        where = self.where
        shapes: dict[Any, list[tuple[Any, int]]] = {}
        kept: dict[int, tuple[Any, Any]] = {}
        for key, job in entries:
            shape = where[job][0] if job in where else ("job", job)
            kept[job] = (shape, key)
            shapes.setdefault(shape, []).append((key, job))
        for bucket in shapes.values():
            bucket.sort()
        self.shapes, self.where = shapes, kept

    def __len__(self) -> int:
        return len(self.where)

    def __bool__(self) -> bool:
        return bool(self.where)


def start_in_order(ctx: "Context", queue: "SortedQueue | ShapedQueue", *, work_conserving: bool,
                   on_start: "Callable[[int], None] | None" = None) -> None:
    """Start waiting jobs in key order. Strict: stop at the first job that does not fit (head-of-line
    blocking, no backfilling). Work-conserving: skip it and keep starting any later job that fits.
    ``on_start(job)`` is called after each start, in either mode (it must not change the queue).

    A :class:`ShapedQueue` is walked shape by shape (the same decisions, fewer jobs looked at); a
    :class:`SortedQueue` job by job."""
    if isinstance(queue, ShapedQueue):
        if work_conserving and misfits_stay(ctx):
            _start_by_shape(ctx, queue, on_start)
            return
        if not work_conserving:
            _start_strict_shaped(ctx, queue, on_start)
            return
    _start_in_list(ctx, queue, work_conserving, on_start)


def _start_strict_shaped(ctx: "Context", queue: ShapedQueue, on_start: "Callable[[int], None] | None") -> None:
    """Strict order over a ShapedQueue: the jobs started are a prefix of the merged order, hence of
    each shape."""
    if not queue.shapes:
        return
    gpus, pool, where = ctx.jobs.gpus, ctx.pool, queue.where
    counts: dict[Any, int] = {}
    for _, job in heapq.merge(*queue.shapes.values()):
        if gpus[job] > pool.total_free or not ctx.try_start(job):
            break
        if on_start is not None:
            on_start(job)
        shape = where[job][0]
        counts[shape] = counts.get(shape, 0) + 1
    if counts:
        queue._drop_heads(counts)


def _start_by_shape(ctx: "Context", queue: ShapedQueue, on_start: "Callable[[int], None] | None") -> None:
    """Work-conserving pass over a ShapedQueue whose placement keeps misfits (:func:`misfits_stay`):
    the heads of the shapes that could fit, merged in key order; a shape whose head starts offers its
    next job, a shape whose head does not fit is done for this pass (every job of a shape makes the
    same request, and starts only take GPUs away). Each job skipped this way would have been refused
    by the job-by-job pass too, so the jobs started and their order are the same."""
    pool = ctx.pool
    free = pool.total_free
    if free == 0 or not queue.shapes:
        return
    gpus = ctx.jobs.gpus
    heads = [(bucket[0], shape) for shape, bucket in queue.shapes.items() if gpus[bucket[0][1]] <= free]
    if not heads:
        return
    heapq.heapify(heads)
    shapes = queue.shapes
    counts: dict[Any, int] = {}
    pop, push = heapq.heappop, heapq.heappush
    while heads:
        free = pool.total_free
        if free == 0:
            break
        (_, job), shape = pop(heads)
        if gpus[job] > free or not ctx.try_start(job):
            continue  # this shape is done for the pass
        if on_start is not None:
            on_start(job)
        k = counts.get(shape, 0) + 1
        counts[shape] = k
        bucket = shapes[shape]
        if k < len(bucket):
            push(heads, (bucket[k], shape))
    if counts:
        queue._drop_heads(counts)


def _start_in_list(ctx: "Context", queue: "SortedQueue | ShapedQueue", work_conserving: bool,
                   on_start: "Callable[[int], None] | None") -> None:
    """The job-by-job pass over the queue's merged order (any placement)."""
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
            if isinstance(queue, ShapedQueue):
                queue.items = items
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
