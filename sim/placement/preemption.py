"""Preemption (victim-planning) plug-ins: GFS' Alg. 2 and the victim rules of its baselines.

A victim planner runs when no node can take a pod now (Kubernetes' post-filter stage). It is given the
evictable jobs per node and the policy's value of each (GFS: Eq. 17's waste) and answers which jobs to
evict and where the request then goes. It never changes the pool: the policy evicts the victims and
starts the job. The plug-ins differ only in their victim order and node cost (:class:`GfsVictimPlanner`
parameters): GFS (Eq. 19), YARN-CS (fewest victims, newest first), Lyra (least total value), GFS-p (the
first feasible node in a random order, victims in a random order).
"""
from __future__ import annotations

from typing import Any, Callable, Iterable

from sim.placement.pool import MILLI, NodePool, Placement_t

HOUR = 3600.0
VICTIM_COSTS = ("gfs", "count", "value", "first")


def plan_preemption(pool: NodePool, request, candidates: dict[int, list[int]], value: Callable[[int], float],
                    gpus_of: Callable[[int, int], int], *, cost: str = "gfs", beta: float = 0.5,
                    spare: bool = True, order: Callable[[list[int]], list[int]] | None = None,
                    node_order: Callable[[list[int]], list[int]] | None = None,
                    feasible: Iterable[int] | None = None, eq19: str = "paper", failed: float = 0.0,
                    succeeded: float = 0.0, period: float = HOUR) -> tuple[Placement_t, set[int]] | None:
    """Victims and placement for a whole-GPU request that does not fit now (Alg. 2).

    ``candidates``: node -> evictable (spot) jobs there; ``value(job)``: the job's waste (Eq. 17) or the
    baseline's victim cost; ``gpus_of(job, node)``: GPUs the job holds on the node. Victims on a node are
    taken in ``order`` (default: ascending value), the spared ones given back if ``spare``; the node of
    least cost wins (``cost="gfs"``: Eq. 19, see :func:`eq19_cost`; ``"count"``: fewest victims; ``"value"``: least total value;
    ``"first"``: the first feasible node in ``node_order``). Pod by pod for gangs. None if impossible.
    ``feasible``: for a one-pod request without ``node_order``, the nodes that can hold the pod with their
    candidates evicted (the others are skipped by the scan anyway; the answer is the same)."""
    gpp = request.gpus_per_pod
    pods = request.pods
    if gpp > pool.max_capacity_of(request.gpu_type):
        return None
    taken: dict[int, int] = {}
    victims: set[int] = set()
    freed: dict[int, int] = {}
    if feasible is not None and pods == 1 and node_order is None:
        nodes_all = sorted(n for n in feasible if pool.capacity[n] and n not in pool.cordoned)
    else:
        nodes_all = [n for n in (pool.nodes_of(request.gpu_type)) if pool.capacity[n] and n not in pool.cordoned]
    if node_order is not None:
        nodes_all = node_order(nodes_all)
    for _ in range(pods):
        best = None
        for n in nodes_all:
            avail = pool.free[n] - taken.get(n, 0) + freed.get(n, 0)
            chosen: list[int] = []
            if avail >= gpp:
                c = -1.0  # fits without a new victim: always preferred
            else:
                jobs = [j for j in candidates.get(n, ()) if j not in victims]
                if not jobs or (cost != "first" and avail + sum(gpus_of(j, n) for j in jobs) < gpp):
                    continue  # even every candidate there would not free enough (not for "first", whose
                    # order may draw random numbers per node: the draws stay as they were)
                jobs = order(jobs) if order is not None else sorted(jobs, key=lambda j: (value(j), j))
                got = avail
                for j in jobs:
                    chosen.append(j)
                    got += gpus_of(j, n)
                    if got >= gpp:
                        break
                if got < gpp:
                    continue
                if spare:  # give back what can be spared, the most wasteful first
                    for j in sorted(chosen, key=lambda j: (-value(j), j)):
                        if got - gpus_of(j, n) >= gpp:
                            chosen.remove(j)
                            got -= gpus_of(j, n)
                if cost == "gfs":  # Eq. 19
                    c = eq19_cost([value(j) for j in chosen], [gpus_of(j, n) for j in chosen], gpp, beta,
                                  eq19, failed, succeeded, period)
                elif cost == "count":
                    c = float(len(chosen))
                elif cost == "value":
                    c = float(sum(value(j) for j in chosen))
                else:  # "first": the first feasible node in node order
                    c = 0.0
            if best is None or (c, n) < best[0]:
                best = ((c, n), n, chosen)
                if cost == "first" or c < 0:
                    break
        if best is None:
            return None
        _, n, chosen = best
        for j in chosen:
            victims.add(j)
            for node, g in _holdings(pool, j).items():
                freed[node] = freed.get(node, 0) + g
        taken[n] = taken.get(n, 0) + gpp
    return sorted(taken.items()), victims


EQ19_MODES = ("paper", "gpus")


def eq19_cost(wastes: list[float], gpus: list[int], pod_gpus: int, beta: float = 0.5, mode: str = "paper",
              failed: float = 0.0, succeeded: float = 0.0, period: float = HOUR) -> float:
    """Eq. 19, the cost of evicting the victim set T_k (``wastes``: Eq. 17 per victim, ``gpus``: their GPUs
    on the node).

    ``mode="paper"`` (as printed): beta x sum_k W_k / (sum_k S_k x T) + (1 - beta) x (F + |T_k|) /
    (G + F + |T_k|), with S_k the victims' GPUs, T the guarantee period (the checkpoint interval, 1 h), F / G
    the pool's failed (evicted) / succeeded spot guarantee periods so far: the waste term is the share of the
    victims' current period lost, the count term the pool's eviction rate if T_k is evicted now (what SQA's
    target bounds). ``mode="gpus"`` (the old reading, kept by name): beta x sum W_k / (pod GPUs x 1 h) +
    (1 - beta) x sum S_k / pod GPUs."""
    if mode == "gpus":
        return beta * sum(wastes) / (pod_gpus * HOUR) + (1 - beta) * sum(gpus) / pod_gpus
    if mode != "paper":
        raise ValueError(f"eq19 must be one of {', '.join(EQ19_MODES)}, got {mode!r}")
    k = len(wastes)
    if k == 0:
        return 0.0
    denom = sum(gpus) * period
    waste = sum(wastes) / denom if denom > 0 else 0.0
    return beta * waste + (1 - beta) * (failed + k) / (succeeded + failed + k)


def _holdings(pool: NodePool, job: int) -> dict[int, int]:
    """Whole GPUs ``job`` holds per node (shared GPUs count when the job is their only holder)."""
    out: dict[int, int] = {}
    for n, h in enumerate(pool.holders):
        if job in h:
            out[n] = out.get(n, 0) + h[job]
    for n, shared in pool.shares.items():
        for holders in shared.values():
            if job in holders and len(holders) == 1:
                out[n] = out.get(n, 0) + 1
    return out



holdings = _holdings


def plan_fractional(pool: NodePool, request, candidates: dict[int, list[int]],
                    value: Callable[[int], float]) -> list[int] | None:
    """Victims for a one-pod fractional request (v2023): the cheapest way to free ``request.milli`` of one
    GPU over every node of its model: the evictable shares of one shared GPU taken in ascending value until
    the pod fits there, or one evictable job holding a whole GPU (least total value; ties to the lower
    node). None for multi-pod fractional requests (they wait) or when nothing frees enough. The policy then
    places the request on the pool without the victims."""
    if request.pods != 1:
        return None
    milli = request.milli
    best = None
    for node in sorted(candidates):
        if node in pool.cordoned or (request.gpu_type is not None and pool.gpu_type[node] != request.gpu_type):
            continue
        evictable = set(candidates[node])  # the policy's candidates only (Chronus leaves draining victims out)
        for gpu, holders in pool.shares.get(node, {}).items():
            spot_here = [j for j in holders if j in evictable]
            if not spot_here:
                continue  # no victim on this GPU
            left = MILLI - sum(holders.values())
            victims, cost = [], 0.0
            for j in sorted(spot_here, key=lambda j: (value(j), j)):
                if left >= milli:
                    break
                victims.append(j)
                left += holders[j]
                cost += value(j)
            if left >= milli and victims and (best is None or (cost, node) < best[0]):
                best = ((cost, node), victims)
        for j, count in pool.holders[node].items():
            if j in evictable and count >= 1 and (best is None or (value(j), node) < best[0]):
                best = ((value(j), node), [j])
    return None if best is None else best[1]


class GfsVictimPlanner:
    """The preemption stage of the HP / spot policies: Alg. 2 (:func:`plan_preemption`) for whole-GPU
    requests, :func:`plan_fractional` for one-pod fractional ones, with the policy's rule as parameters.

    ``cost``: "gfs" (Eq. 19, ``beta`` and ``eq19`` its weight and reading), "count" (fewest victims),
    "value" (least total value) or "first" (the first feasible node in the policy's node order, no
    sparing); ``spare``: give back victims that are not needed (default: all but "first")."""

    name = "gfs-victims"

    def __init__(self, cost: str = "gfs", beta: float = 0.5, eq19: str = "paper", spare: bool | None = None):
        if cost not in VICTIM_COSTS:
            raise ValueError(f"victim cost must be one of {', '.join(VICTIM_COSTS)}, got {cost!r}")
        if eq19 not in EQ19_MODES:
            raise ValueError(f"eq19 must be one of {', '.join(EQ19_MODES)}, got {eq19!r}")
        self.cost, self.beta, self.eq19 = cost, beta, eq19
        self.spare = cost != "first" if spare is None else spare

    def plan(self, pool: NodePool, request, candidates: dict[int, list[int]], value: Callable[[int], float],
             gpus_of: Callable[[int, int], int], *, order: Callable[[list[int]], list[int]] | None = None,
             node_order: Callable[[list[int]], list[int]] | None = None, feasible: Iterable[int] | None = None,
             failed: float = 0.0, succeeded: float = 0.0, **_: Any) -> tuple[Placement_t, set[int]] | None:
        """Placement and victims for a whole-GPU ``request`` (see :func:`plan_preemption`)."""
        return plan_preemption(pool, request, candidates, value, gpus_of, cost=self.cost, beta=self.beta,
                               order=order, node_order=node_order, feasible=feasible, spare=self.spare,
                               eq19=self.eq19, failed=failed, succeeded=succeeded)

    def plan_fractional(self, pool: NodePool, request, candidates: dict[int, list[int]],
                        value: Callable[[int], float]) -> list[int] | None:
        return plan_fractional(pool, request, candidates, value)


__all__ = ["HOUR", "EQ19_MODES", "VICTIM_COSTS", "plan_preemption", "plan_fractional", "eq19_cost", "holdings",
           "GfsVictimPlanner"]
