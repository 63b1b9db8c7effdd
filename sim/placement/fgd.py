"""FGD (Weng et al., ATC '23) as a placement plug-in: pod by pod, the feasible node (and, for a fractional
pod, the shared GPU) where the workload's expected fragmentation grows least.

The fragmentation measure and its gradient are sim/placement/score_fgd.py, the one FGD implementation that
``scored:fgd=...`` also uses. Both read the request mix from the workload they are bound to when a replay
starts (``mix="workload"``, the default); ``mix="v2023"`` is the fixed mix of the v2023 pods. The ``fgd``
policy (sim/policies/gfs) is FIFO with this placement and YARN's preemption.
"""
from __future__ import annotations

from typing import Any, Iterable

from sim.placement import NodeChoicePlacement
from sim.placement import score_fgd
from sim.placement.pool import NodePool
from sim.placement.state import NodeState


class FgdPlacement(NodeChoicePlacement):
    """Whole-GPU pods: the node of least gradient over every feasible free count (lowest node on ties);
    fractional pods: the shared GPU whose node's gradient is least, else a free GPU as the base class opens
    one. ``distribution`` fixes the mix (it wins over ``mix``; for tests and direct use)."""

    name = "fgd"

    def __init__(self, mix: str = "workload", distribution: Iterable[tuple[int, int, float]] | None = None):
        score_fgd.request_mix(mix)  # validates the name
        self.mix = mix
        self._fixed = distribution is not None
        self.distribution = tuple(distribution) if distribution is not None else score_fgd.request_mix(mix)

    def bind(self, workload: Any) -> None:
        if not self._fixed:
            self.distribution = score_fgd.request_mix(self.mix, workload)

    def _state(self, pool: NodePool, n: int) -> NodeState:
        shared = tuple(pool.shared_free(n).values()) if n in pool.shares else ()
        return NodeState(pool.capacity[n], pool.free[n], shared, pool.gpu_type[n], {})

    def pick_node(self, pool: NodePool, gpus: int, gpu_type: str | None) -> int | None:
        buckets = pool.type_buckets.get(gpu_type, pool.buckets) if gpu_type is not None else pool.buckets
        best, best_key = None, None
        for f in range(gpus, pool.max_capacity + 1):
            bucket = buckets[f]
            if not bucket:
                continue
            # Nodes with the same free count and no shared GPUs have the same gradient: score one of them.
            plain = [n for n in bucket if n not in pool.shares]
            others = [n for n in bucket if n in pool.shares]
            for n in ([min(plain)] if plain else []) + sorted(others):
                g = score_fgd.gradient(self._state(pool, n), gpus, 0, self.distribution)
                if best_key is None or (g, n) < best_key:
                    best, best_key = n, (g, n)
        return best

    def shared_gpu_for(self, pool: NodePool, milli: int, gpu_type: str | None, extra: dict[tuple[int, int], int],
                       opened: dict[int, int]) -> tuple[int, int] | None:
        """The shared GPU (planned shares of this request included) whose node's gradient is least."""
        best, best_key = None, None
        nodes = set(pool.shares) | {n for (n, _) in extra}
        for node in sorted(nodes):
            if node in pool.cordoned or (gpu_type is not None and pool.gpu_type[node] != gpu_type):
                continue
            shared = dict(pool.shared_free(node))
            for (n, g), used in extra.items():
                if n == node:
                    shared[g] = shared.get(g, 1000) - used
            free = pool.free[node] - opened.get(node, 0)
            # GPUs with the same free share give the same fragmentation after the pod (integer sums): one
            # evaluation per distinct share, for its lowest GPU (the tie-break); "before" once per node.
            lowest: dict[int, int] = {}
            for g, left in shared.items():
                if left >= milli and (left not in lowest or g < lowest[left]):
                    lowest[left] = g
            if not lowest:
                continue
            values = list(shared.values())
            before = score_fgd.node_fragmentation(free, tuple(values), self.distribution)
            for left, g in lowest.items():
                rest = list(values)
                rest[rest.index(left)] = left - milli
                after = score_fgd.node_fragmentation(free, [v for v in rest if v > 0], self.distribution)
                key = (after - before, node, g)
                if best_key is None or key < best_key:
                    best, best_key = (node, g), key
        return best


__all__ = ["FgdPlacement"]
