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
import math
import time as _time
import zlib
from array import array
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterable, Sequence

from sim.placement import Consolidate, NodePool, Placement, Placement_t, make_placement
from sim.workload import MILLI, Request, Workload

if TYPE_CHECKING:
    from sim.coordinator import Coordinator
    from sim.failures import Failure, RestartRule
    from sim.performance import PerformanceModel
    from sim.policies.base import Policy

from sim.errors import InvariantViolation, SimulationError  # noqa: E402,F401  (re-exported)
from sim.states import (  # noqa: E402,F401  (re-exported)
    DONE, EV_ARRIVAL, EV_FAILURE, EV_FINISH, EV_LOADED, EV_REPAIR, EV_RESTART, EV_SAVED, EV_TIMER, FAILED, INF,
    LOADING, PENDING, QUEUED, RESTARTING, RUNNING, SAVING, STATE_NAMES,
)


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
    failures: list[int] = field(default_factory=list)  # failed attempts per job
    lost_work: list[float] = field(default_factory=list)  # work (s at speed 1) lost to failures and checkpointed evictions, redone
    failed: list[bool] = field(default_factory=list)  # ended in the terminal FAILED state
    seed: int = 0


class Context:
    """What a policy may see and do in its partition. Every decision goes through these methods."""

    __slots__ = ("engine", "partition", "pool", "placement", "running", "_timers", "_rngs", "_largest_share")

    def __init__(self, engine: "Engine", partition: int, placement: Placement):
        self.engine = engine
        self.partition = partition
        part = engine.workload.cluster.partitions[partition]
        types = list(part.gpu_types) if len(part.gpu_types) == len(part.capacities) else None
        self.pool = NodePool(part.capacities, types)
        self.pool.job_class = engine.workload.job_class
        placement.bind(engine.workload)  # placements read the workload when the replay starts (FGD's mix)
        self.placement = placement
        self.running: set[int] = set()  # jobs holding GPUs here: loading, running or saving
        self._rngs: dict[str, Any] = {}
        self._largest_share: tuple = (None, -1, 0)  # (pool, version, largest free milli-GPU share)

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

    def since(self, job: int) -> float:
        """When ``job`` entered its current state (queued, loading, running, saving, restarting)."""
        return self.engine.since[job]

    def speed(self, job: int) -> float:
        """``job``'s current speed (work seconds per second; 1 without a performance model)."""
        return self.engine.speed[job]

    def request(self, job: int) -> Request:
        """The job's typed request: pods, GPUs per pod, fraction, GPU model, class, stages."""
        return self.engine.workload.request(job)

    def remaining(self, job: int) -> float:
        """Remaining exclusive work (s) of a job at the current time."""
        e = self.engine
        if e.state[job] == RUNNING:
            return max(0.0, e.remaining[job] - (e.now - e.seg_start[job]) * e.speed[job])
        return e.remaining[job]

    def attained(self, job: int) -> float:
        """GPU-seconds of service attained so far (Tiresias' 2D attained service)."""
        e = self.engine
        return (e.workload.duration[job] - self.remaining(job)) * e._demand[job]

    def expected_end(self, job: int) -> float:
        """When a job holding GPUs will finish if left alone (loading: load end + remaining work)."""
        return self.engine.expected_end[job]

    def prediction(self, job: int, kind: str = "duration") -> float:
        """A per-job estimate by name (``duration`` falls back to the true duration when no predictor
        was given, as before)."""
        if kind == "duration":
            return self.engine.predicted[job]
        values = self.engine.predictions.get(kind)
        if values is None:
            raise SimulationError(f"no {kind!r} predictions were given to this replay; have: "
                                  f"{sorted(self.engine.predictions) or 'none'}")
        return values[job]

    def has_prediction(self, kind: str = "duration") -> bool:
        """Whether predictions of ``kind`` were given (not the oracle fallback)."""
        return kind in self.engine.predictions

    def failure_cause(self, job: int) -> str:
        """The cause of ``job``'s latest failure ('' if it never failed): the Failure's ``cause``, or
        'node N of partition P' / 'job failure'."""
        return self.engine.fail_cause.get(job, "")

    @property
    def seed(self) -> int:
        return self.engine.seed

    def rng(self, stream: str):
        """A numpy Generator deterministic in (run seed, stream name, partition); the same stream
        returns the same generator (its draws continue)."""
        g = self._rngs.get(stream)
        if g is None:
            g = self._rngs[stream] = self.engine.rng(stream, self.partition)
        return g

    @property
    def coordinator(self) -> "Coordinator | None":
        return self.engine.coordinator

    # -- what a policy decides -----------------------------------------------------------------
    def try_start(self, job: int) -> bool:
        """Place with the partition's placement plug-in; start and return True if it fits now."""
        placement = self.placement.place(self.pool, self.engine._req[job])
        if placement is None:
            return False
        self.engine._start(self, job, placement)
        return True

    def start(self, job: int, placement: Placement_t) -> None:
        """Start on an explicit placement (validated against the job's request)."""
        self.engine._validate(self, job, placement)
        self.engine._start(self, job, placement)

    def fits(self, gpus: int) -> bool:
        return self.placement.place(self.pool, gpus) is not None

    def may_fit(self, job: int) -> bool:
        """A cheap necessary condition for ``try_start`` (use it instead of comparing GPU counts with
        ``free_gpus``, which is too strict for fractional jobs: they fit on shared GPUs too)."""
        e = self.engine
        milli = e._milli[job]
        pool = self.pool
        if not milli:
            return e.workload.gpus[job] <= pool.total_free
        if pool.total_free:
            return True
        # The largest free share of a shared GPU, kept per pool version: a queue of fractional jobs asks
        # this once per job per pass, and scanning every shared GPU each time dominated v2023 replays.
        cached = self._largest_share
        if cached[0] is not pool or cached[1] != pool.version:
            largest = max((MILLI - sum(h.values()) for node, shared in pool.shares.items()
                           if node not in pool.cordoned for h in shared.values()), default=0)
            cached = self._largest_share = (pool, pool.version, largest)
        return milli <= cached[2]

    def would_fit(self, job: int, freed: Iterable[int] = ()) -> Placement_t | None:
        """The placement ``job`` would get now if the running jobs ``freed`` (of this partition) gave
        up their GPUs, or None. Changes nothing (a GPU shared by packed jobs frees only if all of them
        are in ``freed``)."""
        return self.engine._would_fit(self, job, freed)

    def fits_monotonically(self, job: int) -> bool:
        """Whether freeing GPUs can never turn a fit of ``job`` into a misfit here (the partition's
        placement is the built-in ``Consolidate`` and the job asks for a plain GPU count on an untyped
        pool), so that "does it fit with these jobs freed?" answers for every subset too."""
        return self.engine._monotone(self, job)

    def fitting_prefix(self, job: int, victims: Sequence[int], misfits: int = 0) -> int:
        """The length of the shortest prefix of ``victims`` (running jobs of this partition) whose
        release would let ``job`` be placed now, or 0 if none does; the caller may say that the first
        ``misfits`` prefixes are known not to fit. Changes nothing; the answer is what asking
        :meth:`would_fit` with each prefix in turn gives, asked more cheaply."""
        return self.engine._fitting_prefix(self, job, victims, misfits)

    def preempt(self, job: int) -> None:
        """Pause a loading or running job; it comes back through policy.on_requeue."""
        self.engine._preempt(self, job)

    def evict(self, job: int, overhead: float = 0.0) -> None:
        """Stop a loading or running job at once, without saving: its GPUs free now and the work since
        it last started training (or since its last checkpoint, for jobs with a checkpoint interval) is
        lost (spot-job eviction). ``overhead`` s of load time are added to its next start. It comes
        back through on_requeue."""
        self.engine._evict(self, job)
        if overhead:
            self.add_overhead(job, overhead)

    def add_overhead(self, job: int, seconds: float) -> None:
        """The next start of ``job`` loads ``seconds`` longer (restart / preemption overhead)."""
        if not (math.isfinite(seconds) and seconds >= 0):
            raise SimulationError(f"overhead for job {job} must be a finite number >= 0, got {seconds}")
        over = self.engine._overhead
        over[job] = over.get(job, 0.0) + float(seconds)

    def pack(self, job: int, host: int, speed_job: float, speed_host: float) -> None:
        """Run a queued job on the GPUs of a running host job; both run at the given speeds."""
        self.engine._pack(self, job, host, speed_job, speed_host)

    def use_performance(self, model: "PerformanceModel | None") -> None:
        """Set the replay's performance model (jobs started from now on get its speeds)."""
        self.engine.set_performance(model)

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
                or self.pool.free[node] != self.pool.capacity[node] or node in self.pool.down:
            raise SimulationError(f"t={e.now}: partition {self.partition_name!r} can move only an idle node; "
                                  f"node {node} is not")
        gpu_type = self.pool.gpu_type[node]
        gpus = self.pool.take_offline(node)
        there = e.contexts[p].pool.bring_online(gpus, gpu_type)
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

    COORDINATOR = -1  # timer owner of the coordinator (partitions are 0..P-1)
    RELATIVE_FAILURES = True  # understands Failure.after: fail a job once it has done N s of work

    def __init__(self, workload: Workload, policy_factory: Callable[[], "Policy"], *,
                 placement: str | Placement = "consolidate",
                 predictions: "Sequence[float] | dict[str, Sequence[float]] | None" = None,
                 check_invariants: bool = False, record_events: bool = False,
                 time_decisions: bool = False, progress: Callable[[int, int], None] | None = None,
                 policy_name: str = "policy", seed: int = 0,
                 failures: "Iterable[Failure] | None" = None, restart: "RestartRule | None" = None,
                 performance: "PerformanceModel | None" = None,
                 coordinator: "Coordinator | type[Coordinator] | None" = None):
        self.workload = workload
        n = len(workload)
        sub = workload.submit
        if any(sub[i] > sub[i + 1] for i in range(n - 1)):
            raise SimulationError("workload is not sorted by submission time")
        self.policy_name = policy_name
        self.seed = int(seed)
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
        self.alloc: list[Any] = [None] * n  # shared allocation record [placement, members, owner]
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
        self.lost = [0.0] * n  # wall time of training lost to evictions and failures
        self.failures = [0] * n
        self.lost_work = [0.0] * n
        self.attempt_start = [0.0] * n  # when the current attempt began training (failures)
        self.attempt_work = [0.0] * n  # work_done when it began
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
        self.predicted = self.predictions.get("duration", workload.duration)
        if not isinstance(self.predicted, list):
            self.predicted = list(self.predicted)
        # Requests in their hot-path form: the GPU count for a spreadable whole-GPU job of any model.
        self._demand = workload.gpu_demand
        self._milli = workload.gpu_milli
        if workload.simple:
            self._req: list[Any] = workload.gpus
        else:
            self._req = [g if sp and t is None else workload.request(j)
                         for j, (g, sp, t) in enumerate(zip(workload.gpus, workload.spread, workload.gpu_type))]
        self.used_gpus = 0  # job-GPUs running
        self.held_gpus = 0  # physical GPUs allocated (packing and fractions share them)
        self.alloc_times = array("d")
        self.alloc_used = array("d")
        self.alloc_held = array("d")
        self.check_invariants = check_invariants
        self._finished_unchecked: list[int] = []
        self._completions = [0] * n if check_invariants else None
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
        self._track_attempts = (bool(self._failures) or bool(self._after)
                                or any(c < INF for c in workload.checkpoint))
        self._overhead: dict[int, float] = {}  # job -> extra load time of its next start
        if restart is None:
            from sim.failures import RestartRule

            restart = RestartRule()
        self.restart = restart
        self.policies: list[Policy] = []
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
            model.bind(self)

    def rng(self, stream: str, partition: int):
        """numpy Generator from (run seed, stream, partition); -1 is the coordinator's."""
        import numpy as np

        key = zlib.crc32(stream.encode())
        return np.random.default_rng(np.random.SeedSequence([self.seed & 0xFFFFFFFF, key, partition + 1]))

    def set_timer(self, at: float, payload: Any, owner: int) -> None:
        if at < self.now:
            raise SimulationError(f"timer at {at} is in the past (now {self.now})")
        self._seq += 1
        heapq.heappush(self.heap, (at, EV_TIMER, self._seq, -1 - owner if owner >= 0 else len(self.contexts),
                                   payload))

    # -- transitions ---------------------------------------------------------------------------
    def _log(self, kind: str, job: int, extra: Any = None) -> None:
        if self.event_log is not None:
            self.event_log.append((self.now, kind, job, extra))

    def _validate(self, ctx: Context, job: int, placement: Placement_t) -> None:
        """An explicit placement must match the job's request (gang, pods, fractions, GPU model)."""
        w, pool = self.workload, ctx.pool
        milli = self._milli[job]
        nodes = [e[0] for e in placement]
        if any(not 0 <= nd < len(pool.capacity) for nd in nodes):
            raise SimulationError(f"job {job}: placement {placement} names a node the partition lacks")
        if milli:
            if len(placement) != w.pods[job] or any(len(e) != 3 or e[2] != milli for e in placement):
                raise SimulationError(f"job {job} needs {w.pods[job]} pods of {milli} milli-GPUs, placement "
                                      f"{placement} differs")
        else:
            if any(len(e) != 2 for e in placement) or sum(c for _, c in placement) != w.gpus[job]:
                raise SimulationError(f"job {job} needs {w.gpus[job]} GPUs, placement "
                                      f"{placement} gives a different number")
            gpp = w.gpus_per_pod[job]
            if not w.spread[job] and any(c % gpp for _, c in placement):
                raise SimulationError(f"job {job}: each pod needs {gpp} GPUs on one node; placement {placement} "
                                      "splits a pod")
        if pool.typed:
            kinds = {pool.gpu_type[nd] for nd in nodes}
            want = w.gpu_type[job]
            if len(kinds) > 1 or (want is not None and kinds != {want}):
                raise SimulationError(f"job {job} must run on one GPU model ({want or 'any'}); placement "
                                      f"{placement} uses {sorted(map(str, kinds))}")

    def _start(self, ctx: Context, job: int, placement: Placement_t) -> None:
        if self.state[job] != QUEUED:
            raise SimulationError(f"t={self.now}: job {job} cannot start from state "
                                  f"{STATE_NAMES[self.state[job]]}")
        pool = ctx.pool
        if self._milli[job]:
            before = pool.total_free
            pool.allocate_shares(placement, job)
            self.held_gpus += before - pool.total_free
            self.used_gpus += self._demand[job]
        else:
            pool.allocate(placement, job)
            g = self.workload.gpus[job]
            self.held_gpus += g
            self.used_gpus += g
        self.alloc[job] = [placement, {job}, job]
        ctx.running.add(job)
        now = self.now
        self.wait[job] += now - self.since[job]
        if self.first_start[job] == INF:
            self.first_start[job] = now
        self._log("start", job, placement)
        if self.performance is not None:
            self._respeed_start(ctx, job)
        lt = self.workload.load_time[job]
        if self._overhead:
            lt += self._overhead.pop(job, 0.0)
        if lt > 0:
            self.state[job] = LOADING
            self.since[job] = now
            self.expected_end[job] = now + lt + self.remaining[job]
            self._push(now + lt, EV_LOADED, job)
        else:
            self._begin_training(job)

    # -- placement-dependent speed ----------------------------------------------------------------
    def _sharers(self, ctx: Context, job: int) -> list[int]:
        """Jobs sharing at least one GPU with ``job`` (fractional pods on the same GPUs, packed partners)."""
        record = self.alloc[job]
        out = set(record[1])
        if len(record[0][0]) == 3:
            shares = ctx.pool.shares
            for node, gpu, _ in record[0]:
                out.update(shares.get(node, {}).get(gpu, ()))
        out.discard(job)
        return sorted(out)

    def _model_speed(self, ctx: Context, job: int) -> float:
        speed = self.performance.speed(job, self.alloc[job][0], self._sharers(ctx, job))
        if not speed > 0:
            raise SimulationError(f"performance model gave job {job} speed {speed}; speeds must be positive")
        return speed

    def _respeed_start(self, ctx: Context, job: int) -> None:
        self.speed[job] = self._model_speed(ctx, job)
        for other in self._sharers(ctx, job):
            if len(self.alloc[other][1]) == 1:  # packed pairs keep the speeds their policy gave
                self._set_speed(other, self._model_speed(ctx, other))

    def _push(self, at: float, kind: int, job: int) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (at, kind, self._seq, job, self.epoch[job]))

    def _begin_training(self, job: int) -> None:
        now = self.now
        self.state[job] = RUNNING
        self.since[job] = now
        self.seg_start[job] = now
        if self._track_attempts:
            self.attempt_start[job] = now
            self.attempt_work[job] = self.work_done[job]
        end = now + self.remaining[job] / self.speed[job]
        self.expected_end[job] = end
        self._push(end, EV_FINISH, job)
        if self._after:
            self._arm_after(job)

    def _arm_after(self, job: int) -> None:
        """Schedule the job's next relative failure in this running segment (if it comes before the end)."""
        pending = self._after.get(job)
        if not pending:
            return
        left = max(0.0, pending[0].after - self.work_done[job])
        if left >= self.remaining[job]:
            return  # it finishes first
        self._seq += 1
        heapq.heappush(self.heap, (self.now + left / self.speed[job], EV_FAILURE, self._seq, job, self.epoch[job]))

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
        if members:
            ctx.pool.version += 1
            self.used_gpus -= self._demand[job]
            # A packed partner keeps the GPUs and runs solo again.
            if record[2] == job:  # the pool's holder record passes to a partner
                heir = min(members)
                record[2] = heir
                if len(record[0][0]) == 3:  # shares
                    for node, gpu, _ in record[0]:
                        h = ctx.pool.shares[node][gpu]
                        if job in h:
                            h[heir] = h.pop(job)
                else:
                    for node, _ in record[0]:
                        h = ctx.pool.holders[node]
                        if job in h:
                            h[heir] = h.pop(job)
            perf = self.performance
            for other in members:
                self._set_speed(other, 1.0 if perf is None else self._model_speed(ctx, other))
        elif len(record[0][0]) == 3:  # the last holder of fractional shares
            self.used_gpus -= self._demand[job]
            self._milli_owner_release(ctx, record, job)
        else:
            ctx.pool.release(record[0], record[2])
            self.used_gpus -= self._demand[job]
            self.held_gpus -= self.workload.gpus[record[2]]

    def _milli_owner_release(self, ctx: Context, record: list, job: int) -> None:
        pool = ctx.pool
        before = pool.total_free
        sharers = self._sharers_of(ctx, record[0], record[2]) if self.performance is not None else ()
        pool.release_shares(record[0], record[2])
        self.held_gpus -= pool.total_free - before
        for other in sharers:
            if self.alloc[other] is not None and len(self.alloc[other][1]) == 1:
                self._set_speed(other, self._model_speed(self.contexts[self.partition_of[other]], other))

    def _sharers_of(self, ctx: Context, placement: Placement_t, job: int) -> list[int]:
        out: set[int] = set()
        for node, gpu, _ in placement:
            out.update(ctx.pool.shares.get(node, {}).get(gpu, ()))
        out.discard(job)
        return sorted(out)

    def _would_fit(self, ctx: Context, job: int, freed: Iterable[int]) -> Placement_t | None:
        """Would ``job`` fit if the records all of whose members are in ``freed`` were released?

        Whole-GPU case (the common one): answered on a scratch copy of the pool kept while the pool
        does not change, so that preemptive policies asking with a growing victim list pay only for
        the new victims; a GPU count check comes first and avoids placing at all. Otherwise: release
        on the pool itself, place, and restore it exactly. Either way nothing visible changes."""
        pool, alloc, gpus, part_of, p = ctx.pool, self.alloc, self.workload.gpus, self.partition_of, ctx.partition
        if not isinstance(freed, (set, frozenset)):
            freed = set(freed)
        if not self._milli[job] and not pool.shares:
            cached = self._what_if.get(p)
            if cached is not None and cached[0] == pool.version and cached[1] <= freed:
                _, jobs, scratch, gained, pending = cached
                new = freed - jobs
            else:
                jobs, scratch, gained, pending, new = frozenset(), None, 0, [], freed
            simple = True
            added = []
            for j in new:
                record = alloc[j]
                if record is None or part_of[j] != p:
                    raise SimulationError(f"t={self.now}: job {j} holds no GPUs in partition {p}")
                if len(record[1]) > 1:
                    simple = False  # packed GPUs free only with all their jobs: the general path
                    break
                added.append(record)
                gained += gpus[j]
            if simple:
                pending = pending + added
                if gpus[job] > pool.total_free + gained:
                    self._what_if[p] = (pool.version, jobs | new, scratch, gained, pending)
                    return None
                if scratch is None:
                    scratch = pool.scratch()
                for record in pending:
                    scratch.release(record[0])
                self._what_if[p] = (pool.version, jobs | new, scratch, gained, [])
                return ctx.placement.place(scratch, self._req[job])
        records, seen = [], set()
        for j in freed:
            record = alloc[j]
            if record is None or part_of[j] != p:
                raise SimulationError(f"t={self.now}: job {j} holds no GPUs in partition {p}")
            key = id(record)
            if key in seen:
                continue
            seen.add(key)
            if len(record[1]) > 1 and not record[1] <= freed:
                continue
            records.append(record)
        done = []
        try:
            for record in records:
                if len(record[0][0]) == 3:
                    pool.release_shares(record[0], record[2])
                else:
                    pool.release(record[0], record[2])
                done.append(record)
            return ctx.placement.place(pool, self._req[job])
        finally:
            for record in reversed(done):
                if len(record[0][0]) == 3:
                    pool.allocate_shares(record[0], record[2])
                else:
                    pool.allocate(record[0], record[2])

    def _monotone(self, ctx: Context, job: int) -> bool:
        return type(ctx.placement) is Consolidate and type(self._req[job]) is int and not ctx.pool.typed

    def _fitting_prefix(self, ctx: Context, job: int, victims: Sequence[int], misfits: int) -> int:
        """See Context.fitting_prefix. Prefixes are asked in growing order (the what-if scratch pool
        then only releases the new victim) and only once the freed GPUs could cover the job. When a fit
        can never turn into a misfit by freeing more (``_monotone``), the whole list is asked first:
        if even that does not fit, no prefix does and the per-prefix placements are skipped (most
        failing preemption searches of Tiresias on Philly end so)."""
        if misfits >= len(victims):
            return 0
        if self._monotone(ctx, job) and self._would_fit(ctx, job, set(victims)) is None:
            return 0
        gpus, milli = self.workload.gpus, self._milli
        need = gpus[job] if not milli[job] else 0
        room = ctx.pool.total_free
        freed: set[int] = set()
        for k, v in enumerate(victims, 1):
            freed.add(v)
            room = room + gpus[v] if not milli[v] else INF
            if k > misfits and room >= need and self._would_fit(ctx, job, freed) is not None:
                return k
        return 0

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
            if self._after:
                self._arm_after(job)
        else:
            self.speed[job] = speed
            if self.state[job] == LOADING:
                self.expected_end[job] = self.since[job] + self.workload.load_time[job] + self.remaining[job] / speed

    def _stop(self, job: int, verb: str, ctx: Context | None = None) -> int:
        """Common bookkeeping of a preemption or eviction; returns the state the job was in."""
        st = self.state[job]
        if st not in (LOADING, RUNNING):
            raise SimulationError(f"t={self.now}: job {job} cannot be {verb} while {STATE_NAMES[st]}")
        if ctx is not None and self.partition_of[job] != ctx.partition:
            raise SimulationError(f"t={self.now}: job {job} runs in partition {self.partition_of[job]}; "
                                  f"partition {ctx.partition} cannot have it {verb}")
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
        st = self._stop(job, "preempted", ctx)
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
        st = self._stop(job, "evicted", ctx)
        self.evictions[job] += 1
        if st == RUNNING and self.workload.checkpoint[job] < INF:
            self._lose_since_checkpoint(job)
        elif st == RUNNING:  # progress since the last start is lost and will be redone
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
        ctx.pool.version += 1
        self.used_gpus += self._demand[job]
        ctx.running.add(job)
        now = self.now
        self.wait[job] += now - self.since[job]
        if self.first_start[job] == INF:
            self.first_start[job] = now
        self._log("pack", job, host)
        self.speed[job] = speed_job
        self._set_speed(host, speed_host)
        lt = self.workload.load_time[job]
        if self._overhead:
            lt += self._overhead.pop(job, 0.0)
        if lt > 0:
            self.state[job] = LOADING
            self.since[job] = now
            self.expected_end[job] = now + lt + self.remaining[job] / speed_job
            self._push(now + lt, EV_LOADED, job)
        else:
            self._begin_training(job)

    # -- failures ----------------------------------------------------------------------------------
    def _fail_job(self, job: int, cause: str, delay: float | None = None) -> None:
        """A failure hits ``job``: stop it, lose the work since its last checkpoint, apply the restart
        rule. Jobs not holding GPUs are not affected; a saving job keeps its checkpoint."""
        st = self.state[job]
        if st not in (LOADING, RUNNING, SAVING):
            return
        ctx = self.contexts[self.partition_of[job]]
        now = self.now
        self.epoch[job] += 1
        self.expected_end[job] = INF
        if st == SAVING:  # the checkpoint is written remotely: the save counts as done
            self.save[job] += now - self.since[job]
            self._log("saved", job, cause)
            self._requeue(ctx, job)
            self.mark_dirty(ctx.partition)
            return
        self.failures[job] += 1
        if st == LOADING:
            self.load[job] += now - self.since[job]
        else:
            self._lose_since_checkpoint(job)
        self._release(ctx, job)
        self._log("fail", job, cause)
        self.fail_cause[job] = cause
        on_failure = getattr(self.policies[ctx.partition], "on_failure", None)
        if self.restart.restart(self.failures[job]):
            self.state[job] = RESTARTING
            self.since[job] = now
            if on_failure is not None:
                asked = on_failure(job)  # a policy may choose the restart delay (seconds)
                if isinstance(asked, (int, float)) and not isinstance(asked, bool):
                    if not (math.isfinite(asked) and asked >= 0):
                        raise SimulationError(f"t={now}: on_failure({job}) returned restart delay {asked}; "
                                              "need a finite number >= 0")
                    delay = float(asked)
            self._push(now + (self.restart.delay if delay is None else delay), EV_RESTART, job)
        else:
            self.state[job] = FAILED
            self.end[job] = now
            self.unfinished -= 1
            self.failed_count += 1
            self._log("failed", job)
            if on_failure is not None:
                on_failure(job)
        self.mark_dirty(ctx.partition)

    def _lose_since_checkpoint(self, job: int) -> None:
        """A running job stops without saving: fold its segment, then give back the work done since
        its last checkpoint (every ``checkpoint`` s of training since the attempt began; none: the
        whole attempt). The lost wall time stays in ``train`` and is counted in ``lost``."""
        self._checkpoint(job)
        attempt = self.now - self.attempt_start[job]
        work = self.work_done[job] - self.attempt_work[job]
        interval = self.workload.checkpoint[job]
        kept_wall = math.floor(attempt / interval) * interval if interval < INF else 0.0
        kept = work * (kept_wall / attempt) if attempt > 0 else 0.0
        lost_work = work - kept
        self.work_done[job] -= lost_work
        self.remaining[job] += lost_work
        self.lost_work[job] += lost_work
        self.lost[job] += attempt - kept_wall

    def _node_failure(self, failure: "Failure") -> None:
        p = self.partition_index(failure.partition)
        ctx = self.contexts[p]
        pool, node = ctx.pool, failure.node
        if not 0 <= node < len(pool.capacity):
            raise SimulationError(f"t={self.now}: failure names node {node}; partition {p} has "
                                  f"{len(pool.capacity)} node slots")
        if not pool.capacity[node] or node in pool.down:
            return  # moved away, or already down
        for job in sorted(set(pool.jobs_on(node)) | self._guests_on(ctx, node)):
            self._fail_job(job, failure.cause or f"node {node} of partition {p}", failure.restart_delay)
        pool.set_down(node)
        self._log("node-down", -1, (p, node))
        self._seq += 1
        heapq.heappush(self.heap, (self.now + failure.repair, EV_REPAIR, self._seq, -1, (p, node)))
        self.mark_dirty(p)

    def _guests_on(self, ctx: Context, node: int) -> set[int]:
        """Packed guests sharing a host's GPUs on ``node`` (the pool records only the holder)."""
        out = set()
        for job in ctx.pool.jobs_on(node):
            record = self.alloc[job]
            if record is not None:
                out.update(record[1])
        return out

    def partition_index(self, partition: int | str) -> int:
        """A partition given by number or by name."""
        return partition if isinstance(partition, int) else self.workload.cluster.index[partition]

    def mark_dirty(self, p: int) -> None:
        if not self._dirty[p]:
            self._dirty[p] = True
            self._dirty_list.append(p)

    # -- invariants ------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise InvariantViolation (never an assert: ``python -O`` keeps these) if, now: a GPU holds
        more than its capacity (shares included), GPUs held by jobs differ from GPUs allocated, a job
        holds GPUs while not active, GPU totals are out of sync, or a finished job did not do exactly
        its work (GPU-seconds conserved)."""
        now, w = self.now, self.workload
        total_held = 0
        for p, ctx in enumerate(self.contexts):
            pool = ctx.pool
            try:
                pool.check()
            except InvariantViolation as exc:
                raise exc.at(now, p) from None
            owners = set()
            for j in ctx.running:
                if self.state[j] not in (LOADING, RUNNING, SAVING):
                    raise InvariantViolation("only active jobs hold GPUs", time=now, job=j, partition=p,
                                             detail=f"state {STATE_NAMES[self.state[j]]}")
                record = self.alloc[j]
                if record is None or j not in record[1]:
                    raise InvariantViolation("a running job has an allocation", time=now, job=j, partition=p)
                owners.add(record[2])
            for j in owners:
                record = self.alloc[j]
                if len(record[0][0]) == 3:
                    for node, gpu, milli in record[0]:
                        if pool.shares.get(node, {}).get(gpu, {}).get(j, 0) < milli:
                            raise InvariantViolation("the pool records every share a job holds", time=now,
                                                     job=j, node=node, partition=p, detail=f"GPU {gpu}")
                else:
                    per_node: dict[int, int] = {}
                    for node, count in record[0]:
                        per_node[node] = per_node.get(node, 0) + count
                    for node, count in per_node.items():
                        if pool.holders[node].get(j) != count:
                            raise InvariantViolation("the pool records the GPUs each job holds", time=now, job=j,
                                                     node=node, partition=p,
                                                     detail=f"{count} allocated, pool says {pool.holders[node].get(j)}")
            recorded = sum(sum(h.values()) for h in pool.holders) + sum(len(s) for s in pool.shares.values())
            allocated = pool.total_capacity - pool.total_free
            if recorded != allocated:
                raise InvariantViolation("GPUs held by jobs equal GPUs allocated", time=now, partition=p,
                                         detail=f"jobs hold {recorded}, pool has {allocated} allocated")
            total_held += allocated
        if self.held_gpus != total_held:
            raise InvariantViolation("physical GPUs held in sync", time=now,
                                     detail=f"engine counts {self.held_gpus}, pools {total_held}")
        for j in self._finished_unchecked:  # jobs done since the last check: all of their work was done
            if self.state[j] != DONE:
                raise InvariantViolation("a finished job stays done", time=now, job=j,
                                         detail=f"state {STATE_NAMES[self.state[j]]}")
            if self._completions[j] != 1:
                raise InvariantViolation("each job completes at most once", time=now, job=j,
                                         detail=f"{self._completions[j]} completions")
            if abs(self.work_done[j] - w.duration[j]) > 1e-6 * max(1.0, w.duration[j]):
                raise InvariantViolation("GPU-seconds conserved: a finished job did exactly its work", time=now,
                                         job=j, detail=f"work done {self.work_done[j]}, duration {w.duration[j]}")
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
        completions = self._completions
        perf = _time.perf_counter
        coord = self.coordinator
        n_parts = len(contexts)
        for f in self._failures:
            self._seq += 1
            heapq.heappush(heap, (f.time, EV_FAILURE, self._seq, -1, f))
        for policy in policies:
            policy.on_start()
        if coord is not None:
            coord.on_start()

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
        for policy in policies:
            policy.on_end()
        if coord is not None:
            coord.on_end()
        if done_count + self.failed_count != n:
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
            preemptions=self.preemptions, work_done=self.work_done, alloc_times=alloc_times,
            alloc_used=alloc_used, alloc_held=alloc_held, events=events, wall_seconds=_time.perf_counter() - wall0,
            decision_seconds=decision_seconds, evictions=self.evictions, lost=self.lost,
            event_log=self.event_log, policy_stats=stats, failures=self.failures, lost_work=self.lost_work,
            failed=[st == FAILED for st in state], seed=self.seed,
        )

    def _lifecycle_event(self, entry: tuple) -> None:
        """A node repair, a failure or a restart (events after every job ended change nothing)."""
        _, kind, _, job, payload = entry
        if kind == EV_RESTART:
            if payload != self.epoch[job] or self.state[job] != RESTARTING:
                return
            self.state[job] = QUEUED  # ``since`` stays at the failure: the delay counts as waiting
            p = self.partition_of[job]
            self._log("restart", job)
            self.policies[p].on_requeue(job)
            self.mark_dirty(p)
        elif kind == EV_REPAIR:
            p, node = payload
            self.contexts[p].pool.set_up(node)
            self._log("node-up", -1, (p, node))
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
