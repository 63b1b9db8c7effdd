"""The preemptive rule shared by SRTF, Lazer and Tiresias (HeadPreemptive: the best-ranked waiting job
preempts just enough worse-ranked running jobs), SRTF itself and the round-based mixin (Pollux / Muri /
Optimus intervals). Tiresias lives in sim.policies.preemptive, which re-exports these names."""
from __future__ import annotations

import heapq
import math
from typing import Annotated, Any

from features.plugins import PERIOD

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

    def __init__(self, interval: Annotated[float, PERIOD] = 60.0, backfill: bool | None = None) -> None:
        super().__init__(backfill)
        self._init_rounds(interval)
