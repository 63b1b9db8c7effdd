"""GFS Preemptive Task Scheduler (PTS, §4.3, Alg. 1-3) and the HP / spot machinery its baselines share.

- :class:`GfsPlacement` (Alg. 1): pod by pod, feasible nodes ranked lexicographically by Score1 packing
  (sim/placement/score_gfs_packing.py), Score2 same-class co-location (score_gfs_colocation.py), Score3
  eviction awareness (score_gfs_eviction.py), lowest node number last; spot pods skip nodes whose circuit
  breaker is tripped. Packing first means only the nodes of the tightest feasible free count are scored.
- :func:`plan_preemption` (Alg. 2, HP only): per node, the spot tasks there sorted by waste (Eq. 17: GPUs x
  run time since their last checkpoint), taken until the pod fits, then the ones that can be spared are
  given back (largest waste first); the node of least cost (Eq. 19: beta x normalised waste + (1 - beta) x
  evicted GPUs per needed GPU, beta = 0.5) wins; pod by pod for gangs. Baselines plug other victim orders
  and costs into the same function.
- :class:`HpSpotPolicy` (Alg. 3): per pool (partition x GPU model) an HP queue and a spot queue; HP before
  spot; each queue in the policy's order; spot tasks start only within the pool's quota when a quota
  allocator runs. Restart overheads: an evicted spot task's next start loads 40 s (60 s above 8 GPUs); the
  HP task that preempted pays 40 s.
"""
from __future__ import annotations

import bisect
import heapq
import math
from collections import OrderedDict
from typing import Any, Callable, Iterable

from sim.engine import LOADING, RUNNING
from sim.placement import Consolidate, NodeChoicePlacement, Placement
from sim.placement.pool import MILLI, NodePool, Placement_t
from sim.placement import score_gfs_colocation, score_gfs_eviction
from sim.placement.score_gfs_colocation import GpuClassState
from sim.policies.base import Policy, SortedQueue
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


class GfsPlacement(NodeChoicePlacement):
    """Alg. 1 as a placement plug-in (see the module docstring). ``scores``: which of Score2 / Score3 break
    the packing ties (GFS-s uses packing only); ``breaker``: the spot circuit breaker."""

    name = "gfs"

    def __init__(self, history: EvictionHistory | None = None, clock: Callable[[], float] | None = None,
                 colocation: bool = True, eviction: bool = True, breaker: bool = True,
                 gamma: float = score_gfs_eviction.GAMMA, m: int = score_gfs_eviction.BREAKER_M,
                 score3: str = "paper"):
        if score3 not in score_gfs_eviction.MODES:
            raise ValueError(f"score3 must be one of {', '.join(score_gfs_eviction.MODES)}, got {score3!r}")
        self.history = history or EvictionHistory()
        self.clock = clock or (lambda: 0.0)
        self.colocation, self.eviction, self.breaker, self.gamma, self.m = colocation, eviction, breaker, gamma, m
        self.score3 = score3
        self._cls: str | None = None
        self._label_cache: dict[Any, bool] = {}

    def state(self, pool: NodePool, node: int) -> GpuClassState:
        """The node snapshot the scores read: GPUs per class and recent evictions."""
        class_gpus: dict[Any, float] = {}
        classes = pool.job_class
        for job, g in pool.jobs_on(node).items():
            c = "spot" if classes is not None and is_spot(classes[job]) else "hp"
            class_gpus[c] = class_gpus.get(c, 0) + g
        e1, e24 = self.history.counts(node, self.clock())
        shared = tuple(pool.shared_free(node).values()) if node in pool.shares else ()
        return GpuClassState(pool.capacity[node], pool.free[node], shared, pool.gpu_type[node], {},
                             class_gpus=class_gpus, evictions_1h=e1, evictions_24h=e24)

    def place(self, pool: NodePool, request) -> Placement_t | None:
        if type(request) is int:
            from sim.workload import Request

            request = Request(1, request)
        self._cls = "spot" if is_spot(request.job_class) else "hp"
        return Placement.place(self, pool, request)

    def _rank(self, pool: NodePool, nodes, gpus: int, milli: int) -> int | None:
        """The best node of ``nodes`` by (Score2, Score3, lowest number). Nodes without shared GPUs are scored
        from their holders directly (the same numbers as the snapshot, without building one: this ran for
        every node of the tightest bucket on every placement)."""
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


# --- Alg. 2 -----------------------------------------------------------------------------------------------------
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


class SpotQueue:
    """A spot queue kept as groups of identical requests (same shape, pods, GPU demand and class), each sorted
    by the policy's key. Why: the spot queue grows to tens of thousands of tasks at High load, and a pass that
    reads every entry dominated the replay (about 60 % of it). Every skip rule of the pass holds for a whole
    group at once (a failed shape, a larger one-pod share, a demand above the quota), so a pass merges the
    live groups' heads in key order and drops a group at its first failure: it tries exactly the tasks the
    entry-by-entry pass tried, in the same order, at a cost in groups and starts rather than queue length.
    ``since`` keeps the queued jobs in arrival order, so the longest wait (Eq. 11's l) is its first entry."""

    __slots__ = ("groups", "since", "n")

    def __init__(self) -> None:
        self.groups: dict[tuple, list[tuple[Any, int]]] = {}
        self.since: OrderedDict[int, float] = OrderedDict()
        self.n = 0

    def add(self, key: Any, job: int, group: tuple, now: float) -> None:
        bisect.insort(self.groups.setdefault(group, []), (key, job))
        self.since[job] = now
        self.n += 1

    @property
    def items(self) -> list[tuple[Any, int]]:
        """All entries in key order (for reading; the pass uses the groups)."""
        return list(heapq.merge(*self.groups.values()))

    def __len__(self) -> int:
        return self.n

    def __bool__(self) -> bool:
        return self.n > 0


# --- the policy ----------------------------------------------------------------------------------------------------
class HpSpotPolicy(Policy):
    """HP / spot scheduling per pool; subclasses choose order, placement, victims and the quota."""

    name = "hp-spot"
    preemptive = True
    #: queue order: "gfs" (GPU request, pod count, submission) or "fifo" (submission)
    order = "gfs"
    victim_cost = "gfs"
    restart_overhead, restart_overhead_big, preempt_overhead = 40.0, 60.0, 40.0

    def __init__(self, preempt: bool = True):
        self.preempt_enabled = preempt

    # -- set-up -----------------------------------------------------------------------------------------------
    def make_placement(self) -> Placement:
        return Consolidate(strict=False)

    def on_start(self) -> None:
        ctx = self.ctx
        w = ctx.jobs
        self.history = EvictionHistory()
        self.placement = self.make_placement()
        ctx.placement = self.placement  # would_fit and try_start see the same rule
        self.spot = [is_spot(c) for c in w.job_class]
        frame = w.frame
        self.org = (frame["org"].astype("string").fillna("<none>").astype(str).tolist() if "org" in frame
                    else ["<none>"] * len(w))
        self.pool_of_job = [t if t is not None else "*" for t in w.gpu_type]
        self.queues: dict[str, tuple[SortedQueue, SpotQueue]] = {}
        self.hp_org: dict[str, dict[str, float]] = {}
        self.spot_held: dict[str, float] = {}
        self.started_at: dict[int, float] = {}
        self.run_since: dict[int, float] = {}
        self.placed: dict[int, Placement_t] = {}
        self.spot_nodes: dict[str, dict[int, dict[int, None]]] = {}  # pool -> node -> spot jobs placed there
        self.waiting_since: dict[int, float] = {}
        self.n_evictions = 0
        # Spot guarantee periods per pool (Eq. 19's F and G): a period fails when its task is evicted inside it,
        # succeeds when the task runs a whole checkpoint interval or finishes in it (counted when it stops).
        self.periods_ok: dict[str, int] = {}
        self.periods_failed: dict[str, int] = {}
        self.n_preempting = 0
        self.wasted_evictions = 0
        self.coordinator = ctx.coordinator
        self.shape_of = list(zip(w.gpus_per_pod, w.gpu_milli, w.spread))
        self.pods_of = w.pods
        self._new_hp: set[str] = set()
        self._new_spot: set[str] = set()
        self._hp_sig: dict[str, int] = {}
        self._spot_sig: dict[str, tuple] = {}
        self._held_version, self._held = (0, -1), {}
        # Reclaimable room per node (free GPUs + whole GPUs of evictable spot tasks of the pool), per pool,
        # kept up to date from the nodes the policy's own events touch (see :meth:`_max_room`).
        self._rooms: dict[str, tuple[dict[int, int], list[set[int]]]] = {}
        self._room_dirty: dict[str, set[int]] = {}
        self._room_shape: tuple = ()

    def pool_key(self, job: int) -> str:
        return self.pool_of_job[job]

    def pool_capacity(self, pool: str) -> int:
        p = self.ctx.pool
        if pool == "*":
            return p.total_capacity
        return sum(c for c, t in zip(p.capacity, p.gpu_type) if t == pool)

    def _queues(self, pool: str) -> tuple[SortedQueue, SpotQueue]:
        q = self.queues.get(pool)
        if q is None:
            q = self.queues[pool] = (SortedQueue(), SpotQueue())
            self.hp_org.setdefault(pool, {})
            self.spot_held.setdefault(pool, 0.0)
            self.on_new_pool(pool)
        return q

    def on_new_pool(self, pool: str) -> None:
        """Hook: a pool was seen for the first time (GFS registers it with its quota allocator)."""

    def key(self, job: int) -> tuple:
        w = self.ctx.jobs
        if self.order == "gfs":
            return (w.gpu_demand[job], w.pods[job], w.submit[job])
        return (w.submit[job],)

    # -- events ----------------------------------------------------------------------------------------------
    def on_arrival(self, job: int) -> None:
        pool = self.pool_key(job)
        hp, spot = self._queues(pool)
        if self.spot[job]:
            w = self.ctx.jobs
            spot.add(self.key(job), job, (self.shape_of[job], w.pods[job], w.gpus[job], w.gpu_demand[job],
                                          w.job_class[job], w.stages[job]), self.ctx.now)
        else:
            hp.add(self.key(job), job)
        (self._new_spot if self.spot[job] else self._new_hp).add(pool)
        self.waiting_since[job] = self.ctx.now

    def on_finish(self, job: int) -> None:
        if self.spot[job]:
            self._count_periods(job, finished=True)
        self._forget(job)

    def _count_periods(self, job: int, finished: bool) -> None:
        """Eq. 19's G: whole checkpoint intervals the stopping spot task ran (+ its last one if it finished)."""
        since = self.run_since.get(job)
        ok = 0
        if since is not None:
            interval = self.ctx.jobs.checkpoint[job]
            if interval < math.inf and interval > 0:
                ok = int((self.ctx.now - since) // interval)
        pool = self.pool_key(job)
        self.periods_ok[pool] = self.periods_ok.get(pool, 0) + ok + (1 if finished else 0)
        if not finished:
            self.periods_failed[pool] = self.periods_failed.get(pool, 0) + 1

    def on_loaded(self, job: int) -> None:
        self.run_since[job] = self.ctx.now

    def _forget(self, job: int) -> None:
        pool = self.pool_key(job)
        g = self.ctx.jobs.gpu_demand[job]
        if self.spot[job]:
            self.spot_held[pool] -= g
        else:
            d = self.hp_org[pool]
            d[self.org[job]] -= g
        self.started_at.pop(job, None)
        self.run_since.pop(job, None)
        self._touch(self.placed.get(job, ()))
        self._unindex(job)
        self.placed.pop(job, None)

    def _touch(self, placement) -> None:
        """The rooms of these placement entries' nodes must be recomputed."""
        if self._room_dirty:
            nodes = {e[0] for e in placement}
            for dirty in self._room_dirty.values():
                dirty |= nodes

    def evictable(self, job: int) -> bool:
        """A spot task of this partition that a preemption may pick (Chronus leaves draining ones out)."""
        return self.ctx.state(job) in (LOADING, RUNNING)

    def _node_room(self, pool: str, n: int) -> int:
        p = self.ctx.pool
        if n in p.cordoned or not p.capacity[n]:
            return -1
        room = p.free[n]
        jobs = self.spot_nodes.get(pool, {}).get(n)
        if jobs:
            live = {j for j in jobs if self.evictable(j)}
            if live:
                room += sum(g for j, g in p.holders[n].items() if j in live)
                for h in p.shares.get(n, {}).values():
                    if len(h) == 1 and next(iter(h)) in live:
                        room += 1
        return room

    def _roomy_nodes(self, pool: str, gpu_type: str | None, gpus: int) -> list[int]:
        """The nodes of ``pool`` whose room (free + reclaimable whole GPUs) is at least ``gpus``: exactly the
        nodes where plan_preemption can put a first pod of that size; none, and Alg. 2 is not run. Rooms are recomputed for the nodes the policy's starts, finishes,
        evictions and failures touched; everything is recomputed when cordons, failed nodes or the capacity
        changed. Why: at v2023 scale most preemption attempts fail, and each read every spot task."""
        p = self.ctx.pool
        shape = (len(p.cordoned), len(p.down), p.total_capacity, len(p.offline))
        if shape != self._room_shape:
            self._room_shape = shape
            self._rooms.clear()
            self._room_dirty.clear()
        entry = self._rooms.get(pool)
        if entry is None:
            rooms: dict[int, int] = {}
            hist: list[set[int]] = [set() for _ in range(p.max_capacity + 1)]
            for n in p.nodes_of(gpu_type):
                r = rooms[n] = self._node_room(pool, n)
                if r >= 0:
                    hist[r].add(n)
            entry = self._rooms[pool] = (rooms, hist)
            self._room_dirty[pool] = set()
        rooms, hist = entry
        dirty = self._room_dirty[pool]
        for n in dirty:
            old = rooms.get(n)
            if old is None:
                continue  # another GPU model's node
            new = self._node_room(pool, n)
            if new != old:
                if old >= 0:
                    hist[old].discard(n)
                if new >= 0:
                    hist[new].add(n)
                rooms[n] = new
        dirty.clear()
        out: list[int] = []
        for r in range(max(gpus, 0), len(hist)):
            out.extend(hist[r])
        return out

    def on_failure(self, job: int) -> float | None:
        """A failed task gave its GPUs back: forget its holdings (it returns through on_requeue)."""
        if job in self.placed:
            self._forget(job)
        return None

    def _unindex(self, job: int) -> None:
        placed = self.placed.get(job)
        if placed and self.spot[job]:
            idx = self.spot_nodes[self.pool_key(job)]
            for n in {e[0] for e in placed}:
                d = idx.get(n)
                if d is not None:
                    d.pop(job, None)
                    if not d:
                        del idx[n]

    def waiting_count(self) -> int:
        return sum(len(h) + len(s) for h, s in self.queues.values())

    def release(self, job: int) -> bool:
        return False

    # -- reading the state (quota allocator and victims) -----------------------------------------------------
    def hp_by_org(self, key) -> dict[str, float]:
        return dict(self.hp_org.get(key[1], {}))

    def spot_gpus(self, key) -> float:
        return self.spot_held.get(key[1], 0.0)

    def spot_matured_gpus(self, key, now: float, horizon_s: float) -> float:
        """Eq. 10's S_a: GPUs of the pool's spot tasks whose current run started at least ``horizon_s`` ago
        (they have had their H guaranteed hours)."""
        pool = key[1]
        demand, out, seen = self.ctx.jobs.gpu_demand, 0.0, set()
        for jobs in self.spot_nodes.get(pool, {}).values():
            for j in jobs:
                if j not in seen:
                    seen.add(j)
                    t = self.started_at.get(j)
                    if t is not None and now - t >= horizon_s:
                        out += demand[j]
        return out

    def idle_gpus(self, key) -> float:
        pool = key[1]
        p = self.ctx.pool
        if pool == "*":
            return p.total_free
        return sum(f for f, t in zip(p.free, p.gpu_type) if t == pool)

    def max_spot_wait(self, key, now: float) -> float:
        q = self.queues.get(key[1])
        if q is None or not q[1]:
            return 0.0
        return now - next(iter(q[1].since.values()))  # arrival order: the first queued job waited longest

    def waste(self, job: int) -> float:
        """Eq. 17: GPUs x run time since the job's last checkpoint (0 while it is loading)."""
        since = self.run_since.get(job)
        if since is None:
            return 0.0
        run = self.ctx.now - since
        interval = self.ctx.jobs.checkpoint[job]
        if interval < math.inf:
            run = run % interval
        return self.ctx.jobs.gpu_demand[job] * run

    # -- starting and evicting ----------------------------------------------------------------------------------
    def _start(self, job: int, placement: Placement_t) -> None:
        ctx = self.ctx
        ctx.start(job, placement)
        now = ctx.now
        pool = self.pool_key(job)
        g = ctx.jobs.gpu_demand[job]
        if self.spot[job]:
            self.spot_held[pool] += g
            if self.coordinator is not None and hasattr(self.coordinator, "note_spot_start"):
                since = self.waiting_since.get(job)
                self.coordinator.note_spot_start((ctx.partition, pool), now, 0.0 if since is None else now - since)
        else:
            d = self.hp_org[pool]
            d[self.org[job]] = d.get(self.org[job], 0.0) + g
        self.started_at[job] = now
        if self.spot[job]:
            self._unindex(job)
            idx = self.spot_nodes.setdefault(pool, {})
            for n in {e[0] for e in placement}:
                idx.setdefault(n, {})[job] = None
        self.placed[job] = placement
        self._touch(placement)
        if ctx.state(job) == RUNNING:
            self.run_since[job] = now
        self.waiting_since.pop(job, None)

    def evict(self, job: int) -> None:
        ctx = self.ctx
        nodes = {e[0] for e in self.placed.get(job, ())}
        over = self.restart_overhead_big if ctx.jobs.gpus[job] > 8 else self.restart_overhead
        self._count_periods(job, finished=False)
        self._forget(job)
        for n in nodes:
            self.history.add(n, ctx.now)
        self.n_evictions += 1
        if self.coordinator is not None and hasattr(self.coordinator, "note_eviction"):
            self.coordinator.note_eviction((ctx.partition, self.pool_key(job)), ctx.now)
        ctx.evict(job, overhead=over)  # re-queued through on_requeue -> on_arrival

    def candidates(self, pool: str) -> dict[int, list[int]]:
        """Evictable jobs per node: running or loading spot tasks of this pool."""
        out: dict[int, list[int]] = {}
        for node, jobs in self.spot_nodes.get(pool, {}).items():  # kept by _start / _forget
            live = sorted(j for j in jobs if self.evictable(j))  # by id: a random victim order permutes a fixed list
            if live:
                out[node] = live
        return out

    def victim_value(self, job: int) -> float:
        return self.waste(job)

    def victim_order(self) -> Callable[[list[int]], list[int]] | None:
        return None

    def node_order(self) -> Callable[[list[int]], list[int]] | None:
        return None

    def try_preempt(self, job: int) -> bool:
        """Alg. 2 for an HP task: evict the planned victims, start it (it pays the preemption overhead)."""
        ctx = self.ctx
        req = ctx.request(job)
        pool = self.pool_key(job)
        feasible = None
        node_order = self.node_order()
        if not req.milli and node_order is None:  # (a random node order draws as before: not skipped)
            feasible = self._roomy_nodes(pool, req.gpu_type, req.gpus_per_pod)
            if not feasible:
                return False  # no node could hold one pod even with all its spot tasks evicted
        cands = self.candidates(pool)
        if not cands:
            return False
        if req.milli:
            return self._preempt_fractional(job, cands)
        p = ctx.pool
        values: dict[int, float] = {}

        def value(j: int) -> float:  # the same for every node within one decision: computed once
            v = values.get(j)
            if v is None:
                v = values[j] = self.victim_value(j)
            return v

        if self._held_version != (id(p), p.version):  # what each job holds per node, kept while the pool is unchanged
            self._held_version, self._held = (id(p), p.version), {}
        held = self._held

        def gpus_of(j: int, n: int) -> int:
            """Whole GPUs j holds on n, shared GPUs counting where j is their only holder (one pass per node
            for all its jobs: per (job, node) pair, the scan of the node's shared GPUs dominated v2023)."""
            on = held.get(n)
            if on is None:
                on = held[n] = dict(p.holders[n])
                for h in p.shares.get(n, {}).values():
                    if len(h) == 1:
                        k = next(iter(h))
                        on[k] = on.get(k, 0) + 1
            return on.get(j, 0)

        plan = plan_preemption(p, req, cands, value, gpus_of,
            cost=self.victim_cost, beta=getattr(self, "beta", 0.5), order=self.victim_order(),
            node_order=node_order, feasible=feasible,
            spare=self.victim_cost != "first", eq19=getattr(self, "eq19", "paper"),
            failed=self.periods_failed.get(pool, 0), succeeded=self.periods_ok.get(pool, 0))
        if plan is None:
            return False
        placement, victims = plan
        return self._execute(job, victims, placement)

    def _preempt_fractional(self, job: int, cands: dict[int, list[int]]) -> bool:
        """A one-pod fractional HP task: the cheapest way to free ``milli`` of one GPU, over every node of its
        model: spot shares of one shared GPU taken in victim order until the pod fits there, or one spot task
        holding a whole GPU. Multi-pod fractional HP tasks are not preempted for (they wait)."""
        ctx = self.ctx
        req = ctx.request(job)
        if req.pods != 1:
            return False
        pool, milli = ctx.pool, req.milli
        values: dict[int, float] = {}

        def value(j: int) -> float:
            v = values.get(j)
            if v is None:
                v = values[j] = self.victim_value(j)
            return v

        best = None
        for node in sorted(cands):
            if node in pool.cordoned or (req.gpu_type is not None and pool.gpu_type[node] != req.gpu_type):
                continue
            evictable = set(cands[node])  # the policy's candidates only (Chronus leaves draining victims out)
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
        if best is None:
            return False
        return self._execute(job, set(best[1]), None)

    def _execute(self, job: int, victims: set[int], placement: Placement_t | None) -> bool:
        ctx = self.ctx
        for v in sorted(victims):
            self.evict(v)
        if placement is None or not victims:
            placement = self.placement.place(ctx.pool, ctx.request(job))
        if placement is None:
            self.wasted_evictions += len(victims)
            return False
        if victims:
            ctx.add_overhead(job, self.preempt_overhead)
            self.n_preempting += 1
        self._start(job, placement)
        return True

    # -- Alg. 3 ------------------------------------------------------------------------------------------------
    def quota_room(self, pool: str) -> float:
        """GPUs the pool's spot tasks may still take under the quota (inf without one)."""
        return math.inf

    def schedule(self) -> None:
        version = self.ctx.pool.version
        for pool, (hp, spot) in self.queues.items():
            if hp.items and (pool in self._new_hp or self._hp_sig.get(pool) != version):
                self._new_hp.discard(pool)
                self._schedule_hp(pool, hp)
                self._hp_sig[pool] = self.ctx.pool.version
            if spot:
                room = self.quota_room(pool)
                sig = (self.ctx.pool.version, room)
                if pool in self._new_spot or self._spot_sig.get(pool) != sig:
                    self._new_spot.discard(pool)
                    self._schedule_spot(pool, spot, room)
                    self._spot_sig[pool] = (self.ctx.pool.version, self.quota_room(pool))

    def _schedule_hp(self, pool: str, queue: SortedQueue) -> None:
        ctx = self.ctx
        failed: dict[tuple, int] = {}  # shape -> fewest pods that failed in this pass
        keep = []
        shape_of, pods_of = self.shape_of, self.pods_of
        for entry in queue.items:
            job = entry[1]
            shape = shape_of[job]
            pods = pods_of[job]
            if failed.get(shape, 1 << 30) <= pods:
                keep.append(entry)
                continue
            placement = self.placement.place(ctx.pool, ctx.request(job)) if ctx.may_fit(job) else None
            if placement is not None:
                self._start(job, placement)
                continue
            if self.preempt_enabled and self.try_preempt(job):
                continue
            failed[shape] = min(failed.get(shape, 1 << 30), pods)
            keep.append(entry)
        queue.items = keep

    def _schedule_spot(self, pool: str, queue: SpotQueue, room: float) -> None:
        """One pass over the spot queue in key order with backfilling: a task whose demand exceeds the quota
        room, whose shape failed in this pass (with as few pods) or whose one-pod share is at least one that
        failed is skipped; with the GFS order (demand first) the pass ends at the first task above the room.
        Run over the queue's groups (see :class:`SpotQueue`): the same tasks are tried in the same order."""
        ctx = self.ctx
        groups = queue.groups
        failed: dict[tuple, int] = {}
        sorted_by_demand = self.order == "gfs"
        min_milli = 1 << 30  # the smallest one-pod share that failed in this pass
        pods_of, demand, p = self.pods_of, ctx.jobs.gpu_demand, ctx.pool
        heads = [(lst[0], gk) for gk, lst in groups.items()]
        heapq.heapify(heads)
        taken: dict[tuple, int] = {}
        while heads:
            entry, gk = heads[0]
            job = entry[1]
            d = demand[job]
            if d > room + 1e-9:
                if sorted_by_demand:  # every later task asks for at least as much
                    break
                heapq.heappop(heads)  # the whole group asks for d: skipped in this pass
                continue
            if p.total_free == 0 and not p.shares:
                break
            shape = gk[0]
            pods = pods_of[job]
            milli = shape[1]
            if failed.get(shape, 1 << 30) <= pods or (milli and milli >= min_milli):
                heapq.heappop(heads)
                continue
            placement = self.placement.place(p, ctx.request(job)) if ctx.may_fit(job) else None
            if placement is None:  # nothing of this shape (or, for one-pod fractions, a larger share) fits now
                failed[shape] = min(failed.get(shape, 1 << 30), pods)
                if milli and pods == 1:
                    min_milli = min(min_milli, milli)
                heapq.heappop(heads)
                continue
            self._start(job, placement)
            room -= d
            i = taken.get(gk, 0) + 1
            taken[gk] = i
            lst = groups[gk]
            if i < len(lst):
                heapq.heapreplace(heads, (lst[i], gk))
            else:
                heapq.heappop(heads)
        for gk, i in taken.items():  # the started tasks are a prefix of their group
            lst = groups[gk]
            for _, job in lst[:i]:
                queue.since.pop(job, None)
            del lst[:i]
            queue.n -= i
            if not lst:
                del groups[gk]

    def stats(self) -> dict[str, Any]:
        return {"evictions": self.n_evictions, "preempting_starts": self.n_preempting,
                "wasted_evictions": self.wasted_evictions}
