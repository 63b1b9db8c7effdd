"""Preemptive policies: SRTF on arrival/completion, periodic SRTF (Pollux / Muri / Optimus intervals)
and Tiresias' discretised 2D-LAS."""
from __future__ import annotations

import bisect
import heapq
import math
from typing import Any, Literal

from sim.placement import Consolidate
from sim.states import LOADING, RUNNING, SAVING
from sim.policies.base import Policy, SortedQueue


class HeadPreemptive(Policy):
    """Preemptive priority scheduling, decided on every event, in O(log n) per decision.

    The best-ranked waiting job starts if it fits; otherwise running jobs ranked worse are preempted,
    worst first, just enough for it to be placed (Lazer's orchestrator, Alg. 2, when ranks are
    remaining times). If no such set exists the head waits; with ``backfill`` later waiting jobs may
    still start in idle GPUs (without preempting). While preempted jobs are saving, the head waits
    for their GPUs instead of preempting more.
    """

    preemptive = True
    backfill = False

    def __init__(self, backfill: bool | None = None) -> None:
        if backfill is not None:
            self.backfill = bool(backfill)
        self.queue = SortedQueue()
        self.run_heap: list[tuple[Any, int]] = []  # (negated rank, job): worst-ranked first, lazy
        self.saving_gpus = 0
        self._saving: set[int] = set()
        self.preemptions = 0
        self.version = 0  # bumped whenever the running set or a running rank changes
        self._blocked: tuple[int, int] | None = None  # (job, version) of the last failed search
        # (pool, pool version, placement, GPU counts the placement could not place there): see _start
        self._misfits: tuple[Any, int, Any, set[int]] = (None, -1, None, set())

    # Ranks: smaller is better. ``rank`` must be comparable across waiting and running jobs.
    def rank(self, job: int) -> Any:
        raise NotImplementedError

    def heap_key(self, job: int) -> Any:
        """Orders running jobs for preemption (largest first); changes only when ``rank`` order does."""
        raise NotImplementedError

    def on_arrival(self, job: int) -> None:
        self.queue.add(self.rank(job), job)

    def on_requeue(self, job: int) -> None:
        if job in self._saving:
            self._saving.discard(job)
            self.saving_gpus -= self.ctx.jobs.gpus[job]
        self.version += 1
        self.on_arrival(job)

    def on_finish(self, job: int) -> None:
        self.version += 1

    def track(self, job: int) -> None:
        """(Re-)enter a running job in the preemption heap; call after its heap key changed."""
        ctx = self.ctx
        self.version += 1
        heapq.heappush(self.run_heap, (_neg(self.heap_key(job)), job))
        if len(self.run_heap) > 4 * len(ctx.running) + 64:
            self.run_heap = [(_neg(self.heap_key(j)), j) for j in ctx.running
                             if ctx.state(j) in (LOADING, RUNNING)]
            heapq.heapify(self.run_heap)

    def started(self, job: int) -> None:
        self.track(job)

    def excluded(self, job: int) -> bool:
        """Running jobs that may not be chosen as victims now (Lazer's deferred running queue)."""
        return False

    def _valid(self, entry: tuple[Any, int]) -> bool:
        key, job = entry
        return self.ctx.state(job) in (LOADING, RUNNING) and key == _neg(self.heap_key(job))

    EAGER = 8  # victims asked one by one before the rest are gathered and asked at once

    def candidates(self, job: int) -> list[int] | None:
        """Running jobs to preempt (worst-ranked first, each ranked worse than ``job``) so that ``job``
        can be placed; None if no such set exists. Nothing changes.

        The shortest such prefix of the eligible running jobs: the first ``EAGER`` prefixes are asked
        one by one (``ctx.would_fit``; most successful searches end there), then the remaining
        eligible jobs are gathered and ``ctx.fitting_prefix`` answers for the longer prefixes at once
        (with a monotone placement it first asks whether even all of them would do, which is how
        most failing searches end: one placement instead of one per eligible job)."""
        ctx = self.ctx
        mine = self.rank(job)
        rank, valid, excluded = self.rank, self._valid, self.excluded
        heap, heappop = self.run_heap, heapq.heappop
        popped, victims = [], []
        seen: set[int] = set()
        # A whole-GPU job cannot fit before the free GPUs plus the victims' whole GPUs cover it, so the
        # placement question is asked only from then on (same answers, fewer questions); a fractional
        # victim may free more whole GPUs than its count, so it lifts the bound.
        gpus, milli = ctx.jobs.gpus, ctx.jobs.gpu_milli
        need = gpus[job] if not milli[job] else 0
        room = ctx.free_gpus
        eager = self.EAGER
        found = 0
        while heap:
            entry = heappop(heap)
            victim = entry[1]
            if victim in seen or not valid(entry):
                continue  # stale, or a duplicate of an entry already seen
            seen.add(victim)
            popped.append(entry)
            if excluded(victim):
                continue
            if not rank(victim) > mine:
                break
            victims.append(victim)
            if len(victims) <= eager:
                room = room + gpus[victim] if not milli[victim] else math.inf
                if room >= need and ctx.would_fit(job, victims) is not None:
                    found = len(victims)
                    break
        for entry in popped:
            heapq.heappush(heap, entry)
        if not found and len(victims) > eager:
            found = ctx.fitting_prefix(job, victims, eager)
        return victims[:found] if found else None

    def preempt(self, victims: list[int]) -> None:
        ctx = self.ctx
        for v in victims:
            ctx.preempt(v)
            self.preemptions += 1
            if ctx.state(v) == SAVING:
                self._saving.add(v)
                self.saving_gpus += ctx.jobs.gpus[v]

    def _start(self, job: int) -> bool:
        """Start ``job`` if the placement places it now.

        A GPU count that the built-in ``consolidate`` could not place is remembered until the pool
        changes (``pool.version``): that placement's answer depends only on the pool and the count
        (``ctx.fits_monotonically``), so asking again gives the same None. Most events change no GPU
        (arrivals, demotion timers), and every pass used to ask again for the blocked head and for
        each backfill shape."""
        ctx = self.ctx
        g = ctx.jobs.gpus[job]
        if g > ctx.free_gpus:
            return False
        pool, memo = ctx.pool, self._misfits
        if memo[0] is not pool or memo[1] != pool.version or memo[2] is not ctx.placement:
            memo = self._misfits = (pool, pool.version, ctx.placement, set())
        elif g in memo[3] and ctx.fits_monotonically(job):
            return False
        if ctx.try_start(job):
            self.started(job)
            return True
        if ctx.fits_monotonically(job):
            memo[3].add(g)
        return False

    def schedule(self) -> None:
        ctx, items, gpus = self.ctx, self.queue.items, self.ctx.jobs.gpus
        while items:
            job = items[0][1]
            if self._start(job):
                items.pop(0)
                continue
            if self.saving_gpus and gpus[job] <= ctx.free_gpus + self.saving_gpus:
                break  # GPUs are on their way back from saving jobs
            if self._blocked == (job, self.version):
                break  # nothing changed since the last search for this job failed
            victims = self.candidates(job)
            if not victims:
                self._blocked = (job, self.version)
                break
            self.preempt(victims)
            if self._start(job):
                items.pop(0)
            else:
                break  # victims are saving; the job starts when their GPUs return
        if self.backfill and len(items) > 1 and ctx.free_gpus:
            # Within one backfill pass GPUs are only taken, never freed: a request shape that could
            # not be placed stays unplaceable until the pass ends, so later jobs of that shape are
            # not tried again (same decisions; a long queue of same-sized jobs costs one try).
            w = ctx.jobs
            simple = w.simple
            failed: set = set()
            keep = [items[0]]
            for i in range(1, len(items)):
                if not ctx.free_gpus:
                    keep.extend(items[i:])
                    break
                job = items[i][1]
                shape = gpus[job] if simple else (w.pods[job], w.gpus_per_pod[job], w.gpu_milli[job],
                                                  w.gpu_type[job], w.spread[job], w.stages[job])
                if shape in failed:
                    keep.append(items[i])
                elif not self._start(job):
                    failed.add(shape)
                    keep.append(items[i])
            self.queue.items = keep

    def stats(self) -> dict[str, Any]:
        return {"policy_preemptions": self.preemptions}


_LEVEL = 1 << 40  # Tiresias' rank: queue * _LEVEL + job (job indices stay far below it)
_JOB = _LEVEL - 1  # rank & _JOB is the job
_ACTIVE = (LOADING, RUNNING)


def _neg(key: Any) -> Any:
    return tuple(-k for k in key) if isinstance(key, tuple) else -key


class Srtf(HeadPreemptive):
    """Shortest remaining time first, invoked on every arrival and completion; strict (no backfill,
    as Lazer's SRTF baseline: if no running job has longer remaining time, the new job waits)."""

    name = "srtf"
    summary = "preemptive shortest-remaining-time-first on arrival and completion"
    citation = "Schrage 1968; the preemptive baseline of Tiresias (NSDI'19) and Lazer (DAC'26)"

    def rank(self, job: int) -> Any:
        return self.ctx.remaining(job)

    def heap_key(self, job: int) -> Any:
        # Running jobs' remaining times fall at the same rate, so their expected end orders them
        # and stays fixed while they run (loading jobs: load end + remaining work).
        return self.ctx.expected_end(job)


class RoundBased:
    """Mixin for a HeadPreemptive policy: decide only at interval boundaries (t = k x interval).
    Completions stay exact; freed GPUs and new jobs wait for the next boundary. Boundaries with
    nothing new since the last decision are skipped (the outcome could not differ)."""

    ROUND = ("round",)

    def _init_rounds(self, interval: float) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.interval = float(interval)
        self.timer_at = math.inf
        self.round_due = False
        self.dirty = False
        self.last_round_at = -math.inf
        self.rounds = 0

    def on_arrival(self, job: int) -> None:
        super().on_arrival(job)
        self.dirty = True

    def on_finish(self, job: int) -> None:
        super().on_finish(job)
        self.dirty = True

    def on_timer(self, payload: Any) -> None:
        if payload == self.ROUND:
            self.timer_at = math.inf
            self.round_due = True
        else:
            super().on_timer(payload)
            self.dirty = True

    def schedule(self) -> None:
        now = self.ctx.now
        if self.round_due:
            self.round_due = False
            self.rounds += 1
            self.last_round_at = now
            self.dirty = False
            self.round_decision()
        if self.dirty and self.queue and self.timer_at == math.inf:
            at = math.ceil(now / self.interval) * self.interval
            if at <= self.last_round_at:
                at += self.interval
            self.timer_at = at
            self.ctx.set_timer(at, self.ROUND)

    def round_decision(self) -> None:
        """What a round decides: by default the event-driven policy's decision, once."""
        super().schedule()  # type: ignore[misc]

    def stats(self) -> dict[str, Any]:
        return {**super().stats(), "rounds": self.rounds}


class PeriodicSrtf(RoundBased, Srtf):
    """SRTF decided only at interval boundaries (Pollux / Muri / Optimus scheduling intervals)."""

    name = "periodic-srtf"
    summary = "SRTF re-decided every `interval` seconds (param interval=, default 60)"
    citation = "interval scheduling of Pollux (OSDI'21), Muri (SIGCOMM'22), Optimus (EuroSys'18)"

    def __init__(self, interval: float = 60.0, backfill: bool | None = None) -> None:
        super().__init__(backfill)
        self._init_rounds(interval)


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

    def __init__(self, thresholds: float | list[float] = 3600.0, backfill: bool | None = None) -> None:
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
        # Philly ~2/3 of the searches failed and each walked every running job.
        self._failed: tuple | None = None
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
        victims = self._search(job)
        self._failed = None
        if victims is None and self.ctx.fits_monotonically(job):
            self._failed = (job, self.rank(job), self._pool_shape())
        return victims

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
        lo, hi = 1, len(victims)
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(mid):
                hi = mid
            else:
                lo = mid + 1
        return victims[:lo]

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
        self._failed = None
        self._untrack(job)
        super().on_requeue(job)

    def on_failure(self, job: int) -> float | None:
        self._failed = None
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
        if self._failed is not None and self.rank(job) < self._failed[1]:
            self._failed = None  # a better-ranked job freed its GPUs
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
            lag = ctx.since(job) + ctx.jobs.load_time[job] - now
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
        self.track(job)
        self._demotion_timer(job)

    def on_timer(self, job: Any) -> None:
        if self.ctx.state(job) in (LOADING, RUNNING):
            new = self.level(job)
            if new != self.level_of.get(job):
                failed = self._failed
                if failed is not None and self.rank(job) < failed[1]:
                    self._failed = None  # it may drop below the head: a victim now
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
    of the round's budget."""

    name = "tiresias-rounds"
    summary = "Tiresias decided every `interval` s (default 60, thresholds=18000: Lucid's simulator setting)"
    citation = "Gu et al., Tiresias, NSDI'19; as configured in Lucid's simulator"
    skip_unreached = False
    param_docs = {"thresholds": "attained GPU-seconds at which a job drops a queue",
                  "interval": "round length, s", "backfill": "head rule: later jobs may use idle GPUs",
                  "rule": "head (preempt for the best waiting job) or quota (Lucid simulator's GPU budget)"}

    def __init__(self, thresholds: float | list[float] = 18000.0, interval: float = 60.0,
                 backfill: bool | None = None, rule: Literal["head", "quota"] = "head") -> None:
        super().__init__(thresholds, backfill)
        self._init_rounds(interval)
        self.rule = rule

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
