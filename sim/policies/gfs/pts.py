"""GFS Preemptive Task Scheduler (PTS, §4.3, Alg. 3) and the HP / spot machinery its baselines share.

The placement and preemption stages are plug-ins in sim/placement (re-exported here):
- :class:`~sim.placement.gfs.GfsPlacement` (Alg. 1): pod by pod, the tightest feasible free count first
  (Score1 packing), spot pods skip nodes whose circuit breaker is tripped, ties broken by Score2 same-class
  co-location, Score3 eviction awareness, lowest node number.
- :class:`~sim.placement.preemption.GfsVictimPlanner` (Alg. 2, HP only): per node, the spot tasks there sorted
  by waste (Eq. 17: GPUs x run time since their last checkpoint), taken until the pod fits, the ones that can
  be spared given back; the node of least cost (Eq. 19) wins; pod by pod for gangs. Baselines plug other
  victim orders and costs into the same planner.
- :class:`HpSpotPolicy` (Alg. 3, here): per pool (partition x GPU model) an HP queue and a spot queue; HP
  before spot; each queue in the policy's order; spot tasks start only within the pool's quota when a quota
  allocator runs. Restart overheads: an evicted spot task's next start loads 40 s (60 s above 8 GPUs); the
  HP task that preempted pays 40 s.
"""
from __future__ import annotations

import bisect
import heapq
import math
from collections import OrderedDict
from typing import Any, Callable

from sim.placement import Consolidate, Placement
from sim.placement.gfs import EvictionHistory, GfsPlacement
from sim.placement.pool import Placement_t
from sim.placement.preemption import (EQ19_MODES, HOUR, GfsVictimPlanner, _holdings, eq19_cost,  # noqa: F401
                                      plan_preemption)
from sim.policies.base import Policy, SortedQueue
from sim.states import LOADING, RUNNING
from sim.workload import is_spot

# EvictionHistory, GfsPlacement (Alg. 1), plan_preemption and eq19_cost (Alg. 2) live in sim/placement (gfs.py,
# preemption.py); they stay importable from here.
__all__ = ["HpSpotPolicy", "SpotQueue", "EvictionHistory", "GfsPlacement", "plan_preemption", "eq19_cost",
           "EQ19_MODES", "HOUR"]

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
    #: queue order: "gfs" (GPU request, pod count, submission), "fifo" (submission) or "large-first" (GPUs per
    #: pod descending, then pod count and submission: the order of GFS's released simulator)
    order = "gfs"
    victim_cost = "gfs"
    restart_overhead, restart_overhead_big, preempt_overhead = 40.0, 60.0, 40.0

    def __init__(self, preempt: bool = True):
        self.preempt_enabled = preempt

    # -- set-up -----------------------------------------------------------------------------------------------
    def make_placement(self) -> Placement:
        return Consolidate(strict=False)

    def make_victim_planner(self) -> GfsVictimPlanner:
        """The preemption stage: Alg. 2 with this policy's node cost (``victim_cost``, Eq. 19's ``beta`` and
        reading ``eq19`` where the policy has them); victim and node orders come per decision."""
        return GfsVictimPlanner(self.victim_cost, beta=getattr(self, "beta", 0.5), eq19=getattr(self, "eq19", "paper"))

    def on_start(self) -> None:
        ctx = self.ctx
        w = ctx.jobs
        self.history = EvictionHistory()
        self.placement = self.make_placement()
        ctx.use_placement(self.placement)  # bound to the workload; would_fit and try_start see the same rule
        self.victim_planner = self.make_victim_planner()
        self.spot = [is_spot(c) for c in w.job_class]
        frame = w.frame
        self.org = (frame["org"].astype("string").fillna("<none>").astype(str).tolist() if "org" in frame
                    else ["<none>"] * len(w))
        self.pool_of_job = [t if t is not None else "*" for t in w.gpu_type]
        self.queues: dict[str, tuple[SortedQueue, SpotQueue]] = {}
        self.hp_org: dict[str, dict[str, float]] = {}
        self.spot_held: dict[str, float] = {}
        # spot GPUs held counted one pod per task (GPUs / pods): what GFS's released simulator checks its quota
        # against (the gfs policy's ``quota_count=gang-as-pod``; see sim/policies/gfs/__init__.py)
        self.spot_pod_held: dict[str, float] = {}
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
            self.spot_pod_held.setdefault(pool, 0.0)
            self.on_new_pool(pool)
        return q

    def on_new_pool(self, pool: str) -> None:
        """Hook: a pool was seen for the first time (GFS registers it with its quota allocator)."""

    def key(self, job: int) -> tuple:
        w = self.ctx.jobs
        if self.order == "gfs":
            return (w.gpu_demand[job], w.pods[job], w.submit[job])
        if self.order == "large-first":
            return (-w.gpu_demand[job] / w.pods[job], w.pods[job], w.submit[job])  # per-pod GPUs, fractions too
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
            self._note_spot_end(job)
        self._forget(job)

    def _note_spot_end(self, job: int) -> None:
        """Tell the quota allocator a spot run ended without an eviction (Eq. 11's e with e_runs="live")."""
        if self.coordinator is not None and hasattr(self.coordinator, "note_spot_end"):
            self.coordinator.note_spot_end((self.ctx.partition, self.pool_key(job)), self.ctx.now)

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
            self.spot_pod_held[pool] -= g / self.pods_of[job]
        else:
            d = self.hp_org[pool]
            d[self.org[job]] -= self._hp_counted(job, g)
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
            if self.spot[job]:
                self._note_spot_end(job)
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
    #: how an HP task's GPUs count in the per-organisation HP demand the quota allocator samples: "pods" (all
    #: of them) or "gang-as-pod" (one pod's; the gfs policy's ``hp_count``)
    hp_count = "pods"

    def _hp_counted(self, job: int, g: float) -> float:
        return g / self.pods_of[job] if self.hp_count == "gang-as-pod" else g

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
            self.spot_pod_held[pool] += g / self.pods_of[job]
            if self.coordinator is not None and hasattr(self.coordinator, "note_spot_start"):
                since = self.waiting_since.get(job)
                self.coordinator.note_spot_start((ctx.partition, pool), now, 0.0 if since is None else now - since)
        else:
            d = self.hp_org[pool]
            d[self.org[job]] = d.get(self.org[job], 0.0) + self._hp_counted(job, g)
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

        plan = self.victim_planner.plan(p, req, cands, value, gpus_of, order=self.victim_order(),
                                        node_order=node_order, feasible=feasible,
                                        failed=self.periods_failed.get(pool, 0), succeeded=self.periods_ok.get(pool, 0))
        if plan is None:
            return False
        placement, victims = plan
        return self._execute(job, victims, placement)

    def _preempt_fractional(self, job: int, cands: dict[int, list[int]]) -> bool:
        """A one-pod fractional HP task: the planner's cheapest way to free its share of one GPU
        (sim.placement.preemption.plan_fractional); multi-pod fractional HP tasks wait."""
        values: dict[int, float] = {}

        def value(j: int) -> float:
            v = values.get(j)
            if v is None:
                v = values[j] = self.victim_value(j)
            return v

        victims = self.victim_planner.plan_fractional(self.ctx.pool, self.ctx.request(job), cands, value)
        if victims is None:
            return False
        return self._execute(job, set(victims), None)

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
