"""The one event loop. Policies react to events and decide; only this module advances time.

Semantics (documented because results are compared with other simulators):
- Time zero is the trace's first submission; times are float seconds, never rounded.
- Events at the same instant are handled in this order: finishes, save completions, load completions,
  arrivals (in submission order), timers. Then every partition that saw an event is scheduled once.
  A job that finishes at t frees its GPUs for a job arriving at t.
- A job moves queued -> loading -> running -> (saving -> queued)* -> done. Loading takes the job's
  load time (0 by default), saving its pause-and-save time. Preempting a loading job frees its GPUs
  at once and its load time so far is futile (Lazer's futile preemption: preempted after its load
  began and before it trained); preempting a running job checkpoints its progress, holds the GPUs
  for the save time, then requeues it. JCT = wait + load + train + save, per job, exactly.
- Evicting (spot) stops a job without saving: the training since it last started is lost and redone;
  its wall time stays in ``train`` (so the JCT identity holds) and is reported as ``lost``.
- Packed jobs share their host's GPUs at measured speeds; when one leaves, the other runs solo again.
- An idle node can move between partitions (``Context.move_node``; Lucid's profiler borrows idle VC
  nodes on a burst). The cluster's GPU total never changes, so cluster-wide utilisation stays exact;
  per-partition figures use the nominal partition sizes.
"""
from __future__ import annotations

import heapq
import math
import time as _time
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable

from sim.placement import NodePool, Placement, Placement_t, make_placement
from sim.workload import Workload

if TYPE_CHECKING:
    from sim.policies.base import Policy

# Job states.
PENDING, QUEUED, LOADING, RUNNING, SAVING, DONE = range(6)
STATE_NAMES = ("pending", "queued", "loading", "running", "saving", "done")
# Event kinds double as same-time priorities (lower first); arrivals (3) come from a sorted list.
EV_FINISH, EV_SAVED, EV_LOADED, EV_ARRIVAL, EV_TIMER = range(5)
INF = math.inf


class SimulationError(RuntimeError):
    """A policy asked for something impossible (the message names the job and the time)."""


@dataclass
class SimResult:
    """Per-job accumulators and run statistics; evaluation.metrics turns these into tables."""

    workload: Workload
    policy: str
    first_start: list[float]
    end: list[float]
    wait: list[float]
    load: list[float]
    train: list[float]
    save: list[float]
    futile: list[float]
    preemptions: list[int]
    work_done: list[float]
    alloc_times: array
    alloc_used: array  # job-GPUs running (a GPU shared by two packed jobs counts twice)
    events: int
    wall_seconds: float
    decision_seconds: list[float] = field(default_factory=list)
    evictions: list[int] = field(default_factory=list)
    lost: list[float] = field(default_factory=list)
    event_log: list[tuple] | None = None
    policy_stats: dict[str, Any] = field(default_factory=dict)
    alloc_held: array = field(default_factory=lambda: array("d"))  # physical GPUs held, per alloc_times row


class Context:
    """What a policy may see and do in its partition. Every decision goes through these methods."""

    __slots__ = ("engine", "partition", "pool", "placement", "running", "_timers")

    def __init__(self, engine: "Engine", partition: int, placement: Placement):
        self.engine = engine
        self.partition = partition
        self.pool = NodePool(engine.workload.cluster.partitions[partition].capacities)
        self.placement = placement
        self.running: set[int] = set()  # jobs holding GPUs here: loading, running or saving

    # -- what a policy reads -------------------------------------------------------------------
    @property
    def now(self) -> float:
        return self.engine.now

    @property
    def jobs(self) -> Workload:
        return self.engine.workload

    @property
    def free_gpus(self) -> int:
        return self.pool.total_free

    @property
    def capacity(self) -> int:
        return self.pool.total_capacity

    def state(self, job: int) -> int:
        return self.engine.state[job]

    def remaining(self, job: int) -> float:
        """Remaining exclusive work (s) of a job at the current time."""
        e = self.engine
        if e.state[job] == RUNNING:
            return max(0.0, e.remaining[job] - (e.now - e.seg_start[job]) * e.speed[job])
        return e.remaining[job]

    def attained(self, job: int) -> float:
        """GPU-seconds of service attained so far (Tiresias' 2D attained service)."""
        e = self.engine
        return (e.workload.duration[job] - self.remaining(job)) * e.workload.gpus[job]

    def expected_end(self, job: int) -> float:
        """When a job holding GPUs will finish if left alone (loading: load end + remaining work)."""
        return self.engine.expected_end[job]

    def prediction(self, job: int) -> float:
        return self.engine.predicted[job]

    # -- what a policy decides -----------------------------------------------------------------
    def try_start(self, job: int) -> bool:
        """Place with the partition's placement plug-in; start and return True if it fits now."""
        placement = self.placement.place(self.pool, self.engine.workload.gpus[job])
        if placement is None:
            return False
        self.engine._start(self, job, placement)
        return True

    def start(self, job: int, placement: Placement_t) -> None:
        """Start on an explicit placement (validated)."""
        if sum(c for _, c in placement) != self.engine.workload.gpus[job]:
            raise SimulationError(f"job {job} needs {self.engine.workload.gpus[job]} GPUs, placement "
                                  f"{placement} gives a different number")
        self.engine._start(self, job, placement)

    def fits(self, gpus: int) -> bool:
        return self.placement.place(self.pool, gpus) is not None

    def preempt(self, job: int) -> None:
        """Pause a loading or running job; it comes back through policy.on_requeue."""
        self.engine._preempt(self, job)

    def evict(self, job: int) -> None:
        """Stop a loading or running job at once, without saving: its GPUs free now and the work since
        it last started training is lost (spot-job eviction). It comes back through on_requeue."""
        self.engine._evict(self, job)

    def pack(self, job: int, host: int, speed_job: float, speed_host: float) -> None:
        """Run a queued job on the GPUs of a running host job; both run at the given speeds."""
        self.engine._pack(self, job, host, speed_job, speed_host)

    @property
    def unfinished(self) -> int:
        """Jobs of the whole replay not yet done (periodic timers stop re-arming at 0)."""
        return self.engine.unfinished

    @property
    def partition_name(self) -> str:
        return self.engine.workload.cluster.partitions[self.partition].name

    def transfer(self, job: int, partition: int | str) -> None:
        """Hand a waiting job to another partition's policy (e.g. from a profiling cluster to its VC).
        The caller must already have removed it from its own queue."""
        e = self.engine
        if e.state[job] != QUEUED:
            raise SimulationError(f"t={e.now}: only a waiting job can move, job {job} is "
                                  f"{STATE_NAMES[e.state[job]]}")
        p = e.partition_index(partition)
        nominal = sum(e.workload.cluster.partitions[p].capacities)  # nodes lent out come back
        if e.workload.gpus[job] > nominal:
            raise SimulationError(f"job {job} needs {e.workload.gpus[job]} GPUs; partition {p} has {nominal}")
        e.partition_of[job] = p
        e._log("transfer", job, p)
        e.policies[p].on_transfer(job)
        e.mark_dirty(p)

    def move_node(self, node: int, partition: int | str) -> int:
        """Move an idle node of this partition to another one (Lucid's profiler borrowing idle VC nodes
        on a burst, and giving them back). Returns the node's number in the receiving partition; both
        partitions are scheduled again. Jobs that can no longer fit the smaller partition wait."""
        e = self.engine
        p = e.partition_index(partition)
        if p == self.partition:
            raise SimulationError(f"t={e.now}: node {node} is already in partition {p}")
        if not 0 <= node < len(self.pool.capacity) or not self.pool.capacity[node] \
                or self.pool.free[node] != self.pool.capacity[node]:
            raise SimulationError(f"t={e.now}: partition {self.partition_name!r} can move only an idle node; "
                                  f"node {node} is not")
        gpus = self.pool.take_offline(node)
        there = e.contexts[p].pool.bring_online(gpus)
        e._log("move-node", -1, (self.partition, node, p, there))
        e.mark_dirty(self.partition)
        e.mark_dirty(p)
        return there

    def set_timer(self, at: float, payload: Any = None) -> None:
        """Call policy.on_timer(payload) at time ``at`` (>= now)."""
        e = self.engine
        if at < e.now:
            raise SimulationError(f"timer at {at} is in the past (now {e.now})")
        e._seq += 1
        heapq.heappush(e.heap, (at, EV_TIMER, e._seq, -1 - self.partition, payload))


class Engine:
    """Replays a workload under one policy (one instance per partition). Use :func:`simulate`."""

    def __init__(self, workload: Workload, policy_factory: Callable[[], "Policy"], *,
                 placement: str | Placement = "consolidate", predictions: list[float] | None = None,
                 check_invariants: bool = False, record_events: bool = False,
                 time_decisions: bool = False, progress: Callable[[int, int], None] | None = None,
                 policy_name: str = "policy"):
        self.workload = workload
        n = len(workload)
        sub = workload.submit
        if any(sub[i] > sub[i + 1] for i in range(n - 1)):
            raise SimulationError("workload is not sorted by submission time")
        self.policy_name = policy_name
        self.partition_of = list(workload.partition)  # transfers change it; the workload stays as given
        self.now = 0.0
        self.heap: list[tuple] = []
        self._seq = 0
        self.state = [PENDING] * n
        self.since = [0.0] * n
        self.remaining = list(workload.duration)
        self.seg_start = [0.0] * n
        self.speed = [1.0] * n
        self.epoch = [0] * n
        self.expected_end = [INF] * n
        self.alloc: list[Any] = [None] * n  # shared allocation record [placement, members]
        self.first_start = [INF] * n
        self.end = [INF] * n
        self.wait = [0.0] * n
        self.load = [0.0] * n
        self.train = [0.0] * n
        self.save = [0.0] * n
        self.futile = [0.0] * n
        self.preemptions = [0] * n
        self.work_done = [0.0] * n
        self.evictions = [0] * n
        self.lost = [0.0] * n  # wall time of training lost to evictions
        self.predicted = predictions if predictions is not None else list(workload.duration)
        self.used_gpus = 0  # job-GPUs running
        self.held_gpus = 0  # physical GPUs allocated (packing shares them)
        self.alloc_times = array("d")
        self.alloc_used = array("d")
        self.alloc_held = array("d")
        self.check_invariants = check_invariants
        self._finished_unchecked: list[int] = []
        self.event_log: list[tuple] | None = [] if record_events else None
        self.time_decisions = time_decisions
        self.decision_seconds: list[float] = []
        self.progress = progress
        self.events = 0
        self.unfinished = n
        place = placement if isinstance(placement, Placement) else None
        self.contexts = [Context(self, p, place or make_placement(placement))
                         for p in range(len(workload.cluster.partitions))]
        self.policies: list[Policy] = []
        for ctx in self.contexts:
            policy = policy_factory()
            policy.bind(ctx)
            self.policies.append(policy)

    # -- transitions ---------------------------------------------------------------------------
    def _log(self, kind: str, job: int, extra: Any = None) -> None:
        if self.event_log is not None:
            self.event_log.append((self.now, kind, job, extra))

    def _start(self, ctx: Context, job: int, placement: Placement_t) -> None:
        if self.state[job] != QUEUED:
            raise SimulationError(f"t={self.now}: job {job} cannot start from state "
                                  f"{STATE_NAMES[self.state[job]]}")
        ctx.pool.allocate(placement)
        self.used_gpus += self.workload.gpus[job]
        self.held_gpus += self.workload.gpus[job]
        self.alloc[job] = [placement, {job}]
        ctx.running.add(job)
        now = self.now
        self.wait[job] += now - self.since[job]
        if self.first_start[job] == INF:
            self.first_start[job] = now
        self._log("start", job, placement)
        lt = self.workload.load_time[job]
        if lt > 0:
            self.state[job] = LOADING
            self.since[job] = now
            self.expected_end[job] = now + lt + self.remaining[job]
            self._push(now + lt, EV_LOADED, job)
        else:
            self._begin_training(job)

    def _push(self, at: float, kind: int, job: int) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (at, kind, self._seq, job, self.epoch[job]))

    def _begin_training(self, job: int) -> None:
        now = self.now
        self.state[job] = RUNNING
        self.since[job] = now
        self.seg_start[job] = now
        end = now + self.remaining[job] / self.speed[job]
        self.expected_end[job] = end
        self._push(end, EV_FINISH, job)

    def _checkpoint(self, job: int) -> None:
        """Fold the running segment into the accumulators (progress kept)."""
        now = self.now
        elapsed = now - self.seg_start[job]
        done = min(self.remaining[job], elapsed * self.speed[job])
        self.remaining[job] -= done
        self.work_done[job] += done
        self.train[job] += elapsed
        self.seg_start[job] = now

    def _release(self, ctx: Context, job: int) -> None:
        record = self.alloc[job]
        self.alloc[job] = None
        members = record[1]
        members.discard(job)
        ctx.running.discard(job)
        self.used_gpus -= self.workload.gpus[job]
        if members:
            # A packed partner keeps the GPUs and runs solo again.
            for other in members:
                self._set_speed(other, 1.0)
        else:
            ctx.pool.release(record[0])
            self.held_gpus -= self.workload.gpus[job]

    def _set_speed(self, job: int, speed: float) -> None:
        if speed <= 0:
            raise SimulationError(f"job {job}: speed must be positive, got {speed}")
        if self.state[job] == RUNNING:
            self._checkpoint(job)
            self.speed[job] = speed
            self.epoch[job] += 1
            end = self.now + self.remaining[job] / speed
            self.expected_end[job] = end
            self._push(end, EV_FINISH, job)
        else:
            self.speed[job] = speed
            if self.state[job] == LOADING:
                self.expected_end[job] = self.since[job] + self.workload.load_time[job] + self.remaining[job] / speed

    def _stop(self, job: int, verb: str) -> int:
        """Common bookkeeping of a preemption or eviction; returns the state the job was in."""
        st = self.state[job]
        if st not in (LOADING, RUNNING):
            raise SimulationError(f"t={self.now}: job {job} cannot be {verb} while {STATE_NAMES[st]}")
        self.preemptions[job] += 1
        self.epoch[job] += 1
        self.expected_end[job] = INF
        if st == LOADING:  # its load so far is wasted: futile preemption (Lazer's definition)
            spent = self.now - self.since[job]
            self.load[job] += spent
            self.futile[job] += spent
        return st

    def _requeue(self, ctx: Context, job: int) -> None:
        """Free the job's GPUs now and hand it back to its policy as waiting."""
        self._release(ctx, job)
        self.state[job] = QUEUED
        self.since[job] = self.now
        self.policies[ctx.partition].on_requeue(job)

    def _preempt(self, ctx: Context, job: int) -> None:
        st = self._stop(job, "preempted")
        if st == LOADING:
            self._log("preempt-loading", job)
            self._requeue(ctx, job)
            return
        self._checkpoint(job)
        self._log("preempt", job)
        save = self.workload.save_time[job]
        if save > 0:  # holds its GPUs while writing the checkpoint
            self.state[job] = SAVING
            self.since[job] = self.now
            self._push(self.now + save, EV_SAVED, job)
        else:
            self._requeue(ctx, job)

    def _evict(self, ctx: Context, job: int) -> None:
        st = self._stop(job, "evicted")
        self.evictions[job] += 1
        if st == RUNNING:  # progress since the last start is lost and will be redone
            elapsed = self.now - self.seg_start[job]
            self.train[job] += elapsed
            self.lost[job] += elapsed
        self._log("evict", job)
        self._requeue(ctx, job)

    def _pack(self, ctx: Context, job: int, host: int, speed_job: float, speed_host: float) -> None:
        if self.state[job] != QUEUED or self.state[host] not in (LOADING, RUNNING):
            raise SimulationError(f"t={self.now}: cannot pack job {job} ({STATE_NAMES[self.state[job]]}) "
                                  f"onto job {host} ({STATE_NAMES[self.state[host]]})")
        if self.workload.gpus[job] != self.workload.gpus[host] or len(self.alloc[host][1]) != 1:
            raise SimulationError(f"job {job} can share only the GPUs of a solo host with the same GPU count")
        record = self.alloc[host]
        record[1].add(job)
        self.alloc[job] = record
        self.used_gpus += self.workload.gpus[job]
        ctx.running.add(job)
        now = self.now
        self.wait[job] += now - self.since[job]
        if self.first_start[job] == INF:
            self.first_start[job] = now
        self._log("pack", job, host)
        self.speed[job] = speed_job
        self._set_speed(host, speed_host)
        lt = self.workload.load_time[job]
        if lt > 0:
            self.state[job] = LOADING
            self.since[job] = now
            self.expected_end[job] = now + lt + self.remaining[job] / speed_job
            self._push(now + lt, EV_LOADED, job)
        else:
            self._begin_training(job)

    def partition_index(self, partition: int | str) -> int:
        """A partition given by number or by name."""
        return partition if isinstance(partition, int) else self.workload.cluster.index[partition]

    def mark_dirty(self, p: int) -> None:
        if not self._dirty[p]:
            self._dirty[p] = True
            self._dirty_list.append(p)

    # -- invariants ------------------------------------------------------------------------------
    def check(self) -> None:
        for ctx in self.contexts:
            ctx.pool.check()
            held = sum(self.workload.gpus[j] for j in ctx.running if len(self.alloc[j][1]) == 1
                       or j == min(self.alloc[j][1]))
            assert held == ctx.pool.total_capacity - ctx.pool.total_free, "GPUs held != GPUs allocated"
            for j in ctx.running:
                assert self.state[j] in (LOADING, RUNNING, SAVING), f"job {j} holds GPUs while not active"
        assert self.held_gpus == sum(c.pool.total_capacity - c.pool.total_free for c in self.contexts), \
            "physical GPUs held out of sync"
        for j in self._finished_unchecked:  # jobs done since the last check: all of their work was done
            assert self.state[j] == DONE
            assert abs(self.work_done[j] - self.workload.duration[j]) <= 1e-6 * max(1.0, self.workload.duration[j])
        self._finished_unchecked.clear()

    # -- the loop --------------------------------------------------------------------------------
    def run(self) -> SimResult:
        wall0 = _time.perf_counter()
        w = self.workload
        n = len(w)
        submit, part_of = w.submit, self.partition_of
        heap, heappop = self.heap, heapq.heappop
        policies, contexts = self.policies, self.contexts
        state, since, epoch = self.state, self.since, self.epoch
        dirty = self._dirty = [False] * len(contexts)
        dirty_list = self._dirty_list = []
        ai = 0
        done_count = 0
        events = 0
        progress, next_progress = self.progress, 0
        alloc_times, alloc_used, alloc_held = self.alloc_times, self.alloc_used, self.alloc_held
        last_used = last_held = -1
        time_decisions, decision_seconds = self.time_decisions, self.decision_seconds
        check = self.check_invariants
        perf = _time.perf_counter
        for policy in policies:
            policy.on_start()

        while True:
            t_arr = submit[ai] if ai < n else INF
            t_heap = heap[0][0] if heap else INF
            now = t_arr if t_arr < t_heap else t_heap
            if now == INF:
                break
            self.now = now
            # 1. Finishes, saves and loads at `now` (kinds below EV_ARRIVAL), in kind order.
            while heap and heap[0][0] == now and heap[0][1] < EV_ARRIVAL:
                _, kind, _, job, ep = heappop(heap)
                if ep != epoch[job]:
                    continue  # superseded by a preemption or a speed change
                events += 1
                p = part_of[job]
                ctx = contexts[p]
                if kind == EV_FINISH:
                    self.train[job] += now - self.seg_start[job]
                    self.work_done[job] += self.remaining[job]
                    self.remaining[job] = 0.0
                    state[job] = DONE
                    self.end[job] = now
                    self.expected_end[job] = INF
                    epoch[job] += 1
                    self._release(ctx, job)
                    done_count += 1
                    self.unfinished -= 1
                    self._log("finish", job)
                    if check:
                        self._finished_unchecked.append(job)
                    policies[p].on_finish(job)
                elif kind == EV_SAVED:
                    self.save[job] += now - since[job]
                    self._release(ctx, job)
                    state[job] = QUEUED
                    since[job] = now
                    self._log("saved", job)
                    policies[p].on_requeue(job)
                else:  # EV_LOADED
                    self.load[job] += now - since[job]
                    self._log("loaded", job)
                    self._begin_training(job)
                    policies[p].on_loaded(job)
                if not dirty[p]:
                    dirty[p] = True
                    dirty_list.append(p)
            # 2. Arrivals at `now`, in submission order.
            while ai < n and submit[ai] == now:
                job = ai
                ai += 1
                events += 1
                p = part_of[job]
                state[job] = QUEUED
                since[job] = now
                self._log("arrive", job)
                policies[p].on_arrival(job)
                if not dirty[p]:
                    dirty[p] = True
                    dirty_list.append(p)
            # 3. Timers at `now`.
            while heap and heap[0][0] == now and heap[0][1] == EV_TIMER:
                _, _, _, neg_part, payload = heappop(heap)
                events += 1
                p = -1 - neg_part
                policies[p].on_timer(payload)
                if not dirty[p]:
                    dirty[p] = True
                    dirty_list.append(p)
            # Events pushed at `now` by the handlers above (zero-length loads, say) run next round.
            if heap and heap[0][0] == now and heap[0][1] < EV_ARRIVAL:
                continue
            # 4. Schedule every partition that saw an event (transfers may add partitions meanwhile).
            i = 0
            while i < len(dirty_list):
                p = dirty_list[i]
                i += 1
                dirty[p] = False
                if time_decisions:
                    t0 = perf()
                    policies[p].schedule()
                    decision_seconds.append(perf() - t0)
                else:
                    policies[p].schedule()
            dirty_list.clear()
            if self.used_gpus != last_used or self.held_gpus != last_held:
                last_used, last_held = self.used_gpus, self.held_gpus
                alloc_times.append(now)
                alloc_used.append(last_used)
                alloc_held.append(last_held)
            if check:
                self.check()
            if progress is not None and done_count >= next_progress:
                progress(done_count, n)
                next_progress = done_count + max(1, n // 200)

        self.events = events
        for policy in policies:
            policy.on_end()
        if done_count != n:
            stuck = [j for j in range(n) if state[j] != DONE][:5]
            raise SimulationError(
                f"policy {self.policy_name!r} stopped with {n - done_count} unfinished jobs (first: "
                f"{[w.job_id[j] for j in stuck]}, states {[STATE_NAMES[state[j]] for j in stuck]}); "
                "a policy must eventually start every queued job")
        if progress is not None:
            progress(n, n)
        stats = {}
        for policy in policies:
            for k, v in policy.stats().items():
                if isinstance(v, (int, float)):
                    stats[k] = stats.get(k, 0) + v
                elif isinstance(v, list):
                    stats[k] = stats.get(k, []) + v
                else:
                    stats[k] = v
        return SimResult(
            workload=w, policy=self.policy_name, first_start=self.first_start, end=self.end,
            wait=self.wait, load=self.load, train=self.train, save=self.save, futile=self.futile,
            preemptions=self.preemptions, work_done=self.work_done, alloc_times=alloc_times,
            alloc_used=alloc_used, alloc_held=alloc_held, events=events, wall_seconds=_time.perf_counter() - wall0,
            decision_seconds=decision_seconds, evictions=self.evictions, lost=self.lost,
            event_log=self.event_log, policy_stats=stats,
        )
