"""Lucid's Resource Orchestrator (Alg. 2) and the profiler's queue, as one policy class by partition.

In a VC partition waiting jobs are ordered by GPUs x estimated remaining time (the Workload Estimate;
without a prediction, the mean duration of finished jobs of the same GPU demand), ascending. With
sharing on, each job is first offered to the binder (:mod:`.binder`), then, if no pair qualifies,
started on an exclusive consolidated placement. A packed pair whose slower speed is below
``unstable_speed`` is checked after ``check_after`` s and its guest evicted and never packed again.
In the profiling partition jobs run exclusively for T_prof (:mod:`.profiler`). Everything that spans
partitions (profiles, estimates, the dynamic strategy, borrowed nodes) lives in the replay's
:class:`~sim.policies.lucid.coordinator.LucidCoordinator`.
"""
from __future__ import annotations

from typing import Annotated, Any, Literal

import numpy as np

from features.plugins import COUNT0, FRACTION, PERIOD, POSITIVE, SECONDS, UPDATE_INTERVAL, Domain
from sim.states import LOADING, QUEUED, RUNNING
from sim.policies.base import Policy, SortedQueue
from sim.policies.lucid import binder as rules
from sim.policies.lucid import profiler as prof_rules
from sim.policies.lucid.coordinator import LucidCoordinator
from sim.policies.lucid.workload import PROFILER, with_profiler


class Lucid(Policy):
    name = "lucid"
    summary = "Lucid: profiler + interference-aware packing + GA2M/LightGBM duration priorities (ablations by params)"
    citation = "Hu et al., Lucid, ASPLOS'23"
    uses_predictions = True
    # Lucid stops jobs it started: the profiler pauses each profiled job after T_prof (a preemption with
    # save), and the binder evicts the guest of an unstable pair.
    preemptive = True
    coordinator_class = LucidCoordinator
    #: each numeric parameter's domain (features.plugins.Domain; tick and update_interval: on their types)
    param_domains = {"n_prof": COUNT0, "t_prof": SECONDS, "g_ss": COUNT0, "min_remaining": SECONDS,
                     "unstable_speed": FRACTION, "check_after": SECONDS, "gpu_memory_mb": POSITIVE,
                     "profiler_nodes": COUNT0, "borrow_nodes": COUNT0, "pair_ratio": POSITIVE,
                     "warmup_error": Domain(ge=0.0, lt=1.0)}
    param_docs = {
        "profiler": "profile jobs in a profiling partition first (§3.2)",
        "space_aware": "profiler runs least GPUs first (Alg. 1); False: FIFO",
        "binder": "affine-jobpair binder rules; False: naive packing (memory only)",
        "sharing": "pack jobs at all",
        "estimator": "order VC queues by GPUs x estimate; False: FIFO",
        "n_prof": "largest job (GPUs) profiled (N_prof)",
        "t_prof": "profiling time per job, s (T_prof)",
        "g_ss": "sharing-score budget of a pair (G_SS) before the dynamic strategy changes it",
        "dynamic": "G_SS follows the throughput forecast",
        "min_remaining": "both jobs of a pair need this much work left, s",
        "unstable_speed": "a pair slower than this is split (guest evicted)",
        "check_after": "when an unstable pair is split, s after packing",
        "tick": "dynamic strategy / scaling interval, s",
        "update_interval": "update engine (retraining) interval, s; 0: never",
        "update_model": "in-replay duration model: lightgbm, ebm, rf",
        "monotone": "System Tuner: num_gpus effect non-decreasing",
        "packing_labels": "packing tree labels: solo or pair",
        "gpu_memory_mb": "GPU memory for the memory rule (default: the profiles' GPU)",
        "profiler_nodes": "profiler size in nodes, or auto (5 % of the cluster)",
        "profiler_from": "cluster: carved out of the cluster; extra: added to it",
        "initial": "first estimates: given (--predictor) or history (mean of finished jobs)",
        "packing_model": "packing classifier from the registry, e.g. models:/packing@champion",
        "tracking_uri": "MLflow store for registry models and update-engine runs",
        "borrow_nodes": "idle VC nodes the profiler may borrow on a burst",
        "pair_ratio": "a guest's estimate may be at most this times its host's",
        "forecast": "throughput forecast: model (retrained in the replay) or trend",
        "warmup_error": "mean relative underestimate of a profiled job's GPU / memory-bandwidth utilisation "
                        "(T_prof caught in warm-up; 0: exact profiles)",
    }

    def __init__(self, profiler: bool = True, space_aware: bool = True, binder: bool = True, sharing: bool = True,
                 estimator: bool = True, n_prof: int = 8, t_prof: float = 200.0, g_ss: int = 2,
                 dynamic: bool = True, min_remaining: float = 300.0, unstable_speed: float = 0.5,
                 check_after: float = 300.0, tick: Annotated[float, PERIOD] = 600.0,
                 update_interval: Annotated[float, UPDATE_INTERVAL] = 7 * 86400.0,
                 update_model: Literal["lightgbm", "ebm", "rf"] = "lightgbm", monotone: bool = True,
                 packing_labels: Literal["solo", "pair"] = "solo", gpu_memory_mb: float | None = None,
                 profiler_nodes: int | Literal["auto"] = "auto", profiler_from: Literal["cluster", "extra"] = "cluster",
                 initial: Literal["given", "history"] = "given", packing_model: str | None = None,
                 tracking_uri: str | None = None, borrow_nodes: int = 2, pair_ratio: float = 2.0,
                 forecast: Literal["model", "trend"] = "model", warmup_error: float = 0.0) -> None:
        if not (0.0 <= warmup_error < 1.0):
            raise ValueError(f"warmup_error must be in [0, 1), got {warmup_error}")
        self.warmup_error = float(warmup_error)
        self.profiler_on, self.space_aware, self.binder, self.sharing = profiler, space_aware, binder, sharing
        self.estimator, self.n_prof0, self.t_prof0, self.g_ss0 = estimator, int(n_prof), float(t_prof), int(g_ss)
        self.dynamic, self.min_remaining, self.unstable_speed = dynamic, float(min_remaining), float(unstable_speed)
        self.check_after, self.tick, self.update_interval = float(check_after), float(tick), float(update_interval)
        self.update_model, self.monotone, self.packing_labels = update_model, monotone, packing_labels
        self.gpu_memory_mb, self.profiler_nodes = gpu_memory_mb, profiler_nodes
        if profiler_from not in ("cluster", "extra"):
            raise ValueError("profiler_from must be 'cluster' (carved out of the cluster) or 'extra' (added)")
        self.profiler_from = profiler_from
        self.borrow_nodes, self.pair_ratio = int(borrow_nodes), float(pair_ratio)
        if forecast not in ("model", "trend"):
            raise ValueError("forecast must be 'model' (throughput model retrained by the update engine) or 'trend'")
        self.forecast = forecast
        self.uses_forecast = (sharing and dynamic) or profiler  # else nothing reads the forecast
        self.trains_throughput = forecast == "model" and self.uses_forecast
        if initial not in ("given", "history"):
            raise ValueError("initial must be 'given' (the --predictor) or 'history'")
        self.initial = initial
        self.packing_model, self.tracking_uri = packing_model, tracking_uri
        if tracking_uri:  # a store named by a parameter is refused unless the user configured it
            from models.registry import check_store

            check_store(tracking_uri, "the policy parameter tracking_uri=")
        self.queue = SortedQueue()
        self._profiling: dict[int, int] = {}  # profiler: job -> token of its running profiling attempt
        self._attempts = 0
        self._reprofile: set[int] = set()  # profiler: jobs that failed while profiling (profiled again)
        self._pass_est: dict[int, float] = {}
        self._sorted_version = 0

    @classmethod
    def prepare_workload(cls, workload, params: dict[str, Any]):
        """A profiling partition of ``profiler_nodes`` nodes when profiling (carved out of the cluster by
        default, so that every policy has the same GPUs). Profiles are drawn in the replay (run seed)."""
        if params.get("profiler", True):
            return with_profiler(workload, nodes=params.get("profiler_nodes", "auto"),
                                 carve=params.get("profiler_from", "cluster") == "cluster")
        return workload

    # -- set-up ----------------------------------------------------------------------------------
    def bind(self, ctx) -> None:
        super().bind(ctx)
        self.is_profiler = ctx.partition_name == PROFILER
        self._queued_ests: dict[int, tuple[tuple, float]] = {}

    def on_start(self) -> None:
        self.c = self.ctx.coordinator  # made by the engine from ``coordinator_class``, bound after policies
        self.c.join(self)

    # -- priorities ------------------------------------------------------------------------------
    def estimate(self, job: int) -> float:
        """Predicted duration (s) still to run: the model's prediction (or without one the mean duration
        of finished jobs of the same GPU demand) less the work the job has done (profiling, running),
        but at least that work again; the scheduler knows how long a job has run, not how long it will."""
        c = self.c
        pred = c.predictions[job] if c.predictions is not None else np.nan
        if np.isnan(pred):
            pred = c.mean_duration(self.ctx.jobs.gpus[job])
        done = self.ctx.jobs.duration[job] - self.ctx.remaining(job)
        # Past half its prediction, a job is expected to run about as long again (heavy-tailed durations).
        return max(pred - done, done) if done > 0 else pred

    def priority(self, job: int) -> Any:
        if not self.estimator:
            return (0.0, job)  # FIFO
        return (self.ctx.jobs.gpus[job] * self.estimate(job), job)

    # -- events ----------------------------------------------------------------------------------
    def on_arrival(self, job: int) -> None:
        c, ctx = self.c, self.ctx
        if self.is_profiler:
            self.queue.add(prof_rules.queue_key(ctx.jobs.gpus[job], job, self.space_aware), job)
            return
        c.arrived(ctx.now)
        if c.goes_to_profiler(job, ctx.jobs.gpus[job]):
            ctx.transfer(job, c.profiler_index)
            return
        self.queue.add(self.priority(job), job)

    def on_transfer(self, job: int) -> None:
        if self.is_profiler:
            self.on_arrival(job)
        else:
            self.queue.add(self.priority(job), job)

    def on_failure(self, job: int) -> None:
        """A job that fails while profiling is profiled again when it restarts (its profile is
        incomplete); its pending profile_end timer no longer applies."""
        if self.is_profiler and self._profiling.pop(job, None) is not None:
            self._reprofile.add(job)

    def on_requeue(self, job: int) -> None:
        c, ctx = self.c, self.ctx
        if self.is_profiler and job in self._reprofile:
            self._reprofile.discard(job)
            self.on_arrival(job)
            return
        if self.is_profiler:  # profiling time is over: carry the profile to the job's VC
            self._profiling.pop(job, None)
            c.profiled.add(job)
            c.profiled_then_moved += 1
            ctx.transfer(job, c.home[job])
            return
        self.queue.add(self.priority(job), job)

    def on_finish(self, job: int) -> None:
        self._profiling.pop(job, None)
        w = self.ctx.jobs
        self.c.finished_job(job, w.gpus[job], w.duration[job], self.ctx.now, self.is_profiler)

    def on_timer(self, payload: Any) -> None:
        kind = payload[0]
        if kind == "profile_end":
            job, token = payload[1], payload[2]
            if self._profiling.get(job) == token and self.ctx.state(job) in (LOADING, RUNNING):
                self.ctx.preempt(job)
        elif kind == "check_pair":
            self._check_pair(payload[1], payload[2])

    # -- profiler ---------------------------------------------------------------------------------
    def _schedule_profiler(self) -> None:
        ctx, c = self.ctx, self.c
        keep = []
        for entry in self.queue.items:
            job = entry[1]
            if ctx.jobs.gpus[job] <= ctx.free_gpus and ctx.try_start(job):
                c.profiled.add(job)
                self._attempts += 1
                self._profiling[job] = self._attempts
                ctx.set_timer(prof_rules.profile_ends(ctx.now, c.t_prof, ctx.jobs.load_time[job]),
                              ("profile_end", job, self._attempts))
            else:
                keep.append(entry)
        self.queue.items = keep

    # -- binder -----------------------------------------------------------------------------------
    def _job_can_share(self, job: int) -> bool:
        """Binder rules on the guest alone (the estimate last: it is the dearest)."""
        c = self.c
        gpus, largest = self.ctx.jobs.gpus[job], self.ctx.pool.max_capacity
        if gpus > largest:  # rules.fits_one_node first: most rejections, without the call below
            return False
        if not rules.guest_ok(never_pack=job in c.never_pack, gpus=gpus, largest_node=largest, binder=self.binder,
                              was_profiled=job in c.profiled, score=c.scores[job], g_ss=c.g_ss):
            return False
        return not self.binder or rules.enough_work(self._est(job), self.min_remaining)

    def _est(self, job: int) -> float:
        """:meth:`estimate`, memoised for one scheduling pass (time stands still within it); a queued
        job's is kept across passes while its inputs stay (:meth:`_queued_est`)."""
        memo = self._pass_est
        value = memo.get(job)
        if value is None:
            value = memo[job] = self._queued_est(job) if self.ctx.state(job) == QUEUED \
                else self.estimate(job)
        return value

    def _queued_est(self, job: int) -> float:
        """:meth:`estimate` of a waiting job, kept until one of its inputs changes: the predictions
        (coordinator version), the work the job has done (its remaining work, fixed while it waits) and,
        without a prediction, the finished jobs' mean durations (their count). Long queues ask this of
        every job on every pass (the binder's enough-work rule)."""
        c = self.c
        key = (c.version, self.ctx.remaining(job), len(c.finished))
        hit = self._queued_ests.get(job)
        if hit is not None and hit[0] == key:
            return hit[1]
        value = self.estimate(job)
        self._queued_ests[job] = (key, value)
        return value

    def _can_share(self, job: int, host: int) -> tuple | None:
        """The host's rank for packing ``job`` on it (lower is better), None if the binder forbids it."""
        c = self.c
        return rules.pair_rank(binder=self.binder, score_guest=c.scores[job], score_host=c.scores[host],
                               g_ss=c.g_ss, gmem_guest=c.gmem[job], gmem_host=c.gmem[host],
                               gpu_memory=c.interference.gpu_memory_mb,
                               est_guest=self._est(job) if self.binder else 0.0,
                               est_host=self._est(host) if self.binder else 0.0, pair_ratio=self.pair_ratio)

    MAX_HOSTS = 64  # hosts examined per packing attempt (the best pair among them wins)
    MAX_FAILED_PACKS = 16  # failed packing attempts per scheduling pass before the rest wait

    def _hosts(self, gpus: int, cache: dict[int, list[int]]) -> list[int]:
        """Up to MAX_HOSTS running solo jobs of ``gpus`` GPUs that could host a guest (built once per
        GPU count and scheduling pass). The rules of :func:`binder.host_ok`, inlined (this loop runs
        over every running job for each GPU count on every pass)."""
        hosts = cache.get(gpus)
        if hosts is None:
            ctx, c = self.ctx, self.c
            sharing, state, need = ctx.sharing, ctx.state, ctx.jobs.gpus
            never, profiled, binder, floor, est = c.never_pack, c.profiled, self.binder, self.min_remaining, self._est
            hosts = cache[gpus] = []
            for host in ctx.running:
                if need[host] != gpus:
                    continue
                # host_solo, stable, then (binder) profiled and enough_work
                if state(host) != RUNNING or len(sharing(host)) != 1 or host in never:
                    continue
                if binder and (host not in profiled or not est(host) >= floor):
                    continue
                hosts.append(host)
                if len(hosts) == self.MAX_HOSTS:
                    break
        return hosts

    def _try_pack(self, job: int, cache: dict[int, list[int]]) -> bool:
        """Pack a waiting job (which passed the guest rules) on the best allowed host."""
        ctx, c = self.ctx, self.c
        hosts = self._hosts(ctx.jobs.gpus[job], cache)
        best, best_key = None, None
        cls = type(self)
        if cls._can_share is Lucid._can_share or (cls._best_host is not Lucid._best_host
                                                   and cls._can_share is Horus._can_share):
            best = self._best_host(job, hosts)
        else:
            for host in hosts:
                key = self._can_share(job, host)
                if key is not None and (best_key is None or key < best_key):
                    best, best_key = host, key
        if best is None:
            return False
        hosts.remove(best)
        a, b = c.interference.speeds(c.keys[job], c.keys[best])
        ctx.pack(job, best, a, b)
        c.packs += 1
        c.pack_speeds.append(b)  # the host's true speed next to its guest (a slowdown a runtime check could see)
        c.pack_throughputs.append(a + b)  # the pair's work per second against one job alone (< 1: packing loses)
        if c.true_scores[job] + c.true_scores[best] > c.g_ss:
            c.mispacks += 1  # a pair the steady-state scores would not have allowed (warm-up profiles, or a guess)
        if min(a, b) < self.unstable_speed:
            ctx.set_timer(ctx.now + self.check_after, ("check_pair", job, best))
        return True

    def _best_host(self, job: int, hosts: list[int]) -> int | None:
        """:meth:`_can_share` over ``hosts`` with :func:`binder.pair_rank` inlined (the same rules and
        ranks, the first best host on ties): the packing search is most of a busy replay's time."""
        c = self.c
        scores, gmem = c.score_list, c.gmem_list
        limit, g_ss, ratio = c.interference.gpu_memory_mb, c.g_ss, self.pair_ratio
        s_guest, m_guest = scores[job], gmem[job]
        binder = self.binder
        e_guest = self._est(job) if binder else 0.0
        est = self._est
        best, best_key = None, None
        for host in hosts:
            m = m_guest + gmem[host]
            if not m <= limit:  # memory_fits
                continue
            if not binder:
                key = (0, 0)
            else:
                score = s_guest + scores[host]
                if not score <= g_ss or not e_guest <= ratio * est(host):  # score_within, ratio_ok
                    continue
                key = (score, m)
            if best_key is None or key < best_key:
                best, best_key = host, key
        return best

    def _check_pair(self, job: int, host: int) -> None:
        ctx, c = self.ctx, self.c
        if host not in ctx.sharing(job) or ctx.state(job) not in (LOADING, RUNNING):
            return
        ctx.evict(job)
        c.evictions += 1
        c.never_pack.add(job)

    # -- orchestrator ----------------------------------------------------------------------------
    def schedule(self) -> None:
        if self.is_profiler:
            self._schedule_profiler()
            return
        ctx, c = self.ctx, self.c
        if not self.queue:
            return
        if self._sorted_version != c.version:  # the update engine changed the estimates
            self._sorted_version = c.version
            self.queue.items = sorted((self.priority(j), j) for _, j in self.queue.items)
        keep = []
        hosts: dict[int, list[int]] = {}
        self._pass_est = {}
        failed = 0
        need, free, limit = ctx.jobs.gpus, ctx.free_gpus, self.MAX_FAILED_PACKS
        items = self.queue.items
        for i, entry in enumerate(items):
            job = entry[1]
            packing = c.g_ss > 0 and failed < limit and ctx.running
            if packing and self._job_can_share(job):  # Alg. 2: share first
                if self._try_pack(job, hosts):
                    free = ctx.free_gpus
                    continue
                failed += 1
            elif not packing and free < 1:  # no GPU free and no packing left this pass: the rest wait
                keep.extend(items[i:])
                break
            if need[job] <= free and ctx.try_start(job):
                free = ctx.free_gpus
                continue
            keep.append(entry)
        self.queue.items = keep
        if keep and c.loans:
            c.lender_waiting(ctx.partition)  # a lender with jobs waiting takes its nodes back at once

    def stats(self) -> dict[str, Any]:
        return self.c.stats() if self.ctx.partition == 0 else {}


class Horus(Lucid):
    """Horus (Yeung et al., TPDS'21) approximated without ONNX graphs: the job's GPU utilisation is
    'predicted' from its workload profile (standing in for Horus' graph-based estimate); jobs are
    served first-come first-served, work-conserving, and packed onto a running job of the same GPU
    demand when the predicted utilisations sum to at most 100 % and memory fits. No profiler. Like
    Lucid it evicts the guest of an unstable pair (``preemptive``)."""

    name = "horus"
    summary = "Horus-like: FIFO + packing when predicted GPU utilisation sums to <= 100% (no ONNX graphs)"
    citation = "Yeung et al., Horus, TPDS'21 (approximation)"
    uses_predictions = False
    preemptive = True
    param_docs = {k: Lucid.param_docs[k] for k in ("sharing", "min_remaining", "unstable_speed", "check_after",
                                                    "gpu_memory_mb", "packing_labels", "packing_model",
                                                    "tracking_uri")}

    def __init__(self, sharing: bool = True, min_remaining: float = 300.0, unstable_speed: float = 0.5,
                 check_after: float = 300.0, gpu_memory_mb: float | None = None,
                 packing_labels: Literal["solo", "pair"] = "solo", packing_model: str | None = None,
                 tracking_uri: str | None = None) -> None:
        super().__init__(profiler=False, estimator=False, dynamic=False, binder=False, sharing=sharing,
                         min_remaining=min_remaining, unstable_speed=unstable_speed, check_after=check_after,
                         gpu_memory_mb=gpu_memory_mb, packing_labels=packing_labels, packing_model=packing_model,
                         tracking_uri=tracking_uri)

    @classmethod
    def prepare_workload(cls, workload, params: dict[str, Any]):
        return workload  # no profiler; profiles are drawn in the replay

    def _best_host(self, job: int, hosts: list[int]) -> int | None:
        """:meth:`_can_share` over ``hosts`` with :func:`binder.horus_rank` inlined (same rule and ranks)."""
        c = self.c
        util, gmem = c.util_list, c.gmem_list
        limit, u_guest, m_guest = c.interference.gpu_memory_mb, util[job], gmem[job]
        best, best_key = None, None
        for host in hosts:
            total = u_guest + util[host]
            if total > 100.0 or not m_guest + gmem[host] <= limit:
                continue
            key = (total, host)
            if best_key is None or key < best_key:
                best, best_key = host, key
        return best

    def _can_share(self, job: int, host: int):
        c = self.c
        return rules.horus_rank(util_guest=c.util[job], util_host=c.util[host], gmem_guest=c.gmem[job],
                                gmem_host=c.gmem[host], gpu_memory=c.interference.gpu_memory_mb, host=host)
