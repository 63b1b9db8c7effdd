"""Lazer's claims (``schedcast reproduce lazer``), measured at the paper's simulation setting.

Setting (lazer.txt:269-271, Table 1 at lazer.txt:252-257): the Helios Earth, Saturn and Uranus job logs replayed in
the Tiresias simulator on about 512 GPUs, every job given one of seven models uniformly at random (lazer.txt:78)
with its load and pause-and-save times. Helios' job tables are not in shared/data, so each trace is a
Helios-shaped generator seeded from the real Helios submission series (features/traces/helios_shaped.py;
presets configs/workloads/lazer-<trace>.yaml on configs/clusters/lazer-512.yaml). The generators' free
parameters were fitted on the BASELINES of Table 2 only (SJF's P50 / P95 wait, SRTF's futile time;
``python -m pipelines.papers.lazer_calibrate``); each setting's fit (target, paper, reached) is in the ledger.

Baselines as the paper ran them (lazer.txt:82-89): the Tiresias simulator re-allocates at every event, starting
in priority order every job that fits (work-conserving), so SJF is ``sjf:work_conserving=true`` and SRTF, Pollux
(60 s), Muri (360 s) and Optimus (600 s) are ``srtf`` / ``*-N:backfill=true``. Lazer is ``lazer`` (Alg. 1-2, BO
deferral, models.deferral).

Causes (one deviation switched at a time, on the first seed, each reported as the claim's own measure):
``Lazer+PL`` / ``Lazer+WQ`` (Lazer's protect_loading / respect_wq readings), ``load`` (Table 1's arrival rate,
arrival_scale 1: the uncalibrated load), ``cluster`` (the trace's real Helios cluster size instead of 512 GPUs),
``strict`` (the registry's strict baselines: a head that cannot start blocks the queue).

Cells are cached as JSON under ``ctx.work`` (or ``ctx.out/cells``), keyed by trace parameters, policy and seed.
Full ledger: 117 replays of 10,000 jobs (27 of them Lazer's), about 10 CPU-minutes in all (measured 2026-12-06 on
the shared 2-core machine at load average 9-14: 28 min wall with --workers 2 over two runs); quick: 5 replays of
3,000 Earth jobs, 20 s wall at load average 9.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from evaluation.claims import Measurement, ReproduceContext

TRACES = ("earth", "saturn", "uranus")
#: parts a user may leave out (``--skip causes``): the cause replays (the verdicts do not depend on them)
PARTS = ("causes",)
BASELINES: dict[str, str] = {"SJF": "sjf:work_conserving=true", "SRTF": "srtf:backfill=true",
                             "Pollux": "pollux-60:backfill=true", "Muri": "muri-360:backfill=true",
                             "Optimus": "optimus-600:backfill=true"}
STRICT: dict[str, str] = {"SJF": "sjf", "SRTF": "srtf", "Pollux": "pollux-60", "Muri": "muri-360",
                          "Optimus": "optimus-600"}
LAZER: dict[str, str] = {"Lazer": "lazer", "Lazer+PL": "lazer:protect_loading=true",
                         "Lazer+WQ": "lazer:respect_wq=true", "Lazer-random": "lazer:deferral=random",
                         "Lazer-grid": "lazer:deferral=grid"}
#: the Helios cluster each trace comes from (configs/clusters/<trace>.yaml: cluster_summary.csv's GPUs)
HELIOS_CLUSTER = {"earth": "earth", "saturn": "saturn", "uranus": "uranus"}
CAUSES = ("Lazer+PL", "Lazer+WQ", "load", "cluster", "strict")
#: the trace Fig. 8e's random / grid search deferrals run on (the paper does not name one, lazer.txt:273)
F8E_TRACE = "earth"
QUICK_JOBS = 3000
COSTS = "lazer:uniform"
#: part of every cell's cache key: bump it when what a cell measures changes
CELL_VERSION = 1
#: Lazer's futile P50 of 0 s is read as this (s) in the "N x lower futile time" ratios (a 0 would be infinite)
FUTILE_FLOOR_S = 1.0
#: Table 2 prints minutes with one decimal: a time below 0.05 min (3 s) prints as 0.0
RESOLUTION_S = 3.0
#: the share of mean JCT SJF spends waiting in the paper's Fig. 3 (lazer.txt:95): the baselines queue
WAIT_SHARE = 0.05


@dataclass(frozen=True)
class Cell:
    trace: str
    variant: str  # main | load | cluster | strict
    label: str
    policy: str
    seed: int
    jobs: int | None

    def params(self) -> dict[str, Any]:
        from pipelines.papers.lazer_calibrate import preset_params

        params = preset_params(self.trace)
        if self.jobs is not None:
            params["jobs"] = self.jobs
        if self.variant == "load":
            params["arrival_scale"] = 1.0
        return params

    def cluster(self) -> str:
        return HELIOS_CLUSTER[self.trace] if self.variant == "cluster" else "lazer-512"

    def key(self) -> str:
        text = json.dumps([CELL_VERSION, self.params(), self.cluster(), self.policy, self.seed, COSTS], sort_keys=True)
        return f"{self.trace}-{self.variant}-{self.label}-s{self.seed}-{hashlib.sha1(text.encode()).hexdigest()[:12]}"


def run_cell(cell: Cell, data_dir: str | None = None) -> dict[str, Any]:
    """One replay through the one replay path; the figures the claims read (times in s)."""
    from pipelines.papers.lazer_calibrate import futile_given_any
    from pipelines.replay import ReplaySpec, WorkloadSource, prepare_replay, run_replay

    os.environ.setdefault("OMP_NUM_THREADS", "1")
    src = WorkloadSource(generator="helios-shaped", params=cell.params(), cluster=cell.cluster(), costs=COSTS,
                         data_dir=data_dir)
    spec = ReplaySpec(workload=src, policy=cell.policy, label=cell.label, seed=cell.seed)
    prepared = prepare_replay(spec, built=src.build(seed=cell.seed))
    res = run_replay(spec, prepared)
    s, jobs, stats = res.summary, res.evaluation["jobs"], res.policy_stats
    futile = jobs["futile"].to_numpy(dtype=float)
    f50, f95, n_futile = futile_given_any(futile)
    work = float((jobs["duration"].to_numpy(dtype=float) * prepared.workload.frame["sim_gpus"].to_numpy()).sum()) \
        if "duration" in jobs else float("nan")
    gpus = prepared.workload.frame["sim_gpus"].to_numpy(dtype=float)
    out = {k: float(s[k]) for k in ("jct_p50", "jct_p95", "wait_p50", "wait_p95", "jct_mean", "wait_mean",
                                    "futile_total", "preemptions") if k in s}
    out.update({"futile_any_p50": f50, "futile_any_p95": f95, "futile_jobs": n_futile,
                "futile_gpu_share": float((futile * gpus).sum()) / work if work > 0 else float("nan"),
                "jobs": int(len(jobs)), "cluster_gpus": int(prepared.workload.cluster.gpus)
                if hasattr(prepared.workload, "cluster") else None})
    if "lazer_deferrals" in stats:
        cpu = stats.get("lazer_predicted_decision_cpu_times") or []
        out.update({"deferrals": int(stats["lazer_deferrals"]), "f_mean": float(stats.get("lazer_f_mean", math.nan)),
                    "decision_cpu_ms": float(np.mean(cpu) * 1e3) if cpu else math.nan,
                    "decisions": len(cpu)})
    return out


def _cells(traces: tuple[str, ...], seeds: list[int], jobs: int | None, quick: bool,
           causes: bool = True) -> list[Cell]:
    """The replays: every baseline and Lazer on every trace and seed; Fig. 8e's random / grid deferrals on
    Earth (every seed); the causes on the first seed (Lazer's variants, load, cluster, strict baselines)."""
    cells: list[Cell] = []
    base = ("SJF", "SRTF", "Pollux") if quick else tuple(BASELINES)
    for t in traces:
        for seed in seeds:
            cells += [Cell(t, "main", b, BASELINES[b], seed, jobs) for b in base]
            cells.append(Cell(t, "main", "Lazer", LAZER["Lazer"], seed, jobs))
            if t == F8E_TRACE and not quick:
                cells += [Cell(t, "main", lab, LAZER[lab], seed, jobs) for lab in ("Lazer-random", "Lazer-grid")]
        if not causes:
            continue
        first = seeds[0]
        cells += [Cell(t, "main", lab, LAZER[lab], first, jobs) for lab in (("Lazer+PL",) if quick
                                                                           else ("Lazer+PL", "Lazer+WQ"))]
        if quick:
            continue
        for variant in ("load", "cluster"):
            cells += [Cell(t, variant, b, BASELINES[b], first, jobs) for b in base]
            cells.append(Cell(t, variant, "Lazer", LAZER["Lazer"], first, jobs))
        cells += [Cell(t, "strict", b, STRICT[b], first, jobs) for b in base]
    return cells


def _run_all(ctx: ReproduceContext, cells: list[Cell]) -> dict[Cell, dict[str, Any]]:
    cache = Path(ctx.work) / "lazer-cells" if ctx.work else Path(ctx.out) / "cells"
    cache.mkdir(parents=True, exist_ok=True)
    results: dict[Cell, dict[str, Any]] = {}
    todo = []
    for c in cells:
        path = cache / f"{c.key()}.json"
        if path.is_file():
            results[c] = json.loads(path.read_text())
        else:
            todo.append(c)
    ctx.progress(f"lazer: {len(cells)} cells, {len(cells) - len(todo)} cached, {len(todo)} to run "
                 f"({'%d workers' % ctx.workers if ctx.workers > 1 else 'serial'})")
    # the main cells first (the verdicts), the causes after; within each, the long Lazer cells first
    todo.sort(key=lambda c: (c.variant != "main" or c.label in ("Lazer+PL", "Lazer+WQ"), not c.label.startswith("Lazer")))
    data_dir = str(ctx.data_dir) if ctx.data_dir else None

    def done(c: Cell, r: dict[str, Any]) -> None:
        results[c] = r
        (cache / f"{c.key()}.json").write_text(json.dumps(r))

    if ctx.workers > 1 and len(todo) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=ctx.workers) as pool:
            futures = {pool.submit(run_cell, c, data_dir): c for c in todo}
            for n, fut in enumerate(futures, 1):
                done(futures[fut], fut.result())
    else:
        for c in todo:
            done(c, run_cell(c, data_dir))
    return results


# -- measures ---------------------------------------------------------------------------------------------
class View:
    """Per-seed figures of (trace, variant, label); a cause swaps in another label or variant."""

    def __init__(self, results: dict[Cell, dict[str, Any]]) -> None:
        self.by: dict[tuple[str, str, str], dict[int, dict[str, Any]]] = {}
        for c, r in results.items():
            self.by.setdefault((c.trace, c.variant, c.label), {})[c.seed] = r

    def get(self, trace: str, variant: str, label: str, metric: str) -> dict[int, float]:
        rows = self.by.get((trace, variant, label), {})
        return {s: float(r[metric]) for s, r in rows.items() if r.get(metric) is not None}


@dataclass(frozen=True)
class Case:
    """Which cells a measure reads: the main cells, or one deviation's."""

    lazer: str = "Lazer"
    variant: str = "main"
    baselines_variant: str = "main"


MAIN = Case()
CASES = {"Lazer+PL": Case(lazer="Lazer+PL"), "Lazer+WQ": Case(lazer="Lazer+WQ"), "load": Case(variant="load",
         baselines_variant="load"), "cluster": Case(variant="cluster", baselines_variant="cluster"),
         "strict": Case(baselines_variant="strict")}


def _per_seed(values: dict[str, dict[int, float]]) -> list[int]:
    common = None
    for v in values.values():
        common = set(v) if common is None else common & set(v)
    return sorted(common or [])


def _ratio(num: float, lazer: float) -> float:
    """num / lazer with both floored at Table 2's printing resolution (0.05 min): a 0 baseline and a 0 Lazer
    is 0/0 (NaN, not testable); a 0 Lazer against a positive baseline counts as 3 s."""
    if num < RESOLUTION_S and lazer < RESOLUTION_S:
        return math.nan
    return num / max(lazer, RESOLUTION_S)


def speedup(view: View, trace: str, metric: str, case: Case = MAIN, only: str | None = None) -> list[float]:
    """Per seed: the best baseline's ``metric`` (lowest; or baseline ``only``) / Lazer's (see :func:`_ratio`)."""
    series = {b: view.get(trace, case.baselines_variant, b, metric) for b in ([only] if only else BASELINES)}
    series = {b: v for b, v in series.items() if v}
    lazer = view.get(trace, case.variant, case.lazer, metric)
    if not series:
        return []
    seeds = _per_seed({**series, "_": lazer})
    return [_ratio(min(v[s] for v in series.values()), lazer[s]) for s in seeds]


def policy_ratio(view: View, trace: str, metric: str, num: str, den: str, case: Case = MAIN) -> list[float]:
    a, b = view.get(trace, case.baselines_variant, num, metric), view.get(trace, case.baselines_variant, den, metric)
    return [a[s] / b[s] if b[s] > 0 else math.nan for s in sorted(set(a) & set(b))]


def futile_cut(view: View, traces: tuple[str, ...], baseline: str, metric: str, case: Case = MAIN) -> list[float]:
    """Per seed, the mean over traces of baseline / Lazer futile time (jobs with any; Lazer floored at 1 s)."""
    per_trace = []
    for t in traces:
        b = view.get(t, case.baselines_variant, baseline, metric)
        lz = view.get(t, case.variant, case.lazer, metric)
        per_trace.append({s: b[s] / max(lz[s], FUTILE_FLOOR_S) for s in set(b) & set(lz)})
    seeds = _per_seed({str(i): v for i, v in enumerate(per_trace)})
    return [float(np.mean([v[s] for v in per_trace])) for s in seeds]


def lazer_metric(view: View, trace: str, metric: str, scale: float = 1.0, case: Case = MAIN) -> list[float]:
    v = view.get(trace, case.variant, case.lazer, metric)
    return [v[s] * scale for s in sorted(v)]


def wait_share(view: View, trace: str, case: Case = MAIN) -> list[float]:
    """Per seed: mean wait / mean JCT of the baseline with the lowest mean JCT."""
    out = []
    jct = {b: view.get(trace, case.baselines_variant, b, "jct_mean") for b in BASELINES}
    wait = {b: view.get(trace, case.baselines_variant, b, "wait_mean") for b in BASELINES}
    jct = {b: v for b, v in jct.items() if v}
    for s in _per_seed(jct):
        best = min(jct, key=lambda b: jct[b][s])
        out.append(wait[best][s] / jct[best][s] if jct[best][s] > 0 else math.nan)
    return out


def _clean(samples: list[float]) -> list[float]:
    return [float(x) for x in samples if x is not None and not math.isnan(x)]


def _mean(samples: list[float]) -> float | None:
    s = [x for x in _clean(samples) if math.isfinite(x)]
    return float(np.mean(s)) if s else None


def run(ctx: ReproduceContext) -> dict[str, Measurement]:
    quick = bool(ctx.quick)
    traces = ("earth",) if quick else TRACES
    seeds = (list(ctx.seeds) or [0])[:1] if quick else (list(ctx.seeds) if ctx.seeds_given else [0, 1, 2])
    jobs = QUICK_JOBS if quick else None
    ctx.seeds = seeds  # the seeds the ledger states are the ones replayed
    results = _run_all(ctx, _cells(traces, seeds, jobs, quick, causes="causes" not in ctx.skip))
    view = View(results)
    out = measures(view, traces, quick, skipped="causes" in ctx.skip)
    _settings(ctx, view, traces, seeds, quick)
    _tables(ctx, view, traces)
    return out


def measures(view: View, traces: tuple[str, ...], quick: bool, skipped: bool = False) -> dict[str, Measurement]:
    """Every measure the claims file names, from the cells' figures (no replay here)."""
    out: dict[str, Measurement] = {}
    caveats = ["measured on Helios-shaped generated traces (real Helios submission intensity, invented jobs), "
               "fitted on the baselines; see the setting's calibration"]
    causes_avail = [] if quick else list(CAUSES)
    if quick:
        causes_avail = ["Lazer+PL"]

    def put(key: str, fn: Callable[[Case], list[float]], detail: str, extra_caveats: list[str] | None = None,
            causes: bool = True) -> None:
        samples = [float(x) for x in fn(MAIN) if x is not None]
        finite = [x for x in samples if math.isfinite(x)]
        cause_values: dict[str, float | str] = {}
        if causes:
            for name in causes_avail:
                got = [float(x) for x in fn(CASES[name]) if x is not None]
                if not got:
                    cause_values[name] = "not measured (--skip causes)" if skipped else "not measured"
                elif not all(math.isfinite(x) for x in got):
                    cause_values[name] = "0/0: nothing waits long enough to compare"
                else:
                    cause_values[name] = round(float(np.mean(got)), 4)
        if len(finite) < len(samples) or not samples:
            why = ("no cell measured it" if not samples else
                   "0/0 on some seed (a baseline and Lazer both below Table 2's 0.05-min resolution): "
                   + ", ".join(f"{x:.3g}" for x in samples))
            out[key] = Measurement(value=None, samples=[], detail=detail, causes=cause_values, not_testable=why,
                                   caveats=caveats + (extra_caveats or []))
            return
        out[key] = Measurement(value=float(np.mean(finite)), samples=finite, detail=detail, causes=cause_values,
                               caveats=caveats + (extra_caveats or []))

    for t in traces:
        for metric in ("jct_p50", "jct_p95", "wait_p50", "wait_p95"):
            put(f"{metric}_speedup@{t}", lambda c, t=t, m=metric: speedup(view, t, m, c),
                f"best baseline's {metric} / Lazer's per seed; per policy: " + _row(view, t, metric))
            for b in BASELINES:
                put(f"{metric}_speedup_{b.lower()}@{t}", lambda c, t=t, m=metric, b=b: speedup(view, t, m, c, only=b),
                    f"{b}'s {metric} / Lazer's per seed; per policy: " + _row(view, t, metric))
        for b in ("Pollux", "Muri", "Optimus"):
            put(f"{b.lower()}_wait_vs_sjf@{t}", lambda c, t=t, b=b: [
                _ratio(x, y) for x, y in zip(*_paired(view, t, c.baselines_variant, b, "SJF", "wait_p50"))],
                f"{b}'s P50 wait / SJF's (Fig. 5's measure; times under 3 s read as 3 s)")
        put(f"lazer_wait_p50_min@{t}", lambda c, t=t: lazer_metric(view, t, "wait_p50", 1 / 60, c),
            "Lazer's P50 wait, min")
        put(f"baseline_wait_share@{t}", lambda c, t=t: wait_share(view, t, c),
            "mean wait / mean JCT of the baseline with the lowest mean JCT", causes=False)
        put(f"lazer_deferrals@{t}", lambda c, t=t: lazer_metric(view, t, "deferrals", 1.0, c),
            "deferrals Lazer made (X > 0)", causes=False)
        put(f"srtf_futile_jobs@{t}", lambda c, t=t: [v for v in view.get(t, "main", "SRTF", "futile_jobs").values()],
            "jobs with futile time under SRTF", causes=False)
        for b, key in (("SRTF", "srtf"), ("Pollux", "pollux")):
            put(f"{key}_futile_share@{t}", lambda c, t=t, b=b: list(view.get(t, c.baselines_variant, b,
                                                                              "futile_gpu_share").values()),
                f"{b}'s futile GPU time / all jobs' GPU work (Fig. 4's measure)")
        for b in ("SRTF", "Pollux", "Muri", "Optimus"):
            put(f"{b.lower()}_jct_vs_sjf@{t}", lambda c, t=t, b=b: policy_ratio(view, t, "jct_p50", b, "SJF", c),
                f"{b}'s P50 JCT / SJF's (Fig. 3's measure)")
        put(f"decision_cpu_ms@{t}", lambda c, t=t: lazer_metric(view, t, "decision_cpu_ms", 1.0, c),
            "Lazer's CPU time per preemption decision that asked the deferral predictor, ms", causes=False,
            extra_caveats=["our numpy GP on a shared 2-core machine, not the paper's BoTorch on its hardware"])
    # aggregates over the traces: the preconditions and measures of the claims without a setting
    put("baseline_wait_share", lambda c: _min_over(view, traces, lambda t: wait_share(view, t, c)),
        "the lowest over the traces of the best baseline's mean wait / mean JCT", causes=False)
    put("lazer_deferrals", lambda c: _min_over(view, traces, lambda t: lazer_metric(view, t, "deferrals", 1.0, c)),
        "the fewest deferrals Lazer made on a trace", causes=False)
    put("srtf_futile_jobs", lambda c: _min_over(view, traces, lambda t: list(
        view.get(t, "main", "SRTF", "futile_jobs").values())), "the fewest SRTF jobs with futile time on a trace",
        causes=False)
    put(f"bo_vs_random@{F8E_TRACE}", lambda c: _f_ratio(view, F8E_TRACE, "Lazer-random"),
        f"random search's mean f(X|c) / BO's on {F8E_TRACE}", causes=False)
    put(f"bo_vs_grid@{F8E_TRACE}", lambda c: _f_ratio(view, F8E_TRACE, "Lazer-grid"),
        f"grid search's mean f(X|c) / BO's on {F8E_TRACE}", causes=False)
    put("decision_cpu_ms", lambda c: _mean_over(traces, lambda t: lazer_metric(view, t, "decision_cpu_ms", 1.0, c)),
        "mean over the traces of Lazer's CPU ms per decision that asked the predictor", causes=False)
    for b, key in (("SRTF", "srtf"), ("Pollux", "pollux")):
        for metric, name in (("futile_any_p50", "p50"), ("futile_any_p95", "p95")):
            put(f"futile_{name}_cut_{key}", lambda c, b=b, m=metric: futile_cut(view, traces, b, m, c),
                f"mean over {', '.join(traces)} of {b}'s / Lazer's futile time {name.upper()} (jobs with any; "
                f"Lazer's 0 read as {FUTILE_FLOOR_S:g} s)")
    return out


def _paired(view: View, trace: str, variant: str, a: str, b: str, metric: str) -> tuple[list[float], list[float]]:
    x, y = view.get(trace, variant, a, metric), view.get(trace, variant, b, metric)
    seeds = sorted(set(x) & set(y))
    return [x[s] for s in seeds], [y[s] for s in seeds]


def _min_over(view: View, traces: tuple[str, ...], fn: Callable[[str], list[float]]) -> list[float]:
    """Per seed position, the minimum over the traces (seed lists align: the same seeds on every trace)."""
    per = [fn(t) for t in traces]
    n = min((len(p) for p in per), default=0)
    return [min(p[i] for p in per) for i in range(n)]


def _mean_over(traces: tuple[str, ...], fn: Callable[[str], list[float]]) -> list[float]:
    per = [fn(t) for t in traces]
    n = min((len(p) for p in per), default=0)
    return [float(np.mean([p[i] for p in per])) for i in range(n)]


def _f_ratio(view: View, trace: str, other: str) -> list[float]:
    a, b = view.get(trace, "main", other, "f_mean"), view.get(trace, "main", "Lazer", "f_mean")
    return [a[s] / b[s] if b[s] > 0 else math.nan for s in sorted(set(a) & set(b))]


def _row(view: View, trace: str, metric: str) -> str:
    parts = []
    for lab in (*BASELINES, "Lazer"):
        v = list(view.get(trace, "main", lab, metric).values())
        if v:
            parts.append(f"{lab} {np.mean(v) / 60:.1f} min")
    return ", ".join(parts)


def _settings(ctx: ReproduceContext, view: View, traces: tuple[str, ...], seeds: list[int], quick: bool) -> None:
    from pipelines.papers.lazer_calibrate import preset_params, table

    settings = getattr(ctx, "settings", None)
    if settings is None:
        return
    for t in traces:
        sjf = view.by.get((t, "main", "SJF"), {})
        srtf = view.by.get((t, "main", "SRTF"), {})
        common = sorted(set(sjf) & set(srtf))
        rows = []
        for s in common:
            rows.append({"sjf_wait_p50_min": sjf[s]["wait_p50"] / 60, "sjf_wait_p95_min": sjf[s]["wait_p95"] / 60,
                         "srtf_futile_p50_min": srtf[s]["futile_any_p50"] / 60,
                         "srtf_futile_p95_min": srtf[s]["futile_any_p95"] / 60})
        reached = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]} if rows else {}
        params = preset_params(t)
        cells = next(iter(sjf.values()), {})
        from features.traces.helios_shaped import HeliosShapedSpec

        gpus = cells.get("cluster_gpus") or 512
        load = HeliosShapedSpec(**params).offered_gpus() / gpus
        settings[t] = {
            "trace": f"Helios-shaped {t.capitalize()} (configs/workloads/lazer-{t}.yaml, generator helios-shaped)",
            "cluster": "lazer-512 (64 x 8 GPUs)", "gpus": gpus, "offered_load": round(load, 2),
            "jobs": cells.get("jobs") or params.get("jobs"), "seeds": seeds, "costs": COSTS,
            "free_parameters": {k: params.get(k) for k in ("arrival_scale", "large_scale", "burst_size")},
            "calibration": table(t, reached) if reached else [],
            "tables": [f"{t}/policies.csv"],
        }
        if quick:
            settings[t]["note"] = f"smoke test: {QUICK_JOBS} jobs, one seed; the calibration is for the full size"


def _tables(ctx: ReproduceContext, view: View, traces: tuple[str, ...]) -> None:
    import pandas as pd

    for t in traces:
        rows = []
        for (trace, variant, label), per_seed in sorted(view.by.items()):
            if trace != t:
                continue
            frame = pd.DataFrame(list(per_seed.values()))
            row = {"variant": variant, "policy": label, "seeds": len(per_seed)}
            for col in ("jct_p50", "jct_p95", "wait_p50", "wait_p95", "futile_any_p50", "futile_any_p95", "jct_mean",
                        "wait_mean"):
                if col in frame:
                    row[f"{col}_min"] = round(float(frame[col].mean()) / 60, 3)
            for col in ("futile_gpu_share", "preemptions", "futile_jobs", "deferrals", "f_mean", "decision_cpu_ms"):
                if col in frame:
                    row[col] = round(float(frame[col].mean()), 4)
            rows.append(row)
        folder = Path(ctx.out) / t
        folder.mkdir(parents=True, exist_ok=True)
        pd.DataFrame(rows).to_csv(folder / "policies.csv", index=False)
