"""The Context: all a policy sees of the replay and every decision it takes, for one partition.

Policies never hold the engine: the Context keeps it in a private slot and reads the replay's per-job
arrays through it (plain attribute reads, kept on the hot paths); decisions go through the engine's small
internal interface (``start_job``, ``what_if``, ``preempt_job``, ...), which validates them at once."""
from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

from sim.errors import SimulationError
from sim.placement import NodePool, Placement, Placement_t
from sim.states import QUEUED, RUNNING, STATE_NAMES
from sim.workload import MILLI, Request, Workload


class Context:
    """What a policy may see and do in its partition. Every decision goes through these methods."""

    __slots__ = ("_engine", "partition", "pool", "placement", "running", "_timers", "_rngs", "_largest_share")

    def __init__(self, engine: Any, partition: int, placement: Placement):
        self._engine = engine  # private: policies see the replay only through the methods below
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
        return self._engine.now

    @property
    def jobs(self) -> Workload:
        return self._engine.workload

    @property
    def free_gpus(self) -> int:
        return self.pool.total_free

    @property
    def capacity(self) -> int:
        return self.pool.total_capacity

    def state(self, job: int) -> int:
        return self._engine.state[job]

    def since(self, job: int) -> float:
        """When ``job`` entered its current state (queued, loading, running, saving, restarting)."""
        return self._engine.since[job]

    def speed(self, job: int) -> float:
        """``job``'s current speed (work seconds per second; 1 without a performance model)."""
        return self._engine.speed[job]

    def request(self, job: int) -> Request:
        """The job's typed request: pods, GPUs per pod, fraction, GPU model, class, stages."""
        return self._engine.workload.request(job)

    def remaining(self, job: int) -> float:
        """Remaining exclusive work (s) of a job at the current time."""
        e = self._engine
        if e.state[job] == RUNNING:
            return max(0.0, e.remaining[job] - (e.now - e.seg_start[job]) * e.speed[job])
        return e.remaining[job]

    def attained(self, job: int) -> float:
        """GPU-seconds of service attained so far (Tiresias' 2D attained service)."""
        e = self._engine
        return (e.workload.duration[job] - self.remaining(job)) * e.demand[job]

    def load_end(self, job: int) -> float:
        """When a LOADING job's load ends (its load time plus any restart overhead of this start)."""
        return self._engine.load_end(job)

    def expected_end(self, job: int) -> float:
        """When a job holding GPUs will finish if left alone (loading: load end + remaining work)."""
        return self._engine.expected_end[job]

    def prediction(self, job: int, kind: str = "duration") -> float:
        """A per-job estimate by name (``duration`` falls back to the true duration when no predictor
        was given, as before)."""
        if kind == "duration":
            return self._engine.predicted[job]
        values = self._engine.predictions.get(kind)
        if values is None:
            raise SimulationError(f"no {kind!r} predictions were given to this replay; have: "
                                  f"{sorted(self._engine.predictions) or 'none'}")
        return values[job]

    def has_prediction(self, kind: str = "duration") -> bool:
        """Whether predictions of ``kind`` were given (not the oracle fallback)."""
        return kind in self._engine.predictions

    def failure_cause(self, job: int) -> str:
        """The cause of ``job``'s latest failure ('' if it never failed): the Failure's ``cause``, or
        'node N of partition P' / 'job failure'."""
        return self._engine.fail_cause.get(job, "")

    @property
    def seed(self) -> int:
        return self._engine.seed

    def rng(self, stream: str):
        """A numpy Generator deterministic in (run seed, stream name, partition); the same stream
        returns the same generator (its draws continue)."""
        g = self._rngs.get(stream)
        if g is None:
            g = self._rngs[stream] = self._engine.rng(stream, self.partition)
        return g

    def placement_of(self, job: int) -> Placement_t | None:
        """The GPUs ``job`` holds now ([(node, GPUs)] or [(node, GPU, milli-GPUs)]; a packed guest: its
        host's), or None if it holds none."""
        record = self._engine.alloc[job]
        return None if record is None else record[0]

    def sharing(self, job: int) -> frozenset[int]:
        """The jobs holding ``job``'s GPUs together with it (itself and packed partners); empty if it
        holds none."""
        record = self._engine.alloc[job]
        return frozenset() if record is None else frozenset(record[1])

    def holder(self, job: int) -> int | None:
        """The job the pool records as holding ``job``'s GPUs (a packed pair's host; itself when solo)."""
        record = self._engine.alloc[job]
        return None if record is None else record[2]

    @property
    def restart_delay(self) -> float:
        """The restart rule's delay (s) after a failure, when neither the failure nor the policy names one."""
        return self._engine.restart.delay

    @property
    def coordinator(self) -> Any:
        return self._engine.coordinator

    # -- what a policy decides -----------------------------------------------------------------
    def try_start(self, job: int) -> bool:
        """Place with the partition's placement plug-in; start and return True if it fits now."""
        placement = self.placement.place(self.pool, self._engine.requests[job])
        if placement is None:
            return False
        self._engine.start_job(self, job, placement)
        return True

    def start(self, job: int, placement: Placement_t) -> None:
        """Start on an explicit placement (validated against the job's request)."""
        self._engine.validate_placement(self, job, placement)
        self._engine.start_job(self, job, placement)

    def fits(self, gpus: int) -> bool:
        return self.placement.place(self.pool, gpus) is not None

    def may_fit(self, job: int) -> bool:
        """A cheap necessary condition for ``try_start`` (use it instead of comparing GPU counts with
        ``free_gpus``, which is too strict for fractional jobs: they fit on shared GPUs too)."""
        e = self._engine
        milli = e.milli[job]
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
        return self._engine.what_if(self, job, freed)

    def fits_monotonically(self, job: int) -> bool:
        """Whether freeing GPUs can never turn a fit of ``job`` into a misfit here (the partition's
        placement is the built-in ``Consolidate`` and the job asks for a plain GPU count on an untyped
        pool), so that "does it fit with these jobs freed?" answers for every subset too."""
        return self._engine.monotone(self, job)

    def fitting_prefix(self, job: int, victims: Sequence[int], misfits: int = 0) -> int:
        """The length of the shortest prefix of ``victims`` (running jobs of this partition) whose
        release would let ``job`` be placed now, or 0 if none does; the caller may say that the first
        ``misfits`` prefixes are known not to fit. Changes nothing; the answer is what asking
        :meth:`would_fit` with each prefix in turn gives, asked more cheaply."""
        return self._engine.fitting_prefix(self, job, victims, misfits)

    def preempt(self, job: int) -> None:
        """Pause a loading or running job; it comes back through policy.on_requeue."""
        self._engine.preempt_job(self, job)

    def evict(self, job: int, overhead: float = 0.0) -> None:
        """Stop a loading or running job at once, without saving: its GPUs free now and the work since
        it last started training (or since its last checkpoint, for jobs with a checkpoint interval) is
        lost (spot-job eviction). ``overhead`` s of load time are added to its next start. It comes
        back through on_requeue."""
        self._engine.evict_job(self, job)
        if overhead:
            self.add_overhead(job, overhead)

    def add_overhead(self, job: int, seconds: float) -> None:
        """The next start of ``job`` loads ``seconds`` longer (restart / preemption overhead)."""
        if not (math.isfinite(seconds) and seconds >= 0):
            raise SimulationError(f"overhead for job {job} must be a finite number >= 0, got {seconds}")
        over = self._engine.overhead
        over[job] = over.get(job, 0.0) + float(seconds)

    def pack(self, job: int, host: int, speed_job: float, speed_host: float) -> None:
        """Run a queued job on the GPUs of a running host job; both run at the given speeds."""
        self._engine.pack_job(self, job, host, speed_job, speed_host)

    def use_performance(self, model: Any) -> None:
        """Set the replay's performance model (jobs started from now on get its speeds)."""
        self._engine.set_performance(model)

    def prepare_performance(self, model: Any) -> None:
        """Bind a performance model to this replay (its workload and placements) without making it the
        replay's: a policy reads its estimates while another model decides the speeds."""
        self._engine.bind_performance(model)

    @property
    def performance(self) -> Any:
        """The replay's performance model (sim.performance), or None (every job at speed 1)."""
        return self._engine.performance

    def use_placement(self, placement: Placement) -> None:
        """Replace this partition's placement plug-in (``try_start``, ``would_fit`` and the preemption
        searches use it from now on), bound to the replay's workload."""
        placement.bind(self._engine.workload)
        self.placement = placement

    def cordon(self, node: int) -> None:
        """Stop new placements on ``node`` of this partition (its jobs keep running)."""
        self.pool.cordon(node)
        self._engine.log("cordon", -1, (self.partition, node))

    def uncordon(self, node: int) -> None:
        """Take a cordoned node of this partition back into placement (a node that is down stays down)."""
        self.pool.uncordon(node)
        self._engine.log("uncordon", -1, (self.partition, node))

    @property
    def unfinished(self) -> int:
        """Jobs of the whole replay not yet done (periodic timers stop re-arming at 0)."""
        return self._engine.unfinished

    @property
    def partition_name(self) -> str:
        return self._engine.workload.cluster.partitions[self.partition].name

    def transfer(self, job: int, partition: int | str) -> None:
        """Hand a waiting job to another partition's policy (e.g. from a profiling cluster to its VC).
        The caller must already have removed it from its own queue."""
        e = self._engine
        if e.state[job] != QUEUED:
            raise SimulationError(f"t={e.now}: only a waiting job can move, job {job} is "
                                  f"{STATE_NAMES[e.state[job]]}")
        p = e.partition_index(partition)
        nominal = sum(e.workload.cluster.partitions[p].capacities)  # nodes lent out come back
        if e.workload.gpus[job] > nominal:
            raise SimulationError(f"job {job} needs {e.workload.gpus[job]} GPUs; partition {p} has {nominal}")
        e.partition_of[job] = p
        e.log("transfer", job, p)
        e.policies[p].on_transfer(job)
        e.mark_dirty(p)

    def move_node(self, node: int, partition: int | str) -> int:
        """Move an idle node of this partition to another one (Lucid's profiler borrowing idle VC nodes
        on a burst, and giving them back). Returns the node's number in the receiving partition; both
        partitions are scheduled again. Jobs that can no longer fit the smaller partition wait."""
        e = self._engine
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
        e.log("move-node", -1, (self.partition, node, p, there))
        e.mark_dirty(self.partition)
        e.mark_dirty(p)
        return there

    def set_timer(self, at: float, payload: Any = None) -> None:
        """Call policy.on_timer(payload) at time ``at`` (>= now)."""
        self._engine.set_timer(at, payload, self.partition)
