"""Preemptive policies: SRTF on arrival/completion, periodic SRTF (Pollux / Muri / Optimus intervals)
and Tiresias' discretised 2D-LAS. The shared preemptive rule, SRTF and the round mixin are in
sim.policies.head_preemptive (re-exported here, their public home)."""
from __future__ import annotations

import bisect
import heapq
import math
from typing import Annotated, Any, Literal

from features.plugins import PERIOD, SECONDS, Domain

from sim.placement import Consolidate
from sim.states import LOADING, RUNNING
from sim.policies.head_preemptive import HeadPreemptive, PeriodicSrtf, RoundBased, Srtf, _neg

__all__ = ["HeadPreemptive", "PeriodicSrtf", "RoundBased", "Srtf", "Tiresias", "TiresiasRounds", "_neg", "shortest"]

_LEVEL = 1 << 40  # Tiresias' rank: queue * _LEVEL + job (job indices stay far below it)
_JOB = _LEVEL - 1  # rank & _JOB is the job
_ACTIVE = (LOADING, RUNNING)


def shortest(n: int, fits: Any) -> int:
    """The smallest k in 1..n with ``fits(k)``, for a ``fits`` that stays true once true and holds at n
    (a growing prefix of victims only frees more GPUs): by bisection, log2(n) questions."""
    return 1 + bisect.bisect_left(range(1, n), True, key=fits)


#: Tiresias' queue thresholds: attained GPU-service seconds at which a job drops to the next queue.
THRESHOLDS = Domain(gt=0.0, nonempty=True, increasing=True, max_len=64,
                    why="attained GPU-seconds at which a job drops a queue")

class Tiresias(HeadPreemptive):
    """Discretised two-dimensional least-attained-service (2D-LAS): a job's queue is the number of
    thresholds its attained GPU-seconds have passed; lower queues first, FIFO (submission) inside a
    queue; preemptive; decided on arrival, completion and whenever a running job crosses a threshold
    (a timer at the exact crossing time). Work-conserving: when the head cannot be placed even by
    preemption, later jobs may start in idle GPUs. Starvation promotion is not modelled."""

    name = "tiresias"
    summary = "Tiresias discretised 2D-LAS (GPU-seconds queues; param thresholds=3600)"
    citation = "Gu et al., Tiresias, NSDI'19"
    backfill = True
    # Demotion timers that provably fire after the job's end are not set (see _demotion_timer). Under
    # rounds any timer wakes a round, so tiresias-rounds keeps them to stay what it was.
    skip_unreached = True

    def __init__(self, thresholds: Annotated[float | list[float], THRESHOLDS] = 3600.0,
                 backfill: bool | None = None) -> None:
        super().__init__(backfill)
        self.thresholds = sorted([float(thresholds)] if isinstance(thresholds, (int, float)) else
                                 [float(t) for t in thresholds])
        self.level_of: dict[int, int] = {}
        # A failed preemption search, remembered while it provably fails again: (head, its rank, the
        # pool's shape). With a monotone placement (``ctx.fits_monotonically``) the search fails iff the
        # head does not fit with every worse-ranked running job freed, i.e. next to the GPUs held by jobs
        # ranked better (or saving). That stays so until one of those releases GPUs (a finish of a better
        # job, a requeue, a failure), a better-ranked running job drops below the head (a demotion), or
        # the pool's nodes change; starts only take GPUs. Each of these clears it (see the hooks). On
        # Philly ~2/3 of the searches failed and each walked every running job. A search that failed
        # under the one-node rule (_search_nodes) also keeps what each node lacked (_fail_nodes): a
        # release then clears it only if one of the released job's nodes now holds the head (_freed).
        self._failed: tuple | None = None
        self._fail_nodes: tuple | None = None  # (free GPUs per node, victims' GPUs per node, the head's GPUs)
        self._where: dict[int, Any] = {}  # job -> the GPUs it was started on, while it holds them
        # The ranks of the jobs this policy started and that hold GPUs (loading or running), ascending:
        # the eligible victims of a search are a suffix of it, found by bisection. Ranks change only
        # when a running job drops a queue (on_timer -> track), so the list is kept exact by the hooks
        # through which a job stops holding GPUs (finish, preempt, requeue, failure) instead of a lazy
        # heap that every search popped and pushed back whole.
        self._keys: list[int] = []
        self._key_of: dict[int, int] = {}
        # level(): a >= t - 1e-6 for exactly bisect_right(cuts, a) thresholds t (the same floats)
        self._cuts = [t - 1e-6 for t in self.thresholds]
        self._arrivals = 0  # jobs queued so far (arrivals, requeues, transfers)
        self._still: tuple | None = None  # the inputs of the last pass, if it decided nothing
        self._quiet_jobs: tuple | None = None  # (workload, whether its jobs allow _quiet)

    def _pool_shape(self) -> tuple:
        pool = self.ctx.pool
        return (pool.total_capacity, frozenset(pool.cordoned), frozenset(pool.down), tuple(pool.offline))

    def track(self, job: int) -> None:
        self.version += 1
        self._untrack(job)
        key = self._key_of[job] = self.rank(job)
        bisect.insort(self._keys, key)

    def _untrack(self, job: int) -> None:
        key = self._key_of.pop(job, None)
        if key is not None:
            keys = self._keys
            del keys[bisect.bisect_left(keys, key)]

    def candidates(self, job: int) -> list[int] | None:
        failed = self._failed
        if failed is not None and failed[0] == job and failed[2] == self._pool_shape():
            return None
        self._fail_nodes = None
        victims = self._search(job)
        self._failed = None
        if victims is None and self.ctx.fits_monotonically(job):
            self._failed = (job, self.rank(job), self._pool_shape(), self._fail_nodes)
        return victims

    def _freed(self, placement: Any) -> None:
        """GPUs that the remembered failed search counted neither free nor as a victim's are now one of
        these (a better-ranked job ended or dropped below the head, a saved job was requeued): keep the
        memo only while every node of ``placement`` still lacks GPUs for the head. Starts and
        preemptions since the search only lowered what the nodes could give, so the counts kept are
        never below the truth and a memo kept this way still fails."""
        failed = self._failed
        if failed is None:
            return
        nodes = failed[3]
        if nodes is None or placement is None or len(placement[0]) != 2:
            self._failed = None
            return
        free, added, g = nodes
        for node, count in placement:
            total = added[node] = added.get(node, 0) + count
            if free[node] + total >= g:
                self._failed = None
                return

    def _search(self, job: int) -> list[int] | None:
        """The answer of :meth:`HeadPreemptive.candidates` — the shortest prefix of the running jobs
        ranked worse than ``job``, worst first, whose release lets ``job`` be placed — asked in another
        order. The eligible jobs are a suffix of the rank list; the prefixes are asked one by one as
        before, except that once one prefix holds enough GPUs and still does not fit, a monotone
        placement is asked whether all eligible jobs would do: most failing searches end there with
        one more question instead of one per further prefix, and most successful ones (a 1-GPU head
        and a 1-GPU victim) end at the first prefix without it. The placement's answers do not depend
        on the order of the questions, so the victims are the same."""
        ctx = self.ctx
        if self._node_rule(job):
            return self._search_nodes(job)
        keys = self._keys
        low = bisect.bisect_right(keys, self.rank(job))
        i = len(keys)
        state, excluded = ctx.state, self.excluded
        gpus, milli = ctx.jobs.gpus, ctx.jobs.gpu_milli
        need = gpus[job] if not milli[job] else 0
        room = ctx.free_gpus
        eager = self.EAGER
        victims: list[int] = []
        misfit = False  # a prefix with GPUs enough for the job did not fit
        while i > low and len(victims) < eager:
            i -= 1
            victim = keys[i] & _JOB
            if state(victim) not in _ACTIVE or excluded(victim):
                continue
            victims.append(victim)
            room = room + gpus[victim] if not milli[victim] else math.inf
            if room >= need:
                if ctx.would_fit(job, victims) is not None:
                    return victims
                misfit = True
                break
        rest = self._eligible(low, i)
        if not rest:
            return None  # every prefix was asked, or lacked the GPUs
        asked = len(victims)
        victims += rest
        if misfit and ctx.fits_monotonically(job) and ctx.would_fit(job, victims) is None:
            return None  # not even all of them would do
        for k in range(asked + 1, min(eager, len(victims)) + 1):
            victim = victims[k - 1]
            room = room + gpus[victim] if not milli[victim] else math.inf
            if room >= need and ctx.would_fit(job, victims[:k]) is not None:
                return victims[:k]
        if len(victims) <= eager:
            return None
        found = ctx.fitting_prefix(job, victims, eager)
        return victims[:found] if found else None

    def _node_rule(self, job: int) -> bool:
        """Whether the built-in strict ``consolidate`` places ``job`` on one node, so that "would it fit
        with these jobs freed?" is "does some usable node then have ``gpus`` free?" (a whole-GPU count no
        larger than a node, an untyped pool, no shared GPUs)."""
        ctx = self.ctx
        placement, pool = ctx.placement, ctx.pool
        return (type(placement) is Consolidate and placement.strict and not pool.shares and pool.max_capacity > 0
                and ctx.fits_monotonically(job))

    def _search_nodes(self, job: int) -> list[int] | None:
        """:meth:`_search` under :meth:`_node_rule`, without placing: the victims are taken worst first
        and their GPUs added to the free GPUs of their nodes; the first victim after which one of its
        (uncordoned) nodes holds the job ends the search. Earlier prefixes left every node short, so only
        the new victim's nodes can tip; the placement would answer each prefix the same. On Philly the
        what-if placements were a fifth of Tiresias' replay time."""
        ctx = self.ctx
        pool = ctx.pool
        g = ctx.jobs.gpus[job]
        if g > pool.max_capacity:
            return self._search_nodes_wide(job)
        free, cordoned, buckets = pool.free, pool.cordoned, pool.buckets
        fits_now = any(buckets[f] for f in range(g, pool.max_capacity + 1))
        keys = self._keys
        low = bisect.bisect_right(keys, self.rank(job))
        state, excluded, placement_of = ctx.state, self.excluded, ctx.placement_of
        added: dict[int, int] = {}
        victims: list[int] = []
        for i in range(len(keys) - 1, low - 1, -1):
            victim = keys[i] & _JOB
            if state(victim) not in _ACTIVE or excluded(victim):
                continue
            victims.append(victim)
            if fits_now:
                return victims
            for node, count in placement_of(victim):
                if node not in cordoned:
                    total = added[node] = added.get(node, 0) + count
                    if free[node] + total >= g:
                        return victims
        self._fail_nodes = (list(free), added, g)
        return None

    def _search_nodes_wide(self, job: int) -> list[int] | None:
        """:meth:`_search_nodes` for a job larger than a node: strict ``consolidate`` takes the emptiest
        nodes and refuses more than ceil(gpus / node size) of them, so it fits iff the largest that many
        free counts (usable nodes, victims' GPUs added) sum to the job. Growing the prefix only adds
        GPUs, so the shortest fitting prefix is found by bisection once the whole list fits."""
        ctx = self.ctx
        pool = ctx.pool
        g = ctx.jobs.gpus[job]
        m = -(-g // pool.max_capacity)
        free, cordoned = pool.free, pool.cordoned
        victims = self._eligible(bisect.bisect_right(self._keys, self.rank(job)), len(self._keys))
        held = [ctx.placement_of(v) for v in victims]

        def fits(k: int) -> bool:
            room = list(free)
            for placement in held[:k]:
                for node, count in placement:
                    room[node] += count
            return sum(heapq.nlargest(m, (f for n, f in enumerate(room) if n not in cordoned))) >= g

        if not victims or not fits(len(victims)):
            return None
        return victims[:shortest(len(victims), fits)]

    def _eligible(self, low: int, high: int) -> list[int]:
        """The jobs of ``self._keys[low:high]`` that may be preempted now, worst-ranked first."""
        state, excluded = self.ctx.state, self.excluded
        out = []
        for key in reversed(self._keys[low:high]):
            victim = key & _JOB
            if state(victim) in _ACTIVE and not excluded(victim):
                out.append(victim)
        return out

    def preempt(self, victims: list[int]) -> None:
        super().preempt(victims)
        for victim in victims:
            self._untrack(victim)

    def on_requeue(self, job: int) -> None:
        self._freed(self._where.pop(job, None))  # its GPUs (saving, or a victim's) are free now
        self._untrack(job)
        super().on_requeue(job)

    def on_failure(self, job: int) -> float | None:
        self._failed = None
        self._where.pop(job, None)
        self._untrack(job)
        return super().on_failure(job)

    def level(self, job: int) -> int:
        return bisect.bisect_right(self._cuts, self.ctx.attained(job))

    def _inputs(self) -> tuple | None:
        """What a pass of :meth:`HeadPreemptive.schedule` decides from, or None when that is not known
        to be all: the waiting jobs (arrival count and queue length), the running jobs' ranks
        (``version``), saving GPUs, and the pool (its version) with the built-in ``consolidate``,
        whose answers depend on the pool and the request only. Ranks do not change with time here
        (unlike SRTF's remaining times), so a pass with the same inputs as a pass that decided
        nothing decides nothing either."""
        ctx = self.ctx
        placement = ctx.placement
        if type(placement) is not Consolidate:
            return None
        pool = ctx.pool
        return (pool, pool.version, placement, self.version, self.saving_gpus, self._arrivals,
                len(self.queue.items))

    def schedule(self) -> None:
        # Skipped when nothing it reads changed since a pass that decided nothing: most of Tiresias'
        # extra events on Philly are demotion timers of jobs that finished before their crossing.
        before = self._inputs()
        if before is not None and before == self._still:
            return
        super().schedule()
        self._still = before if before is not None and self._inputs() == before else None

    def rank(self, job: int) -> Any:
        # (queue, job) packed into one int, ordered as the pair: preemption searches sort and compare
        # these keys for every running job, and int comparisons cost a fraction of tuple ones.
        return self.level_of.get(job, 0) * _LEVEL + job

    def heap_key(self, job: int) -> Any:
        return self.rank(job)

    def on_arrival(self, job: int) -> None:
        self.level_of[job] = self.level(job)
        self._arrivals += 1
        super().on_arrival(job)

    def on_finish(self, job: int) -> None:
        self.version += 1  # GPUs were freed: a head whose search was skipped or failed may place now
        where = self._where.pop(job, None)
        if self._failed is not None and self.rank(job) < self._failed[1]:
            self._freed(where)  # a better-ranked job freed its GPUs
        self.level_of.pop(job, None)
        self._untrack(job)

    def _demotion_timer(self, job: int) -> None:
        """A timer at the moment ``job`` (holding GPUs) crosses its next threshold, unless it provably
        finishes first: without a performance model a job's speed is fixed while it holds its GPUs, so
        its expected end is exact, and a finish is handled before a timer at the same time. Such a timer
        could only find the job gone (or, after a preemption, be superseded by the timer of its next
        start); on Philly 57 k of the 74 k timers were of that kind, each an event and a pass. Left out
        only where the pass such a timer caused provably decides nothing (:meth:`_quiet`)."""
        ctx = self.ctx
        a = ctx.attained(job)
        thresholds = self.thresholds
        i = bisect.bisect_right(thresholds, a + 1e-6)  # the first threshold above a + 1e-6
        if i == len(thresholds):
            return
        nxt = thresholds[i]
        now = ctx.now
        lag = 0.0
        if ctx.state(job) == LOADING:
            lag = ctx.load_end(job) - now  # with the restart overhead (ckpt_cost) of this start
        at = now + lag + (nxt - a) / (ctx.jobs.gpus[job] * ctx.speed(job))
        if self.skip_unreached and ctx.expected_end(job) <= at and self._quiet():
            return
        ctx.set_timer(at, job)

    def _quiet(self) -> bool:
        """Whether a pass with no event since the last pass decides nothing, so that a timer which finds
        its job gone changes no schedule: speeds fixed (no performance model), the built-in
        ``consolidate`` on plain whole-GPU requests (a fit stays a fit when more GPUs are freed, so a
        head's failed search fails again after backfill took idle GPUs) and no save times (the head's
        wait for saving GPUs reads the idle GPUs, which the backfill of that pass took: with saves the
        next pass, whenever it comes, may preempt instead)."""
        ctx = self.ctx
        jobs = ctx.jobs
        memo = self._quiet_jobs
        if memo is None or memo[0] is not jobs:
            memo = self._quiet_jobs = (jobs, jobs.simple and not any(jobs.save_time) and not any(jobs.gpu_milli))
        return memo[1] and ctx.performance is None and type(ctx.placement) is Consolidate and not ctx.pool.typed

    def started(self, job: int) -> None:
        self._where[job] = self.ctx.placement_of(job)
        self.track(job)
        self._demotion_timer(job)

    def on_timer(self, job: Any) -> None:
        if self.ctx.state(job) in (LOADING, RUNNING):
            new = self.level(job)
            if new != self.level_of.get(job):
                failed = self._failed
                if failed is not None and self.rank(job) < failed[1] < new * _LEVEL + job:
                    self._freed(self._where.get(job))  # it drops below the head: a victim now
                self.level_of[job] = new
                self.track(job)
            self._demotion_timer(job)


class TiresiasRounds(RoundBased, Tiresias):
    """Tiresias as Lucid's simulator runs it (the setting of Lucid's Table 4): two queues split at
    18,000 GPU-seconds, decided every 60 s. Compare with ``tiresias`` (event-driven, 3,600) to see
    how much of a published gap is the baseline's round length.

    ``rule``: how a round decides. ``head`` (schedcast's preemptive rule): the best-ranked waiting job
    preempts just enough worse-ranked running jobs to be placed, else waits while later jobs backfill
    idle GPUs. ``quota`` (the rule of Lucid's released simulator): all jobs, running and waiting, are
    walked in rank order against a budget of the partition's GPUs; a job whose GPU count still fits
    the budget takes it (a waiting one is started if it can be placed), a running job that does not
    fit is preempted. Every waiting job may thus displace worse-ranked running jobs, not only the
    head; the budget counts GPUs, not placements, so a job that cannot be placed still uses its share
    of the round's budget.

    ``ckpt_cost``: seconds every preempted job pays at its next start (checkpoint + cold start), as Lucid's
    simulator adds to a preempted job's remaining time; Lucid cites Tiresias' measured 62 s per preemption
    (lucid.txt:462). 0 (the default) keeps preemption free."""

    name = "tiresias-rounds"
    summary = "Tiresias decided every `interval` s (default 60, thresholds=18000: Lucid's simulator setting)"
    citation = "Gu et al., Tiresias, NSDI'19; as configured in Lucid's simulator"
    skip_unreached = False
    param_docs = {"thresholds": "attained GPU-seconds at which a job drops a queue",
                  "interval": "round length, s", "backfill": "head rule: later jobs may use idle GPUs",
                  "rule": "head (preempt for the best waiting job) or quota (Lucid simulator's GPU budget)",
                  "ckpt_cost": "s a preempted job pays at its next start (checkpoint + cold start; paper 62)"}

    def __init__(self, thresholds: Annotated[float | list[float], THRESHOLDS] = 18000.0,
                 interval: Annotated[float, PERIOD] = 60.0,
                 backfill: bool | None = None, rule: Literal["head", "quota"] = "head",
                 ckpt_cost: Annotated[float, SECONDS] = 0.0) -> None:
        super().__init__(thresholds, backfill)
        self._init_rounds(interval)
        self.rule = rule
        if not (math.isfinite(float(ckpt_cost)) and float(ckpt_cost) >= 0):
            raise ValueError(f"ckpt_cost must be a finite number of seconds >= 0, got {ckpt_cost!r}")
        self.ckpt_cost = float(ckpt_cost)

    def preempt(self, victims: list[int]) -> None:
        super().preempt(victims)
        if self.ckpt_cost:
            for v in victims:
                self.ctx.add_overhead(v, self.ckpt_cost)

    def round_decision(self) -> None:
        if self.rule == "head":
            super().round_decision()
            return
        ctx, gpus = self.ctx, self.ctx.jobs.gpus
        waiting = {job for _, job in self.queue.items}
        active = [j for j in ctx.running if ctx.state(j) in (LOADING, RUNNING)]
        budget = ctx.capacity
        start, stop = [], []
        for job in sorted(active + list(waiting), key=self.rank):
            if gpus[job] <= budget:
                budget -= gpus[job]
                if job in waiting:
                    start.append(job)
            elif job not in waiting:
                stop.append(job)
        if stop:
            self.preempt(stop)
        started = {job for job in start if gpus[job] <= ctx.free_gpus and self._start(job)}
        if started:
            self.queue.items = [e for e in self.queue.items if e[1] not in started]
