"""GFS's claims (``schedcast reproduce gfs``): Table 5 at Low / Medium / High spot load (per load: HP JQT,
spot JQT, spot JCT and eviction cuts against the best baseline, HP JCT / P99 parity), Table 6 (H = 1, 2, 4 at
Medium), Tables 8-10 (GFS-e, GFS-d, GFS-s / -p / -sp at Medium), PTS's time per task, §4.3 (not testable) and
§4.6.1's forecasting comparison (pipelines/papers/gfs_forecasting.py).

Workloads: configs/workloads/gfs-{low,medium,high}.yaml (generator gfs-contended, features/traces/gfs.py: 40 x 8
A100, HP demand in [0.6, 0.8] of the cluster with bursts, Table 3's pod mixes, Table 5's durations, spot load
0.10 x 1 / 2 / 4), one workload per (load, seed), 7-day HP-only warm-up, 3 measured days. Every replay goes
through the one replay path (pipelines.replay.run_replay); metrics are evaluation/gfs_metrics.py's over the
tasks after the warm-up. Every measure has one sample per seed (full mode: >= 3 seeds), each a comparison of
replays of the same workload.

Comparators, as the paper's IMP rows (gfs.txt:414, 423, 432): the best of YARN-CS, Chronus, Lyra and FGD per
metric, except the eviction rate, where Chronus is left out (gfs.txt:410 footnote: leases, no evictions
counted). A cut is 1 - GFS / best baseline (> 0: GFS better). A seed whose baseline is 0 (no queueing, no
eviction) gives no sample (0 / 0 is no evidence); the claims' preconditions say when a load is too light.

Causes (every Table 5 claim at Medium, full mode): the claim's measure with GFS replaced by one named reading
at a time: Eq. 11 as printed (``eta_max=inf``), the compounding cut (``eta_cut=each-update``), e over the spot
starts in the window instead of the runs (``e_runs=starts``, the previous default), the released
simulator's large-first queue (``queue_order=large-first``), Eq. 10 as printed (``eq10=printed``) and GFS
without its quota (``quota=false``).

Calibration (per load, ``ctx.settings[load]["calibration"]``): the baselines' figures the preset was chosen for
(YARN-CS's and Lyra's eviction rates and YARN-CS's HP and spot JQT against Table 5's), as reached in this run;
never GFS's own numbers.

Quick mode (< 1 min on 2 cores): Medium only, one seed, a 100 h warm-up and one measured day, GFS, GFS-e and the
four baselines; every other claim is not testable there.

Speed: the replays are listed up front (:func:`plan`) and, with ``--workers N`` (N > 1), run on N forked
processes that inherit the generated workloads (each replay is deterministic given its workload, policy and
seed; a test checks the forked summaries equal the serial ones).
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable

from evaluation.claims import Measurement, ReproduceContext

LEVELS = {"low": 1, "medium": 2, "high": 4}
BASELINES = ("yarn-cs", "chronus", "lyra", "fgd")
#: the eviction comparator: Chronus's eviction rate is not counted by the paper (gfs.txt:410 footnote)
EVICT_BASELINES = ("yarn-cs", "lyra", "fgd")
ABLATIONS = ("gfs-e", "gfs-d", "gfs-s", "gfs-p", "gfs-sp")
#: one reading at a time (the causes of the Table 5 claims at Medium)
#: (eta_max_inf: Eq. 11 as printed; queue_large_first: the released simulator's queue order; e_runs_starts: Eq. 11's
#: e over the spot starts in the window, the previous default, sim/policies/gfs/sqa.py)
CAUSES = {"eta_max_inf": "gfs:eta_max=inf", "eta_cut_each_update": "gfs:eta_cut=each-update",
          "e_runs_starts": "gfs:e_runs=starts",
          "queue_large_first": "gfs:queue_order=large-first", "eq10_printed": "gfs:eq10=printed",
          "no_quota": "gfs:quota=false"}
HORIZONS = {1: "gfs", 2: "gfs:H=2", 4: "gfs:H=4"}
#: (claims measure, summary metric) of Table 5
T5_METRICS = {"hp_jqt_cut": "hp_jqt_mean", "spot_jqt_cut": "spot_jqt_mean", "spot_jct_cut": "spot_jct_mean",
              "evict_cut": "evict_rate_runs", "hp_jct_change": "hp_jct_mean", "hp_p99_change": "hp_jct_p99"}
#: paper numbers the calibration targets (baselines only): (label, policy, metric, scale, {load: (paper, cite)})
CALIBRATION = [
    ("YARN-CS spot evictions, % of runs", "yarn-cs", "evict_rate_runs", 100,
     {"low": (2.32, "gfs.txt:409"), "medium": (16.74, "gfs.txt:418"), "high": (14.94, "gfs.txt:427")}),
    ("Lyra spot evictions, % of runs", "lyra", "evict_rate_runs", 100,
     {"low": (1.30, "gfs.txt:411"), "medium": (1.78, "gfs.txt:420"), "high": (1.63, "gfs.txt:429")}),
    ("YARN-CS spot JQT, s", "yarn-cs", "spot_jqt_mean", 1,
     {"low": (3110.2, "gfs.txt:409"), "medium": (5087.4, "gfs.txt:418"), "high": (6494.5, "gfs.txt:427")}),
    ("YARN-CS HP JQT, s", "yarn-cs", "hp_jqt_mean", 1,
     {"low": (77.4, "gfs.txt:409"), "medium": (102.9, "gfs.txt:418"), "high": (103.9, "gfs.txt:427")}),
    ("HP allocation, % of the cluster (Table 1: A100 74.34 %, all tasks, production)", None, "hp_held_share", 100,
     {"low": (74.34, "gfs.txt:60"), "medium": (74.34, "gfs.txt:60"), "high": (74.34, "gfs.txt:60")}),
]


def _preset(level: str, quick: bool) -> dict[str, Any]:
    import yaml

    from pipelines.papers import PAPERS_DIR

    path = PAPERS_DIR.parents[1] / "workloads" / f"gfs-{level}.yaml"
    data = yaml.safe_load(path.read_text())
    params = {k: v for k, v in data.items() if k not in ("name", "generator", "cluster", "source")}
    if quick:
        params.update(warmup_hours=100, days=1)
    return params


def seeds_of(ctx: ReproduceContext) -> list[int]:
    """The seeds: the user's (--seeds), else one in quick mode and three in a full run."""
    if getattr(ctx, "seeds_given", False) and ctx.seeds:
        return list(ctx.seeds)
    first = ctx.seeds[0] if ctx.seeds else 0
    return [first] if ctx.quick else [first + k for k in range(max(3, len(ctx.seeds or ())))]


def plan(quick: bool) -> list[tuple[str, str]]:
    """Every (load, policy) replay the claims need (each run once per seed)."""
    if quick:
        return [("medium", p) for p in ("gfs", "gfs-e", *BASELINES)]
    pairs = [(lv, p) for lv in LEVELS for p in ("gfs", *BASELINES)]
    pairs += [("medium", p) for p in (*ABLATIONS, *HORIZONS.values(), *CAUSES.values())]
    return list(dict.fromkeys(pairs))


#: what `schedcast reproduce gfs --skip` may leave out
PARTS = ("forecasting",)

#: the forecasting table's models that its claims compare (their fits go first on the pool)
CLAIM_MODELS = ("OrgLinear", "DLinear")

_FORKED: "_Runs | None" = None  # the parent's runner, inherited by forked workers (its workloads built)

Key = tuple[str, str, int]  # (load, policy, seed)


def _replay_in_worker(key: Key) -> tuple[Key, dict[str, Any]]:
    assert _FORKED is not None
    return key, _FORKED.get(*key)


def _forecast_fit_in_worker(task: tuple[str, int]) -> dict[str, Any]:
    """One (model, origin) fit of the forecasting table (§4.6.1) on a worker, beside the replays."""
    assert _FORKED is not None and _FORKED.study is not None and not isinstance(_FORKED.study, str)
    return _FORKED.study.run(task, threads=1)  # one torch thread per pool task (GluonTS fits included)


class _Runs:
    """Replays by (load, policy, seed), each run once; the summaries kept."""

    def __init__(self, ctx: ReproduceContext):
        self.ctx, self.workloads, self.summaries = ctx, {}, {}
        self.forecasting: dict[str, Measurement] | None = None
        self.study = None  # the forecasting table's inputs while a pool runs its fits

    def prefetch(self, keys: list[Key], forecasting: bool = False) -> None:
        """Run ``keys`` on ``ctx.workers`` forked processes (with one worker nothing happens here: replays run
        lazily in this process). The workloads are built first, so the workers inherit them. With
        ``forecasting`` the forecasting table's fits run on the pool too (the claims' models first, then the
        slow fits, the replays, the quick fits), its measurements landing in ``self.forecasting``."""
        global _FORKED
        workers = min(self.ctx.workers, len(keys))
        if workers <= 1:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        import pandas as pd

        from pipelines.papers.gfs_forecasting import ForecastingStudy, forecasting_measurements

        for level, _, seed in keys:
            self.prepared(level, seed)
        self.study = ForecastingStudy.load(self.ctx) if forecasting else None
        fits = isinstance(self.study, ForecastingStudy)
        _FORKED = self
        self.ctx.progress(f"gfs: {len(keys)} replays" + (f" and {len(self.study.tasks())} forecasting fits"
                                                        if fits else "") + f" on {workers} worker processes")
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                order = self.study.tasks(heavy=False) if fits else []
                first = [t for t in order if t[0] in CLAIM_MODELS]
                slow = [self._fit(pool, t) for t in first + self.study.tasks(heavy=True)] if fits else []
                replays = [pool.submit(_replay_in_worker, key) for key in keys]
                quick = [self._fit(pool, t) for t in order if t not in first]
                for done in replays:
                    key, summary = done.result()
                    self.summaries[key] = summary
                rows = [f.result() for f in slow + quick]
        finally:
            _FORKED = None
        if forecasting:
            self.forecasting = forecasting_measurements(
                self.ctx, rows=pd.DataFrame(rows) if fits else None, study=self.study)

    def _fit(self, pool, task: tuple[str, int]):
        """Submit one forecasting fit; when it ends, its scores, wall and CPU seconds go to the progress."""
        fut = pool.submit(_forecast_fit_in_worker, task)

        def report(f) -> None:
            if f.exception() is None:
                r = f.result()
                self.ctx.progress(f"forecasting fit {r['model']} @ {str(r['origin'])[:10]}: MAE {r['mae']:.3f}, "
                                  f"0.9-MAQE {r.get('maqe_0.9', float('nan')):.3f}; {r['seconds']:.0f} s wall, "
                                  f"{r.get('cpu_s', float('nan')):.0f} s CPU")
        fut.add_done_callback(report)
        return fut

    def prepared(self, level: str, seed: int):
        """The (load, seed) workload and its (empty) extras (pipelines.replay.PreparedReplay), built once."""
        w = self.workloads.get((level, seed))
        if w is None:
            from features.traces.gfs import contended_from_preset
            from pipelines.replay import ReplaySpec, prepare_replay
            from sim.cluster import load_cluster
            from sim.workload import build_workload

            table = contended_from_preset(_preset(level, self.ctx.quick), seed, None)
            workload = build_workload(table, load_cluster("gfs-a100-40"))
            w = self.workloads[(level, seed)] = prepare_replay(ReplaySpec(failures="none", seed=seed),
                                                               built=(table, workload))
        return w

    def get(self, level: str, policy: str, seed: int) -> dict[str, Any]:
        key = (level, policy, seed)
        if key not in self.summaries:
            from evaluation.gfs_metrics import gfs_summary
            from pipelines.replay import ReplaySpec, run_replay

            prepared = self.prepared(level, seed)
            t0 = time.process_time()
            r = run_replay(ReplaySpec(policy=policy, failures="none", seed=seed), prepared).result
            s = gfs_summary(r)
            s["cpu_s"] = time.process_time() - t0
            s["tasks"] = len(r.workload)
            for k in ("sqa_estimator", "sqa_model_forecasts", "sqa_model_fits", "sqa_fit_seconds",
                      "sqa_fit_cpu_seconds", "sqa_model_version"):
                if k in r.policy_stats:
                    s[k] = r.policy_stats[k]
            s.update(_mechanism_stats(r))
            s.pop("pools", None)
            self.summaries[key] = s
            self.ctx.progress(f"gfs {level} seed {seed}: {policy} replayed in {s['cpu_s']:.1f} s CPU")
        return self.summaries[key]

    def samples(self, level: str, policy: str, name: str, seeds: list[int]) -> list[float]:
        """``name`` per seed (NaN where missing)."""
        out = []
        for seed in seeds:
            v = self.get(level, policy, seed).get(name)
            out.append(float(v) if isinstance(v, (int, float)) and v is not None else math.nan)
        return out


def _mechanism_stats(r) -> dict[str, float]:
    """What the ledger's details read besides the metrics: Eq. 11's eta over the quota updates and the share
    of updates with f > 0 and with the quota room (quota - spot GPUs held) below one GPU."""
    import numpy as np

    out: dict[str, float] = {}
    log = r.policy_stats.get("sqa_quota_log") or []
    if log:
        eta = np.array([row[4] for row in log], dtype=float)
        out.update(sqa_eta_min=float(eta.min()), sqa_eta_median=float(np.median(eta)), sqa_eta_max=float(eta.max()),
                   sqa_f_positive_share=float(np.mean([row[3] > 0 for row in log])))
    rooms = r.policy_stats.get("sqa_room_log") or []
    if rooms:
        out["sqa_room_zero_share"] = float(np.mean([room < 1 for room in rooms]))
    return out


def _cut(ours: float, theirs: float) -> float:
    """1 - ours / theirs; NaN when either is missing or theirs is 0 (no evidence)."""
    if not (math.isfinite(ours) and math.isfinite(theirs)) or theirs <= 0:
        return math.nan
    return 1.0 - ours / theirs


def evict_samples(ours: list[float], best_base: list[float]) -> tuple[list[float], int]:
    """The eviction cut per seed, 1 - GFS / best baseline, with the seeds where the best counted baseline
    evicts nothing (0 / 0 or x / 0: no evidence either way) dropped; returns (samples, seeds dropped)."""
    kept = [_cut(a, b) for a, b in zip(ours, best_base) if math.isfinite(b) and b > 0]
    return kept, len(ours) - len(kept)


def evict_dropped_note(dropped: int, seeds: int) -> str:
    """How many seeds the eviction comparator dropped, in words."""
    return (f"{dropped} of {seeds} seeds dropped: the best baseline evicted nothing there (0 / 0 or x / 0 is no "
            f"evidence)" if dropped else f"no seed dropped: the best baseline evicted on all {seeds}")


def _mean(xs: list[float]) -> float:
    xs = [x for x in xs if math.isfinite(x)]
    return sum(xs) / len(xs) if xs else math.nan


def _measurement(samples: list[float], detail: str, causes: dict[str, float | str] | None = None,
                 caveats: list[str] | None = None) -> Measurement:
    """One sample per seed; seeds without evidence (NaN: a zero baseline) are dropped and named; none left:
    not testable."""
    finite = [x for x in samples if math.isfinite(x)]
    if len(finite) < len(samples):
        detail += f" ({len(samples) - len(finite)} of {len(samples)} seeds without evidence: a zero baseline)"
    if not finite:
        return Measurement(None, detail=detail, not_testable="0 / 0 on every seed (the baseline is 0): " + detail,
                           causes=causes or {}, caveats=caveats or [])
    return Measurement(samples=finite, detail=detail, causes=causes or {}, caveats=caveats or [])


CAVEAT = "measured on generated GFS-shaped traces (40 x 8 A100), not the paper's production trace"


def run(ctx: ReproduceContext) -> dict[str, Measurement]:
    seeds = seeds_of(ctx)
    runs = _Runs(ctx)
    skip_table = "forecasting" in getattr(ctx, "skip", ())
    pairs = plan(ctx.quick)
    runs.prefetch([(lv, p, s) for lv, p in pairs for s in seeds], forecasting=not ctx.quick and not skip_table)
    out: dict[str, Measurement] = {}
    levels = ["medium"] if ctx.quick else list(LEVELS)
    quick_reason = "quick mode replays the Medium load only (run without --quick)"
    settings = getattr(ctx, "settings", None)

    def S(level: str, policy: str, metric: str) -> list[float]:
        return runs.samples(level, policy, metric, seeds)

    def best(level: str, metric: str, pols=BASELINES) -> tuple[list[float], list[str]]:
        """Per seed the best (lowest) baseline's value and its name."""
        cols = {b: S(level, b, metric) for b in pols}
        vals, names = [], []
        for i in range(len(seeds)):
            b = min(pols, key=lambda b: cols[b][i] if math.isfinite(cols[b][i]) else math.inf)
            vals.append(cols[b][i])
            names.append(b)
        return vals, names

    def row(level: str, pol: str) -> str:
        keys = [("hp_jqt_mean", "HP JQT", 1, "s"), ("hp_jct_mean", "HP JCT", 1, "s"),
                ("spot_jqt_mean", "spot JQT", 1, "s"), ("spot_jct_mean", "spot JCT", 1, "s"),
                ("evict_rate_runs", "e", 100, "%")]
        return f"{pol}: " + ", ".join(f"{lab} {_mean(S(level, pol, k)) * sc:.4g} {u}" for k, lab, sc, u in keys)

    # --- Table 5 ---------------------------------------------------------------------------------------------
    for level in LEVELS:
        if level not in levels:
            for m in T5_METRICS:
                out[f"{m}@{level}"] = Measurement(None, not_testable=quick_reason)
            for m in ("base_hp_jqt_s", "base_spot_jqt_s", "base_evict"):
                out[f"{m}@{level}"] = Measurement(None, not_testable=quick_reason)
            continue
        g = runs.get(level, "gfs", seeds[0])
        eta = (f"; GFS's eta min {_mean(S(level, 'gfs', 'sqa_eta_min')):.3g}, max "
               f"{_mean(S(level, 'gfs', 'sqa_eta_max')):.3g}, f > 0 at {100 * _mean(S(level, 'gfs', 'sqa_f_positive_share')):.0f} "
               f"% of the quota updates, forecaster {g.get('sqa_estimator', '?')} ({g.get('sqa_model_fits', 0)} fits)")
        table = "; ".join(row(level, p) for p in ("gfs", *BASELINES)) + eta
        for m, metric in T5_METRICS.items():
            pols = EVICT_BASELINES if m == "evict_cut" else BASELINES
            base, names = best(level, metric, pols)
            ours = S(level, "gfs", metric)
            samples = [_cut(a, b) for a, b in zip(ours, base)]
            if m == "evict_cut":  # seeds where the best counted baseline evicts nothing are no evidence
                samples, dropped = evict_samples(ours, base)
            causes: dict[str, float | str] = {}
            if level == "medium" and not ctx.quick:
                for name, pol in CAUSES.items():
                    v = _mean([_cut(a, b) for a, b in zip(S(level, pol, metric), base)])
                    causes[name] = round(v, 4) if math.isfinite(v) else "n/a"
            who = ", ".join(sorted(set(names)))
            detail = f"1 - GFS / best of {'/'.join(pols)} ({who}) on {metric}; {table}"
            if m == "evict_cut":
                detail = f"{evict_dropped_note(dropped, len(seeds))}; {detail}"
            out[f"{m}@{level}"] = _measurement(samples, detail, causes, [CAVEAT])
        hp_base, _ = best(level, "hp_jqt_mean")
        spot_base, _ = best(level, "spot_jqt_mean")
        ev_base, _ = best(level, "evict_rate_runs", EVICT_BASELINES)
        out[f"base_hp_jqt_s@{level}"] = Measurement(samples=hp_base, detail="best baseline's HP JQT, s")
        out[f"base_spot_jqt_s@{level}"] = Measurement(samples=spot_base, detail="best baseline's spot JQT, s")
        out[f"base_evict@{level}"] = Measurement(samples=ev_base, detail="best non-Chronus baseline's evictions / runs")
        if settings is not None:
            settings[level] = _setting(level, runs, seeds, S)

    # --- Table 6: H = 1, 2, 4 at Medium ----------------------------------------------------------------------------
    for h, pol in HORIZONS.items():
        if ctx.quick:
            out[f"gfs_evict@h{h}"] = Measurement(None, not_testable=quick_reason)
            continue
        out[f"gfs_evict@h{h}"] = _measurement(S("medium", pol, "evict_rate_runs"),
                                              f"GFS with H = {h} at Medium: " + row("medium", pol), caveats=[CAVEAT])
    if ctx.quick:
        out["t6_spot_jqt_h4_over_h1"] = Measurement(None, not_testable=quick_reason)
    else:
        h1, h4 = S("medium", "gfs", "spot_jqt_mean"), S("medium", "gfs:H=4", "spot_jqt_mean")
        out["t6_spot_jqt_h4_over_h1"] = _measurement(
            [a / b if b > 0 else math.nan for a, b in zip(h4, h1)],
            "spot JQT, H = 4 / H = 1 at Medium; " + "; ".join(row("medium", p) for p in HORIZONS.values()),
            caveats=[CAVEAT])

    # --- Tables 8-10: ablations at Medium (1 - GFS / ablation: > 0, GFS better) ----------------------------------
    abl_metrics = {"jct": "spot_jct_mean", "jqt": "spot_jqt_mean", "evict": "evict_rate_runs"}
    for abl in ABLATIONS:
        for short, metric in abl_metrics.items():
            key = f"{abl.replace('-', '_')}_{short}_cut"
            if ctx.quick and abl != "gfs-e":
                out[key] = Measurement(None, not_testable="quick mode runs only the GFS-e ablation")
                continue
            samples = [_cut(a, b) for a, b in zip(S("medium", "gfs", metric), S("medium", abl, metric))]
            out[key] = _measurement(samples, f"1 - GFS / {abl} on {metric} at Medium; " + row("medium", "gfs")
                                    + "; " + row("medium", abl), caveats=[CAVEAT])
    for short, metric in abl_metrics.items():  # Table 10: GFS-s and GFS-p against GFS-sp
        for abl in ("gfs-s", "gfs-p"):
            key = f"{abl.replace('-', '_')}_vs_sp_{short}_cut"
            if ctx.quick:
                out[key] = Measurement(None, not_testable="quick mode runs only the GFS-e ablation")
                continue
            samples = [_cut(a, b) for a, b in zip(S("medium", abl, metric), S("medium", "gfs-sp", metric))]
            out[key] = _measurement(samples, f"1 - {abl} / gfs-sp on {metric} at Medium", caveats=[CAVEAT])
    out["gfs_e_spot_runs"] = Measurement(samples=S("medium", "gfs-e", "spot_runs"),
                                                detail="spot starts of GFS-e at Medium (does GFS-e run spot?)")
    out["gfs_f_positive"] = Measurement(samples=S("medium", "gfs", "sqa_f_positive_share"),
                                               detail="share of GFS's quota updates with inventory f > 0 at Medium")

    # --- PTS time per task ------------------------------------------------------------------------------------------
    cpu, tasks = S("medium", "gfs", "cpu_s"), S("medium", "gfs", "tasks")
    out["pts_s_per_task"] = Measurement(
        samples=[c / n for c, n in zip(cpu, tasks)],
        detail=f"CPU seconds of the whole GFS replay at Medium (SQA, OrgLinear retraining and PTS together) per "
               f"task: {_mean(cpu):.1f} s for {_mean(tasks):,.0f} tasks",
        caveats=["an upper bound on PTS's own time: the replay's CPU includes the simulator and the forecaster"])
    out["production_eviction_cut"] = Measurement(None, not_testable="§4.3 is a production deployment (Jan vs Oct "
                                                                     "2024 on > 10,000 GPUs): no trace of it is public")
    _write_table(ctx, runs)
    if runs.forecasting is None:  # one worker (or quick mode): the table runs here, after the replays
        from pipelines.papers.gfs_forecasting import forecasting_measurements

        runs.forecasting = forecasting_measurements(
            ctx, study="left out with --skip forecasting" if skip_table else
            ("quick mode leaves the forecasting table out" if ctx.quick else None))
    out.update(runs.forecasting)
    return out


def _setting(level: str, runs: _Runs, seeds: list[int], S) -> dict[str, Any]:
    """What the ledger page states for one load: trace, cluster, seeds, calibration (baselines only)."""
    params = _preset(level, runs.ctx.quick)
    cal = []
    for label, pol, metric, scale, paper in CALIBRATION:
        value, cite = paper[level]
        if pol is None:  # a property of the workload, not of a replay
            from evaluation.gfs_metrics import hp_held_share

            got = _mean([hp_held_share(runs.prepared(level, sd).table.frame, 320) for sd in seeds])
        else:
            got = _mean(S(level, pol, metric))
        cal.append({"target": label, "paper": value, "cite": cite, "reached": round(got * scale, 3)})
    return {"trace": f"gfs-{level} (generator gfs-contended, seeded per seed)",
            "cluster": "gfs-a100-40: 40 x 8 A100 (paper: 287 x 8 = 2,296 A100, gfs.txt:354)", "gpus": 320,
            "offered_load": params.get("spot_load"), "seeds": list(seeds), "calibration": cal,
            "parameters": {k: params[k] for k in ("hp_mean_share", "hp_min_share", "hp_max_share", "spot_load",
                                                  "days", "warmup_hours") if k in params},
            "tables": ["gfs_replays.csv", "gfs_replays.md"]}


def _write_table(ctx: ReproduceContext, runs: _Runs) -> None:
    """All replays (one row per load, policy and seed) as ``gfs_replays.csv`` and a markdown table of the
    means over seeds, ``gfs_replays.md``, in ``ctx.out``."""
    import csv
    from pathlib import Path

    cols = [("hp_jqt_mean", "HP JQT s", 1), ("hp_jct_mean", "HP JCT h", 3600), ("hp_jct_p99", "HP JCT P99 h", 3600),
            ("spot_jqt_mean", "spot JQT s", 1), ("spot_jct_mean", "spot JCT h", 3600),
            ("evict_rate_runs", "e % runs", 0.01), ("spot_runs", "spot runs", 1), ("alloc_mean", "alloc %", 0.01),
            ("sqa_eta_min", "eta min", 1), ("sqa_eta_max", "eta max", 1), ("cpu_s", "CPU s", 1)]
    out = Path(ctx.out)
    out.mkdir(parents=True, exist_ok=True)
    with (out / "gfs_replays.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["load", "policy", "seed", *(k for k, _, _ in cols)])
        for (level, pol, seed), s in sorted(runs.summaries.items()):
            w.writerow([level, pol, seed, *(s.get(k, "") for k, _, _ in cols)])
    groups: dict[tuple[str, str], list[dict]] = {}
    for (level, pol, _), s in runs.summaries.items():
        groups.setdefault((level, pol), []).append(s)
    lines = ["| load | policy | seeds | " + " | ".join(c[1] for c in cols) + " |", "|---|---|---|" + "---|" * len(cols)]
    for (level, pol), rows in groups.items():
        cells = []
        for k, _, unit in cols:
            v = _mean([float(r[k]) for r in rows if isinstance(r.get(k), (int, float))])
            cells.append("-" if not math.isfinite(v) else f"{v / unit:.3g}")
        lines.append(f"| {level} | {pol} | {len(rows)} | " + " | ".join(cells) + " |")
    (out / "gfs_replays.md").write_text("\n".join(lines) + "\n")
