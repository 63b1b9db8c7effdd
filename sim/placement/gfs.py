"""GFS' Alg. 1 (PTS placement, Duan et al., ASPLOS '26 §4.3) as filter and score plug-ins.

Pod by pod: Score1 packing (sim/placement/score_gfs_packing.py) ranks the feasible free counts, the
tightest first, so only the nodes of one free count are scored for the tie-breaks; among them the spot
circuit breaker (:class:`CircuitBreaker`, a filter) closes nodes with too many recent evictions to spot
pods, and the survivors are ranked by Score2 same-class co-location (:class:`ColocationScore`,
score_gfs_colocation.py), then Score3 eviction awareness (:class:`EvictionScore`, score_gfs_eviction.py),
then the lowest node number. The eviction history is the policy's (it evicts); outside the GFS policies
(``--placement gfs``) it stays empty, so Score3 is the same everywhere and the breaker never trips.

:meth:`GfsPlacement.rank` is the stages fused into one loop (the same numbers, without building a node
snapshot for nodes without shared GPUs): it runs for every node of the tightest bucket on every placement,
and the PTS decision budget is well under a millisecond with thousands of tasks queued.
tests/test_placement_plugins.py checks it against the plain stages.
"""
from __future__ import annotations

from typing import Any, Callable

from sim.placement.framework import Pod, StagedPlacement
from sim.placement.pool import NodePool
from sim.placement import score_gfs_colocation, score_gfs_eviction
from sim.placement.score_gfs_colocation import GpuClassState
from sim.workload import is_spot

HOUR = 3600.0


class EvictionHistory:
    """Eviction times per node (1 h and 24 h windows) for Score3 and the circuit breaker."""

    def __init__(self) -> None:
        self.times: dict[int, list[float]] = {}

    def add(self, node: int, t: float) -> None:
        self.times.setdefault(node, []).append(t)

    def counts(self, node: int, now: float) -> tuple[int, int]:
        ts = self.times.get(node)
        if not ts:
            return 0, 0
        while ts and ts[0] < now - 24 * HOUR:
            ts.pop(0)
        return sum(1 for t in ts if t >= now - HOUR), len(ts)


def snapshot(pool: NodePool, node: int, history: EvictionHistory, now: float) -> GpuClassState:
    """The node as GFS' scores read it: GPUs per class ("hp" / "spot") and its recent evictions."""
    class_gpus: dict[Any, float] = {}
    classes = pool.job_class
    for job, g in pool.jobs_on(node).items():
        c = "spot" if classes is not None and is_spot(classes[job]) else "hp"
        class_gpus[c] = class_gpus.get(c, 0) + g
    e1, e24 = history.counts(node, now)
    shared = tuple(pool.shared_free(node).values()) if node in pool.shares else ()
    return GpuClassState(pool.capacity[node], pool.free[node], shared, pool.gpu_type[node], {},
                         class_gpus=class_gpus, evictions_1h=e1, evictions_24h=e24)


class _Eviction:
    """What the breaker and Score3 share: the policy's eviction history, its clock, Eq. 15-16's parameters."""

    def __init__(self, history: EvictionHistory, clock: Callable[[], float], gamma: float = score_gfs_eviction.GAMMA,
                 m: int = score_gfs_eviction.BREAKER_M, mode: str = "paper"):
        if mode not in score_gfs_eviction.MODES:
            raise ValueError(f"score3 must be one of {', '.join(score_gfs_eviction.MODES)}, got {mode!r}")
        self.history, self.clock, self.gamma, self.m, self.mode = history, clock, gamma, m, mode


class CircuitBreaker(_Eviction):
    """Filter: a node whose blended eviction count drives Score3 to 0 takes no spot pods (HP pods pass)."""

    name = "gfs_breaker"

    def passes(self, pool: NodePool, node: int, pod: Pod) -> bool:
        if pod.job_class != "spot":
            return True
        return not score_gfs_eviction.tripped(snapshot(pool, node, self.history, self.clock()), self.m,
                                              self.gamma, self.mode)


class ColocationScore:
    """Score2 (Eq. 14): the share of the node's allocated GPUs held by the pod's class."""

    name = "gfs_colocation"

    def score(self, pool: NodePool, node: int, pod: Pod) -> float:
        st = snapshot(pool, node, EvictionHistory(), 0.0)
        return score_gfs_colocation.score(st, pod.gpus, pod.milli, pod.job_class)


class EvictionScore(_Eviction):
    """Score3 (Eq. 15-16): spot pods avoid nodes with recent evictions; HP pods (paper) seek them."""

    name = "gfs_eviction"

    def score(self, pool: NodePool, node: int, pod: Pod) -> float:
        st = snapshot(pool, node, self.history, self.clock())
        return score_gfs_eviction.score(st, pod.gpus, pod.milli, pod.job_class, self.gamma, self.m, self.mode)


class GfsPlacement(StagedPlacement):
    """Alg. 1 (see the module docstring). ``colocation`` / ``eviction``: whether Score2 / Score3 break the
    packing ties (GFS-s and the baselines use packing only); ``breaker``: the spot circuit breaker;
    ``gamma``, ``m``, ``score3``: Eq. 15-16 (Table 4: 0.8, 3; ``score3=inverse`` is the old reading)."""

    name = "gfs"

    def __init__(self, history: EvictionHistory | None = None, clock: Callable[[], float] | None = None,
                 colocation: bool = True, eviction: bool = True, breaker: bool = True,
                 gamma: float = score_gfs_eviction.GAMMA, m: int = score_gfs_eviction.BREAKER_M,
                 score3: str = "paper"):
        self.history = history or EvictionHistory()
        self.clock = clock or (lambda: 0.0)
        evict = _Eviction(self.history, self.clock, gamma, m, score3)  # validates score3
        self.colocation, self.eviction, self.breaker, self.gamma, self.m = colocation, eviction, breaker, gamma, m
        self.score3 = score3
        filters = [CircuitBreaker(evict.history, evict.clock, gamma, m, score3)] if breaker else []
        scores: list[Any] = [ColocationScore()] if colocation else []
        if eviction:
            scores.append(EvictionScore(evict.history, evict.clock, gamma, m, score3))
        super().__init__(filters, scores)
        self._label_cache: dict[Any, bool] = {}

    def state(self, pool: NodePool, node: int) -> GpuClassState:
        """The node snapshot the scores read: GPUs per class and recent evictions."""
        return snapshot(pool, node, self.history, self.clock())

    def pod_class(self, request: Any) -> str:
        return "spot" if is_spot(request.job_class) else "hp"

    def rank(self, pool: NodePool, nodes, pod: Pod) -> int | None:
        return self._rank(pool, nodes, pod.gpus, pod.milli)

    def _rank(self, pool: NodePool, nodes, gpus: int, milli: int) -> int | None:
        """The best node of ``nodes`` by (Score2, Score3, lowest number) among those the breaker passes: the
        stages fused. Nodes without shared GPUs are scored from their holders directly (the same numbers as
        the snapshot, without building one)."""
        cls = self._cls
        best, best_key = None, None
        spot_cls = cls == "spot"
        breaker = self.breaker and spot_cls
        coloc, evict = self.colocation, self.eviction
        if not (coloc or evict or self.breaker):
            return min(nodes) if nodes else None  # every key is (0, 0, -n)
        shares, holders, classes = pool.shares, pool.holders, pool.job_class
        spot_label = self._spot_label
        history, now, gamma, m, mode = self.history, self.clock(), self.gamma, self.m, self.score3
        hp_seeks = mode == "paper"  # criterion 3: HP pods go where past evictions were highest
        for n in nodes:
            if n in shares:
                st = self.state(pool, n)
                if breaker and score_gfs_eviction.tripped(st, m, gamma, mode):
                    continue
                key = (score_gfs_colocation.score(st, gpus, milli, cls) if coloc else 0.0,
                       score_gfs_eviction.score(st, gpus, milli, cls, gamma, m, mode) if evict else 0.0, -n)
            else:
                if breaker or (evict and (spot_cls or hp_seeks)):
                    e1, e24 = history.counts(n, now)
                    if breaker and score_gfs_eviction.breaker_open(e1, e24, gamma, m, mode):
                        continue
                    if not evict:
                        s3 = 0.0
                    else:
                        e_bar = score_gfs_eviction.pressure(e1, e24, gamma, mode)
                        s3 = score_gfs_eviction.spot_score(e_bar, m, mode) if spot_cls else e_bar
                else:
                    s3 = 1.0 if evict else 0.0
                if coloc:
                    hp_g = spot_g = 0
                    if n < len(holders):
                        for job, g in holders[n].items():
                            if classes is not None and spot_label(classes[job]):
                                spot_g += g
                            else:
                                hp_g += g
                    total = hp_g + spot_g
                    s2 = 1.0 if total <= 0 else (spot_g if spot_cls else hp_g) / total
                else:
                    s2 = 0.0
                key = (s2, s3, -n)
            if best_key is None or key > best_key:
                best, best_key = n, key
        return best

    def _spot_label(self, label) -> bool:
        c = self._label_cache.get(label)
        if c is None:
            c = self._label_cache[label] = is_spot(label)
        return c

    def pick_node(self, pool: NodePool, gpus: int, gpu_type: str | None) -> int | None:
        buckets = pool.type_buckets.get(gpu_type, pool.buckets) if gpu_type is not None else pool.buckets
        for f in range(gpus, pool.max_capacity + 1):  # Score1: the tightest feasible free count first
            bucket = buckets[f]
            if bucket:
                if len(bucket) == 1 and not (self.breaker and self._cls == "spot"):
                    return next(iter(bucket))
                node = self._rank(pool, sorted(bucket), gpus, 0)
                if node is not None:
                    return node
        return None


__all__ = ["EvictionHistory", "GfsPlacement", "CircuitBreaker", "ColocationScore", "EvictionScore", "snapshot"]
