"""Lucid (ASPLOS '23): non-intrusive profiling, interference-aware packing, interpretable estimates,
as plug-ins on the shared engine (Lucid's own simulator steps time by one second per policy file).

One policy class plays two roles, by partition:
- in the profiling partition (named PROFILER, built by :func:`with_profiler`: ``profiler_nodes`` nodes,
  default 5 % of the cluster, carved out of the cluster so that Lucid has the same GPUs as the
  baselines; ``profiler_from=extra`` adds them instead, as a separate profiling cluster would): the
  Non-intrusive Job Profiler (§3.2). Jobs with at most N_prof GPUs run here first, exclusively and consolidated, least
  GPUs first (space-aware, Alg. 1), for up to T_prof seconds; jobs that finish within T_prof are done
  here (the debugging-job filter); the others are paused (progress kept) and handed to their VC with
  their measured profile. Time-aware scaling: when the throughput forecast predicts a burst, T_prof
  is halved, N_prof lowered to 1 GPU and the profiler borrows up to ``borrow_nodes`` idle nodes from
  VCs with nothing waiting (each lender keeps at least one idle node). When the burst has passed, or
  as soon as a lender has a job waiting, the borrowed node is cordoned (no new profiling on it) and
  handed back the moment it is idle (at most T_prof later).
- in a VC partition: the Resource Orchestrator (Alg. 2) and the Affine-jobpair Binder (§3.3). Waiting
  jobs are ordered by GPUs x predicted duration, ascending (the Workload Estimate; without a profile
  or prediction, the mean duration of past jobs with the same GPU demand). As in Alg. 2, each job is
  first offered to the binder when sharing is on, and otherwise (or when no pair qualifies) starts on
  an exclusive consolidated placement. The binder packs it on a running job if every rule holds:
  both profiled, same GPU demand, single node, the host runs alone, the sum of sharing scores (0 tiny,
  1 medium, 2 jumbo, predicted by the packing classifier from the profiled features) does not exceed
  G_SS, their GPU memory fits, both have at least ``min_remaining`` seconds of work left, and the
  guest's estimate is at most ``pair_ratio`` times the host's (Lucid's released simulator uses 2, so
  that a long job does not slow a short one for most of its life). Among eligible hosts the one with
  the lowest summed sharing score (then GPU memory) wins: a pair's speed is unknown until it runs.
  A packed pair whose slower speed is below ``unstable_speed`` is
  treated as unstable: the guest is evicted after ``check_after`` seconds and never packed again.
  Preemption-free otherwise.
- Dynamic sharing: every ``tick`` seconds the throughput forecast (submissions expected in the coming
  hour) sets G_SS: 2 (Default) when busy, 1 (Apathetic) when moderate, 0 (off) when quiet and not
  rising; busy / quiet are the 75th / 25th percentiles of hourly submissions seen so far. The forecast
  comes from Lucid's Throughput Predict Model (``forecast=model``): a GA2M / LightGBM on the throughput
  features of the replay's own 10-minute submission series (calendar, lags, rolling windows), trained
  by the update engine once 9 days are seen and refreshed hourly, and used only while it beats the
  naive last value on the latest day; otherwise, and with ``forecast=trend``, the past hour plus half
  its change over the hour before.
- Update Engine (§3.6): every ``update_interval`` seconds (weekly) the duration model is retrained on
  the jobs completed so far (past only) and its predictions replace the old ones for jobs not yet
  started; the System Tuner makes the gpu_num shape monotone (GA2M) and records the effect. The
  throughput model is retrained on the same timer (scored on the latest day against the last value).
Ablations: ``binder=False`` (naive bin-packing: pack with any same-size job that fits in GPU memory,
no scores or time rules, as Lucid's ablation does), ``sharing=False``, ``estimator=False`` (FIFO
order), ``space_aware=False`` (profiler FIFO), ``profiler=False``.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from sim.engine import LOADING, RUNNING
from sim.policies.base import Policy, SortedQueue

PROFILER = "profiler"
HOUR = 3600.0
BIN = 600.0  # the submission series' bin (Lucid's throughput predictor works on 10-minute bins)
TP_HORIZON = 3  # forecast the bin 30 minutes ahead: the middle of the coming hour


def profiler_size(cluster, nodes: int | str = "auto") -> int:
    """Profiler nodes: a number, or ``auto`` = 5 % of the cluster's nodes (at least 1)."""
    if nodes == "auto":
        return max(1, round(0.05 * sum(len(p.capacities) for p in cluster.partitions)))
    return int(nodes)


def with_profiler(workload, nodes: int | str = 2, gpus_per_node: int | None = None, carve: bool = False):
    """The same workload with a profiling partition of ``nodes`` nodes (``auto``: 5 % of the cluster).

    ``carve=False`` adds the nodes to the cluster (Lucid's separate profiling cluster); ``carve=True``
    takes them from the cluster, one at a time from the partition with the most nodes (never below what
    that partition's largest job needs), so that Lucid and the baselines have the same GPUs."""
    from dataclasses import replace

    from sim.cluster import Cluster, Partition

    c = workload.cluster
    nodes = profiler_size(c, nodes)
    caps = [list(p.capacities) for p in c.partitions]
    taken: list[int] = []
    if carve:
        need = [0] * len(caps)
        for p, g in zip(workload.partition, workload.gpus):
            need[p] = max(need[p], g)
        for _ in range(nodes):
            options = [(len(cap), -i) for i, cap in enumerate(caps) if sum(cap) - cap[-1] >= max(need[i], 1)]
            if not options:
                raise ValueError(f"cannot carve {nodes} profiler nodes out of cluster {c.name!r}: every "
                                 "partition needs its nodes for its largest job")
            i = -max(options)[1]
            taken.append(caps[i].pop())
    gpus = gpus_per_node or (taken[0] if taken else max(max(cap) for cap in caps))
    parts = [Partition(p.name, cap, list(p.gpu_types[: len(cap)])) for p, cap in zip(c.partitions, caps)]
    parts.append(Partition(PROFILER, taken or [gpus] * nodes, ["profiler"] * nodes))
    how = "carved" if carve else "added"
    cluster = Cluster(c.name + f"+profiler{nodes}({how})", parts, c.gpu_type, c.intra_node_bandwidth_gbps,
                      c.inter_node_bandwidth_gbps, c.unknown_org)
    return replace(workload, cluster=cluster, partition=list(workload.partition))


def attach_profiles(workload, interference, seed: int = 0, strength: float = 1.0):
    """A copy of the workload whose jobs carry a Lucid workload profile (hierarchical sampling; see
    sim.interference)."""
    from dataclasses import replace

    workload = replace(workload, partition=list(workload.partition))
    work = np.asarray(workload.duration) * np.asarray(workload.gpus)
    keys = interference.assign(work, seed=seed, strength=strength)
    solo = interference.solo
    frame = workload.frame.copy()
    frame["profile_key"] = keys
    for col in ("gpu_util", "gmem_util", "gmem", "amp", "label"):
        frame[f"profile_{col}"] = solo.loc[keys, col].to_numpy()
    workload.frame = frame
    return workload


def _default_packing_classifier(labels: str):
    """The packing tree fitted on Lucid's profiles in the data directory (once per process, directory
    and label set: every Lucid replay would otherwise pay the cross-validated fit)."""
    from features.paths import resolve_data_path

    return _fit_packing_classifier(labels, str(resolve_data_path("profiles/lucid")))


@lru_cache(maxsize=4)
def _fit_packing_classifier(labels: str, profiles_dir: str):
    from pathlib import Path

    from features.packing import packing_dataset
    from models.packing import PackingClassifier

    data = packing_dataset(Path(profiles_dir).parents[1], labels=labels)
    return PackingClassifier().fit(data, data["target"])


def _origin(frame):
    """Wall-clock time of the replay's time zero (tz-naive local clock), or a fixed Monday when the
    trace has no timestamps, so that calendar features stay defined."""
    import pandas as pd

    ts = frame["submit_ts"] if "submit_ts" in frame else None
    if ts is not None and ts.notna().any():
        first = pd.Timestamp(ts.min())
        return first.tz_localize(None) if first.tzinfo is not None else first
    return pd.Timestamp("2020-01-06")


@dataclass
class Shared:
    """State the profiler and the VC schedulers of one replay share."""

    interference: Any
    home: list[int]
    scores: np.ndarray  # predicted sharing score per job (profile-based)
    keys: list[str]
    gmem: np.ndarray
    profiled: set[int] = field(default_factory=set)
    finished_in_profiler: int = 0
    profiled_then_moved: int = 0
    never_pack: set[int] = field(default_factory=set)
    arrivals: deque = field(default_factory=deque)
    hourly: list[float] = field(default_factory=list)
    g_ss: int = 2
    t_prof: float = 200.0
    n_prof: int = 8
    burst: bool = False
    predictions: np.ndarray | None = None
    updates: list[dict] = field(default_factory=list)
    packs: int = 0
    evictions: int = 0
    mode_seconds: dict[int, float] = field(default_factory=lambda: {0: 0.0, 1: 0.0, 2: 0.0})  # time at each G_SS
    by_gpus: dict[int, tuple[float, int]] = field(default_factory=dict)  # finished durations by GPU demand
    last_tick: float = 0.0
    bins: list[int] = field(default_factory=list)  # submissions per BIN since time zero
    origin: Any = None  # wall-clock time of time zero (calendar features of the throughput model)
    tp_model: Any = None
    tp_at: float = -np.inf
    tp_value: float = 0.0
    forecast_by: dict[str, int] = field(default_factory=lambda: {"model": 0, "trend": 0})
    tp_updates: list[dict] = field(default_factory=list)
    loans: list[list] = field(default_factory=list)  # [lender partition, profiler node, returning]
    borrowed: int = 0
    returned: int = 0


class Lucid(Policy):
    name = "lucid"
    summary = "Lucid: profiler + interference-aware packing + GA2M/LightGBM duration priorities (ablations by params)"
    citation = "Hu et al., Lucid, ASPLOS'23"
    uses_predictions = True

    def __init__(self, profiler: bool = True, space_aware: bool = True, binder: bool = True, sharing: bool = True,
                 estimator: bool = True, n_prof: int = 8, t_prof: float = 200.0, g_ss: int = 2,
                 dynamic: bool = True, min_remaining: float = 300.0, unstable_speed: float = 0.5,
                 check_after: float = 300.0, tick: float = 600.0, update_interval: float = 7 * 86400.0,
                 update_model: str = "lightgbm", monotone: bool = True, packing_labels: str = "solo",
                 gpu_memory_mb: float | None = None, profiler_nodes: int | str = "auto",
                 profiler_from: str = "cluster", initial: str = "given",
                 packing_model: str | None = None, tracking_uri: str | None = None, borrow_nodes: int = 2,
                 pair_ratio: float = 2.0, forecast: str = "model", seed: int = 0):
        self.profiler_on, self.space_aware, self.binder, self.sharing = profiler, space_aware, binder, sharing
        self.estimator, self.n_prof0, self.t_prof0, self.g_ss0 = estimator, int(n_prof), float(t_prof), int(g_ss)
        self.dynamic, self.min_remaining, self.unstable_speed = dynamic, float(min_remaining), float(unstable_speed)
        self.check_after, self.tick, self.update_interval = float(check_after), float(tick), float(update_interval)
        self.update_model, self.monotone, self.packing_labels = update_model, monotone, packing_labels
        self.gpu_memory_mb, self.seed, self.profiler_nodes = gpu_memory_mb, seed, profiler_nodes
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
        self.queue = SortedQueue()
        self._pass_est: dict[int, float] = {}

    @classmethod
    def prepare_workload(cls, workload, params: dict[str, Any]):
        """Profiles for every job, and a profiling partition of ``profiler_nodes`` nodes when profiling
        (carved out of the cluster by default, so that every policy has the same GPUs)."""
        from sim.interference import InterferenceModel

        w = attach_profiles(workload, InterferenceModel.load(), seed=int(params.get("seed", 0)))
        if cls is not Horus and params.get("profiler", True):
            w = with_profiler(w, nodes=params.get("profiler_nodes", "auto"),
                              carve=params.get("profiler_from", "cluster") == "cluster")
        return w

    # -- set-up ----------------------------------------------------------------------------------
    def bind(self, ctx) -> None:
        super().bind(ctx)
        engine = ctx.engine
        self.is_profiler = ctx.partition_name == PROFILER
        self.profiler_index = engine.workload.cluster.index.get(PROFILER)
        self.profiler_node_gpus = 0 if self.profiler_index is None else max(
            engine.workload.cluster.partitions[self.profiler_index].capacities)
        shared = getattr(engine, "lucid_shared", None)
        if shared is None:
            shared = engine.lucid_shared = self._make_shared(ctx)
        self.s = shared

    def _make_shared(self, ctx) -> Shared:
        from features.packing import FEATURES
        from sim.interference import InterferenceModel

        w = ctx.jobs
        if "profile_key" not in w.frame:
            raise ValueError("lucid needs job profiles: build the workload with sim.policies.lucid.attach_profiles "
                             "(the CLI does this for --policy lucid)")
        interference = InterferenceModel.load()
        if self.gpu_memory_mb:
            interference.gpu_memory_mb = self.gpu_memory_mb
        if self.packing_model:  # e.g. models:/packing@champion
            from models.registry import configure, load, unwrap

            configure(self.tracking_uri)
            clf = unwrap(load(self.packing_model))
        else:
            clf = _default_packing_classifier(self.packing_labels)
        feats = w.frame[[f"profile_{c}" for c in FEATURES]].set_axis(list(FEATURES), axis=1).astype(float)
        scores = clf.predict(feats)
        preds = np.asarray(ctx.engine.predicted, dtype=float) if self.estimator else None
        if preds is not None and self.initial == "history":
            preds[:] = np.nan  # no model yet: the mean duration of finished jobs of the same GPU demand
        return Shared(interference, list(w.partition), np.asarray(scores), w.frame["profile_key"].tolist(),
                      w.frame["profile_gmem"].to_numpy(dtype=float), g_ss=self.g_ss0 if self.sharing else 0,
                      t_prof=self.t_prof0, n_prof=self.n_prof0, predictions=preds, origin=_origin(w.frame))

    def on_start(self) -> None:
        if self.ctx.partition == 0:
            self.ctx.set_timer(self.tick, ("tick",))
            if self.update_interval > 0 and (self.estimator or self.trains_throughput):
                self.ctx.set_timer(self.update_interval, ("update",))

    # -- priorities ------------------------------------------------------------------------------
    def estimate(self, job: int) -> float:
        """Predicted duration (s) still to run: the model's prediction (or without one the mean duration
        of finished jobs of the same GPU demand) less the work the job has done (profiling, running),
        but at least that work again; the scheduler knows how long a job has run, not how long it will."""
        pred = self.s.predictions[job] if self.s.predictions is not None else np.nan
        if np.isnan(pred):
            g = self.ctx.jobs.gpus[job]
            total, count = self.s.by_gpus.get(g, self.s.by_gpus.get(0, (3600.0, 1)))
            pred = total / count
        done = self.ctx.jobs.duration[job] - self.ctx.remaining(job)
        # Past half its prediction, a job is expected to run about as long again (heavy-tailed durations).
        return max(pred - done, done) if done > 0 else pred

    def priority(self, job: int) -> Any:
        if not self.estimator:
            return (0.0, job)  # FIFO
        return (self.ctx.jobs.gpus[job] * self.estimate(job), job)

    # -- events ----------------------------------------------------------------------------------
    def on_arrival(self, job: int) -> None:
        s, ctx = self.s, self.ctx
        if self.is_profiler:
            key = (ctx.jobs.gpus[job], job) if self.space_aware else (0, job)
            self.queue.add(key, job)
            return
        s.arrivals.append(ctx.now)
        b = int(ctx.now // BIN)
        if b >= len(s.bins):
            s.bins.extend([0] * (b + 1 - len(s.bins)))
        s.bins[b] += 1
        if (self.profiler_on and self.profiler_index is not None and job not in s.profiled
                and ctx.jobs.gpus[job] <= min(s.n_prof, self.profiler_node_gpus)):
            ctx.transfer(job, self.profiler_index)
            return
        self.queue.add(self.priority(job), job)

    def on_transfer(self, job: int) -> None:
        if self.is_profiler:
            self.on_arrival(job)
        else:
            self.queue.add(self.priority(job), job)

    def on_requeue(self, job: int) -> None:
        s, ctx = self.s, self.ctx
        if self.is_profiler:  # profiling time is over: carry the profile to the job's VC
            s.profiled.add(job)
            s.profiled_then_moved += 1
            ctx.transfer(job, s.home[job])
            return
        self.queue.add(self.priority(job), job)

    def on_finish(self, job: int) -> None:
        s, w = self.s, self.ctx.jobs
        for key in (w.gpus[job], 0):  # 0: all jobs
            total, count = s.by_gpus.get(key, (0.0, 0))
            s.by_gpus[key] = (total + w.duration[job], count + 1)
        if self.is_profiler:
            s.finished_in_profiler += 1

    def on_timer(self, payload: Any) -> None:
        kind = payload[0]
        if kind == "profile_end":
            job = payload[1]
            if self.ctx.state(job) in (LOADING, RUNNING):
                self.ctx.preempt(job)
        elif kind == "check_pair":
            self._check_pair(payload[1], payload[2])
        elif kind == "tick":
            self._tick()
            if self.ctx.unfinished:
                self.ctx.set_timer(self.ctx.now + self.tick, ("tick",))
        elif kind == "update":
            if self.estimator:
                self._update()
            if self.trains_throughput:
                self._train_throughput()
            if self.ctx.unfinished:
                self.ctx.set_timer(self.ctx.now + self.update_interval, ("update",))

    # -- profiler ---------------------------------------------------------------------------------
    def _schedule_profiler(self) -> None:
        ctx, s = self.ctx, self.s
        if s.loans:
            self._return_nodes()
        keep = []
        for entry in self.queue.items:
            job = entry[1]
            if ctx.jobs.gpus[job] <= ctx.free_gpus and ctx.try_start(job):
                s.profiled.add(job)
                ctx.set_timer(ctx.now + s.t_prof + ctx.jobs.load_time[job], ("profile_end", job))
            else:
                keep.append(entry)
        self.queue.items = keep

    def _borrow_nodes(self) -> None:
        """On a burst: move idle nodes of VCs with an empty queue to the profiler (partition 0 decides
        for the cluster, as Lucid's time-aware scaling does)."""
        s, engine = self.s, self.ctx.engine
        want = self.borrow_nodes - sum(1 for loan in s.loans if not loan[2])
        if want <= 0 or self.profiler_index is None:
            return
        lenders = []
        for p, policy in enumerate(engine.policies):
            if p == self.profiler_index or policy.queue:
                continue
            idle = engine.contexts[p].pool.idle_nodes()
            if len(idle) > 1:  # the lender keeps one idle node
                lenders.append((-len(idle), p, idle))
        for _, p, idle in sorted(lenders):
            for node in idle[1:]:
                if want == 0:
                    return
                there = engine.contexts[p].move_node(node, self.profiler_index)
                s.loans.append([p, there, False])
                s.borrowed += 1
                want -= 1

    def _start_returning(self, lender: int | None = None) -> None:
        """Cordon borrowed nodes (all, or those of one lender) so that they drain and go back."""
        s, engine = self.s, self.ctx.engine
        pool = engine.contexts[self.profiler_index].pool
        for loan in s.loans:
            if not loan[2] and (lender is None or loan[0] == lender):
                loan[2] = True
                pool.cordon(loan[1])
        engine.mark_dirty(self.profiler_index)

    def on_end(self) -> None:
        if self.is_profiler and self.s.loans:  # the replay is over: every borrowed node goes home
            self._start_returning()
            self._return_nodes()

    def _return_nodes(self) -> None:
        """(Profiler) hand back every cordoned borrowed node that is idle now."""
        s, ctx = self.s, self.ctx
        pool = ctx.pool
        keep = []
        for loan in s.loans:
            lender, node, returning = loan
            if returning and pool.free[node] == pool.capacity[node]:
                ctx.move_node(node, lender)
                s.returned += 1
            else:
                keep.append(loan)
        s.loans = keep

    # -- binder -----------------------------------------------------------------------------------
    def _job_can_share(self, job: int) -> bool:
        """Binder rules on the guest alone."""
        s = self.s
        if job in s.never_pack or self.ctx.jobs.gpus[job] > self.ctx.pool.max_capacity:
            return False
        if not self.binder:
            return True
        if job not in s.profiled or s.scores[job] > s.g_ss:
            return False
        return self._est(job) >= self.min_remaining

    def _est(self, job: int) -> float:
        """:meth:`estimate`, memoised for one scheduling pass (time stands still within it)."""
        memo = self._pass_est
        value = memo.get(job)
        if value is None:
            value = memo[job] = self.estimate(job)
        return value

    def _can_share(self, job: int, host: int) -> tuple | None:
        """If the binder allows packing ``job`` onto ``host`` (a host from :meth:`_hosts`, so solo,
        running, profiled, with enough work left), the host's rank (lower is better): the pair's summed
        sharing score, then its GPU memory. The scheduler does not know a pair's speed before packing
        it, so speeds play no part in the choice. None if not allowed."""
        s = self.s
        if s.gmem[job] + s.gmem[host] > s.interference.gpu_memory_mb:
            return None  # a hard limit even for naive packing: the pair would not fit in memory
        score = s.scores[job] + s.scores[host]
        if self.binder:
            if score > s.g_ss:
                return None
            if self._est(job) > self.pair_ratio * self._est(host):
                return None
        return (score, s.gmem[job] + s.gmem[host]) if self.binder else (0, 0)

    MAX_HOSTS = 64  # hosts examined per packing attempt (the best pair among them wins)
    MAX_FAILED_PACKS = 16  # failed packing attempts per scheduling pass before the rest wait

    def _hosts(self, gpus: int, cache: dict[int, list[int]]) -> list[int]:
        """Up to MAX_HOSTS running solo jobs of ``gpus`` GPUs that could host a guest (built once per
        GPU count and scheduling pass)."""
        hosts = cache.get(gpus)
        if hosts is None:
            ctx, s = self.ctx, self.s
            alloc, state, need = ctx.engine.alloc, ctx.engine.state, ctx.jobs.gpus
            hosts = cache[gpus] = []
            for host in ctx.running:
                if need[host] != gpus or state[host] != RUNNING or len(alloc[host][1]) != 1 or host in s.never_pack:
                    continue
                if self.binder and (host not in s.profiled or self._est(host) < self.min_remaining):
                    continue
                hosts.append(host)
                if len(hosts) == self.MAX_HOSTS:
                    break
        return hosts

    def _try_pack(self, job: int, cache: dict[int, list[int]]) -> bool:
        """Pack a waiting job (which passed :meth:`_job_can_share`) on the best allowed host."""
        ctx, s = self.ctx, self.s
        hosts = self._hosts(ctx.jobs.gpus[job], cache)
        best, best_key = None, None
        for host in hosts:
            key = self._can_share(job, host)
            if key is not None and (best_key is None or key < best_key):
                best, best_key = host, key
        if best is None:
            return False
        hosts.remove(best)
        a, b = s.interference.speeds(s.keys[job], s.keys[best])
        ctx.pack(job, best, a, b)
        s.packs += 1
        if min(a, b) < self.unstable_speed:
            ctx.set_timer(ctx.now + self.check_after, ("check_pair", job, best))
        return True

    def _check_pair(self, job: int, host: int) -> None:
        ctx, s = self.ctx, self.s
        alloc = ctx.engine.alloc[job]
        if alloc is None or host not in alloc[1] or ctx.state(job) not in (LOADING, RUNNING):
            return
        ctx.evict(job)
        s.evictions += 1
        s.never_pack.add(job)

    # -- orchestrator ----------------------------------------------------------------------------
    def schedule(self) -> None:
        if self.is_profiler:
            self._schedule_profiler()
            return
        ctx, s = self.ctx, self.s
        if not self.queue:
            return
        keep = []
        hosts: dict[int, list[int]] = {}
        self._pass_est = {}
        failed = 0
        for entry in self.queue.items:
            job = entry[1]
            if (s.g_ss > 0 and failed < self.MAX_FAILED_PACKS and ctx.running
                    and self._job_can_share(job)):  # Alg. 2: share first
                if self._try_pack(job, hosts):
                    continue
                failed += 1
            if ctx.jobs.gpus[job] <= ctx.free_gpus and ctx.try_start(job):
                continue
            keep.append(entry)
        self.queue.items = keep
        if keep and s.loans and any(loan[0] == ctx.partition and not loan[2] for loan in s.loans):
            self._start_returning(ctx.partition)  # a lender with waiting jobs takes its nodes back

    # -- dynamic strategy and time-aware scaling ----------------------------------------------------
    def _tick(self) -> None:
        if not self.uses_forecast:
            return
        s, now = self.s, self.ctx.now
        s.mode_seconds[s.g_ss] += now - s.last_tick
        s.last_tick = now
        while s.arrivals and s.arrivals[0] <= now - 2 * HOUR:  # windows (now-2h, now-1h], (now-1h, now]
            s.arrivals.popleft()
        last = sum(1 for t in s.arrivals if t > now - HOUR)
        before = len(s.arrivals) - last
        s.hourly.append(float(last))
        if len(s.hourly) < 6:
            return
        hist = np.asarray(s.hourly[-24 * 7 * 6:])
        quiet, median, busy, top = np.percentile(hist, (25, 50, 75, 90))
        forecast = self._model_forecast() if self.forecast == "model" else None
        if forecast is None:
            forecast = last + 0.5 * (last - before)  # no model yet: the past hour plus half its trend
            s.forecast_by["trend"] += 1
        else:
            s.forecast_by["model"] += 1
        if self.sharing and self.dynamic:
            mode = 2 if forecast >= busy else (1 if forecast > quiet or last > before else 0)
            s.g_ss = mode
        was = s.burst
        # A burst: the forecast is in the top decile of hours seen so far and at least twice the median.
        s.burst = forecast > 0 and forecast >= max(top, 2 * median)
        s.t_prof = self.t_prof0 / 2 if s.burst else self.t_prof0
        s.n_prof = 1 if s.burst else self.n_prof0
        if self.profiler_on and self.profiler_index is not None:
            if s.burst:
                self._borrow_nodes()
            elif was and s.loans:
                self._start_returning()

    def _series(self, start: int, stop: int):
        """Submissions per BIN over bins [start, stop), on the wall clock, as the throughput features want."""
        import pandas as pd

        s = self.s
        counts = np.zeros(stop - start)
        have = s.bins[start:stop]
        counts[: len(have)] = have
        index = s.origin + pd.to_timedelta(np.arange(start, stop) * BIN, unit="s")
        return pd.DataFrame({"submit_gpu_job": counts}, index=index)

    def _model_forecast(self) -> float | None:
        """Submissions expected in the coming hour from the throughput model (refreshed hourly), or None
        before the update engine has trained one."""
        from features.series import throughput_features

        s, now = self.s, self.ctx.now
        if s.tp_model is None:
            return None
        if now - s.tp_at < HOUR:
            return s.tp_value
        stop = int(now // BIN)  # completed bins
        start = max(0, stop - 7 * 144 - 150)  # a week of lags plus the longest rolling window
        if not any(s.bins[max(0, stop - 7 * 144):stop]):  # no submission for a week: the trace has ended
            s.tp_at, s.tp_value = now, 0.0
            return s.tp_value
        X, _ = throughput_features(self._series(start, stop), horizon=TP_HORIZON, keep_unlabelled=True)
        if X.empty:
            return None
        s.tp_at = now
        s.tp_value = max(0.0, float(s.tp_model.predict(X.iloc[[-1]])[0])) * HOUR / BIN
        return s.tp_value

    def _train_throughput(self) -> None:
        """Update engine, throughput part: refit the throughput model on the submission series so far
        (needs 9 days: a week of lags, a day to train on and the latest day to score on)."""
        from evaluation.scores import regression_scores
        from features.series import throughput_features
        from models.tabular import make_throughput_model

        s = self.s
        stop = int(self.ctx.now // BIN)
        if stop < 9 * 144:
            return
        X, y = throughput_features(self._series(0, stop), horizon=TP_HORIZON)
        algo = "ebm" if self.update_model == "ebm" else "lightgbm"
        # Small, regularised trees: a few weeks of bursty 10-minute counts overfit larger ones.
        extra = dict(n_estimators=100, learning_rate=0.05, num_leaves=7, min_child_samples=50) \
            if algo == "lightgbm" else {}
        if len(X) <= 2 * 144:
            return
        record = {"time": self.ctx.now, "throughput_rows": len(X)}
        old, last_day = X.iloc[:-144], X.iloc[-144:]
        m = make_throughput_model(algo, fast=True, **extra).fit(old, y.iloc[:-144])
        record["throughput_mae"] = regression_scores(y.iloc[-144:], m.predict(last_day))["mae"]
        record["throughput_mae_last_value"] = regression_scores(y.iloc[-144:], last_day["lag_0"])["mae"]
        # Champion / challenger inside the replay: the model drives decisions only while it beats the
        # naive last value on the latest day; otherwise the trend forecast is used.
        record["used"] = record["throughput_mae"] < record["throughput_mae_last_value"]
        s.tp_model = make_throughput_model(algo, fast=True, **extra).fit(X, y) if record["used"] else None
        s.tp_at = -np.inf
        s.tp_updates.append(record)

    # -- update engine ------------------------------------------------------------------------------
    def _update(self) -> None:
        """Retrain the duration model on jobs completed so far; new predictions for jobs not started."""
        from features.duration import duration_features

        ctx, s = self.ctx, self.s
        engine, w = ctx.engine, ctx.jobs
        done = np.asarray([e <= ctx.now for e in engine.end])
        waiting = np.asarray([st in (0, 1) for st in engine.state])  # not arrived yet, or queued
        if done.sum() < 50 or not waiting.any() or done.sum() == getattr(self, "_last_trained", -1):
            return
        self._last_trained = int(done.sum())
        if not hasattr(self, "_features"):
            X = duration_features(w.frame)
            self._features = X.loc[:, X.notna().any()]
        X = self._features
        y = np.asarray(w.duration)
        record = {"time": ctx.now, "trained_on": int(done.sum()), "repredicted": int(waiting.sum())}
        if self.monotone:
            model, record["tuner"] = self._system_tuner(X, y, done)
        else:
            model = self._duration_model(False).fit(X[done], y[done])
        s.predictions[waiting] = model.predict(X[waiting])
        if self.tracking_uri:
            self._log_update(model, X, y, done, record)
        s.updates.append(record)
        for policy in engine.policies:
            if isinstance(policy, Lucid) and not policy.is_profiler and policy.queue:
                policy.queue.items = sorted((policy.priority(j), j) for _, j in policy.queue.items)

    def _system_tuner(self, X, y, done):
        """System Tuner (§3.6): a monotone (non-decreasing) gpu_num effect. Both models are trained on the
        earlier 80 % of finished jobs (by end time) and scored on the latest 20 % (log MAE); the
        monotone one is then refitted on all finished jobs and used. Returns (model, measured effect)."""
        from evaluation.scores import duration_scores

        end = np.asarray(self.ctx.engine.end)
        cut = np.quantile(end[done], 0.8) if done.any() else np.inf
        recent = done & (end > cut)
        older = done & ~recent
        effect = {}
        if older.sum() >= 50 and recent.sum() >= 10:
            for name, mono in (("plain", False), ("monotone", True)):
                m = self._duration_model(mono).fit(X[older], y[older])
                effect[f"log_mae_{name}"] = duration_scores(y[recent], m.predict(X[recent]))["log_mae"]
        model = self._duration_model(True).fit(X[done], y[done])
        return model, effect

    def _duration_model(self, monotone: bool):
        from models.tabular import make_duration_model

        if self.update_model == "ebm":
            return make_duration_model("ebm", fast=True) if monotone else make_duration_model(
                "ebm", fast=True, monotone_increasing=())
        # In-replay retraining is kept light (100 rounds at rate 0.1 instead of 300 at 0.05): it runs
        # weekly inside every replay, three fits per update with the System Tuner.
        extra = dict(n_estimators=100, learning_rate=0.1) if self.update_model == "lightgbm" else {}
        model = make_duration_model(self.update_model, fast=True, **extra)
        if monotone and self.update_model == "lightgbm":
            model.monotone = ("num_gpus",)
        return model

    def _log_update(self, model, X, y, done, record) -> None:
        """Log the retrained model as a challenger version of `duration` (the champion is not moved)."""
        from evaluation.scores import duration_scores
        from models.registry import configure, data_fingerprint, log_estimator

        configure(self.tracking_uri)
        metrics = {k: v for k, v in record.get("tuner", {}).items()}
        metrics["train_log_mae"] = duration_scores(y[done], model.predict(X[done]))["log_mae"]
        logged = log_estimator(model, kind="duration", X_example=X[done].head(5), params={
            "source": "lucid-update-engine", "sim_time": record["time"]}, metrics=metrics,
            fingerprint=data_fingerprint(None, X[done]), register_as="duration", alias="challenger",
            columns=list(X.columns), tags={"schedcast.update_engine": "lucid"})
        record["registered_version"] = logged.version

    def stats(self) -> dict[str, Any]:
        if not (self.ctx.partition == 0):
            return {}
        s = self.s
        out = {"lucid_finished_in_profiler": s.finished_in_profiler, "lucid_profiled_then_moved": s.profiled_then_moved,
               "lucid_nodes_borrowed": s.borrowed, "lucid_nodes_returned": s.returned,
               "lucid_packs": s.packs, "lucid_evictions": s.evictions, "lucid_updates": len(s.updates),
               "lucid_throughput_updates": len(s.tp_updates),
               "lucid_throughput_model_used": sum(1 for u in s.tp_updates if u["used"]),
               "lucid_ticks_forecast_by_model": s.forecast_by["model"],
               "lucid_ticks_forecast_by_trend": s.forecast_by["trend"]}
        total = sum(s.mode_seconds.values())
        if total > 0:
            out.update({f"lucid_gss{g}_share": t / total for g, t in s.mode_seconds.items()})
        if s.tp_updates:
            out["lucid_throughput_mae"] = float(np.mean([u["throughput_mae"] for u in s.tp_updates]))
            out["lucid_throughput_mae_last_value"] = float(np.mean([u["throughput_mae_last_value"]
                                                                    for u in s.tp_updates]))
        tuned = [u["tuner"] for u in s.updates if u.get("tuner")]
        if tuned:
            out["lucid_tuner_log_mae_plain"] = float(np.mean([t["log_mae_plain"] for t in tuned]))
            out["lucid_tuner_log_mae_monotone"] = float(np.mean([t["log_mae_monotone"] for t in tuned]))
        return out


class Horus(Lucid):
    """Horus (Yeung et al., TPDS'21) approximated without ONNX graphs: the job's GPU utilisation is
    'predicted' from its workload profile (standing in for Horus' graph-based estimate); jobs are
    served first-come first-served, work-conserving, and packed onto a running job of the same GPU
    demand when the predicted utilisations sum to at most 100 % and memory fits. No profiler."""

    name = "horus"
    summary = "Horus-like: FIFO + packing when predicted GPU utilisation sums to <= 100% (no ONNX graphs)"
    citation = "Yeung et al., Horus, TPDS'21 (approximation)"
    uses_predictions = False

    def __init__(self, **kw):
        super().__init__(profiler=False, estimator=False, dynamic=False, binder=False, **kw)

    def _can_share(self, job: int, host: int):
        """Packable when the predicted utilisations sum to at most 100 % and memory fits; the host with
        the lowest summed utilisation wins."""
        s = self.s
        util = getattr(self, "_util", None)
        if util is None:
            util = self._util = self.ctx.jobs.frame["profile_gpu_util"].to_numpy(dtype=float)
        total = util[job] + util[host]
        if total > 100.0 or s.gmem[job] + s.gmem[host] > s.interference.gpu_memory_mb:
            return None
        return (total, host)
