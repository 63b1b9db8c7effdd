"""Lucid's cluster-level decisions: one coordinator per replay, no partition acting as leader.

It owns what spans partitions: the jobs' profiles and sharing scores, which jobs were profiled or found
unstable, the workload estimates and their updates (Update Engine, §3.6, behind
:class:`models.update.DurationUpdater`), the throughput forecast (:class:`sim.forecasts.ThroughputForecast`)
and the dynamic strategy it drives (G_SS, T_prof, N_prof, bursts), and the profiler's borrowed nodes
(time-aware scaling). It acts through its cluster context only: moving idle nodes, cordoning them,
timers and rescheduling; it reads partitions through read-only views. Policies report to it (an
arrival, a finish, a profiled job) and read the strategy from it; they never touch one another.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from sim.coordinator import Coordinator
from sim.states import PENDING, QUEUED
from sim.policies.lucid import profiler as prof_rules
from sim.policies.lucid import scaling
from sim.policies.lucid.workload import PROFILER, job_profiles, origin

HOUR = 3600.0
BIN = 600.0  # the submission series' bin (Lucid's throughput predictor works on 10-minute bins)


class LucidCoordinator(Coordinator):
    """See the module docstring. Configured by the first Lucid policy that joins (all partitions of a
    replay share the same parameters)."""

    def __init__(self) -> None:
        self.ready = False

    # -- set-up ----------------------------------------------------------------------------------
    def join(self, policy: Any) -> None:
        """Called by every Lucid policy in its ``on_start`` (before the coordinator's); the first one
        configures the replay's state with its parameters (identical in every partition)."""
        if self.ready:
            return
        self.ready = True
        self.p = policy  # its parameters only
        self._setup(policy)

    def _setup(self, policy: Any) -> None:
        from features.packing import FEATURES
        from sim.interference import InterferenceModel

        cctx = self.cctx
        w = cctx.jobs
        interference = InterferenceModel.load()
        if policy.gpu_memory_mb:
            interference.gpu_memory_mb = policy.gpu_memory_mb
        self.interference = interference
        self.profiles = job_profiles(w, interference, cctx.rng("lucid.profiles"))
        if policy.packing_model:  # e.g. models:/packing@champion
            from models.registry import (ModelNotFoundError, check_store, configure, load, resolve_tracking_uri,
                                         sqlite_path, unwrap)

            check_store(policy.tracking_uri, "the policy parameter tracking_uri=")
            uri = resolve_tracking_uri(policy.tracking_uri)
            db = sqlite_path(uri)
            if db is not None and not db.is_file():  # a look-up never creates a store (./mlruns/mlflow.db)
                raise ModelNotFoundError(f"model {policy.packing_model}: no model registry at {uri} (train one "
                                         "first, or give tracking_uri= / --tracking-uri)")
            configure(policy.tracking_uri)
            clf = unwrap(load(policy.packing_model))
        else:
            clf = _default_packing_classifier(policy.packing_labels)
        n = len(w)
        feats = self.profiles.features(tuple(FEATURES))
        self.true_scores = np.asarray(clf.predict(feats))  # from the steady-state profile
        self.keys = self.profiles.keys
        self.gmem = np.asarray(self.profiles.gmem, dtype=float)
        self.true_util = np.asarray(self.profiles.gpu_util, dtype=float)
        # What the profiler measures: with warmup_error > 0 a job profiled in its warm-up shows a lower
        # GPU / memory-bandwidth utilisation (relative underestimate ~ exponential, mean warmup_error),
        # so its sharing score may be lower than its steady state's (schedmate.txt:210).
        self.warmup_drop = np.zeros(n)
        if getattr(policy, "warmup_error", 0.0) > 0:
            self.warmup_drop = np.minimum(cctx.rng("lucid.warmup").exponential(policy.warmup_error, n), 0.9)
            feats = feats.copy()
            for col in ("gpu_util", "gmem_util"):
                if col in feats:
                    feats[col] = feats[col].to_numpy(dtype=float) * (1.0 - self.warmup_drop)
            self.scores = np.asarray(clf.predict(feats))
        else:
            self.scores = self.true_scores.copy()
        self.util = self.true_util * (1.0 - self.warmup_drop)
        self.home = list(w.partition)
        self.profiled: set[int] = set()
        self.never_pack: set[int] = set()
        self.finished_in_profiler = self.profiled_then_moved = self.packs = self.evictions = 0
        # pairs packed against the steady-state scores; hosts' speeds; pairs' summed speeds
        self.mispacks, self.pack_speeds, self.pack_throughputs = 0, [], []
        self.g_ss = policy.g_ss0 if policy.sharing else 0
        self.t_prof, self.n_prof, self.burst = policy.t_prof0, policy.n_prof0, False
        self.hourly: list[float] = []
        self.hour_levels = scaling.RollingLevels()  # scaling.levels(self.hourly), kept per tick
        self.mode_seconds = {0: 0.0, 1: 0.0, 2: 0.0}
        self.last_tick = 0.0
        self.forecast_by = {"model": 0, "trend": 0}
        self.by_gpus: dict[int, tuple[float, int]] = {}  # finished durations by GPU demand (0: all)
        self.loans: list[list] = []  # [lender partition, profiler node, returning]
        self.borrowed = self.returned = 0
        self.predictions = None
        if policy.estimator:
            self.predictions = np.asarray([policy.ctx.prediction(j) for j in range(n)], dtype=float)
            if policy.initial == "history":
                self.predictions[:] = np.nan  # no model yet: the mean duration of finished jobs of the same demand
        self.version = 0  # bumped when predictions change: VC queues re-sort before their next pass
        self.finished: list[tuple[int, float]] = []  # (job, end)
        self.updater = None
        if policy.estimator and policy.update_interval > 0:
            from features.duration import duration_features
            from models.update import DurationUpdater

            X = duration_features(w.frame)
            self.updater = DurationUpdater(X.loc[:, X.notna().any()], model=policy.update_model,
                                           monotone=policy.monotone, tracking_uri=policy.tracking_uri)
        self.throughput = None
        if policy.uses_forecast:
            from sim.forecasts import ThroughputForecast

            self.throughput = ThroughputForecast(origin(w.frame), mode=policy.forecast, model=policy.update_model
                                                 if policy.update_model == "ebm" else "lightgbm", bin_seconds=BIN)
        self.n_jobs = n
        names = list(cctx.partitions)
        self.profiler_index = names.index(PROFILER) if PROFILER in names else None
        self.profiler_node_gpus = 0 if self.profiler_index is None else max(
            w.cluster.partitions[self.profiler_index].capacities)

    # -- hooks -----------------------------------------------------------------------------------
    def on_start(self) -> None:
        p = self.p
        # the binder's hot loop reads plain lists (made here, after set-up: scores are final once replay starts)
        self.score_list, self.gmem_list, self.util_list = self.scores.tolist(), self.gmem.tolist(), self.util.tolist()
        self.cctx.set_timer(p.tick, ("tick",))
        if p.update_interval > 0 and (p.estimator or p.trains_throughput):
            self.cctx.set_timer(p.update_interval, ("update",))

    @property
    def unfinished(self) -> int:
        """Jobs neither finished nor failed for good (the engine's count): timers stop re-arming at 0.
        Counting only reported finishes kept the timers going for ever after a job failed for good."""
        return self.cctx.unfinished

    def on_timer(self, payload: Any) -> None:
        kind, cctx, p = payload[0], self.cctx, self.p
        if kind == "tick":
            self._tick()
            if self.unfinished:
                cctx.set_timer(cctx.now + p.tick, ("tick",))
        elif kind == "update":
            if p.estimator:
                self._update()
            if p.trains_throughput:
                self.throughput.update(cctx.now)
            if self.unfinished:
                cctx.set_timer(cctx.now + p.update_interval, ("update",))

    def after_schedule(self) -> None:
        """Borrowed nodes: a lender with jobs waiting takes its nodes back (they are cordoned, so they
        drain within T_prof), and every cordoned node that is idle goes home."""
        if not self.loans:
            return
        cctx = self.cctx
        for lender in sorted({loan[0] for loan in self.loans if not loan[2]}):
            if cctx.view(lender).waiting():
                self.start_returning(lender)
        self.return_idle_nodes()

    def on_end(self) -> None:
        if self.loans:  # the replay is over: every borrowed node goes home
            self.start_returning()
            self.return_idle_nodes()

    # -- what policies report --------------------------------------------------------------------
    def lender_waiting(self, partition: int) -> None:
        """A VC ends its pass with jobs waiting: if it lent nodes, they start going back now (cordoned
        before the profiler's pass of this instant can place new work on them)."""
        if any(loan[0] == partition and not loan[2] for loan in self.loans):
            self.start_returning(partition)

    def arrived(self, now: float) -> None:
        if self.throughput is not None:
            self.throughput.observe(now)

    def finished_job(self, job: int, gpus: int, duration: float, now: float, in_profiler: bool) -> None:
        for key in (gpus, 0):
            total, count = self.by_gpus.get(key, (0.0, 0))
            self.by_gpus[key] = (total + duration, count + 1)
        self.finished.append((job, now))
        if in_profiler:
            self.finished_in_profiler += 1

    def goes_to_profiler(self, job: int, gpus: int) -> bool:
        p = self.p
        return prof_rules.goes_to_profiler(gpus=gpus, n_prof=self.n_prof, node_gpus=self.profiler_node_gpus,
                                           was_profiled=job in self.profiled, profiler_on=p.profiler_on,
                                           has_profiler=self.profiler_index is not None)

    def mean_duration(self, gpus: int) -> float:
        """Mean duration of finished jobs of this GPU demand (all jobs, then 3,600 s, without any)."""
        total, count = self.by_gpus.get(gpus, self.by_gpus.get(0, (3600.0, 1)))
        return total / count

    # -- dynamic strategy and time-aware scaling -------------------------------------------------
    def _tick(self) -> None:
        p = self.p
        if not p.uses_forecast:
            return
        now = self.cctx.now
        self.mode_seconds[self.g_ss] += now - self.last_tick
        self.last_tick = now
        last, before = self.throughput.hours(now)
        self.hourly.append(float(last))
        self.hour_levels.add(self.hourly[-1])
        if len(self.hourly) < scaling.MIN_HOURS:
            return
        quiet, median, busy, top = self.hour_levels.levels()
        forecast = self.throughput.forecast(now)
        self.forecast_by[self.throughput.source] += 1
        if p.sharing and p.dynamic:
            g_ss, self.g_ss = self.g_ss, scaling.sharing_mode(forecast, last, before, quiet, busy)
            if self.g_ss != g_ss:  # a new sharing budget: VCs with jobs waiting try packing again now
                for q in range(len(self.cctx.partitions)):
                    if q != self.profiler_index and self.cctx.view(q).waiting():
                        self.cctx.reschedule(q)
        was = self.burst
        self.burst = scaling.is_burst(forecast, top, median)
        self.t_prof, self.n_prof = scaling.profiler_limits(self.burst, p.t_prof0, p.n_prof0)
        if p.profiler_on and self.profiler_index is not None:
            if self.burst:
                self._borrow_nodes()
            elif was and self.loans:
                self.start_returning()

    def _borrow_nodes(self) -> None:
        """On a burst: move idle nodes of VCs with nothing waiting to the profiler."""
        cctx, prof = self.cctx, self.profiler_index
        want = self.p.borrow_nodes - sum(1 for loan in self.loans if not loan[2])
        if want <= 0:
            return
        views = [(q, cctx.view(q).waiting(), cctx.view(q).idle_nodes()) for q in range(len(cctx.partitions))
                 if q != prof]
        for q, node in prof_rules.lenders(views, want):
            there = cctx.move_node(node, q, prof)
            self.loans.append([q, there, False])
            self.borrowed += 1

    def start_returning(self, lender: int | None = None) -> None:
        """Cordon borrowed nodes (all, or those of one lender) so that they drain and go back."""
        loans = prof_rules.recall(self.loans, lender)
        for loan in loans:
            loan[2] = True
            self.cctx.cordon(self.profiler_index, loan[1])
        self.cctx.reschedule(self.profiler_index)

    def return_idle_nodes(self) -> None:
        """Hand back every cordoned borrowed node that is idle now."""
        cctx, prof = self.cctx, self.profiler_index
        idle = set(cctx.view(prof).idle_nodes())
        keep = []
        for loan in self.loans:
            lender, node, returning = loan
            if returning and node in idle:
                cctx.move_node(node, prof, lender)
                self.returned += 1
            else:
                keep.append(loan)
        self.loans = keep

    # -- update engine ---------------------------------------------------------------------------
    def _update(self) -> None:
        """Retrain the duration model on the jobs finished so far; new predictions for jobs not started."""
        from models.update import FinishedJobs

        cctx = self.cctx
        if self.updater is None:
            return
        waiting = np.asarray([j for j in range(self.n_jobs) if cctx.state(j) in (PENDING, QUEUED)], dtype=int)
        if not len(waiting):
            return
        jobs = cctx.jobs
        idx = np.asarray([j for j, _ in self.finished], dtype=int)
        done = FinishedJobs(idx, np.asarray(jobs.duration, dtype=float)[idx] if len(idx) else np.zeros(0),
                            np.asarray([e for _, e in self.finished], dtype=float))
        before = len(self.updater.records)
        self.updater.update(cctx.now, done)
        if len(self.updater.records) == before:
            return
        self.updater.records[-1]["repredicted"] = int(len(waiting))
        self.predictions[waiting] = self.updater.predict(waiting)
        self.version += 1

    @property
    def updates(self) -> list[dict]:
        return self.updater.records if self.updater is not None else []

    @property
    def tp_updates(self) -> list[dict]:
        return self.throughput.records if self.throughput is not None else []

    def stats(self) -> dict[str, Any]:
        if not self.ready:
            return {}
        out = {"lucid_finished_in_profiler": self.finished_in_profiler,
               "lucid_profiled_then_moved": self.profiled_then_moved,
               "lucid_nodes_borrowed": self.borrowed, "lucid_nodes_returned": self.returned,
               "lucid_packs": self.packs, "lucid_evictions": self.evictions, "lucid_updates": len(self.updates),
               "lucid_throughput_updates": len(self.tp_updates),
               "lucid_throughput_model_used": sum(1 for u in self.tp_updates if u["used"]),
               "lucid_ticks_forecast_by_model": self.forecast_by["model"],
               "lucid_ticks_forecast_by_trend": self.forecast_by["trend"]}
        if self.p.warmup_error > 0:  # mis-profiling on: what it did to the packings (absent by default)
            out["lucid_mispacks"] = self.mispacks
            out["lucid_pack_host_speeds"] = list(self.pack_speeds)
            out["lucid_pack_pair_throughputs"] = list(self.pack_throughputs)
        total = sum(self.mode_seconds.values())
        if total > 0:
            out.update({f"lucid_gss{g}_share": t / total for g, t in self.mode_seconds.items()})
        if self.tp_updates:
            out["lucid_throughput_mae"] = float(np.mean([u["throughput_mae"] for u in self.tp_updates]))
            out["lucid_throughput_mae_last_value"] = float(np.mean([u["throughput_mae_last_value"]
                                                                    for u in self.tp_updates]))
        tuned = [u["tuner"] for u in self.updates if u.get("tuner")]
        if tuned:
            out["lucid_tuner_log_mae_plain"] = float(np.mean([t["log_mae_plain"] for t in tuned]))
            out["lucid_tuner_log_mae_monotone"] = float(np.mean([t["log_mae_monotone"] for t in tuned]))
        return out


def _default_packing_classifier(labels: str):
    """The packing tree fitted on Lucid's profiles in the data directory (once per process, directory
    and label set: every Lucid replay would otherwise pay the cross-validated fit)."""
    from features.paths import resolve_data_path

    return _fit_packing_classifier(labels, str(resolve_data_path("profiles/lucid")))


_PACKING_CACHE: dict[tuple[str, str], Any] = {}


def _fit_packing_classifier(labels: str, profiles_dir: str):
    from pathlib import Path

    from features.packing import packing_dataset
    from models.packing import PackingClassifier

    key = (labels, profiles_dir)
    if key not in _PACKING_CACHE:
        data = packing_dataset(Path(profiles_dir).parents[1], labels=labels)
        _PACKING_CACHE[key] = PackingClassifier().fit(data, data["target"])
    return _PACKING_CACHE[key]
