"""FGD-style placement: filter the feasible nodes, score each with weighted pure score functions
(one per ``score_*.py`` file, each in [0, 1], higher is better), take the best node (lowest number on
ties), pod by pod, on a tentative view of the pool. A single pod larger than any node (a job given by
its GPU count only) fills nodes in score order."""
from __future__ import annotations

from typing import Callable

from features.plugins import Registry, new_registry
from sim.placement import Placement
from sim.placement.pool import MILLI, NodePool, Placement_t
from sim.placement.state import NodeState
from sim.placement import (score_best_fit, score_class_affinity, score_fgd, score_gfs_colocation, score_gfs_eviction,
                           score_gfs_packing, score_least_allocated, score_shared_gpu)

ScoreFn = Callable[[NodeState, int, int, "str | None"], float]

#: name -> score function ``(node, gpus, milli, job_class) -> [0, 1]``: the one registry of scores (entry-point
#: group ``schedcast.scores``). Weights name them: ``scored:best_fit=1,class_affinity=0.5``.
SCORES: Registry[ScoreFn] = new_registry("scores", noun="score function")
for _name, _score in {
    "best_fit": score_best_fit.score,
    "least_allocated": score_least_allocated.score,
    "class_affinity": score_class_affinity.score,
    "shared_gpu": score_shared_gpu.score,
    "gfs_packing": score_gfs_packing.score,  # GFS Eq. 13
    "gfs_colocation": score_gfs_colocation.score,  # GFS Eq. 14
    "gfs_eviction": score_gfs_eviction.score,  # GFS Eq. 15-16 (1 for HP tasks)
    "fgd": score_fgd.score,  # FGD's fragmentation gradient (the bound workload's request mix: ScoredPlacement.bind)
}.items():
    SCORES.register(_name, _score)


def combine(node: NodeState, gpus: int, milli: int, job_class: str | None,
            weights: dict[str, float], scores: "dict[str, ScoreFn] | None" = None) -> float:
    """Weighted mean of the named scores (weights need not sum to 1); ``scores`` overrides registry entries
    by name (a placement's scores bound to its workload)."""
    total = sum(weights.values())
    fns = scores or {}
    return sum(w * (fns.get(name) or SCORES[name])(node, gpus, milli, job_class)
               for name, w in weights.items()) / total


class ScoredPlacement(Placement):
    """Weighted FGD-style scores. ``fgd_mix``: the request mix of the ``fgd`` score, "workload" (the one
    bound when the replay starts, the default) or "v2023" (sim/placement/score_fgd.py)."""

    name = "scored"

    def __init__(self, weights: dict[str, float] | None = None, fgd_mix: str = "workload"):
        score_fgd.request_mix(fgd_mix)  # validates the name
        self.fgd_mix = fgd_mix
        self._bound: dict[str, ScoreFn] = {}
        weights = dict(weights or {"best_fit": 1.0, "shared_gpu": 1.0})
        unknown = sorted(n for n in weights if n not in SCORES)
        if unknown:
            raise ValueError(f"unknown score function(s) {unknown}; known: {', '.join(SCORES)}")
        if any(w < 0 for w in weights.values()) or sum(weights.values()) <= 0:
            raise ValueError("score weights must be >= 0 and not all 0")
        self.weights = weights

    def bind(self, workload) -> None:
        """The ``fgd`` score against the workload's request mix (FGD is defined against the target workload)."""
        if "fgd" in self.weights and SCORES["fgd"] is score_fgd.score:
            mix = score_fgd.request_mix(self.fgd_mix, workload)
            self._bound["fgd"] = lambda node, gpus, milli=0, job_class=None: score_fgd.score(
                node, gpus, milli, job_class, mix)

    def place(self, pool: NodePool, request) -> Placement_t | None:
        if type(request) is int:
            from sim.workload import Request

            request = Request(1, request)
        return self._by_model(pool, request, self._place_model)

    def _states(self, pool: NodePool, gpu_type: str | None) -> dict[int, list]:
        out = {}
        for n in pool.nodes_of(gpu_type):
            if n in pool.cordoned or not pool.capacity[n]:
                continue
            out[n] = [pool.free[n], pool.shared_free(n), pool.classes_on(n)]
        return out

    def _place_model(self, pool: NodePool, request, gpu_type: str | None) -> Placement_t | None:
        states = self._states(pool, gpu_type)
        gpus, milli, cls = request.gpus_per_pod, request.milli, request.job_class
        types = pool.gpu_type

        def view(n: int) -> NodeState:
            free, shared, classes = states[n]
            return NodeState(pool.capacity[n], free, tuple(shared.values()), types[n], classes)

        if request.spread and not milli and not any(view(n).fits(gpus) for n in states):
            # One pod bigger than any node's free room: fill nodes in score order (all or nothing).
            ranked = sorted(states, key=lambda n: (-combine(view(n), min(gpus, states[n][0]), 0, cls,
                                                            self.weights, self._bound), n))
            out, need = [], gpus
            for n in ranked:
                take = min(states[n][0], need)
                if take:
                    out.append((n, take))
                    need -= take
                if not need:
                    return sorted(out)
            return None
        placed: list = []
        for _ in range(request.pods):
            best, best_score = None, -1.0
            for n in states:
                v = view(n)
                if not v.fits(gpus, milli):
                    continue
                s = combine(v, gpus, milli, cls, self.weights, self._bound)
                if s > best_score + 1e-12:
                    best, best_score = n, s
            if best is None:
                return None
            st = states[best]
            if milli:
                shared = st[1]
                fitting = [(left, g) for g, left in shared.items() if left >= milli]
                if fitting:
                    left, g = min(fitting)
                else:
                    g = next(i for i in range(pool.capacity[best]) if i not in shared
                             and i not in pool.shares.get(best, {}))
                    st[0] -= 1
                    left = MILLI
                shared[g] = left - milli
                placed.append((best, g, milli))
            else:
                st[0] -= gpus
                placed.append((best, gpus))
            st[2] = {**st[2], cls: st[2].get(cls, 0) + 1}
        if milli:
            return placed
        merged: dict[int, int] = {}
        for n, g in placed:
            merged[n] = merged.get(n, 0) + g
        return sorted(merged.items())
