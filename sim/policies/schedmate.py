"""SchedMate in the replay: a host scheduler helped by what a job carries (its code and launch command).

- ``schedmate-sjf``: non-preemptive shortest-job-first on the Scheduling Advisor's duration (the mean
  of the top-k similar finished jobs, models.schedmate.advisor); a job without a match falls back to
  the host's estimate (``host=prediction``: the duration prediction given to the replay; ``history``:
  Helios' user / GPU-count history, QSSF's predictor). ``schedmate-sjf-fh`` adds the Failure Handler.
- ``lucid-schedmate``: Lucid whose jobs skip profiling when similar jobs exist (the match's measured
  profile is used), whose duration estimate is SchedMate's where it has one, and whose packings are
  cancelled by the Metric Tracker: ``track_after`` s after packing it reads the host job's throughput
  before and after; below ``theta`` (0.5) of it the guest is evicted and never packed again (this
  replaces Lucid's own unstable-pair check).

Job text. Each job's text is the canonical text of the metadata extracted (models.schedmate.extract)
from the job material SchedMate's corpus binds to its group (features.jobcorpus.material_for_job,
``text_source=corpus``): jobs of one group (``group_id``, else user + job name, else VC + GPU count)
share a repository template with small changes; the GPU and node counts in the text are the job's
request (the corpus draws its own per group). ``text_source=trace`` uses only what the trace says
(name, user, VC, GPUs). Texts are built when the replay starts, cached per (group, variant), embedded
once per distinct text and scored against each other once (SchedulingAdvisor.warm), so the advice per
job costs microseconds: a walk over its text's short candidate list, or the answer kept for the text
while no similar job has finished since.

Failure Handler. Without it a failed job restarts after the restart rule's delay (a human's reaction
time, ``--failures ...,reaction=S``). With it, an infrastructure failure the handler recognises (with
probability ``recall``, drawn from ``ctx.rng``) restarts after ``diagnosis + recovery`` s and, for a
job failure (no node went down), the nodes the job ran on are cordoned for ``repair`` s; a
framework / script failure the handler wrongly calls infrastructure (the rate implied by
``precision``) is restarted automatically, fails again and then waits for the human: its delay is
``diagnosis + recovery`` plus the reaction time. ``recall`` / ``precision`` default to the Failure
Handler's scores measured on the generated corpus (models.schedmate.evaluate).

Retrieval never sees the future: a job is observed when it finishes, and advice at time t uses only
jobs observed by t.
"""
from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np

from sim.coordinator import Coordinator
from sim.engine import LOADING, RUNNING
from sim.failures import failure_category
from sim.policies.base import Policy, SortedQueue, start_in_order
from sim.policies.lucid.coordinator import LucidCoordinator
from sim.policies.lucid.orchestrator import Lucid

_TEXT_CACHE: dict[tuple, str] = {}  # (source, seed, group key, variant, gpus) -> canonical text
_TEXTS_LOADED: set[int] = set()  # corpus seeds whose texts were read from the disk cache
_FH_SCORES: dict[tuple, dict] = {}
#: The code that makes job texts and measures the Failure Handler: a change invalidates the disk cache.
_CORPUS_CODE = ("features/jobcorpus", "models/schedmate")


def _disk_key(kind: str, *parts: Any) -> str | None:
    """Key of a SchedMate value in the disk cache (features.traces.cache; off with SCHEDCAST_TRACE_CACHE=0)."""
    from features.traces import cache

    if cache.cache_dir() is None:
        return None
    return cache.value_key(kind, *parts, cache.code_digest(*_CORPUS_CODE))


_use_disk = True  # read and write the disk cache (use_disk_cache)


def clear_text_cache() -> None:
    """Forget the texts and rates this process built or read (for timing a replay from a cold start;
    the disk cache stays: the next replay reads it, as a new process would)."""
    _TEXT_CACHE.clear()
    _TEXTS_LOADED.clear()
    _FH_SCORES.clear()


def use_disk_cache(on: bool) -> None:
    """Read and write SchedMate's texts and rates in the disk cache (default) or not (timing a first run)."""
    global _use_disk
    _use_disk = bool(on)


def _load_texts(seed: int) -> None:
    """Merge the texts an earlier process built for corpus ``seed`` (about 3 ms each to extract)."""
    if seed in _TEXTS_LOADED or not _use_disk:
        return
    _TEXTS_LOADED.add(seed)
    from features.traces import cache

    stored = cache.get_value(_disk_key("schedmate-texts", seed))
    if isinstance(stored, dict):
        for key, text in stored.items():
            _TEXT_CACHE.setdefault(key, text)


def _save_texts(seed: int) -> None:
    if not _use_disk:
        return
    from features.traces import cache

    mine = {k: v for k, v in _TEXT_CACHE.items() if k[1] == seed}
    cache.put_value(_disk_key("schedmate-texts", seed), mine)


def measured_failure_handler(n: int = 150, seed: int = 0) -> dict:
    """The Failure Handler's precision / recall on ``n`` generated failed logs (about 1.3 s; kept per
    process and in the disk cache, keyed by the code that generates and diagnoses the logs)."""
    key = (n, seed)
    if key not in _FH_SCORES:
        from features.traces import cache

        disk = _disk_key("schedmate-fh", n, seed) if _use_disk else None
        scores = cache.get_value(disk)
        if not isinstance(scores, dict):
            from models.schedmate.evaluate import failure_handler_scores

            scores = dict(failure_handler_scores(n, seed, locator=True))
            cache.put_value(disk, scores)
        _FH_SCORES[key] = scores
    return _FH_SCORES[key]


def false_positive_rate(recall: float, precision: float, infra_share: float) -> float:
    """P(called infrastructure | not infrastructure) implied by recall and precision when a share
    ``infra_share`` of failures is infrastructure: FP = TP (1 - p) / p, TP = recall x infra."""
    if precision <= 0 or infra_share >= 1:
        return 0.0 if infra_share >= 1 else 1.0
    return float(min(1.0, recall * infra_share * (1.0 - precision) / precision / (1.0 - infra_share)))


def group_keys(frame: Any) -> list[str]:
    """Each job's recurrence key: ``group_id``; else user + job name; else VC + GPU count (Philly-like
    traces without names: a weak key, jobs of one VC and size look alike)."""
    n = len(frame)

    def col(name: str) -> list[Any]:
        if name not in frame:
            return [None] * n
        s = frame[name]
        return s.astype(object).where(s.notna(), None).tolist()

    gid, user, name, org = col("group_id"), col("user"), col("job_name"), col("org")
    gpus = frame["num_gpus"].astype(object).tolist() if "num_gpus" in frame else [None] * n
    out = []
    for g, u, nm, o, k in zip(gid, user, name, org, gpus):
        if g not in (None, ""):
            out.append(str(g))
        elif u is not None and nm is not None:
            out.append(f"{u}/{nm}")
        else:
            out.append(f"{o or 'all'}/{k}gpu")
    return out


class JobTexts:
    """Per-job canonical texts, built lazily (see the module docstring)."""

    def __init__(self, frame: Any, gpus: list[int], source: str = "corpus", seed: int = 0, variants: int = 1):
        self.source, self.seed, self.variants = source, int(seed), max(1, int(variants))
        self.keys = group_keys(frame)
        seen: dict[str, int] = {}
        self.index = []
        for k in self.keys:
            self.index.append(seen.get(k, 0))
            seen[k] = seen.get(k, 0) + 1
        self.gpus = gpus
        self._trace = None
        if source == "trace":
            n = len(frame)

            def col(name: str) -> list[Any]:
                return frame[name].astype(object).where(frame[name].notna(), None).tolist() if name in frame \
                    else [None] * n

            self._trace = (col("job_name"), col("user"), col("org"), col("model"))
        self._texts: list[str | None] = [None] * len(self.keys)
        self.built = 0

    def all(self) -> list[str]:
        """Every job's text (built now where not yet), in job order. Corpus texts built by an earlier
        process are read from the disk cache; new ones are added to it."""
        if self._trace is None:
            _load_texts(self.seed)
        built = self.built
        texts = [self.text(j) for j in range(len(self.keys))]
        if self.built > built:
            _save_texts(self.seed)
        return texts

    def text(self, job: int) -> str:
        t = self._texts[job]
        if t is None:
            t = self._texts[job] = self._build(job)
        return t

    def _build(self, job: int) -> str:
        if self._trace is not None:
            name, user, org, model = (c[job] for c in self._trace)
            return (f"job {name or 'unnamed'} model {model or 'unknown'} user {user or 'unknown'} "
                    f"vc {org or 'none'} gpus {self.gpus[job]}")
        variant = self.index[job] % self.variants
        gpus = int(self.gpus[job])
        key = ("corpus", self.seed, self.keys[job], variant, gpus)
        t = _TEXT_CACHE.get(key)
        if t is None:
            from dataclasses import replace

            from features.jobcorpus import material_for_job
            from models.schedmate.extract import extract_metadata

            m = material_for_job(self.keys[job], variant, self.seed)
            meta = extract_metadata(m.command, m.files)
            # The request's GPUs are what the scheduler knows for sure; the corpus draws its own per group.
            meta = replace(meta, gpus=gpus, nodes=max(1, -(-gpus // 8)))
            t = _TEXT_CACHE[key] = meta.canonical_text()
            self.built += 1
        return t


class SchedMateParts:
    """What SchedMate keeps per replay (one per coordinator): the Advisor, the job texts, the Failure
    Handler's rates and its bookkeeping."""

    def setup_schedmate(self, policy: "SchedMateParams", jobs: Any, rng: np.random.Generator) -> None:
        from models.schedmate.advisor import SchedulingAdvisor

        self.sm = policy
        self.advisor = SchedulingAdvisor(t_score=policy.t_score, k=policy.k, embedder=policy.embedder)
        self.texts = JobTexts(jobs.frame, jobs.gpus, policy.text_source, policy.corpus_seed, policy.variants)
        # Every job's text is known up front: embed the distinct texts once and build their candidate
        # lists in one product, so advice per job is a walk over a short list (or a kept answer).
        self.job_text = self.texts.all()
        self.advisor.warm(self.job_text)
        # job -> advised duration (s). Durations only: keeping every Advice (three tuples each) alive
        # for the whole replay made the garbage collector walk them, a fifth of a long replay's time.
        self.advice_s: dict[int, float] = {}
        self.fh_rng = rng
        self.recall = self.precision = None
        self.fh = {"failures": 0, "infrastructure": 0, "recognised": 0, "false_alarms": 0, "cordoned": 0}
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
    def _rates(self) -> tuple[float, float]:
        if self.recall is None:
            p = self.sm
            rec, prec = p.recall, p.precision
            if rec is None or prec is None:
                scores = measured_failure_handler()
                rec = scores["recall"] if rec is None else rec
                prec = scores["precision"] if prec is None else prec
            self.recall, self.precision = float(rec), float(prec)
        return self.recall, self.precision

    def restart_delay(self, ctx: Any, job: int, nodes: list[int]) -> float | None:
        """The Failure Handler's restart delay for ``job`` (None: the human's, i.e. the restart rule)."""
        p = self.sm
        self.fh["failures"] += 1
        if not p.failure_handler:
            return None
        recall, precision = self._rates()
        category = failure_category(ctx.failure_cause(job))
        u = float(self.fh_rng.random())
        if category == "infrastructure":
            self.fh["infrastructure"] += 1
            if u >= recall:
                return None
            self.fh["recognised"] += 1
            if p.repair > 0 and nodes and not any(n in ctx.pool.down for n in nodes):
                self._cordon(ctx, nodes)  # a job failure: its nodes are suspect (a node failure took its node down)
            return p.diagnosis + p.recovery
        fp = false_positive_rate(recall, precision, p.infra_share)
        if u < fp:
            self.fh["false_alarms"] += 1
            return p.diagnosis + p.recovery + ctx.engine.restart.delay
        return None

    def _cordon(self, ctx: Any, nodes: list[int]) -> None:
        pool = ctx.pool
        mine = [n for n in nodes if pool.capacity[n] and n not in pool.cordoned and n not in pool.down]
        for n in mine:
            pool.cordon(n)
            self.fh["cordoned"] += 1
        if mine:
            ctx.set_timer(ctx.now + self.sm.repair, ("sm_uncordon", tuple(mine)))

    def stats_schedmate(self) -> dict[str, Any]:
        out = {"schedmate_advised": self.advised, "schedmate_matched": self.matched,
               "schedmate_coverage": self.matched / self.advised if self.advised else 0.0,
               "schedmate_texts_built": self.texts.built}
        out.update({f"schedmate_fh_{k}": v for k, v in self.fh.items()})
        if self.recall is not None:
            out["schedmate_fh_recall"], out["schedmate_fh_precision"] = self.recall, self.precision
        return out


def uncordon(pool: Any, node: int) -> None:
    """Take a node a policy cordoned back into placement (sim.placement.pool.NodePool.uncordon)."""
    pool.uncordon(node)


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

    param_docs = {
        "failure_handler": "restart recognised infrastructure failures after diagnosis + recovery",
        "t_score": "cosine similarity a historical job needs to count as a match",
        "k": "matches averaged (top k)",
        "embedder": "text embedder: hash (fast, default) or minilm (local MiniLM)",
        "text_source": "job text from the generated corpus bound to the job's group, or the trace's fields",
        "corpus_seed": "seed of the corpus material",
        "variants": "distinct materials per group (jobs of a group cycle through them)",
        "host": "estimate without a match: the replay's prediction, or Helios' history predictor",
        "recall": "Failure Handler recall (default: measured on the corpus)",
        "precision": "Failure Handler precision (default: measured on the corpus)",
        "infra_share": "infrastructure share of the logs precision was measured on (7 of the 15 causes)",
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
    variants: int
    recall: float | None
    precision: float | None
    infra_share: float
    diagnosis: float
    recovery: float
    repair: float

    def _set_schedmate(self, failure_handler: bool, t_score: float, k: int, embedder: str, text_source: str,
                       corpus_seed: int, variants: int, recall: float | None, precision: float | None,
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
        self.text_source, self.corpus_seed, self.variants = text_source, int(corpus_seed), int(variants)
        self.recall, self.precision, self.infra_share = recall, precision, float(infra_share)
        self.diagnosis, self.recovery, self.repair = float(diagnosis), float(recovery), float(repair)


def _placement_nodes(ctx: Any, job: int) -> list[int]:
    record = ctx.engine.alloc[job]
    return sorted({entry[0] for entry in record[0]}) if record is not None else []


class SchedMateSjf(SchedMateParams, Policy):
    name = "schedmate-sjf"
    summary = "SchedMate: non-preemptive SJF on the Scheduling Advisor's duration (host estimate without a match)"
    citation = "SchedMate: Semantic-Aware Scheduling for GPU Clusters with LLMs (standalone SJF)"
    uses_predictions = True
    coordinator_class = SchedMateCoordinator

    def __init__(self, failure_handler: bool = False, t_score: float = 0.9, k: int = 3,
                 embedder: Literal["hash", "minilm"] = "hash", text_source: Literal["corpus", "trace"] = "corpus",
                 corpus_seed: int = 0, variants: int = 1, host: Literal["prediction", "history"] = "prediction",
                 recall: float | None = None, precision: float | None = None, infra_share: float = 7 / 15,
                 diagnosis: float = 60.0, recovery: float = 120.0, repair: float = 1800.0,
                 work_conserving: bool = False, priority: Literal["duration", "service"] = "duration") -> None:
        self._set_schedmate(failure_handler, t_score, k, embedder, text_source, corpus_seed, variants, recall,
                            precision, infra_share, diagnosis, recovery, repair)
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
        # the engine's record, not its nodes: most jobs never fail, so the nodes are read only then
        self.nodes[job] = self.ctx.engine.alloc[job]

    def schedule(self) -> None:
        # the Failure Handler notes each started job's allocation (read when the job fails)
        start_in_order(self.ctx, self.queue, work_conserving=self.work_conserving,
                       on_start=self._started if self.c.sm.failure_handler else None)

    def on_failure(self, job: int) -> float | None:
        record = self.nodes.pop(job, None)
        nodes = sorted({entry[0] for entry in record[0]}) if record is not None else []
        return self.c.restart_delay(self.ctx, job, nodes)

    def on_timer(self, payload: Any) -> None:
        if payload and payload[0] == "sm_uncordon":
            for node in payload[1]:
                uncordon(self.ctx.pool, node)

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
        return out


class LucidSchedMate(SchedMateParams, Lucid):
    name = "lucid-schedmate"
    summary = "Lucid + SchedMate: advised durations, profiling skipped for known jobs, tracker-cancelled packings"
    citation = "SchedMate (integration with Lucid, ASPLOS'23)"
    coordinator_class = LucidSchedMateCoordinator
    param_docs = {**Lucid.param_docs, **SchedMateParams.param_docs,
                  "theta": "a packing is cancelled when the host keeps less than this share of its throughput",
                  "track_after": "s after packing when the Metric Tracker has read enough progress lines",
                  "tracker_error": "relative error (sigma, log scale) of the tracker's throughput reading",
                  "skip_profiling": "skip the profiler for jobs with a match (use the match's profile)"}

    def __init__(self, failure_handler: bool = True, t_score: float = 0.9, k: int = 3,
                 embedder: Literal["hash", "minilm"] = "hash", text_source: Literal["corpus", "trace"] = "corpus",
                 corpus_seed: int = 0, variants: int = 1, recall: float | None = None,
                 precision: float | None = None, infra_share: float = 7 / 15, diagnosis: float = 60.0,
                 recovery: float = 120.0, repair: float = 1800.0, theta: float = 0.5, track_after: float = 60.0,
                 tracker_error: float = 0.05, skip_profiling: bool = True,
                 profiler: bool = True, sharing: bool = True, n_prof: int = 8, t_prof: float = 200.0,
                 g_ss: int = 2, dynamic: bool = True, min_remaining: float = 300.0,
                 update_interval: float = 7 * 86400.0, update_model: Literal["lightgbm", "ebm", "rf"] = "lightgbm",
                 profiler_nodes: int | Literal["auto"] = "auto",
                 profiler_from: Literal["cluster", "extra"] = "cluster",
                 initial: Literal["given", "history"] = "given", tick: float = 600.0,
                 forecast: Literal["model", "trend"] = "model") -> None:
        super().__init__(profiler=profiler, sharing=sharing, n_prof=n_prof, t_prof=t_prof, g_ss=g_ss,
                         dynamic=dynamic, min_remaining=min_remaining, unstable_speed=0.0,
                         update_interval=update_interval, update_model=update_model,
                         profiler_nodes=profiler_nodes, profiler_from=profiler_from, initial=initial,
                         tick=tick, forecast=forecast)
        self._set_schedmate(failure_handler, t_score, k, embedder, text_source, corpus_seed, variants, recall,
                            precision, infra_share, diagnosis, recovery, repair)
        if not 0.0 <= theta <= 1.0:
            raise ValueError(f"theta must be in [0, 1], got {theta}")
        if not (track_after >= 0 and tracker_error >= 0):
            raise ValueError("track_after and tracker_error must be >= 0")
        self.theta, self.track_after, self.tracker_error = float(theta), float(track_after), float(tracker_error)
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
                    m = int(adv.matches[0])
                    c.scores[job], c.gmem[job], c.util[job] = c.scores[m], c.gmem[m], c.util[m]
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
        host = ctx.engine.alloc[job][2]
        ratio = ctx.engine.speed[host]  # the host's throughput after / before packing
        if self.tracker_error > 0:
            ratio *= math.exp(float(ctx.rng("schedmate.tracker").normal(0.0, self.tracker_error)))
        if ratio < self.theta:
            ctx.set_timer(ctx.now + self.track_after, ("sm_cancel", job, host))
        return True

    def on_timer(self, payload: Any) -> None:
        kind = payload[0]
        if kind == "sm_cancel":
            job, host = payload[1], payload[2]
            ctx, c = self.ctx, self.c
            alloc = ctx.engine.alloc[job]
            if alloc is None or host not in alloc[1] or ctx.state(job) not in (LOADING, RUNNING):
                return
            ctx.evict(job)
            c.evictions += 1
            c.cancelled += 1
            c.never_pack.add(job)
        elif kind == "sm_uncordon":
            for node in payload[1]:
                uncordon(self.ctx.pool, node)
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
