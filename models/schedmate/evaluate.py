"""Scores of SchedMate's text components on the synthetic corpus (features.jobcorpus).

The corpus is synthetic and was written by the same project as the extractor, tracker and handler:
these scores measure coverage of the styles and formats it generates, not accuracy on real jobs.
"""
from __future__ import annotations

import functools
import math
import random
import statistics
import time
from collections import Counter, defaultdict

from models.schedmate.extract import FIELDS, extract_metadata

CAUSES_ORDER = ("gpu_xid", "gpu_ecc", "nvlink", "nccl_timeout", "ib_error", "node_lost", "storage",
                "cuda_oom", "dataloader_killed", "shape_error", "import_error", "key_error", "type_error",
                "syntax_error", "file_not_found")


def extraction_accuracy(n: int = 300, seed: int = 0) -> dict:
    """Share of jobs whose extracted field equals the truth, per field, overall and per style."""
    from features.jobcorpus import iter_corpus

    ok, per_style, count = Counter(), defaultdict(Counter), Counter()
    t0 = time.perf_counter()
    jobs = 0
    for m in iter_corpus(n, seed):
        md = extract_metadata(m.command, m.files)
        jobs += 1
        count[m.truth.style] += 1
        for f in FIELDS:
            good = getattr(md, f) == getattr(m.truth, f)
            ok[f] += good
            per_style[m.truth.style][f] += good
    ms = (time.perf_counter() - t0) * 1000 / max(jobs, 1)
    return {"n": jobs, "fields": {f: ok[f] / jobs for f in FIELDS},
            "all_fields": None,
            "per_style": {s: {"n": count[s], **{f: per_style[s][f] / count[s] for f in FIELDS}} for s in sorted(count)},
            "ms_per_job": ms}


def advisor_scores(n: int = 400, seed: int = 0, embedder: str = "hash", k: int = 3,
                   t_score: float | None = None, arrival_s: float = 600.0) -> dict:
    """Replay a corpus in time: jobs arrive (Poisson, mean gap `arrival_s`), run their true duration,
    and are observed when they finish; each is advised at its arrival from jobs finished before.
    T_score is calibrated on the first half (unless given) and scores come from the second half."""
    from features.jobcorpus import iter_corpus
    from models.schedmate.advisor import HistoryRecord, SchedulingAdvisor

    rng = random.Random(seed)
    jobs = []
    t = 0.0
    corpus = list(iter_corpus(n, seed))
    order = list(range(len(corpus)))
    rng.shuffle(order)  # groups interleave in time, as recurring jobs do
    group_seen: Counter = Counter()
    for i in sorted(order, key=lambda j: (corpus[j].job_index, rng.random())):
        m = corpus[i]
        t += rng.expovariate(1 / arrival_s)
        text = extract_metadata(m.command, m.files).canonical_text()
        jobs.append((f"{m.group_key}#{m.job_index}", text, t, m.truth.duration, m.truth.gpu_util))
        group_seen[m.group_key] += 1
    jobs.sort(key=lambda j: j[2])
    half = len(jobs) // 2
    adv = SchedulingAdvisor(t_score=t_score if t_score is not None else 0.9, k=k, embedder=embedder)
    if t_score is None:
        hist = [HistoryRecord(key, text, dur, sub + dur, sub, util) for key, text, sub, dur, util in jobs[:half]]
        adv.calibrate(hist)
    events = []  # (time, order, kind, job)
    for j in jobs:
        events.append((j[2], 1, "advise", j))
        events.append((j[2] + j[3], 0, "finish", j))
    events.sort(key=lambda e: (e[0], e[1]))
    errs, hits, asked, times = [], 0, 0, []
    future_leaks = 0
    for at, _, kind, (key, text, sub, dur, util) in events:
        if kind == "finish":
            adv.observe(key, text, dur, finished_at=at, gpu_util=util)
            continue
        if sub < jobs[half][2]:
            continue
        t0 = time.perf_counter()
        a = adv.advise(text, now=at)
        times.append((time.perf_counter() - t0) * 1000)
        asked += 1
        if a is not None:
            hits += 1
            errs.append(abs(a.duration - dur) / dur)
    return {"n_advised": asked, "t_score": adv.t_score, "coverage": hits / max(asked, 1),
            "share_rel_err_below_100pct": sum(e < 1.0 for e in errs) / max(len(errs), 1),
            "median_rel_err": statistics.median(errs) if errs else None,
            "mean_rel_err": statistics.fmean(errs) if errs else None,
            "ms_per_advice": statistics.fmean(times) if times else None, "future_leaks": future_leaks,
            "embedder": embedder}


def tracker_scores(n: int = 200, seed: int = 0, window: int = 20) -> dict:
    """Success (step and total exact, step time within 20 %) and RMSRE of the step time and the
    remaining time, on clean and noisy logs. Totals the log does not print come from the extractor."""
    from features.jobcorpus import iter_corpus
    from models.schedmate.tracker import MetricTracker

    tr = MetricTracker(window=window)
    out = {}
    mats = list(iter_corpus(n, seed))
    metas = [extract_metadata(m.command, m.files) for m in mats]
    for noisy in (False, True):
        ok, sq, sq_rem, times, lines_n = 0, [], [], [], []
        per_fmt: dict[str, Counter] = defaultdict(Counter)
        for m, md in zip(mats, metas):
            lines, truth = m.runtime_log(noisy=noisy)
            t0 = time.perf_counter()
            p = tr.track(lines, iterations=md.iterations, iteration_unit=md.iteration_unit)
            times.append((time.perf_counter() - t0) * 1000)
            lines_n.append(len(lines))
            good = (p.step == truth.step and p.total_steps == truth.total_steps and p.step_time is not None
                    and abs(p.step_time / truth.step_time - 1) < 0.2)
            ok += good
            per_fmt[m.truth.log_format]["n"] += 1
            per_fmt[m.truth.log_format]["ok"] += good
            if p.step_time:
                sq.append((p.step_time / truth.step_time - 1) ** 2)
            rem_true = (truth.total_steps - truth.step) * truth.step_time
            if p.remaining is not None and rem_true > 0:
                sq_rem.append((p.remaining / rem_true - 1) ** 2)
        out["noisy" if noisy else "clean"] = {
            "n": len(mats), "success": ok / len(mats),
            "rmsre_step_time": math.sqrt(statistics.fmean(sq)) if sq else None,
            "rmsre_remaining": math.sqrt(statistics.fmean(sq_rem)) if sq_rem else None,
            "ms_per_log": statistics.fmean(times), "mean_lines": statistics.fmean(lines_n),
            "per_format": {f: c["ok"] / c["n"] for f, c in sorted(per_fmt.items())}}
    return out


def line_classifier_scores(n: int = 30, seed: int = 0, use_prototypes: bool = True, per_log: int = 300) -> dict:
    """Accuracy of the Metric Tracker's line classifier against the generator's line categories, on
    noisy logs (up to `per_log` lines sampled per log), overall and per true category."""
    from features.jobcorpus import iter_corpus
    from models.schedmate.tracker import MetricTracker

    tr = MetricTracker(use_prototypes=use_prototypes)
    rng = random.Random(seed)
    per: dict[str, Counter] = defaultdict(Counter)
    confusion: Counter = Counter()
    t0 = time.perf_counter()
    total = 0
    for m in iter_corpus(n, seed + 31):
        lines, labels = m.labelled_log(noisy=True)
        idx = rng.sample(range(len(lines)), min(per_log, len(lines)))
        for i in idx:
            got = tr.classify(lines[i])
            per[labels[i]]["n"] += 1
            per[labels[i]]["ok"] += got == labels[i]
            confusion[(labels[i], got)] += 1
            total += 1
    ok = sum(c["ok"] for c in per.values())
    return {"n_lines": total, "accuracy": ok / max(total, 1),
            "per_category": {k: v["ok"] / v["n"] for k, v in sorted(per.items())},
            "support": {k: v["n"] for k, v in sorted(per.items())},
            "top_confusions": [[a, b, c] for (a, b), c in confusion.most_common() if a != b][:6],
            "us_per_line": (time.perf_counter() - t0) * 1e6 / max(total, 1)}


def _prf(tp: int, fp: int, fn: int, tn: int) -> dict:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": p, "recall": r, "f1": f1, "accuracy": (tp + tn) / max(tp + fp + fn + tn, 1)}


@functools.lru_cache(maxsize=32)
def failure_handler_scores(n: int = 150, seed: int = 0, locator: bool = True, method: str | None = None,
                           noisy: bool | None = None, chunk: int | None = None, window: int = 3,
                           tail: int = 500) -> dict:
    """Infrastructure detection scores of the Failure Handler on `n` generated failed logs (causes
    cycled evenly; half noisy unless `noisy` is set): precision, recall, F1 and accuracy of
    "infrastructure or not", plus type accuracy (3 classes), component accuracy and root-line accuracy
    (the predicted line inside the truth's root block). method: locator (default) / tail / scan;
    `locator=False` means tail. Cached: the simulator may call it per replay."""
    from features.jobcorpus import iter_corpus
    from models.schedmate.failures import FailureHandler

    method = method or ("locator" if locator else "tail")
    fh = FailureHandler(chunk=chunk, window=window, tail=tail)
    tp = fp = fn = tn = 0
    kind_ok = comp_ok = line_ok = 0
    times, chunks = [], []
    per_cause: dict[str, Counter] = defaultdict(Counter)
    for i, m in enumerate(iter_corpus(n, seed + 7919)):
        cause = CAUSES_ORDER[i % len(CAUSES_ORDER)]
        nz = bool(i % 2) if noisy is None else noisy
        lines, truth = m.failure_log(cause, noisy=nz)
        t0 = time.perf_counter()
        d = fh.diagnose(lines, method=method)
        times.append((time.perf_counter() - t0) * 1000)
        chunks.append(d.chunks_read)
        pi, ti = d.kind == "infrastructure", truth.kind == "infrastructure"
        tp += pi and ti
        fp += pi and not ti
        fn += (not pi) and ti
        tn += (not pi) and (not ti)
        kind_ok += d.kind == truth.kind
        comp_ok += d.component == truth.component
        hit = d.line_index is not None and truth.span[0] <= d.line_index <= truth.span[1]
        line_ok += hit
        per_cause[cause]["n"] += 1
        per_cause[cause]["ok"] += d.kind == truth.kind and d.component == truth.component
    total = tp + fp + fn + tn
    return {"n": total, "method": method, **_prf(tp, fp, fn, tn), "type_accuracy": kind_ok / total,
            "component_accuracy": comp_ok / total, "root_line_accuracy": line_ok / total,
            "ms_per_log": statistics.fmean(times), "mean_chunks_read": statistics.fmean(chunks),
            "per_cause": {c: v["ok"] / v["n"] for c, v in per_cause.items()}}


def loss_read_right(truth, read: float | None) -> bool:
    """Is the tracker's loss ``read`` the labelled ``truth``? None: no loss to find, and none found;
    "nan": a NaN found; a number: a finite reading within 1 % of it."""
    if truth is None:
        return read is None
    if isinstance(truth, str) and truth.lower() == "nan":
        return read is not None and math.isnan(read)
    return read is not None and math.isfinite(read) and abs(read - float(truth)) <= 0.01 * abs(float(truth))
