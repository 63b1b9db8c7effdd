"""The scheduling-framework shape of a placement plug-in (Kubernetes' filter / score / post-filter stages).

A decision for one pod runs in stages, each a small plug-in with its own parameters:

- **bind** (once, when a replay starts): a plug-in that needs the workload reads it here, e.g. FGD's
  request mix (sim/placement/fgd.py). The engine's Context binds the partition's placement; a policy
  that builds its own placement binds it in ``on_start``. Why at replay start: the mix, the classes and
  the shapes are properties of the whole workload, known before the first event, and reading them once
  keeps the hot path free of workload scans.
- **filter**: may this pod go on this node at all (capacity, GPU model, cordons, GFS' spot circuit
  breaker)? A filter answers True / False and never ranks.
- **score**: how good is this node for the pod; a :class:`StagedPlacement` ranks the feasible nodes by the
  tuple of its scores (lexicographically, as GFS' Alg. 1 does), ties to the lowest node number; the
  ``scored`` placement instead takes a weighted mean (FGD's simulator, sim/placement/scored.py).
- **preemption** (post-filter): when no node passes, a victim planner names the running jobs whose
  eviction would make room and the placement they would free (GFS' Alg. 2 and its baselines:
  sim/placement/preemption.py). It only plans: the policy evicts, and the engine allocates.

Nothing here changes the pool: every stage reads it, the engine allocates what ``place`` returns.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Protocol, Sequence, runtime_checkable

from sim.placement import NodeChoicePlacement, Placement
from sim.placement.pool import NodePool, Placement_t


class Pod(NamedTuple):
    """One pod of a request as the filter and score stages see it: whole GPUs (or 0), milli-GPUs of a
    fractional pod (or 0) and the job's class label ("hp" / "spot" for GFS, or the workload's own)."""

    gpus: int
    milli: int
    job_class: Any


@runtime_checkable
class NodeFilter(Protocol):
    """Filter stage: True when ``node`` may take ``pod``."""

    def passes(self, pool: NodePool, node: int, pod: Pod) -> bool: ...


@runtime_checkable
class NodeScore(Protocol):
    """Score stage: higher is better; compared lexicographically with the other scores of a placement."""

    def score(self, pool: NodePool, node: int, pod: Pod) -> float: ...


@runtime_checkable
class VictimPlanner(Protocol):
    """Preemption stage: the placement and the victims that make room for ``request``, or None."""

    def plan(self, pool: NodePool, request: Any, candidates: dict[int, list[int]],
             value: Callable[[int], float], gpus_of: Callable[[int, int], int],
             **context: Any) -> tuple[Placement_t, set[int]] | None: ...


def bind_all(plugins: Sequence[Any], workload: Any) -> None:
    """Bind every plug-in that has a ``bind`` (filters and scores need not)."""
    for plugin in plugins:
        bind = getattr(plugin, "bind", None)
        if bind is not None:
            bind(workload)


class StagedPlacement(NodeChoicePlacement):
    """Filter, then score, pod by pod: the tightest feasible free count first (packing: a pod goes to the
    fullest nodes that can hold it, whole nodes stay free for large pods), then among those nodes the
    ones every filter passes, ranked by the tuple of the scores, the lowest node number on ties; the next
    free count when none passes. Gangs, fractional pods and GPU models come from :class:`Placement`."""

    name = "staged"

    def __init__(self, filters: Sequence[NodeFilter] = (), scores: Sequence[NodeScore] = ()):
        self.filters = tuple(filters)
        self.scores = tuple(scores)
        self._cls: Any = None

    def bind(self, workload: Any) -> None:
        bind_all(self.filters + self.scores, workload)

    def pod_class(self, request: Any) -> Any:
        """The class label the stages see for ``request`` (subclasses map it, e.g. to "hp" / "spot")."""
        return getattr(request, "job_class", None)

    def place(self, pool: NodePool, request: Any) -> Placement_t | None:
        if type(request) is int:
            from sim.workload import Request

            request = Request(1, request)
        self._cls = self.pod_class(request)
        return Placement.place(self, pool, request)

    def rank(self, pool: NodePool, nodes: Sequence[int], pod: Pod) -> int | None:
        """The best node of ``nodes`` that every filter passes (None if none does)."""
        best, best_key = None, None
        for n in nodes:
            if not all(f.passes(pool, n, pod) for f in self.filters):
                continue
            key = tuple(s.score(pool, n, pod) for s in self.scores) + (-n,)
            if best_key is None or key > best_key:
                best, best_key = n, key
        return best

    def pick_node(self, pool: NodePool, gpus: int, gpu_type: str | None) -> int | None:
        buckets = pool.type_buckets.get(gpu_type, pool.buckets) if gpu_type is not None else pool.buckets
        pod = Pod(gpus, 0, self._cls)
        for f in range(gpus, pool.max_capacity + 1):
            bucket = buckets[f]
            if bucket:
                node = self.rank(pool, sorted(bucket), pod)
                if node is not None:
                    return node
        return None


__all__ = ["Pod", "NodeFilter", "NodeScore", "VictimPlanner", "StagedPlacement", "bind_all"]
