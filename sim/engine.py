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
  its wall time stays in ``train`` (so the JCT identity holds) and is reported as ``lost``. A job with a
  ``checkpoint_interval`` loses only the training since its last checkpoint (checkpoints every interval
  of training since its attempt began, as for failures; the lost work goes to ``lost_work``).
  ``evict(job, overhead=s)`` adds ``s`` seconds of load time to the job's next start (a restart
  overhead), ``add_overhead(job, s)`` does so for a waiting job (e.g. the task whose start preempted
  others); both are counted as load, so JCT = wait + load + train + save still holds.
- Packed jobs share their host's GPUs at measured speeds; when one leaves, the other runs solo again.
- An idle node can move between partitions (``Context.move_node``; Lucid's profiler borrows idle VC
  nodes on a burst). The cluster's GPU total never changes, so cluster-wide utilisation stays exact;
  per-partition figures use the nominal partition sizes.

Requests, pools and placement (engine v2):
- A job's request (``ctx.request(job)``, see sim.workload) is pods x GPUs per pod, a fraction of a GPU
  per pod, a GPU model, a class and optional pipeline stages. **Gang**: all pods start together on one
  placement or the job waits; a pod of a multi-pod job has its GPUs on one node. A job given only by a
  GPU count is one pod the placement may spread over nodes (as before).
- **Fractions**: pods with a fraction < 1 take that many milli-GPUs of one GPU; pods of different jobs
  share a physical GPU up to 1000 milli-GPUs. A shared GPU counts as held (``util %``) while any share
  is on it; ``gpus_used`` counts job-GPUs (a 0.5 pod counts 0.5).
- **GPU models**: each node has one GPU model. In a partition with several models a job runs on one
  model: the one it names, else any one (all its pods on nodes of that model). Heterogeneous clusters
  come from node lists (``nodes_from_csv`` with ``type_column``).
- The node pool records which job holds how many GPUs on which node (and which share of which GPU), so
  placements see the classes of the jobs already on a node and an eviction knows what it frees.
- **Placement** plug-ins answer ``place(pool, request)`` without changing the pool (sim.placement);
  ``ctx.would_fit(job, freed)`` asks "would it fit if these running jobs were freed?" side-effect free.
- **Speed**: a performance model (sim.performance) gives a job's speed from its placement and the jobs
  sharing its GPUs, asked when it starts and whenever those change; without one, speed 1.

Failures (sim.failures):
- A failure event hits a job, a node or both. A loading or running job hit by it stops at once, frees
  its GPUs and loses the training since its last checkpoint (per-job ``checkpoint_interval`` s of
  training; none: the whole attempt since it last started). The wall time of lost training stays in
  ``train`` and is reported as ``lost`` (``lost_work``: the work to redo), so JCT = wait + load + train
  + save still holds. The restart rule then requeues it after a delay (counted as waiting), or after
  ``max_attempts`` failures ends it in the terminal FAILED state (its ``end`` is the failure time).
  A saving job keeps its checkpoint and is requeued as after a normal save.
- A failed node goes down (no placements, its GPUs out of the partition's totals) and comes back after
  its repair time. Same-instant order: finishes, saves, loads, arrivals, timers, then node repairs,
  failures and restarts; then scheduling.

Determinism: ``ctx.rng(stream)`` derives a generator from (run seed, stream name, partition), so equal
seeds give byte-identical replays and different seeds differ.
"""
from __future__ import annotations

import heapq
import time as _time
import zlib
from array import array
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

import numpy as np

from sim.context import Context
from sim.errors import InvariantViolation, ReplayStalled, SimulationError  # noqa: F401  (re-exported)
from sim.invariants import check as _check
from sim.kernel import eligible as _kernel_eligible, fast_path_default, run_fast as _run_fast
from sim.kernel_tiresias import eligible as _tiresias_eligible, run_tiresias as _run_tiresias
from sim.placement import Placement, make_placement
from sim.result import SimResult
from sim.states import (  # noqa: F401  (re-exported)
    DONE, EV_ARRIVAL, EV_FAILURE, EV_FINISH, EV_LOADED, EV_REPAIR, EV_RESTART, EV_SAVED, EV_TIMER, FAILED, INF,
    LOADING, PENDING, QUEUED, RESTARTING, RUNNING, SAVING, STATE_NAMES,
)
from sim.transitions import Transitions
from sim.workload import Workload

if TYPE_CHECKING:
    from sim.failures import Failure, RestartRule

__all__ = ["Context", "Engine", "InvariantViolation", "ReplayStalled", "SimResult", "SimulationError"]

#: The watchdog (:meth:`Engine._watchdog`) looks every this many events: one integer comparison per
#: scheduling round and per timer is all it costs the loop.
WATCH_EVERY = 4096
#: Events at one simulated instant that a replay may take before time is said to have stopped: this many
#: plus STALL_PER_JOB per job and failure (every job arriving, loading and finishing at the same instant).
STALL_EVENTS = 1 << 16
STALL_PER_JOB = 8
#: Events a replay may take by simulated time t: EVENTS_BASE + EVENTS_PER_JOB per job and failure (its
#: arrival, loads, saves, demotions, preemptions, profiling and lease timers) + (EVENTS_PER_PARTITION per
#: partition + one per GPU) per simulated second since the first submission (periodic timers of at least
#: a second, a preemption of every GPU's job every second). A replay above it makes events from nothing:
#: a timer period, tick or interval that is effectively zero.
EVENTS_BASE = 1 << 16
EVENTS_PER_JOB = 64
EVENTS_PER_PARTITION = 4
#: Simulated seconds of nothing but timers a replay may take once nothing else can come (no arrival left,
#: no finish, load, save, restart, repair or failure pending): IDLE_FACTOR x 3 x the longest of any job's
#: duration, load and save time + IDLE_BASE + the policy's ``memory_s`` (a policy that decides from the past
#: week's demand may hold queued jobs for a week; an unbounded memory counts as the submission span). Longer, the policy's timers run on with nothing to do (every
#: job ended, or the queued ones never start) and the replay would never end.
IDLE_FACTOR = 10
IDLE_BASE = 86400.0


#: The engine's per-job lists and each one's initial value, made on first use: ``remaining`` starts as the
#: durations, ``alloc`` holds shared allocation records [placement, members, owner], ``lost`` is the wall
#: time of training lost to evictions and failures, ``attempt_start`` / ``attempt_work`` when the current
#: attempt began training and the work done then (failures). Why lazily: the kernel reads a few of them,
#: and 1.75 M jobs x 20 lists is 0.3 s, 280 MB and a garbage-collector pass over each it does not need.
_PER_JOB: dict[str, Any] = {
    "state": PENDING, "since": 0.0, "seg_start": 0.0, "speed": 1.0, "epoch": 0, "expected_end": INF, "alloc": None,
    "first_start": INF, "end": INF, "wait": 0.0, "load": 0.0, "train": 0.0, "save": 0.0, "futile": 0.0,
    "preemptions": 0, "work_done": 0.0, "evictions": 0, "lost": 0.0, "failures": 0, "lost_work": 0.0,
    "attempt_start": 0.0, "attempt_work": 0.0, "remaining": None}
#: The lists a kernel (sim.kernel) leaves unmade when every job is done, each one's value in the state the
#: general loop ends in; ``since`` is the start times themselves and ``seg_start`` a copy of them. Made at
#: their first read (after a replay usually never): six lists of 1.75 M items cost about 0.1 s.
_ALL_DONE: dict[str, Any] = {"remaining": 0.0, "state": DONE, "epoch": 1, "expected_end": INF, "since": None,
                             "seg_start": None}


class Engine(Transitions):
    """Replays a workload under one policy (one instance per partition). Use :func:`simulate`."""

    COORDINATOR = -1  # timer owner of the coordinator (partitions are 0..P-1)
    RELATIVE_FAILURES = True  # understands Failure.after: fail a job once it has done N s of work

    def __getattr__(self, name: str) -> Any:
        """A per-job list of :data:`_PER_JOB`, made at its first use (then an ordinary attribute); and
        ``predicted`` without duration predictions: the workload's durations, read at first use (the list
        is one the workload may make only then: sim.workload.DEFERRED_LISTS)."""
        if "workload" not in self.__dict__ or (name not in _PER_JOB and name != "predicted"):
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        started = self.__dict__.get("all_done_from")  # the start times a kernel ended with, every job done
        if started is not None and name in _ALL_DONE:
            if name == "since":  # the start list itself, as the Python kernel leaves it
                values = started if isinstance(started, list) else started.tolist()
            elif name == "seg_start":
                values = list(started) if isinstance(started, list) else started.tolist()
            else:
                values = [_ALL_DONE[name]] * len(self.workload)
        elif name == "predicted":
            values = self.workload.duration
        elif name == "remaining":
            values = list(self.workload.duration)
        else:
            values = [_PER_JOB[name]] * len(self.workload)
        self.__dict__[name] = values
        return values

    def __init__(self, workload: Workload, policy_factory: Callable[[], "Policy"], *,
                 placement: str | Placement = "consolidate",
                 predictions: "Sequence[float] | dict[str, Sequence[float]] | None" = None,
                 check_invariants: bool = False, record_events: bool = False,
                 time_decisions: bool = False, progress: Callable[[int, int], None] | None = None,
                 policy_name: str = "policy", seed: int = 0,
                 failures: "Iterable[Failure] | None" = None, restart: "RestartRule | None" = None,
                 performance: "PerformanceModel | None" = None,
                 coordinator: "Coordinator | type[Coordinator] | None" = None, fast_path: bool | None = None,
                 watchdog: bool = True):
        self.workload = workload
        #: Stop a replay that would not end (ReplayStalled, see _watchdog); False only for tests.
        self.watchdog = bool(watchdog)
        # The specialised loop of sim.kernel where it applies (None: on unless SCHEDCAST_FAST_PATH=0).
        self.fast_path = fast_path_default() if fast_path is None else bool(fast_path)
        n = len(workload)
        sub = workload.column("submit")  # the array build_workload made the list from (no conversion)
        if len(sub) > 1 and bool((sub[1:] < sub[:-1]).any()):  # sub[i] > sub[i + 1] somewhere
            raise SimulationError("workload is not sorted by submission time")
        if not np.isfinite(sub).all():  # a NaN passes the order check and then never arrives: no end
            raise SimulationError("submission times must be finite numbers")
        self.policy_name = policy_name
        self.seed = int(seed)
        self.partition_of = list(workload.partition)  # transfers change it; the workload stays as given
        self.now = 0.0
        self.heap: list[tuple] = []
        self._seq = 0
        # The per-job lists of the general loop (state, times, accumulators: _PER_JOB) are made on first
        # use (__getattr__): the kernel never reads most of them.
        # Predictions by name; a plain list means durations (as before).
        if predictions is None:
            self.predictions: dict[str, Sequence[float]] = {}
        elif isinstance(predictions, dict):
            self.predictions = dict(predictions)
        else:
            self.predictions = {"duration": predictions}
        for kind, values in self.predictions.items():
            if len(values) != n:
                raise SimulationError(f"{kind!r} predictions have {len(values)} values for {n} jobs")
        if "duration" in self.predictions:  # else the workload's durations, at first use (__getattr__)
            predicted = self.predictions["duration"]
            self.predicted = predicted if isinstance(predicted, list) else list(predicted)
        # Requests in their hot-path form: the GPU count for a spreadable whole-GPU job of any model.
        self.demand = workload.gpu_demand
        self.milli = workload.gpu_milli
        if workload.simple:
            self.requests: list[Any] = workload.gpus
        else:
            self.requests = [g if sp and t is None else workload.request(j)
                         for j, (g, sp, t) in enumerate(zip(workload.gpus, workload.spread, workload.gpu_type))]
        self.used_gpus = 0  # job-GPUs running
        self.held_gpus = 0  # physical GPUs allocated (packing and fractions share them)
        self.alloc_times = array("d")
        self.alloc_used = array("d")
        self.alloc_held = array("d")
        self.check_invariants = check_invariants
        self.finished_unchecked: list[int] = []
        self.completions = [0] * n if check_invariants else None
        self.event_log: list[tuple] | None = [] if record_events else None
        self.time_decisions = time_decisions
        self.decision_seconds: list[float] = []
        self.progress = progress
        self.events = 0
        self.unfinished = n
        self.failed_count = 0
        self.fail_cause: dict[int, str] = {}  # job -> cause of its latest failure
        self.performance: "PerformanceModel | None" = None
        place = placement if isinstance(placement, Placement) else None
        self.contexts = [Context(self, p, place or make_placement(placement))
                         for p in range(len(workload.cluster.partitions))]
        self._dirty = [False] * len(self.contexts)
        self._dirty_list: list[int] = []
        self._what_if: dict[int, tuple] = {}  # partition -> (pool version, records released, scratch pool)
        self._failures = sorted(failures or (), key=lambda f: f.time)
        # Relative failures ("after N s of work", a trace's failed attempt) strike wherever and whenever the
        # job runs; a job's k-th relative failure strikes in the attempt that reaches its work offset.
        self._after: dict[int, list] = {}
        for f in self._failures:
            if getattr(f, "after", None) is not None:
                self._after.setdefault(self._job_index(f.job), []).append(f)
        if self._after:
            self._failures = [f for f in self._failures if getattr(f, "after", None) is None]
        # Attempt starts are tracked for failures and for evictions that keep checkpoints.
        checkpoint = workload.checkpoint  # a checkpoint < INF? (list.count: the usual all-INF list at C speed)
        none = isinstance(checkpoint, list) and checkpoint.count(INF) == len(checkpoint)
        self._track_attempts = (bool(self._failures) or bool(self._after)
                                or (not none and any(map(INF.__gt__, checkpoint))))
        self.overhead: dict[int, float] = {}  # job -> extra load time of its next start
        self.load_extra: dict[int, float] = {}  # loading job -> the overhead its current load includes
        if restart is None:
            from sim.failures import RestartRule

            restart = RestartRule()
        self.restart = restart
        self.policies: list[Any] = []  # one sim.policies.base.Policy per partition
        for ctx in self.contexts:
            policy = policy_factory()
            policy.bind(ctx)
            self.policies.append(policy)
        if coordinator is None and self.policies:
            coordinator = getattr(type(self.policies[0]), "coordinator_class", None)
        if isinstance(coordinator, type):
            coordinator = coordinator()
        self.coordinator = coordinator
        if coordinator is not None:
            from sim.coordinator import ClusterContext

            coordinator.bind(ClusterContext(self))
        if performance is not None:
            self.set_performance(performance)

    def set_performance(self, model: "PerformanceModel | None") -> None:
        self.performance = model
        if model is not None:
            self.bind_performance(model)

    def bind_performance(self, model: "PerformanceModel") -> None:
        """Give a performance model the replay's workload and its partitions' placements."""
        model.bind(self.workload, [c.placement for c in self.contexts])

    def rng(self, stream: str, partition: int):
        """numpy Generator from (run seed, stream, partition); -1 is the coordinator's."""
        import numpy as np

        key = zlib.crc32(stream.encode())
        return np.random.default_rng(np.random.SeedSequence([self.seed & 0xFFFFFFFF, key, partition + 1]))

    def set_timer(self, at: float, payload: Any, owner: int) -> None:
        if not at >= self.now:  # also NaN, which no heap orders: the loop would spin for ever
            what = "in the past" if at < self.now else "not a time"
            raise SimulationError(f"policy {self.policy_name!r} set a timer at {at} s, {what} (now {self.now:g} s)")
        self._seq += 1
        heapq.heappush(self.heap, (at, EV_TIMER, self._seq, -1 - owner if owner >= 0 else len(self.contexts),
                                   payload))

    # -- transitions ---------------------------------------------------------------------------
    def partition_index(self, partition: int | str) -> int:
        """A partition given by number or by name."""
        return partition if isinstance(partition, int) else self.workload.cluster.index[partition]

    def mark_dirty(self, p: int) -> None:
        if not self._dirty[p]:
            self._dirty[p] = True
            self._dirty_list.append(p)

    def all_done(self, start: list[float] | np.ndarray) -> None:
        """Every job done, job j started at ``start[j]`` (a kernel's end): the state lists of :data:`_ALL_DONE`
        are made from it at their first read, replacing the ones the kernel worked with."""
        for name in _ALL_DONE:
            self.__dict__.pop(name, None)
        self.all_done_from = start

    # -- invariants ------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise InvariantViolation if an invariant does not hold now (see sim.invariants.check)."""
        _check(self)

    def run(self) -> SimResult:
        wall0 = _time.perf_counter()
        #: Which loop replayed: "kernel" (sim.kernel), "tiresias-kernel" (sim.kernel_tiresias), both proven
        #: equal to the general loop by tests, or "general".
        self.loop = "general"
        if self.fast_path:
            if _kernel_eligible(self) is None:
                self.loop = "kernel"
                self.events = _run_fast(self)
            elif _tiresias_eligible(self) is None:
                self.loop = "tiresias-kernel"
                self.events = _run_tiresias(self)
            if self.loop != "general":
                return self._finish_run(wall0)
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
        timers = 0  # timer events among them (the watchdog's idle rule)
        progress, next_progress = self.progress, 0
        alloc_times, alloc_used, alloc_held = self.alloc_times, self.alloc_used, self.alloc_held
        last_used = last_held = -1
        time_decisions, decision_seconds = self.time_decisions, self.decision_seconds
        check = self.check_invariants
        completions = self.completions
        perf = _time.perf_counter
        coord = self.coordinator
        n_parts = len(contexts)
        for f in self._failures:
            self._seq += 1
            heapq.heappush(heap, (f.time, EV_FAILURE, self._seq, -1, f))
        watch_next = self._watch_start() if self.watchdog else 1 << 62
        for policy in policies:
            policy.on_start()
        if coord is not None:
            coord.on_start()

        while True:
            if events >= watch_next:
                watch_next = self._watchdog(events, timers, ai < n)
            t_arr = submit[ai] if ai < n else INF
            t_heap = heap[0][0] if heap else INF
            now = t_arr if t_arr < t_heap else t_heap
            if not now < INF:
                if now == INF:
                    break
                raise SimulationError(f"policy {self.policy_name!r}: an event at time {now} (not a time) after "
                                      f"t={self.now:g} s; a speed or a duration that is not a number?")
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
                    if check:
                        completions[job] += 1
                        if completions[job] > 1 or state[job] != RUNNING:
                            raise InvariantViolation("each job completes at most once", time=now, job=job,
                                                     detail=f"completion {completions[job]} while "
                                                            f"{STATE_NAMES[state[job]]}")
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
                    self.log("finish", job)
                    if check:
                        self.finished_unchecked.append(job)
                    policies[p].on_finish(job)
                elif kind == EV_SAVED:
                    self.save[job] += now - since[job]
                    self._release(ctx, job)
                    state[job] = QUEUED
                    since[job] = now
                    self.log("saved", job)
                    policies[p].on_requeue(job)
                else:  # EV_LOADED
                    self.load[job] += now - since[job]
                    self.log("loaded", job)
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
                self.log("arrive", job)
                policies[p].on_arrival(job)
                if not dirty[p]:
                    dirty[p] = True
                    dirty_list.append(p)
            # 3. Timers at `now`.
            while heap and heap[0][0] == now and heap[0][1] == EV_TIMER:
                _, _, _, neg_part, payload = heappop(heap)
                events += 1
                timers += 1
                if events >= watch_next:  # a timer that re-arms itself at `now` never leaves this loop
                    watch_next = self._watchdog(events, timers, ai < n)
                if neg_part == n_parts:
                    coord.on_timer(payload)
                    continue
                p = -1 - neg_part
                policies[p].on_timer(payload)
                if not dirty[p]:
                    dirty[p] = True
                    dirty_list.append(p)
            # 3b. Node repairs, failures and restarts at `now`.
            while heap and heap[0][0] == now and heap[0][1] > EV_TIMER:
                events += 1
                self._lifecycle_event(heappop(heap))
            # Events pushed at `now` by the handlers above (zero-length loads, say) run next round.
            if heap and heap[0][0] == now and (heap[0][1] < EV_ARRIVAL or heap[0][1] > EV_TIMER):
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
            if coord is not None:
                coord.after_schedule()
                i = 0
                while i < len(dirty_list):  # partitions its actions touched schedule again now
                    p = dirty_list[i]
                    i += 1
                    dirty[p] = False
                    policies[p].schedule()
                dirty_list.clear()
            if self.used_gpus != last_used or self.held_gpus != last_held:
                last_used, last_held = self.used_gpus, self.held_gpus
                alloc_times.append(now)
                alloc_used.append(last_used)
                alloc_held.append(last_held)
            if check:
                try:
                    self.check()
                except InvariantViolation as exc:
                    raise exc.at(now) from None
            if progress is not None and done_count >= next_progress:
                progress(done_count, n)
                next_progress = done_count + max(1, n // 200)

        self.events = events
        self.unfinished = n - done_count - self.failed_count
        return self._finish_run(wall0)

    def _watch_start(self) -> int:
        """Set the watchdog's bounds from the workload; returns the event count of its first look."""
        w = self.workload
        jobs = len(w) + len(self._failures) + sum(len(v) for v in self._after.values())
        gpus = sum(p.gpus for p in w.cluster.partitions)
        self._stall_limit = STALL_EVENTS + STALL_PER_JOB * jobs
        self._events_base = EVENTS_BASE + EVENTS_PER_JOB * jobs
        self._events_rate = EVENTS_PER_PARTITION * (len(self.contexts) + 1) + gpus
        self._t0 = float(w.submit[0]) if len(w) else 0.0
        self._watch_now, self._watch_events = -INF, 0
        longest = max(map(max, (w.duration, w.load_time, w.save_time))) if len(w) else 0.0
        span = float(w.submit[-1]) - self._t0 if len(w) else 0.0
        memories = [float(getattr(p, "memory_s", 0.0)) for p in self.policies]
        memory = max((span if m == INF else m for m in memories), default=0.0)
        self._idle_limit = IDLE_FACTOR * 3 * float(longest) + IDLE_BASE + memory
        self._busy_events, self._busy_at = -1, self._t0
        return WATCH_EVERY

    def _watchdog(self, events: int, timers: int = 0, arrivals_left: bool = True) -> int:
        """Every WATCH_EVERY events: stop (:class:`ReplayStalled`) a replay whose simulated time stopped
        advancing (more than ``_stall_limit`` events at one instant), whose events outrun what the
        workload explains (more than ``_events_base + _events_rate x`` simulated seconds since the first
        submission), or that has run nothing but timers for ``_idle_limit`` simulated seconds with nothing
        else to come (no arrival left, only timers in the heap: no finish, load, save, restart, repair or
        failure pending, each of which a long job or repair may put far ahead). The bounds
        are counts of events and simulated times, so a replay stops at the same event on every machine.
        Returns the event count of the next look."""
        now = self.now
        busy = events - timers
        if busy != self._busy_events or arrivals_left or any(entry[1] != EV_TIMER for entry in self.heap):
            self._busy_events, self._busy_at = busy, now
        elif now - self._busy_at > self._idle_limit:
            raise ReplayStalled(
                f"policy {self.policy_name!r}: nothing but its timers from t={self._busy_at:g} s to t={now:g} s "
                f"with {self.unfinished} of {len(self.workload)} jobs unfinished, longer than the "
                f"{self._idle_limit:,.0f} s this workload explains; the watchdog stopped the replay (a timer "
                "re-armed for ever, or queued jobs that never start?)")
        bound = self._events_base + self._events_rate * max(0.0, now - self._t0)
        if now != self._watch_now:
            self._watch_now, self._watch_events = now, events
        elif events - self._watch_events > self._stall_limit or events > bound:
            raise ReplayStalled(
                f"policy {self.policy_name!r}: simulated time stopped advancing at t={now:g} s "
                f"({events - self._watch_events:,} events at that instant; this workload explains "
                f"{min(self._stall_limit, int(bound)):,}); the watchdog stopped the replay (a timer re-armed "
                "at the current time, a period or tick of 0?)")
        if events > bound:
            raise ReplayStalled(
                f"policy {self.policy_name!r}: {events:,} events by simulated time t={now:g} s, more than the "
                f"{bound:,.0f} this workload explains ({EVENTS_PER_JOB} per job and failure and "
                f"{self._events_rate:,} per simulated second); the watchdog stopped the replay (a period, tick "
                "or interval too small?)")
        return events + WATCH_EVERY

    def _finish_run(self, wall0: float) -> SimResult:
        """End hooks, the unfinished-jobs check, merged policy stats and the result (either loop)."""
        w, n, policies, coord = self.workload, len(self.workload), self.policies, self.coordinator
        progress, events = self.progress, self.events
        for policy in policies:
            policy.on_end()
        if coord is not None:
            coord.on_end()
        if self.unfinished:
            state = self.state
            done_count = n - self.unfinished - self.failed_count
            stuck = [j for j in range(n) if state[j] not in (DONE, FAILED)][:5]
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
        if coord is not None:
            stats.update(coord.stats())
        return SimResult(
            workload=w, policy=self.policy_name, first_start=self.first_start, end=self.end,
            wait=self.wait, load=self.load, train=self.train, save=self.save, futile=self.futile,
            preemptions=self.preemptions, work_done=self.work_done, alloc_times=self.alloc_times,
            alloc_used=self.alloc_used, alloc_held=self.alloc_held, events=events, wall_seconds=_time.perf_counter() - wall0,
            decision_seconds=self.decision_seconds, evictions=self.evictions, lost=self.lost,
            event_log=self.event_log, policy_stats=stats, failures=self.failures, lost_work=self.lost_work,
            # no job failed (the common case): all-False flags, kept as an array until read as a list
            failed=[st == FAILED for st in self.state] if self.failed_count else np.zeros(n, dtype=bool),
            seed=self.seed, loop=self.loop,
        )

    def _lifecycle_event(self, entry: tuple) -> None:
        """A node repair, a failure or a restart (events after every job ended change nothing)."""
        _, kind, _, job, payload = entry
        if kind == EV_RESTART:
            if payload != self.epoch[job] or self.state[job] != RESTARTING:
                return
            self.state[job] = QUEUED  # ``since`` stays at the failure: the delay counts as waiting
            p = self.partition_of[job]
            self.log("restart", job)
            self.policies[p].on_requeue(job)
            self.mark_dirty(p)
        elif kind == EV_REPAIR:
            p, node = payload
            self.contexts[p].pool.set_up(node)
            self.log("node-up", -1, (p, node))
            self.mark_dirty(p)
        elif self.unfinished:
            if job >= 0:  # a relative failure armed for one running segment (payload: its epoch)
                if payload == self.epoch[job] and self.state[job] == RUNNING:
                    failure = self._after[job].pop(0)
                    self._fail_job(job, failure.cause or "job failure", failure.restart_delay)
                return
            failure = payload
            if failure.node is not None:
                self._node_failure(failure)
            if failure.job is not None:
                self._fail_job(self._job_index(failure.job), failure.cause or "job failure",
                               failure.restart_delay)

    def _job_index(self, job: int | str) -> int:
        if isinstance(job, int):
            if not 0 <= job < len(self.workload):
                raise SimulationError(f"failure names job {job}; the workload has {len(self.workload)} jobs")
            return job
        index = getattr(self, "_id_index", None)
        if index is None:
            index = self._id_index = {j: i for i, j in enumerate(self.workload.job_id)}
        if job not in index:
            raise SimulationError(f"failure names job id {job!r}, which the workload lacks")
        return index[job]
