"""SchedMate in the replay: a host scheduler helped by what a job carries (its code, launch command, logs).

- ``schedmate-sjf``: non-preemptive shortest-job-first on the Scheduling Advisor's duration (the mean
  of the top-k similar finished jobs, models.schedmate.advisor); a job without a match falls back to
  the host's estimate (``host=prediction``: the duration prediction given to the replay; ``history``:
  Helios' user / GPU-count history, QSSF's predictor). ``schedmate-sjf-fh`` adds the Failure Handler.
- ``lucid-schedmate``: Lucid whose jobs skip profiling when similar jobs exist (the matches' measured
  profiles, averaged, are used), whose duration estimate is SchedMate's where it has one, and whose
  packings are cancelled by the Metric Tracker: ``track_after`` s after packing it has read the host's
  log before and after; a measured throughput below ``theta`` (0.5) of the one before evicts the guest,
  which is never packed again (this replaces Lucid's own unstable-pair check).

What SchedMate reads (sim.policies.schedmate_material): each job's own text (its group's template, its
own dataset, batch, GPUs and the step count that makes its work; a share of groups use another group's
template, so retrieval, not the group key, finds the matches); each failed job's generated log, read by
the real Failure Handler (so its recall and precision are the classifier's); each packed host's
generated progress log, read by the real Metric Tracker (its detection rate is measured; a log it
cannot read leaves the packing alone). Texts and readings are cached per distinct text / log, in the
process and on disk.

Failure Handler. Without it a failed job restarts after the restart rule's delay (a human's reaction
time, ``--failures ...,reaction=S``). With it, a failure whose log the handler calls infrastructure is
restarted after ``diagnosis + recovery`` s; if it was infrastructure and no node went down, the nodes
the job ran on are cordoned for ``repair`` s; if it was not (a false alarm) the automatic restart fails
again and the human's delay follows: ``diagnosis + recovery`` plus the reaction time. ``recall`` /
``precision`` given as numbers replace the classifier by a coin with those rates (an ablation).

Retrieval never sees the future: a job is observed when it finishes, and advice at time t uses only
jobs observed by t.
"""
from __future__ import annotations

import math
from typing import Annotated, Any, Literal

import numpy as np

from features.plugins import COUNT0, FRACTION, PERIOD, SECONDS, UPDATE_INTERVAL, Domain
from sim.coordinator import Coordinator
from sim.states import LOADING, RUNNING
from sim.failures import failure_category
from sim.policies.base import Policy, SortedQueue, start_in_order
from sim.policies.lucid.coordinator import LucidCoordinator
from sim.policies.lucid.orchestrator import Lucid
from sim.policies.schedmate_material import (FailureReader, JobTexts, SlowdownReader, clear_text_cache, flush,
                                             group_keys, measured_failure_handler, use_disk_cache)

__all__ = ["JobTexts", "LucidSchedMate", "SchedMateSjf", "clear_text_cache", "false_positive_rate", "group_keys",
           "measured_failure_handler", "use_disk_cache"]


def false_positive_rate(recall: float, precision: float, infra_share: float) -> float:
    """P(called infrastructure | not infrastructure) implied by recall and precision when a share
    ``infra_share`` of failures is infrastructure: FP = TP (1 - p) / p, TP = recall x infra."""
    if precision <= 0 or infra_share >= 1:
        return 0.0 if infra_share >= 1 else 1.0
    return float(min(1.0, recall * infra_share * (1.0 - precision) / precision / (1.0 - infra_share)))


class SchedMateParts:
    """What SchedMate keeps per replay (one per coordinator): the Advisor, the job texts, the Failure
    Handler's rates and its bookkeeping."""

    def setup_schedmate(self, policy: "SchedMateParams", jobs: Any, rng: np.random.Generator) -> None:
        from models.schedmate.advisor import SchedulingAdvisor

        self.sm = policy
        self.advisor = SchedulingAdvisor(t_score=policy.t_score, k=policy.k, embedder=policy.embedder)
        self.texts = JobTexts(jobs.frame, jobs.gpus, policy.text_source, policy.corpus_seed)
        # Every job's text is known up front: embed the distinct texts once and build their candidate
        # lists in one product, so advice per job is a walk over a short list (or a kept answer).
        self.job_text = self.texts.all()
        self.advisor.warm(self.job_text)
        # job -> advised duration (s). Durations only: keeping every Advice (three tuples each) alive
        # for the whole replay made the garbage collector walk them, a fifth of a long replay's time.
        self.advice_s: dict[int, float] = {}
        self.fh_rng = rng
        self.failure_reader = FailureReader(self.texts)
        self.slowdown_reader = SlowdownReader(self.texts)
        self.fh = {"failures": 0, "infrastructure": 0, "recognised": 0, "false_alarms": 0, "cordoned": 0,
                   "missed": 0, "no_answer": 0}
        self.tracker = {"reads": 0, "untrackable": 0, "slowdowns": 0, "detected": 0, "false_alarms": 0}
        self.advised = self.matched = 0
        util = jobs.frame["gpu_util"] if "gpu_util" in jobs.frame else None
        self.gpu_util = [None] * len(self.job_text) if util is None else \
            [u if math.isfinite(u) else None for u in util.astype(float).tolist()]

    # -- advisor -----------------------------------------------------------------------------------
    def advise(self, job: int, now: float) -> Any:
        """The Advisor's advice for ``job`` at ``now`` (None: no similar finished job)."""
        self.advised += 1
        # The advisor keeps each text's answer until a job of a similar text finishes.
        adv = self.advisor.advise(self.job_text[job], now)
        if adv is not None:
            self.matched += 1
            self.advice_s[job] = adv.duration
        return adv

    def observe(self, job: int, duration: float, now: float) -> None:
        self.advisor.observe(str(job), self.job_text[job], duration, now, self.gpu_util[job])

    # -- failure handler ---------------------------------------------------------------------------
    def _called_infrastructure(self, ctx: Any, job: int, cause: str, category: str) -> bool:
        """Does the handler call this failure infrastructure? The real classifier on the job's generated
        log; with ``recall`` / ``precision`` given, a coin with those rates instead (an ablation)."""
        p = self.sm
        if p.recall is None and p.precision is None:
            kind = self.failure_reader.diagnose(job, cause)
            if kind is None:
                self.fh["no_answer"] += 1
            return kind == "infrastructure"
        recall = 1.0 if p.recall is None else p.recall
        precision = 1.0 if p.precision is None else p.precision
        u = float(self.fh_rng.random())
        if category == "infrastructure":
            return u < recall
        per_type = {"framework": p.false_alarm_framework, "script": p.false_alarm_script}.get(category)
        if per_type is not None:  # measured per failure type (e.g. on real logs): P(called infrastructure | type)
            return u < per_type
        return u < false_positive_rate(recall, precision, p.infra_share)

    def restart_delay(self, ctx: Any, job: int, nodes: list[int]) -> float | None:
        """The Failure Handler's restart delay for ``job`` (None: the human's, i.e. the restart rule)."""
        p = self.sm
        self.fh["failures"] += 1
        if not p.failure_handler:
            return None
        cause = ctx.failure_cause(job)
        category = failure_category(cause)
        if category == "unknown":  # the trace says only 'failed': the generated log's cause decides
            from features.jobcorpus.logs import CAUSES

            category = CAUSES[self.failure_reader.cause(job, cause)][0]
        infra = category == "infrastructure"
        self.fh["infrastructure"] += infra
        called = self._called_infrastructure(ctx, job, cause, category)
        if infra and called:
            self.fh["recognised"] += 1
            if p.repair > 0 and nodes and not any(n in ctx.pool.down for n in nodes):
                self._cordon(ctx, nodes)  # a job failure: its nodes are suspect (a node failure took its node down)
            return p.diagnosis + p.recovery
        if called:
            self.fh["false_alarms"] += 1
            return p.diagnosis + p.recovery + ctx.restart_delay
        self.fh["missed"] += infra
        return None

    # -- metric tracker ----------------------------------------------------------------------------
    def slowdown_seen(self, ctx: Any, host: int, true_ratio: float, theta: float, mode: str,
                      detection: float | None, error: float) -> bool:
        """Does the Metric Tracker see the host slowed below ``theta`` of its throughput? ``log``: the real
        tracker on the host's generated log (``detection`` given: a true slowdown is seen with that
        probability, nothing else is: Fig. 13c's sweep); ``oracle``: the engine's speed x log-normal error."""
        t = self.tracker
        slow = true_ratio < theta
        t["slowdowns"] += slow
        if detection is not None:
            seen = slow and float(ctx.rng("schedmate.tracker").random()) < detection
        elif mode == "oracle":
            r = true_ratio * (math.exp(float(ctx.rng("schedmate.tracker").normal(0.0, error))) if error > 0 else 1.0)
            seen = r < theta
        else:
            t["reads"] += 1
            measured = self.slowdown_reader.ratio(host, true_ratio)
            if measured is None:
                t["untrackable"] += 1
                return False
            seen = measured < theta
        t["detected"] += slow and seen
        t["false_alarms"] += seen and not slow
        return seen

    def _cordon(self, ctx: Any, nodes: list[int]) -> None:
        pool = ctx.pool
        mine = [n for n in nodes if pool.capacity[n] and n not in pool.cordoned and n not in pool.down]
        for n in mine:
            ctx.cordon(n)
            self.fh["cordoned"] += 1
        if mine:
            ctx.set_timer(ctx.now + self.sm.repair, ("sm_uncordon", tuple(mine)))

    def stats_schedmate(self) -> dict[str, Any]:
        flush()  # diagnoses and readings made in this replay go to the disk cache once
        out = {"schedmate_advised": self.advised, "schedmate_matched": self.matched,
               "schedmate_coverage": self.matched / self.advised if self.advised else 0.0,
               "schedmate_texts_built": self.texts.built, "schedmate_logs_read": self.failure_reader.read,
               "schedmate_distinct_texts": len(set(self.job_text))}
        out.update({f"schedmate_fh_{k}": v for k, v in self.fh.items()})
        fh = self.fh
        if fh["infrastructure"]:
            out["schedmate_fh_recall"] = fh["recognised"] / fh["infrastructure"]
        if fh["recognised"] + fh["false_alarms"]:
            out["schedmate_fh_precision"] = fh["recognised"] / (fh["recognised"] + fh["false_alarms"])
        out.update({f"schedmate_tracker_{k}": v for k, v in self.tracker.items()})
        if self.tracker["slowdowns"]:
            out["schedmate_tracker_detection_rate"] = self.tracker["detected"] / self.tracker["slowdowns"]
        return out


def uncordon(ctx: Any, node: int) -> None:
    """Take a node a policy cordoned back into placement (through its Context)."""
    ctx.uncordon(node)


class SchedMateCoordinator(Coordinator, SchedMateParts):
    """One per replay of ``schedmate-sjf``: the advisor shared by every partition."""

    def __init__(self) -> None:
        self.ready = False

    def join(self, policy: "SchedMateSjf") -> None:
        if not self.ready:
            self.ready = True
            self.setup_schedmate(policy, policy.ctx.jobs, self.cctx.rng("schedmate.fh"))

    def stats(self) -> dict[str, Any]:
        return self.stats_schedmate() if self.ready else {}


class SchedMateParams:
    """Parameters every SchedMate policy shares (documented once)."""

    #: each numeric parameter's domain (features.plugins.Domain; merged with Lucid's for lucid-schedmate)
    param_domains = {"t_score": FRACTION, "k": Domain(ge=1, le=10_000, integer=True), "corpus_seed": COUNT0,
                     "recall": FRACTION, "precision": FRACTION, "infra_share": FRACTION, "diagnosis": SECONDS,
                     "recovery": SECONDS, "repair": SECONDS, "theta": FRACTION, "track_after": SECONDS,
                     "tracker_error": Domain(ge=0.0), "detection": FRACTION,
                     "false_alarm_framework": FRACTION, "false_alarm_script": FRACTION}
    param_docs = {
        "failure_handler": "restart recognised infrastructure failures after diagnosis + recovery",
        "t_score": "cosine similarity a historical job needs to count as a match",
        "k": "matches averaged (top k)",
        "embedder": "text embedder: hash (fast, default) or minilm (local MiniLM)",
        "text_source": "job text from the material generated per job (corpus), or the trace's fields",
        "corpus_seed": "seed of the corpus material",
        "host": "estimate without a match: the replay's prediction, or Helios' history predictor",
        "recall": "Failure Handler recall as a coin (default: none, the real classifier reads each failed log)",
        "precision": "Failure Handler precision as a coin (default: none, the real classifier reads each failed log)",
        "infra_share": "infrastructure share of failures the coin's precision refers to (recall/precision given)",
        "false_alarm_framework": "with recall given: P(called infrastructure | a framework failure), measured per type "
                                 "(default: from precision and infra_share)",
        "false_alarm_script": "with recall given: P(called infrastructure | a script failure), measured per type",
        "diagnosis": "s to diagnose a failure",
        "recovery": "s to recover (restart from the last checkpoint) after diagnosis",
        "repair": "s a node stays cordoned after a recognised infrastructure job failure (0: never)",
        "work_conserving": "start later jobs that fit when the head does not (backfill)",
        "priority": "order by duration (SJF, the paper's) or GPUs x duration (QSSF's service order)",
    }
    failure_handler: bool
    t_score: float
    k: int
    embedder: str
    text_source: str
    corpus_seed: int
    recall: float | None
    precision: float | None
    infra_share: float
    false_alarm_framework: float | None = None
    false_alarm_script: float | None = None
    diagnosis: float
    recovery: float
    repair: float

    def _set_schedmate(self, failure_handler: bool, t_score: float, k: int, embedder: str, text_source: str,
                       corpus_seed: int, recall: float | None, precision: float | None,
                       infra_share: float, diagnosis: float, recovery: float, repair: float) -> None:
        for name, value in (("recall", recall), ("precision", precision), ("infra_share", infra_share)):
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        for name, value in (("diagnosis", diagnosis), ("recovery", recovery), ("repair", repair)):
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a number of seconds >= 0, got {value}")
        if embedder not in ("hash", "minilm"):
            raise ValueError(f"embedder must be 'hash' or 'minilm', got {embedder!r}")
        if text_source not in ("corpus", "trace"):
            raise ValueError(f"text_source must be 'corpus' or 'trace', got {text_source!r}")
        self.failure_handler, self.t_score, self.k, self.embedder = bool(failure_handler), float(t_score), int(k), embedder
        self.text_source, self.corpus_seed = text_source, int(corpus_seed)
        self.recall, self.precision, self.infra_share = recall, precision, float(infra_share)
        self.diagnosis, self.recovery, self.repair = float(diagnosis), float(recovery), float(repair)

    def _set_false_alarms(self, framework: float | None, script: float | None) -> None:
        for name, value in (("false_alarm_framework", framework), ("false_alarm_script", script)):
            if value is not None and not 0.0 <= value <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {value}")
        if (framework is not None or script is not None) and self.recall is None:
            raise ValueError("false_alarm_framework / false_alarm_script need recall= (the coin replaces the classifier)")
        self.false_alarm_framework, self.false_alarm_script = framework, script


def _placement_nodes(ctx: Any, job: int) -> list[int]:
    placement = ctx.placement_of(job)
    return sorted({entry[0] for entry in placement}) if placement is not None else []


class SchedMateSjf(SchedMateParams, Policy):
    name = "schedmate-sjf"
    summary = "SchedMate: non-preemptive SJF on the Scheduling Advisor's duration (host estimate without a match)"
    citation = "SchedMate: Semantic-Aware Scheduling for GPU Clusters with LLMs (standalone SJF)"
    uses_predictions = True
    coordinator_class = SchedMateCoordinator

    def __init__(self, failure_handler: bool = False, t_score: float = 0.9, k: int = 3,
                 embedder: Literal["hash", "minilm"] = "hash", text_source: Literal["corpus", "trace"] = "corpus",
                 corpus_seed: int = 0, host: Literal["prediction", "history"] = "prediction",
                 recall: float | None = None, precision: float | None = None, infra_share: float = 7 / 15,
                 diagnosis: float = 60.0, recovery: float = 120.0, repair: float = 1800.0,
                 work_conserving: bool = False, priority: Literal["duration", "service"] = "duration",
                 false_alarm_framework: float | None = None, false_alarm_script: float | None = None) -> None:
        self._set_schedmate(failure_handler, t_score, k, embedder, text_source, corpus_seed, recall,
                            precision, infra_share, diagnosis, recovery, repair)
        self._set_false_alarms(false_alarm_framework, false_alarm_script)
        if host not in ("prediction", "history"):
            raise ValueError(f"host must be 'prediction' or 'history', got {host!r}")
        if priority not in ("duration", "service"):
            raise ValueError(f"priority must be 'duration' (SJF) or 'service' (GPUs x duration), got {priority!r}")
        self.host, self.work_conserving, self.service = host, bool(work_conserving), priority == "service"
        self.queue = SortedQueue()
        self.nodes: dict[int, Any] = {}  # running job -> its allocation record (nodes read on failure)
        self._history: Any = None

    def on_start(self) -> None:
        self.c = self.ctx.coordinator
        self.c.join(self)
        if self.host == "history":
            from sim.policies.queueing import Qssf

            q = Qssf(history=True)
            q.bind(self.ctx)
            self._history = q

    def estimate(self, job: int) -> float:
        """The Advisor's duration, else the host's estimate."""
        adv = self.c.advise(job, self.ctx.now)
        if adv is not None:
            return adv.duration
        if self._history is not None:
            return self._history.predict(job)
        return self.ctx.prediction(job)

    def _key(self, seconds: float, job: int) -> float:
        return seconds * self.ctx.jobs.gpus[job] if self.service else seconds

    def on_arrival(self, job: int) -> None:
        self.queue.add(self._key(self.estimate(job), job), job)

    def on_requeue(self, job: int) -> None:  # after a failure: advised again, less the work kept
        done = self.ctx.jobs.duration[job] - self.ctx.remaining(job)
        self.queue.add(self._key(max(self.estimate(job) - done, 0.0), job), job)

    def on_finish(self, job: int) -> None:
        self.nodes.pop(job, None)
        self.c.observe(job, self.ctx.jobs.duration[job], self.ctx.now)
        if self._history is not None:
            self._history.on_finish(job)

    def _started(self, job: int) -> None:
        # the placement, not its nodes: most jobs never fail, so the nodes are read only then
        self.nodes[job] = self.ctx.placement_of(job)

    def schedule(self) -> None:
        # the Failure Handler notes each started job's allocation (read when the job fails)
        start_in_order(self.ctx, self.queue, work_conserving=self.work_conserving,
                       on_start=self._started if self.c.sm.failure_handler else None)

    def on_failure(self, job: int) -> float | None:
        placement = self.nodes.pop(job, None)
        nodes = sorted({entry[0] for entry in placement}) if placement is not None else []
        return self.c.restart_delay(self.ctx, job, nodes)

    def on_timer(self, payload: Any) -> None:
        if payload and payload[0] == "sm_uncordon":
            for node in payload[1]:
                uncordon(self.ctx, node)

    def stats(self) -> dict[str, Any]:
        return self.c.stats_schedmate() if self.ctx.partition == 0 and self.c.ready else {}


# -- Lucid + SchedMate -------------------------------------------------------------------------------
class LucidSchedMateCoordinator(LucidCoordinator, SchedMateParts):
    """Lucid's coordinator plus SchedMate's advisor; Lucid's update engine never overrides an advised
    duration."""

    def _setup(self, policy: Any) -> None:
        super()._setup(policy)
        self.setup_schedmate(policy, self.cctx.jobs, self.cctx.rng("schedmate.fh"))
        self.skipped_profiling = self.cancelled = 0
        self.util_errors: list[float] = []

    def _update(self) -> None:
        super()._update()
        if self.predictions is not None:
            for job, seconds in self.advice_s.items():
                self.predictions[job] = seconds

    def stats(self) -> dict[str, Any]:
        out = super().stats()
        if self.ready:
            out.update(self.stats_schedmate())
            out["schedmate_skipped_profiling"] = self.skipped_profiling
            out["schedmate_cancelled_packings"] = self.cancelled
            if self.util_errors:
                out["schedmate_util_rel_error"] = float(np.mean(self.util_errors))
                out["schedmate_util_rel_error_capped"] = float(np.mean(np.minimum(self.util_errors, 1.0)))
            if float(np.max(self.warmup_drop)) > 0:  # Lucid's profiler against the steady state (paper: 19.3 %)
                out["lucid_profile_util_rel_error"] = float(np.mean(self.warmup_drop))
            out["schedmate_packs_below_theta"] = self.tracker["slowdowns"]
            out["schedmate_mispacks"] = self.mispacks
        return out


class LucidSchedMate(SchedMateParams, Lucid):
    name = "lucid-schedmate"
    summary = "Lucid + SchedMate: advised durations, profiling skipped for known jobs, tracker-cancelled packings"
    citation = "SchedMate (integration with Lucid, ASPLOS'23)"
    coordinator_class = LucidSchedMateCoordinator
    param_docs = {**Lucid.param_docs, **SchedMateParams.param_docs,
                  "theta": "a packing is cancelled when the host keeps less than this share of its throughput",
                  "track_after": "s after packing when the Metric Tracker has read enough progress lines",
                  "tracker": "log: the Metric Tracker reads the host's generated log; oracle: the engine's speed",
                  "tracker_error": "tracker=oracle: relative error (sigma, log scale) of the speed reading",
                  "detection": "a true slowdown is detected with this probability, nothing else is (Fig. 13c sweep; "
                               "default: whatever the tracker reads)",
                  "skip_profiling": "skip the profiler for jobs with a match (use the matches' mean profile)",
                  "warmup_error": Lucid.param_docs["warmup_error"],
                  "gpu_memory_mb": Lucid.param_docs["gpu_memory_mb"]}

    def __init__(self, failure_handler: bool = True, t_score: float = 0.9, k: int = 3,
                 embedder: Literal["hash", "minilm"] = "hash", text_source: Literal["corpus", "trace"] = "corpus",
                 corpus_seed: int = 0, recall: float | None = None,
                 precision: float | None = None, infra_share: float = 7 / 15, diagnosis: float = 60.0,
                 recovery: float = 120.0, repair: float = 1800.0, theta: float = 0.5, track_after: float = 60.0,
                 tracker: Literal["log", "oracle"] = "log", tracker_error: float = 0.05,
                 detection: float | None = None, skip_profiling: bool = True,
                 profiler: bool = True, sharing: bool = True, n_prof: int = 8, t_prof: float = 200.0,
                 g_ss: int = 2, dynamic: bool = True, min_remaining: float = 300.0,
                 update_interval: Annotated[float, UPDATE_INTERVAL] = 7 * 86400.0,
                 update_model: Literal["lightgbm", "ebm", "rf"] = "lightgbm",
                 profiler_nodes: int | Literal["auto"] = "auto",
                 profiler_from: Literal["cluster", "extra"] = "cluster",
                 initial: Literal["given", "history"] = "given", tick: Annotated[float, PERIOD] = 600.0,
                 forecast: Literal["model", "trend"] = "model", warmup_error: float = 0.0,
                 false_alarm_framework: float | None = None, false_alarm_script: float | None = None,
                 gpu_memory_mb: float | None = None) -> None:
        super().__init__(profiler=profiler, sharing=sharing, n_prof=n_prof, t_prof=t_prof, g_ss=g_ss,
                         dynamic=dynamic, min_remaining=min_remaining, unstable_speed=0.0,
                         update_interval=update_interval, update_model=update_model,
                         profiler_nodes=profiler_nodes, profiler_from=profiler_from, initial=initial,
                         tick=tick, forecast=forecast, warmup_error=warmup_error, gpu_memory_mb=gpu_memory_mb)
        self._set_schedmate(failure_handler, t_score, k, embedder, text_source, corpus_seed, recall,
                            precision, infra_share, diagnosis, recovery, repair)
        self._set_false_alarms(false_alarm_framework, false_alarm_script)
        if not 0.0 <= theta <= 1.0:
            raise ValueError(f"theta must be in [0, 1], got {theta}")
        if not (track_after >= 0 and tracker_error >= 0):
            raise ValueError("track_after and tracker_error must be >= 0")
        if tracker not in ("log", "oracle"):
            raise ValueError(f"tracker must be 'log' or 'oracle', got {tracker!r}")
        if detection is not None and not 0.0 <= detection <= 1.0:
            raise ValueError(f"detection must be in [0, 1], got {detection}")
        self.theta, self.track_after, self.tracker_error = float(theta), float(track_after), float(tracker_error)
        self.tracker, self.detection = tracker, None if detection is None else float(detection)
        self.skip_profiling = bool(skip_profiling)
        self.nodes: dict[int, list[int]] = {}

    def on_arrival(self, job: int) -> None:
        if not self.is_profiler:
            c = self.c
            adv = c.advise(job, self.ctx.now)
            if adv is not None:
                if c.predictions is not None:
                    # Set before the job is queued, so its priority uses it; the queued jobs' estimates are
                    # unchanged, so no re-sort (bumping c.version re-sorted every VC queue per arrival).
                    c.predictions[job] = adv.duration
                if self.skip_profiling and job not in c.profiled:
                    # the matches' historical hardware metrics (their whole runs, so steady state, not a
                    # warm-up profile), averaged: the paper's bypass (schedmate.txt:214), not the top match's
                    ms = [int(m) for m in adv.matches]
                    c.scores[job] = round(sum(float(c.true_scores[m]) for m in ms) / len(ms))
                    c.gmem[job] = sum(float(c.gmem[m]) for m in ms) / len(ms)
                    c.util[job] = sum(float(c.true_util[m]) for m in ms) / len(ms)
                    # the binder's hot loop reads plain lists made when the replay started: keep them in step
                    # (without this the pair rule used the warm-up profile the bypass replaced)
                    for name, value in (("score_list", c.scores[job]), ("gmem_list", c.gmem[job]),
                                        ("util_list", c.util[job])):
                        plain = getattr(c, name, None)
                        if plain is not None:
                            plain[job] = float(value)
                    truth = float(c.true_util[job])
                    if truth > 0:  # the SM-utilisation estimate's relative error (paper: 28.1 %)
                        c.util_errors.append(abs(float(c.util[job]) - truth) / truth)
                    c.profiled.add(job)  # known from its match: no profiling, may pack at once
                    c.skipped_profiling += 1
        super().on_arrival(job)

    def on_finish(self, job: int) -> None:
        self.nodes.pop(job, None)
        super().on_finish(job)
        self.c.observe(job, self.ctx.jobs.duration[job], self.ctx.now)

    def _try_pack(self, job: int, cache: dict[int, list[int]]) -> bool:
        if not super()._try_pack(job, cache):
            return False
        ctx = self.ctx
        host = ctx.holder(job)
        ratio = ctx.speed(host)  # the host's true throughput after / before packing
        # Lucid's _try_pack counted a mis-packing (steady-state scores over G_SS) and noted the host's speed
        if self.c.slowdown_seen(ctx, host, float(ratio), self.theta, self.tracker, self.detection,
                                self.tracker_error):
            ctx.set_timer(ctx.now + self.track_after, ("sm_cancel", job, host))
        return True

    def on_timer(self, payload: Any) -> None:
        kind = payload[0]
        if kind == "sm_cancel":
            job, host = payload[1], payload[2]
            ctx, c = self.ctx, self.c
            if host not in ctx.sharing(job) or ctx.state(job) not in (LOADING, RUNNING):
                return
            ctx.evict(job)
            c.evictions += 1
            c.cancelled += 1
            c.never_pack.add(job)
        elif kind == "sm_uncordon":
            for node in payload[1]:
                uncordon(self.ctx, node)
        else:
            super().on_timer(payload)

    def schedule(self) -> None:
        super().schedule()
        if self.failure_handler and not self.is_profiler:
            nodes = self.nodes
            for job in self.ctx.running - nodes.keys():  # the jobs started since (set difference in C)
                nodes[job] = _placement_nodes(self.ctx, job)

    def on_failure(self, job: int) -> float | None:
        super().on_failure(job)
        nodes = self.nodes.pop(job, [])
        if self.is_profiler:
            nodes = []  # the profiler's nodes may be borrowed: never cordoned here
        return self.c.restart_delay(self.ctx, job, nodes)


def register_policies(register: Any) -> None:
    register(SchedMateSjf)
    register(SchedMateSjf, "schedmate-sjf-fh", "SchedMate SJF with the Failure Handler", failure_handler=True)
    register(LucidSchedMate)
