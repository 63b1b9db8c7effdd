"""Placement plug-ins: which nodes (and GPUs) a job's pods go to.

A placement is a list of ``(node, gpus)`` pairs for whole GPUs, or ``(node, gpu, milli)`` triples for
fractional pods (``gpu`` numbers a shared GPU of the node). Every plug-in answers
``place(pool, request)`` with a placement or None (does not fit now) and never changes the pool: the
engine allocates. ``request`` is a :class:`sim.workload.Request` or, for a job that is one spreadable
pod of whole GPUs of any model, just its GPU count (the hot path).

Rules every plug-in keeps (gang semantics): all pods or none; a pod of a multi-pod job has its GPUs on
one node; all pods on nodes of one GPU model (the job's, if it names one); a fractional pod on one GPU
with that many milli-GPUs free. Built in: ``first-fit``, ``consolidate`` (Lucid's rule, the default),
``best-fit``, ``scored`` (FGD style: filter feasible nodes, then score them with small, pure,
weighted score functions, one per file: ``score_*.py``; e.g. ``scored:best_fit=1,class_affinity=0.5``),
``gfs`` (GFS' Alg. 1, gfs.py), ``fgd`` (FGD, fgd.py) and ``heavy-edge`` (A-SRPT, heavy_edge.py). They
follow the scheduling-framework stages of framework.py: bound to the workload when a replay starts
(:meth:`Placement.bind`), filter, score, and a victim-planning stage for preemptive policies
(preemption.py: GFS' Alg. 2 and its baselines' rules).
"""
from __future__ import annotations

from typing import Annotated, Callable

from features.plugins import Domain, Registry, new_registry, parse_spec
from sim.placement.pool import MILLI, NodePool, Placement_t

__all__ = ["MILLI", "NodePool", "Placement", "Placement_t", "FirstFit", "Consolidate", "PLACEMENTS",
           "make_placement"]


class Placement:
    """Base class: decide the nodes for a request, or None if it cannot start now.

    Subclasses implement :meth:`place_gpus` (one spreadable pod of ``gpus`` whole GPUs, optionally of
    one GPU model) and :meth:`pick_node` (the node for one pod among feasible ones); the base class
    handles multi-pod gangs, fractional pods and GPU models with them. ``place`` may be overridden
    whole (the ``scored`` plug-in does)."""

    name = "base"

    def bind(self, workload) -> None:
        """Called once when a replay starts, before any :meth:`place`, with the replay's workload (see
        sim/placement/framework.py). Plug-ins that depend on the workload (FGD's request mix) read it here;
        the default needs nothing."""

    def place(self, pool: NodePool, request) -> Placement_t | None:
        if type(request) is int:
            if not pool.typed:
                return self.place_gpus(pool, request, None)
            from sim.workload import Request

            request = Request(1, request)
        if request.milli:
            return self._by_model(pool, request, self.place_fractional)
        if request.spread:
            gpus = request.gpus_per_pod
            if request.gpu_type is not None or not pool.typed:
                return self.place_gpus(pool, gpus, request.gpu_type)
            if gpus <= pool.max_capacity:  # one node is one model: the shared buckets answer
                node = self.pick_node(pool, gpus, None)
                if node is not None:
                    return [(node, gpus)]
            return self._by_model(pool, request, lambda pl, r, t: self.place_gpus(pl, r.gpus_per_pod, t))
        return self._by_model(pool, request, self.place_pods)

    def place_gpus(self, pool: NodePool, gpus: int, gpu_type: str | None) -> Placement_t | None:
        raise NotImplementedError  # pragma: no cover - interface

    def pick_node(self, pool: NodePool, gpus: int, gpu_type: str | None) -> int | None:
        """The node for one pod of ``gpus`` GPUs (used for gangs and fractional pods)."""
        return pool.tightest_node_with(gpus, gpu_type)

    @staticmethod
    def _by_model(pool: NodePool, request, place_one: Callable) -> Placement_t | None:
        """All pods on one GPU model: the request's, or the first model (in name order) that fits
        on the fewest nodes."""
        if request.gpu_type is not None or not pool.typed:
            return place_one(pool, request, request.gpu_type)
        best = None
        for t in pool.types:
            out = place_one(pool, request, t)
            if out is not None and (best is None or len({e[0] for e in out}) < len({e[0] for e in best})):
                best = out
        return best

    def place_pods(self, pool: NodePool, request, gpu_type: str | None) -> Placement_t | None:
        """A gang of pods, each of ``gpus_per_pod`` GPUs on one node, chosen pod by pod with
        :meth:`pick_node` on a tentative copy of the free counts of the touched nodes."""
        gpp, pods = request.gpus_per_pod, request.pods
        if gpp * pods > pool.total_free:
            return None
        taken: dict[int, int] = {}
        for _ in range(pods):
            node = self._pick_tentative(pool, gpp, gpu_type, taken)
            if node is None:
                return None
            taken[node] = taken.get(node, 0) + gpp
        return sorted(taken.items())

    def _pick_tentative(self, pool: NodePool, gpus: int, gpu_type: str | None,
                        taken: dict[int, int]) -> int | None:
        if not taken:
            return self.pick_node(pool, gpus, gpu_type)
        # Nodes already used by this gang have less room than the pool says: look at them directly.
        saved = {n: pool.free[n] for n in taken}
        try:
            for n, t in taken.items():
                pool._move(n, saved[n], saved[n] - t)
                pool.free[n] = saved[n] - t
            return self.pick_node(pool, gpus, gpu_type)
        finally:
            for n, t in taken.items():
                pool._move(n, saved[n] - t, saved[n])
                pool.free[n] = saved[n]

    def open_gpu(self, pool: NodePool, gpu_type: str | None, opened: dict[int, int],
                 extra: dict[tuple[int, int], int]) -> tuple[int, int] | None:
        """A free GPU for a fractional pod that fits on no shared GPU: on the node :meth:`pick_node`
        chooses (given the GPUs this request already ``opened``), its lowest GPU number not yet shared
        or planned (``extra``); None if no node has a free GPU."""
        node = self._pick_tentative(pool, 1, gpu_type, opened)
        if node is None:
            return None
        used_ids = set(pool.shares.get(node, {})) | {g for (n, g) in extra if n == node}
        gpu = next(g for g in range(pool.capacity[node]) if g not in used_ids)
        opened[node] = opened.get(node, 0) + 1
        return node, gpu

    def place_fractional(self, pool: NodePool, request, gpu_type: str | None) -> Placement_t | None:
        """Pods of ``milli`` milli-GPUs each, one by one: the shared GPU :meth:`shared_gpu_for` chooses
        (GPUs this request already opened or filled included), else a free GPU on the node
        :meth:`pick_node` chooses; None when a pod fits nowhere."""
        milli = request.milli
        extra: dict[tuple[int, int], int] = {}  # (node, gpu) -> milli planned by this request
        opened: dict[int, int] = {}  # node -> GPUs opened by this request
        out: Placement_t = []
        for _ in range(request.pods):
            best = self.shared_gpu_for(pool, milli, gpu_type, extra, opened)
            if best is None:
                best = self.open_gpu(pool, gpu_type, opened, extra)
                if best is None:
                    return None
            extra[best] = extra.get(best, 0) + milli
            out.append((best[0], best[1], milli))
        return out

    def shared_gpu_for(self, pool: NodePool, milli: int, gpu_type: str | None, extra: dict[tuple[int, int], int],
                       opened: dict[int, int]) -> tuple[int, int] | None:
        """The shared GPU for one fractional pod (the score stage of a fractional pod): the fullest that
        holds it, lowest node then lowest GPU number on ties; None if no shared GPU holds it. ``extra``:
        milli-GPUs this request already planned per (node, GPU); ``opened``: GPUs it opened per node."""
        best, best_key = None, None
        for node, shared in pool.shares.items():
            if node in pool.cordoned or (gpu_type is not None and pool.gpu_type[node] != gpu_type):
                continue
            for gpu, holders in shared.items():
                left = MILLI - sum(holders.values()) - extra.get((node, gpu), 0)
                if left >= milli and (best_key is None or (left, node, gpu) < best_key):
                    best, best_key = (node, gpu), (left, node, gpu)
        for (node, gpu), used in extra.items():  # GPUs this request opened
            if (node, gpu) not in pool.shares.get(node, {}):
                left = MILLI - used
                if left >= milli and (best_key is None or (left, node, gpu) < best_key):
                    best, best_key = (node, gpu), (left, node, gpu)
        return best


class FirstFit(Placement):
    """Lowest-numbered node that holds the whole job; otherwise spread over nodes in order."""

    name = "first-fit"

    def __init__(self, spread: bool = True):
        self.spread = spread

    def place(self, pool: NodePool, request) -> Placement_t | None:
        if type(request) is int and not pool.typed:
            return self.place_gpus(pool, request, None)
        return Placement.place(self, pool, request)

    def pick_node(self, pool: NodePool, gpus: int, gpu_type: str | None) -> int | None:
        return pool.first_node_with(gpus, gpu_type)

    def place_gpus(self, pool: NodePool, gpus: int, gpu_type: str | None) -> Placement_t | None:
        if gpus > pool.total_free:
            return None
        if gpus <= pool.max_capacity_of(gpu_type):
            node = pool.first_node_with(gpus, gpu_type)
            if node is not None:
                return [(node, gpus)]
            if not self.spread:
                return None
        out, need, cordoned = [], gpus, pool.cordoned
        types = pool.gpu_type if gpu_type is not None and pool.typed else None
        for node, f in enumerate(pool.free):
            if f and node not in cordoned and (types is None or types[node] == gpu_type):
                take = min(f, need)
                out.append((node, take))
                need -= take
                if not need:
                    return out
        return None


class Consolidate(Placement):
    """Best fit on the fewest nodes: a job that fits one node goes to the tightest such node; a larger
    job takes the emptiest nodes so it spans ceil(gpus / node size) nodes. ``strict`` (Lucid's rule)
    refuses placements on more nodes than that minimum instead of spreading."""

    name = "consolidate"

    def __init__(self, strict: bool = True):
        self.strict = strict
        # Subclasses that change place_gpus get no inlined shortcut past it.
        self._inline = type(self).place_gpus is Consolidate.place_gpus

    def place(self, pool: NodePool, request) -> Placement_t | None:
        if type(request) is int and self._inline and not pool.typed:  # the hot path: inline, as before
            gpus = request
            if gpus > pool.total_free:
                return None
            if gpus <= pool.max_capacity:
                buckets = pool.buckets
                for f in range(gpus, pool.max_capacity + 1):
                    bucket = buckets[f]
                    if bucket:
                        return [(min(bucket), gpus)]
                if self.strict:
                    return None
            return self.place_gpus(pool, gpus, None)
        return Placement.place(self, pool, request)

    def place_gpus(self, pool: NodePool, gpus: int, gpu_type: str | None) -> Placement_t | None:
        if gpus > pool.total_free:
            return None
        biggest = pool.max_capacity_of(gpu_type)
        if gpus <= biggest:
            node = pool.tightest_node_with(gpus, gpu_type)
            if node is not None:
                return [(node, gpus)]
            if self.strict:
                return None
        if not biggest:
            return None
        minimum = -(-gpus // biggest)
        # the emptiest nodes first (free GPUs descending, ties by number: NodePool.by_free reads the buckets)
        out, need = [], gpus
        for node, f in pool.by_free(gpu_type, most_free=True):
            if f >= need:
                # Last chunk: the tightest node that holds the remainder, among those not yet used (those
                # used so far all have >= f free GPUs, so the scan of buckets from ``need`` up skips them).
                used = {n for n, _ in out}
                tight = next(n for n, k in pool.by_free(gpu_type, most_free=False) if k >= need and n not in used)
                out.append((tight, need))
                need = 0
                break
            out.append((node, f))
            need -= f
        if need or (self.strict and len(out) > minimum):
            return None
        return out


def _scored(fgd_mix: str = "workload", **weights: Annotated[float, Domain(ge=0.0, why="a score's weight")]) -> Placement:
    from sim.placement.scored import ScoredPlacement

    for key, value in weights.items():
        if isinstance(value, (str, bool)):
            raise ValueError(f"score weight {key}={value!r} is not a number")
    return ScoredPlacement(weights or None, fgd_mix=str(fgd_mix))


def _gfs(**params) -> Placement:
    from sim.placement.gfs import GfsPlacement  # lazy: gfs imports this module

    return GfsPlacement(**params)


def _fgd(mix: str = "workload") -> Placement:
    from sim.placement.fgd import FgdPlacement  # lazy: fgd imports this module

    return FgdPlacement(mix)


def _heavy_edge(most_free: bool = True, refine: bool = False) -> Placement:
    from sim.placement.heavy_edge import HeavyEdge  # lazy: heavy_edge imports this module

    return HeavyEdge(most_free=most_free, refine=refine)


#: name -> factory. The CLI, configs and tests read this registry.
class NodeChoicePlacement(Placement):
    """A placement whose whole decision is :meth:`pick_node` for one pod (GFS' Alg. 1, FGD): a job given
    only by a GPU count goes on the chosen node when one node can hold it, and is spread as
    ``consolidate`` spreads it when it is larger than any node."""

    _spread = Consolidate(strict=False)

    def place_gpus(self, pool: NodePool, gpus: int, gpu_type: str | None) -> Placement_t | None:
        if gpus > pool.total_free:
            return None
        if gpus <= pool.max_capacity_of(gpu_type):
            node = self.pick_node(pool, gpus, gpu_type)
            return None if node is None else [(node, gpus)]
        return self._spread.place_gpus(pool, gpus, gpu_type)


#: name -> factory: the one registry of placements (features.plugins.Registry; entry-point group
#: ``schedcast.placements``, whose entries are Placement classes or factories). The CLI, configs and tests read it.
PLACEMENTS: Registry[Callable[..., Placement]] = new_registry("placements", noun="placement")
for _name, _factory in {
    "first-fit": FirstFit,
    "consolidate": Consolidate,
    "best-fit": lambda: Consolidate(strict=False),
    "scored": _scored,
    "heavy-edge": _heavy_edge,
    "gfs": _gfs,  # GFS Alg. 1 (sim/placement/gfs.py)
    "fgd": _fgd,  # FGD against the bound workload's request mix (sim/placement/fgd.py)
}.items():
    PLACEMENTS.register(_name, _factory)


def _text_parameters(factory: Callable[..., Placement]) -> set[str]:
    """Parameters of ``factory`` whose default is a string (they take names; all others take numbers)."""
    import inspect

    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return set()
    return {p.name for p in params if isinstance(p.default, str)}


def make_placement(name: str | Placement) -> Placement:
    """A placement by registry name, optionally with parameters: ``scored:best_fit=1,class_affinity=0.5``
    (the one grammar, features.plugins.parse_spec; values are numbers or true/false)."""
    if isinstance(name, Placement):
        return name
    base, params = parse_spec(str(name), "placement")
    factory = PLACEMENTS.lookup(base)
    text_ok = _text_parameters(factory)
    for key, value in params.items():  # a name (``mix=v2023``) only where the factory's default is text
        if isinstance(value, str) and key not in text_ok:
            raise ValueError(f"placement parameter {key!r} in {name!r} is not a number")
    PLACEMENTS.check_params(base, params, factory)  # each number in its declared Domain (else finite)
    try:
        placement = factory(**params)
    except TypeError as exc:
        raise ValueError(f"bad parameters for placement {base!r}: {exc}") from None
    if not isinstance(placement, Placement):
        raise ValueError(f"placement {base!r} made a {type(placement).__name__}, not a sim.placement.Placement")
    return placement
