"""What SchedMate reads in a replay: each job's text, its failed log and its progress log.

Split from sim.policies.schedmate (the policies): this module turns a trace job into the material
SchedMate's readers see and runs the real readers on it, caching per distinct text / log.

- Job texts (``JobTexts``): per job, not per group. features.jobcorpus.replay writes each job's
  material: its group's template (or, for a share of groups, another group's: look-alike jobs), its
  own dataset / batch / learning rate, the GPUs it asked for, and the step count that makes its work
  (the trace's ``full_duration``, else ``duration``), so its duration follows from what its text says.
  The text is the canonical text of what models.schedmate.extract reads from that material. The same
  text is built once per process (and kept in the disk cache, keyed by the corpus and reader code).
- Failed logs (``FailureReader``): a failed job's log is generated with its root cause (the trace's
  cause mapped to the corpus' causes) and read by the real Failure Handler (models.schedmate.failures,
  locator + classifier), so the handler's recall and precision in the replay are what the classifier
  achieves. Logs are cached per (template, cause, noisy): jobs of one template log alike (the log
  format, layout and ranks are the template's).
- Progress logs (``SlowdownReader``): when a guest is packed onto a host, the host's generated log
  before packing (to 40 % of its steps) and after (to 60 %, its step time multiplied by the true
  slowdown from 40 %) are read by the real Metric Tracker; the measured ratio is step time before /
  after, or None when the tracker cannot read the log (an untrackable job). Cached per (template,
  slowdown to 0.05, noisy); the log before packing once per (template, noisy).
"""
from __future__ import annotations

import math
from typing import Any

_TEXT_CACHE: dict[tuple, str] = {}  # ("corpus", seed, group key, index, gpus, work, template) -> canonical text
# (on disk: one list of texts per workload, JobTexts.disk_key)
_META_CACHE: dict[tuple, str] = {}  # (seed, template, dataset surface, iterations, batch, gpus) -> canonical text
_FH_SCORES: dict[tuple, dict] = {}
_DIAGNOSES: dict[tuple, str | None] = {}  # failed-log key -> diagnosed kind (None: no failure found)
_READINGS: dict[tuple, float | None] = {}  # progress-log key -> measured throughput ratio (None: untrackable)
_LOADED: set[str] = set()
_JOB_KEYS: dict[tuple, tuple[str, tuple]] = {}  # (seed, group, index, template, trace cause) -> (cause, log key)
_DIRTY: set[tuple[str, int]] = set()  # (kind, seed) with values not yet written to the disk cache
#: The code that makes job texts and logs and reads them: a change invalidates the disk cache.
_CORPUS_CODE = ("features/jobcorpus", "features/schedmate_text", "models/schedmate")

_use_disk = True  # read and write the disk cache (use_disk_cache)


def _disk_key(kind: str, *parts: Any) -> str | None:
    """Key of a SchedMate value in the disk cache (features.traces.cache; off with SCHEDCAST_TRACE_CACHE=0)."""
    from features.traces import cache

    if cache.cache_dir() is None:
        return None
    from sim.policies import schedmate_material as me

    return cache.value_key(kind, *parts, cache.code_digest(*me._CORPUS_CODE))


def clear_text_cache() -> None:
    """Forget the texts, rates, diagnoses and readings this process built or read (for timing a replay
    from a cold start; the disk cache stays: the next replay reads it, as a new process would)."""
    for d in (_TEXT_CACHE, _META_CACHE, _FH_SCORES, _DIAGNOSES, _READINGS, _JOB_KEYS):
        d.clear()
    _LOADED.clear()
    _DIRTY.clear()


def use_disk_cache(on: bool) -> None:
    """Read and write SchedMate's texts and readings in the disk cache (default) or not (a first run)."""
    global _use_disk
    _use_disk = bool(on)


def _load(kind: str, seed: int, into: dict) -> None:
    tag = f"{kind}:{seed}"
    if tag in _LOADED or not _use_disk:
        return
    _LOADED.add(tag)
    from features.traces import cache

    stored = cache.get_value(_disk_key(kind, seed))
    if isinstance(stored, dict):
        for key, value in stored.items():
            into.setdefault(key, value)


def _save(kind: str, seed: int, src: dict, pos: int) -> None:
    if not _use_disk:
        return
    from features.traces import cache

    cache.put_value(_disk_key(kind, seed), {k: v for k, v in src.items() if k[pos] == seed})


def flush() -> None:
    """Write the diagnoses and readings made since the last flush to the disk cache (once per replay,
    not per value: the store is rewritten whole)."""
    for kind, seed in sorted(_DIRTY):
        _save(kind, seed, _DIAGNOSES if kind == "schedmate-diag" else _READINGS, 1)
    _DIRTY.clear()


def measured_failure_handler(n: int = 150, seed: int = 0) -> dict:
    """The Failure Handler's precision / recall on ``n`` generated failed logs (models.schedmate.evaluate;
    kept per process and in the disk cache). Used only where a caller asks for the rates themselves."""
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


def _work(frame: Any) -> list[float]:
    """The work each job's text describes: ``full_duration`` (what was asked for; a killed job ran less),
    else ``duration``; rounded to 1 s (the cache key)."""
    import numpy as np

    n = len(frame)
    dur = frame["duration"].astype(float).to_numpy() if "duration" in frame else np.full(n, 600.0)
    if "full_duration" in frame:
        full = frame["full_duration"].astype(float).to_numpy()
        dur = np.where(np.isfinite(full) & (full > 0), full, dur)
    dur = np.where(np.isfinite(dur) & (dur > 0), dur, 60.0)
    return [float(x) for x in np.round(dur)]


class JobTexts:
    """Per-job canonical texts, built lazily (see the module docstring)."""

    def __init__(self, frame: Any, gpus: list[int], source: str = "corpus", seed: int = 0):
        from features.jobcorpus.replay import template_keys

        self.source, self.seed = source, int(seed)
        self.keys = group_keys(frame)
        seen: dict[str, int] = {}
        self.index = []
        for k in self.keys:
            self.index.append(seen.get(k, 0))
            seen[k] = seen.get(k, 0) + 1
        self.gpus = [int(g) for g in gpus]
        self.work = _work(frame)
        self.templates = template_keys(self.keys, self.seed)
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
        """Every job's text (built now where not yet), in job order. Corpus texts of a workload replayed
        by an earlier process are read from the disk cache as one list, stored per workload (a content
        hash of what the texts are made from), so a replay reads only its own texts and the store does
        not grow with every workload replayed under a seed."""
        disk = self.disk_key() if self._trace is None and _use_disk else None
        if disk is not None:
            from features.traces import cache

            stored = cache.get_value(disk)
            if isinstance(stored, list) and len(stored) == len(self.keys) and all(isinstance(t, str) for t in stored):
                self._texts = list(stored)
                return list(stored)
        texts = [self.text(j) for j in range(len(self.keys))]
        if disk is not None:
            from features.traces import cache

            cache.put_value(disk, texts)
        return texts

    def disk_key(self) -> str | None:
        """The disk-cache key of this workload's texts: the corpus seed and, per job, what its text is made
        from (group key, index in the group, GPUs, work, template), plus the code that makes texts."""
        import hashlib

        h = hashlib.sha1(f"{self.seed}|{len(self.keys)}".encode())
        for parts in zip(self.keys, self.index, self.gpus, self.work):
            h.update(repr(parts).encode())
            h.update(self.templates[parts[0]].encode())
        return _disk_key("schedmate-texts3", h.hexdigest())

    def text(self, job: int) -> str:
        t = self._texts[job]
        if t is None:
            t = self._texts[job] = self._build(job)
        return t

    def template(self, job: int) -> str:
        return self.templates[self.keys[job]]

    def spec(self, job: int) -> Any:
        """The job's drawn description (features.jobcorpus.replay.replay_spec)."""
        from features.jobcorpus.replay import replay_spec

        return replay_spec(self.template(job), self.keys[job], self.index[job], self.seed, self.gpus[job],
                           self.work[job])

    def _build(self, job: int) -> str:
        if self._trace is not None:
            name, user, org, model = (c[job] for c in self._trace)
            return (f"job {name or 'unnamed'} model {model or 'unknown'} user {user or 'unknown'} "
                    f"vc {org or 'none'} gpus {self.gpus[job]}")
        gpus = self.gpus[job]
        key = ("corpus", self.seed, self.keys[job], self.index[job], gpus, self.work[job], self.template(job))
        t = _TEXT_CACHE.get(key)
        if t is None:
            spec = self.spec(job)
            tr = spec.truth
            mkey = (self.seed, self.template(job), spec.dataset_surface, tr.iterations, tr.batch_size, gpus)
            t = _META_CACHE.get(mkey)
            if t is None:
                from dataclasses import replace

                from features.jobcorpus.repos import render_repo
                from models.schedmate.extract import extract_metadata

                files, command = render_repo(spec, self.template(job), self.seed)
                meta = extract_metadata(command, files)
                # The request's GPUs are what the scheduler knows for sure (the template has its own).
                meta = replace(meta, gpus=gpus, nodes=max(1, -(-gpus // 8)))
                t = _META_CACHE[mkey] = meta.canonical_text()
                self.built += 1
            _TEXT_CACHE[key] = t
        return t


def _template_gpus(template: str, seed: int) -> int:
    """The GPUs a template's own job 0 asks for (logs are keyed by template, not by each request)."""
    from features.jobcorpus.spec import draw_spec

    return int(draw_spec(template, 0, seed).truth.gpus)


def _noisy(*parts: Any) -> bool:
    """Half the logs are noisy, stably per job (crc32: process-independent and cheap on the failure path)."""
    import zlib

    return bool(zlib.crc32("\x1f".join(map(str, parts)).encode()) & 1)


class FailureReader:
    """The real Failure Handler on each failed job's generated log (cached per distinct log)."""

    def __init__(self, texts: JobTexts) -> None:
        self.texts = texts
        self._handler = None
        #: distinct failed-job logs this replay had the handler diagnose, whether the diagnosis came from
        #: the handler now or from the cache (so the metric does not depend on what an earlier run cached)
        self.read = 0
        self._seen: set[tuple] = set()

    def _job_key(self, job: int, trace_cause: str) -> tuple[str, tuple]:
        """(corpus cause, failed-log key) of ``job`` failing with ``trace_cause``; kept per process (a
        failure path computes it once, not per replay)."""
        t = self.texts
        memo = (t.seed, t.keys[job], t.index[job], t.template(job), trace_cause)
        got = _JOB_KEYS.get(memo)
        if got is None:
            from features.jobcorpus.replay import corpus_cause

            cause = corpus_cause(trace_cause, t.keys[job], t.index[job], t.seed)
            noisy = _noisy(t.keys[job], t.index[job], cause)
            got = _JOB_KEYS[memo] = (cause, ("diag", t.seed, t.template(job), cause, noisy))
        return got

    def cause(self, job: int, trace_cause: str) -> str:
        return self._job_key(job, trace_cause)[0]

    def diagnose(self, job: int, trace_cause: str) -> str | None:
        """The kind (infrastructure / framework / script, None: nothing found) the handler gives the log
        of ``job`` failing with the trace's ``trace_cause`` (written with the mapped corpus cause)."""
        t = self.texts
        cause, key = self._job_key(job, trace_cause)
        if key not in self._seen:
            self._seen.add(key)
            self.read += 1
        if key not in _DIAGNOSES:
            _load("schedmate-diag", t.seed, _DIAGNOSES)
        if key in _DIAGNOSES:
            return _DIAGNOSES[key]
        noisy = key[-1]
        from features.jobcorpus.logs import failure_log
        from features.jobcorpus.replay import replay_spec
        from models.schedmate.failures import FailureHandler

        if self._handler is None:
            self._handler = FailureHandler()
        tpl = t.template(job)
        spec = replay_spec(tpl, tpl, 0, t.seed, _template_gpus(tpl, t.seed), 3600.0)
        lines, _ = failure_log(spec, tpl, 0, t.seed, cause, noisy=noisy)
        kind = self._handler.diagnose(lines).kind
        _DIAGNOSES[key] = kind
        _DIRTY.add(("schedmate-diag", t.seed))
        return kind


class SlowdownReader:
    """The real Metric Tracker reading a host's throughput before and after a packing."""

    def __init__(self, texts: JobTexts) -> None:
        self.texts = texts
        self._tracker = None
        self._before: dict[tuple, Any] = {}
        #: distinct logs this replay had the tracker read (cached or not: see FailureReader.read)
        self.read = 0
        self._seen: set[tuple] = set()

    def ratio(self, job: int, true_ratio: float) -> float | None:
        """Measured throughput after / before a slowdown to ``true_ratio`` (None: untrackable log)."""
        t = self.texts
        _load("schedmate-track", t.seed, _READINGS)
        bucket = round(round(min(max(true_ratio, 0.05), 1.0) / 0.05) * 0.05, 2)
        noisy = _noisy(t.keys[job], t.index[job], "track")
        tpl = t.template(job)
        key = ("track", t.seed, tpl, bucket, noisy)
        if key not in self._seen:
            self._seen.add(key)
            self.read += 1
        if key in _READINGS:
            return _READINGS[key]
        from features.jobcorpus.logs import runtime_log
        from features.jobcorpus.replay import replay_spec
        from models.schedmate.tracker import MetricTracker

        if self._tracker is None:
            self._tracker = MetricTracker()
        spec = replay_spec(tpl, tpl, 0, t.seed, _template_gpus(tpl, t.seed), 7200.0)
        pb = self._before.get((tpl, noisy))
        if pb is None:  # the log before packing does not depend on the slowdown: read once per template
            before, _ = runtime_log(spec, tpl, 0, t.seed, noisy=noisy, progress=0.4)
            pb = self._before[(tpl, noisy)] = self._tracker.track(before)
        after, _ = runtime_log(spec, tpl, 0, t.seed, noisy=noisy, progress=0.6,
                               speed_changes=[(0.4, 1.0 / bucket)])
        pa = self._tracker.track(after)
        value = None
        if pb.step_time and pa.step_time and math.isfinite(pb.step_time) and math.isfinite(pa.step_time):
            value = float(pb.step_time / pa.step_time)
        _READINGS[key] = value
        _DIRTY.add(("schedmate-track", t.seed))
        return value
