"""Lazer: futile-preemption-aware deferral (Making Sense of Job Preemption for Distributed Deep Learning
Acceleration, DAC '26). No public code exists; this is schedcast's reference implementation.

Alg. 1 / Alg. 2 as implemented:
- On arrival, a job that fits the idle GPUs starts. Otherwise the orchestrator (Alg. 2) takes running
  jobs in descending remaining duration, each longer than the new job's and not in the deferred
  running queue (DRQ), just until their GPUs let the new job be placed: J_r. Empty J_r -> the job waits
  in WQ.
- The deferral predictor gives X. X = 0 -> preempt J_r now. X > 0 -> the job waits in the deferred
  waiting queue (DWQ), J_r enter the DRQ (they keep running and are excluded from other jobs'
  candidate sets), and a timer fires after X (the paper's deferral thread): J_r leave the DRQ and the
  orchestrator runs again for the job, preempting the new set J_r2 at once, or the job joins WQ.
- ``respect_wq=True`` (schedcast's variant, not in the paper): a new job does not preempt while a job
  with shorter (or equal) remaining time already waits in WQ; it joins WQ instead. The paper's Alg. 1
  compares a new job with running jobs only, so a long multi-GPU arrival may preempt dozens of jobs
  while shorter jobs wait; see the issue note for the measured effect.
- ``protect_loading=True`` (schedcast's variant): when a deferral expires, jobs still loading are not
  candidates for J_r2. Measured: most of the paper-faithful Lazer's futile preemptions come from J_r2
  picking jobs that started loading during the deferral.
- Completion handler: freed GPUs go to WQ in ascending remaining duration. Two documented additions:
  a deferred job that fits GPUs freed during its deferral starts at once (its deferral is cancelled),
  and a job whose victims are still saving waits at the head of WQ for their GPUs.

Deferral predictor: models.deferral (stages, GP, speed). Its randomness comes from ``ctx.rng("lazer")``,
i.e. from the run seed (``simulate(..., seed=)``, ``--seed``); ``seed=N`` fixes it regardless of the run.
Each preemption decision that asks the predictor is timed (wall and CPU: ``lazer_predicted_decision_*``).

Observed cost (what the predictor learns from). For a decision at t0 with deferral X for job j with
load time l, a *threat* is the first later arrival k with t0 < a_k <= t0 + X + l, remaining(k) <
remaining(j), and more GPUs than were idle at a_k: a job that would have preempted j while it loaded
(a futile preemption) had j been started at t0. F = a_k - t0 (the least deferral that lets k go first),
or F = 0 if no threat arrives in that window; f(X|c) = |X - F|, observed when the window closes.
"""
from __future__ import annotations

import heapq
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np

from features.plugins import COUNT, COUNT0, POSITIVE, SECONDS, Domain
from sim.states import LOADING
from sim.policies.base import start_in_order
from sim.policies.preemptive import Srtf

if TYPE_CHECKING:
    from sim.context import Context


@dataclass
class Decision:
    job: int
    t0: float
    x: float
    context: tuple[float, float, float, float]
    window_end: float
    remaining: float
    closed: bool = False


class Lazer(Srtf):
    name = "lazer"
    summary = "Lazer: SRTF with BO-predicted preemption deferral (param deferral=bo|random|grid|SECONDS)"
    citation = "Making Sense of Job Preemption for Distributed Deep Learning Acceleration, DAC'26"

    #: the BO predictor's sizes (models.deferral.BODeferralPredictor): bounded, each one is an array's length
    param_domains = {"seed": COUNT0, "n_bootstrap": Domain(ge=1, le=10_000, integer=True), "min_updates": COUNT0,
                     "ei_stop": Domain(ge=0.0), "refit_every": COUNT, "max_points": Domain(ge=2, le=100_000, integer=True),
                     "noise": POSITIVE, "num_fantasies": Domain(ge=1, le=4096, integer=True),
                     "grid": Domain(ge=3, le=1_000_001, integer=True)}

    def __init__(self, deferral: Annotated[str | float, SECONDS] = "bo", x_max: Annotated[float, POSITIVE] = 100.0,
                 seed: int | None = None,
                 respect_wq: bool = False, protect_loading: bool = False, n_bootstrap: int = 10,
                 min_updates: int = 100, ei_stop: float = 0.10, refit_every: int = 500, max_points: int = 400,
                 noise: float = 1e-3, num_fantasies: int = 16, grid: int = 101) -> None:
        """``deferral``: 'bo' (the paper's predictor), 'random', 'grid' or a fixed deferral in seconds.
        ``seed`` overrides the run seed (``ctx.rng``) for the predictor. The remaining parameters are
        the BO predictor's (models.deferral.BODeferralPredictor)."""
        super().__init__(backfill=False)
        self.respect_wq = bool(respect_wq)
        self.protect_loading = bool(protect_loading)
        self._retry = False
        from models.deferral import BODeferralPredictor, parse_deferral

        self.deferral = parse_deferral(deferral)
        self.seed = seed
        self.bo_options = dict(n_bootstrap=n_bootstrap, min_updates=min_updates, ei_stop=ei_stop,
                               refit_every=refit_every, max_points=max_points, noise=noise,
                               num_fantasies=num_fantasies, grid=grid)
        if self.deferral == "bo":
            BODeferralPredictor(x_max=x_max, seed=0, **self.bo_options)  # refuse bad options before the replay
        self.predictor: Any = None  # built in bind(), from the run seed
        self.x_max = float(x_max)
        self.new_jobs: list[int] = []
        self.dwq: dict[int, list[int]] = {}  # deferred job -> its J_r
        self.drq: set[int] = set()
        self.arrivals: deque[float] = deque()
        self.open: list[tuple[float, int, Decision]] = []  # (window end, seq, decision)
        self._seq = 0
        self.loading_victims = {"arrival": 0, "timer": 0}  # preempted while loading, by decision path
        self.deferrals = 0
        self.immediate = 0
        self.threats = 0
        self.observations: list[tuple[tuple, float, float, float]] = []  # (context, X, F, f)
        self.decision_seconds: list[float] = []  # wall time of each preemption decision (incl. the predictor)
        self.predicted_seconds: list[float] = []  # wall and CPU time of the decisions that asked the predictor
        self.predicted_cpu_seconds: list[float] = []

    def bind(self, ctx: "Context") -> None:
        """Build the deferral predictor with randomness from the run seed (or ``seed``)."""
        super().bind(ctx)
        from models.deferral import make_deferral_predictor

        rng = ctx.rng("lazer") if self.seed is None else np.random.default_rng(self.seed)
        options = self.bo_options if self.deferral == "bo" else {}
        self.predictor = make_deferral_predictor(self.deferral, x_max=self.x_max, seed=rng, **options)

    # -- context and observations ----------------------------------------------------------------
    def mean_interarrival(self) -> float:
        now = self.ctx.now
        while self.arrivals and self.arrivals[0] < now - 3600.0:
            self.arrivals.popleft()
        n = len(self.arrivals)
        return 3600.0 / n if n else 3600.0

    def _close(self, d: Decision, F: float) -> None:
        if d.closed:
            return
        d.closed = True
        f = abs(d.x - F)
        self.observations.append((d.context, d.x, F, f))
        self.predictor.observe(d.context, d.x, f)

    def _expire_windows(self) -> None:
        now = self.ctx.now
        while self.open and self.open[0][0] < now:
            _, _, d = heapq.heappop(self.open)
            self._close(d, 0.0)

    def _detect_threat(self, job: int) -> None:
        ctx = self.ctx
        now, rem, g = ctx.now, ctx.remaining(job), ctx.jobs.gpus[job]
        if g <= ctx.free_gpus:
            return
        for _, _, d in self.open:
            if not d.closed and d.t0 < now <= d.window_end and rem < d.remaining:
                self.threats += 1
                self._close(d, now - d.t0)

    # -- events ----------------------------------------------------------------------------------
    def on_arrival(self, job: int) -> None:
        self._expire_windows()
        self._detect_threat(job)
        self.arrivals.append(self.ctx.now)
        self.new_jobs.append(job)

    def on_requeue(self, job: int) -> None:
        if job in self._saving:
            self._saving.discard(job)
            self.saving_gpus -= self.ctx.jobs.gpus[job]
        self.version += 1
        self.queue.add(self.rank(job), job)

    def on_finish(self, job: int) -> None:
        super().on_finish(job)
        self.drq.discard(job)

    def on_timer(self, job: Any) -> None:
        victims = self.dwq.pop(job, None)
        if victims is None:
            return  # the deferral was cancelled (the job started in freed GPUs)
        self.drq.difference_update(victims)
        self._expire_windows()
        if not self._start(job):
            self._retry = True
            try:
                self._orchestrate(job, decide=False)
            finally:
                self._retry = False

    def excluded(self, job: int) -> bool:
        if job in self.drq:
            return True
        return self._retry and self.protect_loading and self.ctx.state(job) == LOADING

    # -- decisions -------------------------------------------------------------------------------
    def _orchestrate(self, job: int, decide: bool) -> None:
        """Alg. 2 for one job; with ``decide`` the deferral predictor may defer the preemption."""
        ctx = self.ctx
        if self.saving_gpus and ctx.jobs.gpus[job] <= ctx.free_gpus + self.saving_gpus:
            self.queue.add(self.rank(job), job)  # GPUs are on their way back
            return
        if self.respect_wq and self.queue.items and self.queue.items[0][0] <= self.rank(job):
            self.queue.add(self.rank(job), job)  # a shorter job already waits: no preemption for this one
            return
        victims = self.candidates(job)
        if not victims:
            self.queue.add(self.rank(job), job)
            return
        x = 0.0
        if decide:
            w = ctx.jobs
            context = (self.mean_interarrival(), ctx.remaining(job), w.load_time[job],
                       max(w.save_time[v] for v in victims))
            x = float(self.predictor.suggest(context))
            d = Decision(job, ctx.now, x, context, ctx.now + x + w.load_time[job], ctx.remaining(job))
            self._seq += 1
            heapq.heappush(self.open, (d.window_end, self._seq, d))
        if x > 0:
            self.deferrals += 1
            self.dwq[job] = victims
            self.drq.update(victims)
            ctx.set_timer(ctx.now + x, job)
            return
        self.immediate += 1
        path = "arrival" if decide else "timer"
        self.loading_victims[path] += sum(1 for v in victims if ctx.state(v) == LOADING)
        self.preempt(victims)
        if not self._start(job):
            self.queue.add(self.rank(job), job)  # victims are saving

    def schedule(self) -> None:
        ctx = self.ctx
        self._expire_windows()
        for job in self.new_jobs:
            if not self._start(job):
                t0, c0, seq = time.perf_counter(), time.thread_time(), self._seq
                self._orchestrate(job, decide=True)
                wall = time.perf_counter() - t0
                self.decision_seconds.append(wall)
                if self._seq != seq:  # the deferral predictor was asked
                    self.predicted_seconds.append(wall)
                    self.predicted_cpu_seconds.append(time.thread_time() - c0)
        self.new_jobs.clear()
        if not ctx.free_gpus:
            return
        # A deferred job that now fits idle GPUs starts at once; its deferral is cancelled.
        for job in [j for j in self.dwq if ctx.jobs.gpus[j] <= ctx.free_gpus]:
            if self._start(job):
                self.drq.difference_update(self.dwq.pop(job))
        # Completion handler: fill idle GPUs from WQ in ascending remaining duration, starting every
        # job that fits (WQ jobs never preempt).
        start_in_order(ctx, self.queue, work_conserving=True, on_start=self.started)

    def stats(self) -> dict[str, Any]:
        out = {**super().stats(), "lazer_deferrals": self.deferrals, "lazer_immediate": self.immediate,
               "lazer_threats": self.threats, "lazer_observations": len(self.observations),
               "lazer_loading_victims_arrival": self.loading_victims["arrival"],
               "lazer_loading_victims_timer": self.loading_victims["timer"],
               "lazer_decision_times": list(self.decision_seconds),
               "lazer_predicted_decision_times": list(self.predicted_seconds),
               "lazer_predicted_decision_cpu_times": list(self.predicted_cpu_seconds),
               # mean observed cost f(X|c) = |X - F| of the deferral decisions (Fig. 8e's measure, per decision)
               "lazer_f_mean": (float(np.mean([o[3] for o in self.observations])) if self.observations
                                else float("nan"))}
        if hasattr(self.predictor, "stats"):
            out.update(self.predictor.stats())
        return out

    def on_end(self) -> None:
        """Close every open window at the end of the replay (no threat can arrive any more)."""
        while self.open:
            _, _, d = heapq.heappop(self.open)
            self._close(d, 0.0)

