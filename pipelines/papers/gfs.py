"""GFS's claims (``schedcast reproduce gfs``): Table 5 at Low / Medium / High spot load, Table 6 (quota
horizon H = 1, 2, 4 at Medium), the ablations at Medium (Tables 8-10) and the §4.6.1 estimator study, measured
on schedcast's replays of the GFS-shaped workload (configs/workloads/gfs-{low,medium,high}.yaml: 40 A100
nodes, HP per organisation from the Helios Earth per-VC series, a 14-day HP-only warm-up, 3 measured days).

Every replay goes through the one replay path (pipelines.replay.run_replay); metrics are evaluation/gfs_metrics.py's over the tasks after the
warm-up (HP / spot JQT = the sum of all waits, eviction rate = evictions / spot runs). ``gfs`` runs with its
Table 4 defaults and OrgLinear trained causally inside the replay (the detail of each GFS measure names the
forecaster and how many forecasts the model answered).

Causes of a miss are measured one deviation at a time at Medium: GFS rerun with one old reading switched back
(``eq19=gpus``, ``score3=inverse``, ``eq10=held-idle``, ``wait=current``, ``summed=false``, the old eta
clamp ``eta_min=0.05,eta_max=4``) or another demand estimator (``estimator=persistence``); each cause's value
is the claim's measure under it.

Quick mode (< 1 min on 2 cores): Medium only, a 100 h warm-up (OrgLinear's first fit is at 96 h) and one
measured day; the Low / High and Table 6 claims are not testable there, and only the estimator cause runs.

Speed: every replay the claims need is listed up front (:func:`plan`: 30 at full scale, 3 workloads). With
``--workers N`` (N > 1) they run in N forked processes that share the three generated workloads (each replay
is deterministic given its workload, policy and seed, so the summaries are those of the serial run; a test
checks it). Why not an experiment spec (configs/experiments/papers/*/spec.yaml, as Lazer and Lucid): the
claims read what only the replay's policy object knows (which forecaster drove the quotas, how many model
forecasts and fits, the retraining CPU), which an experiment cell does not record, and the workloads come from
the GFS generator with the quick mode's warm-up override; the plan below is the spec in code.
"""
from __future__ import annotations

import math
import time
from typing import Any, Callable

from evaluation.claims import Measurement, ReproduceContext

LEVELS = {"low": 1, "medium": 2, "high": 4}
BASELINES = ("yarn-cs", "chronus", "lyra", "fgd")
ABLATIONS = {"gfs-e": "spot_jqt_mean", "gfs-d": "evict_rate_runs", "gfs-s": "evict_rate_runs",
             "gfs-p": "evict_rate_runs", "gfs-sp": "evict_rate_runs"}
CAUSES = {"eq19_gpus": "gfs:eq19=gpus", "score3_inverse": "gfs:score3=inverse", "eq10_held_idle": "gfs:eq10=held-idle",
          "wait_current": "gfs:wait=current", "summed_false": "gfs:summed=false",
          "estimator_persistence": "gfs:estimator=persistence", "eta_clamp": "gfs:eta_min=0.05,eta_max=4"}
#: GFS taken apart, at every load (full mode): the claim's measure with one part of GFS removed or changed.
#: no_quota: PTS (Alg. 1 + 2) without the SQA; eta_raise_binding: Eq. 11's raise only while the quota holds
#: spot back (anti-windup: as printed, eta grows 1.5x per 300 s without bound while e < eps / 2); eta_max_1: eta
#: never above 1 (the forecast's inventory is the ceiling); fifo_order: PTS's queue in submission order.
MECHANISMS = {"no_quota": "gfs:quota=false", "eta_raise_binding": "gfs:eta_raise=binding",
              "eta_max_1": "gfs:eta_max=1", "fifo_order": "gfs:queue_order=fifo"}
#: ablations whose eviction ratio is also measured with Eq. 11's anti-windup raise on both sides (ablation and
#: GFS): with the raise as printed, eta winds up and e swings with small changes of the forecast (GFS-p / GFS
#: at Medium was 1.40 with the torch-trained in-replay OrgLinear and 0.41 with the numpy one; with
#: eta_raise=binding 1.10 with the numpy one)
ANTI_WINDUP_ABLATIONS = ("gfs-s", "gfs-p", "gfs-sp")
#: §4.6.1: OrgLinear vs the production estimator (GFS-e) on spot JCT, JQT and the eviction rate
ESTIMATOR_METRICS = {"jct": "spot_jct_mean", "jqt": "spot_jqt_mean", "evict": "evict_rate_runs"}


def _preset(level: str, quick: bool) -> dict[str, Any]:
    import yaml

    from pipelines.papers import PAPERS_DIR

    path = PAPERS_DIR.parents[1] / "workloads" / f"gfs-{level}.yaml"
    data = yaml.safe_load(path.read_text())
    params = {k: v for k, v in data.items() if k not in ("name", "generator", "cluster", "source")}
    if quick:
        params.update(warmup_hours=100, days=1)
    return params


def plan(quick: bool) -> list[tuple[str, str]]:
    """Every (level, policy) replay the claims need, the dearest (GFS with OrgLinear) first."""
    levels = ["medium"] if quick else list(LEVELS)
    medium = ["gfs-e", CAUSES["estimator_persistence"]]
    if not quick:
        medium += ["gfs:H=2", "gfs:H=4", *(a for a in ABLATIONS if a != "gfs-e"), "gfs:estimator=seasonal",
                   *CAUSES.values(), *(f"{a}:eta_raise=binding" for a in ANTI_WINDUP_ABLATIONS)]
    pairs = [(lv, "gfs") for lv in levels] + [("medium", p) for p in medium] + \
        [(lv, m) for lv in levels for m in MECHANISMS.values() if not quick] + \
        [(lv, b) for lv in levels for b in BASELINES]
    return list(dict.fromkeys(pairs))


#: what `schedcast reproduce gfs --skip` may leave out
PARTS = ("forecasting",)

#: the forecasting table's models that its claims compare (their fits go first on the pool)
CLAIM_MODELS = ("OrgLinear", "DLinear")

_FORKED: "_Runs | None" = None  # the parent's runner, inherited by forked workers (its workloads built)


def _replay_in_worker(pair: tuple[str, str]) -> tuple[tuple[str, str], dict[str, Any]]:
    assert _FORKED is not None
    return pair, _FORKED.get(*pair)


def _forecast_fit_in_worker(task: tuple[str, int]) -> dict[str, Any]:
    """One (model, origin) fit of the forecasting table (§4.2) on a worker, beside the replays."""
    assert _FORKED is not None and _FORKED.study is not None and not isinstance(_FORKED.study, str)
    return _FORKED.study.run(task, threads=1)  # one torch thread per pool task (GluonTS fits included)


class _Runs:
    """Replays by (level, policy), each run once; the summaries kept."""

    def prefetch(self, pairs: list[tuple[str, str]], forecasting: bool = False) -> None:
        """Run ``pairs`` on ``ctx.workers`` forked processes (nothing to do with one worker: replays then run
        lazily, in this process). The workloads are built here first, so the workers inherit them. With
        ``forecasting`` the forecasting table's fits run on the pool too, one task per (model, origin):
        the slow models' fits first, then the replays, then the quick fits — longest first, so the two
        workers finish together (its measurements land in ``self.forecasting``)."""
        global _FORKED
        workers = min(self.ctx.workers, len(pairs))
        if workers <= 1:
            return
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        import pandas as pd

        from pipelines.papers.gfs_forecasting import ForecastingStudy, forecasting_measurements

        for level in dict.fromkeys(lv for lv, _ in pairs):
            self.prepared(level)
        self.study = ForecastingStudy.load(self.ctx) if forecasting else None
        fits = isinstance(self.study, ForecastingStudy)
        _FORKED = self
        self.ctx.progress(f"gfs: {len(pairs)} replays"
                          + (f" and {len(self.study.tasks())} forecasting fits" if fits else "")
                          + f" on {workers} worker processes")
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                # the claims' own models (OrgLinear, DLinear) first, then the slow fits, the replays, the quick
                # fits; each fit's scores and CPU are printed as it ends (a stopped run still shows what it reached)
                order = self.study.tasks(heavy=False) if fits else []
                first = [t for t in order if t[0] in CLAIM_MODELS]
                slow = [self._fit(pool, t) for t in first + self.study.tasks(heavy=True)] if fits else []
                replays = [pool.submit(_replay_in_worker, pair) for pair in pairs]
                quick = [self._fit(pool, t) for t in order if t not in first]
                for done in replays:
                    pair, summary = done.result()
                    self.summaries[pair] = summary
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
                                  f"QL0.9 {r['ql_0.9']:.3f}, QL0.95 {r['ql_0.95']:.3f}; {r['seconds']:.0f} s wall, "
                                  f"{r.get('cpu_s', float('nan')):.0f} s CPU")
        fut.add_done_callback(report)
        return fut

    def __init__(self, ctx: ReproduceContext):
        self.ctx, self.workloads, self.summaries, self.cpu = ctx, {}, {}, {}
        self.forecasting: dict[str, Measurement] | None = None
        self.study = None  # the forecasting table's inputs while a pool runs its fits

    def workload(self, level: str):
        """The level's Workload."""
        return self.prepared(level).workload

    def prepared(self, level: str):
        """The level's workload and its (empty) extras (pipelines.replay.PreparedReplay), built once."""
        w = self.workloads.get(level)
        if w is None:
            from features.traces.gfs import GfsSpec, generate
            from sim.cluster import load_cluster
            from pipelines.replay import ReplaySpec, prepare_replay
            from sim.workload import build_workload

            seed = self.ctx.seeds[0] if self.ctx.seeds else 0
            table = generate(GfsSpec(**_preset(level, self.ctx.quick)), seed=seed)
            workload = build_workload(table, load_cluster("gfs-a100-40"))
            # the workload and its (empty) extras, shared by every policy replayed at this level
            w = self.workloads[level] = prepare_replay(ReplaySpec(failures="none", seed=seed),
                                                       built=(table, workload))
        return w

    def get(self, level: str, policy: str) -> dict[str, Any]:
        key = (level, policy)
        if key not in self.summaries:
            from evaluation.gfs_metrics import gfs_summary
            from pipelines.replay import ReplaySpec, run_replay

            prepared = self.prepared(level)
            t0 = time.process_time()
            spec = ReplaySpec(policy=policy, failures="none", seed=self.ctx.seeds[0] if self.ctx.seeds else 0)
            r = run_replay(spec, prepared).result
            s = gfs_summary(r)
            s["cpu_s"] = time.process_time() - t0
            for k in ("sqa_estimator", "sqa_model_forecasts", "sqa_model_fits", "sqa_fit_seconds", "sqa_fit_cpu_seconds",
                      "sqa_model_version"):
                if k in r.policy_stats:
                    s[k] = r.policy_stats[k]
            s.update(_mechanism_stats(r))
            self.summaries[key] = s
            self.ctx.progress(f"gfs {level}: {policy} replayed in {s['cpu_s']:.1f} s CPU")
        return self.summaries[key]

    def metric(self, level: str, policy: str, name: str) -> float:
        v = self.get(level, policy).get(name)
        return float(v) if isinstance(v, (int, float)) and v is not None else float("nan")


def _mechanism_stats(r) -> dict[str, float]:
    """What the ledger's causes read besides the metrics: Eq. 11's eta over the quota updates, the share of
    updates with the quota room (quota - spot GPUs held) below one GPU and with f = 0, and the JQT of the
    measured 1-GPU spot tasks (the ones no lack of room explains)."""
    import numpy as np

    from evaluation.gfs_metrics import gfs_jobs

    out: dict[str, float] = {}
    jobs = gfs_jobs(r)
    one = jobs[(jobs["klass"] == "spot") & jobs["measured"] & (jobs["status"] == "done") & (jobs["gpu_demand"] == 1)]
    if len(one):
        out["spot_jqt_1gpu"] = float(one["wait"].mean())
    log = r.policy_stats.get("sqa_quota_log") or []
    if log:
        eta = np.array([row[4] for row in log], dtype=float)
        out.update(sqa_eta_median=float(np.median(eta)), sqa_eta_max=float(eta.max()),
                   sqa_eta_above_10=float(np.mean(eta > 10)),
                   sqa_f_zero_share=float(np.mean([row[3] <= 0 for row in log])))
    rooms = r.policy_stats.get("sqa_room_log") or []
    if rooms:
        out["sqa_room_zero_share"] = float(np.mean([room < 1 for room in rooms]))
    return out


def _reduction(ours: float, theirs: float) -> float:
    if not (math.isfinite(ours) and math.isfinite(theirs)) or theirs <= 0:
        return float("nan")
    return 1.0 - ours / theirs


def _ratio(a: float, b: float) -> float:
    if not (math.isfinite(a) and math.isfinite(b)) or b <= 0:
        return float("nan") if not (math.isfinite(a) and b == 0 and a == 0) else 1.0
    return a / b


def _m(value: float, detail: str, causes: dict[str, float | str] | None = None) -> Measurement:
    if not math.isfinite(value):
        return Measurement(None, detail, not_testable="not measurable on this workload (a zero or missing "
                                                      "denominator): " + detail, causes=causes or {})
    return Measurement(float(value), detail, causes=causes or {})


def _forecaster(s: dict[str, Any]) -> str:
    est = s.get("sqa_estimator", "?")
    ver = s.get("sqa_model_version")
    return (f"forecaster {est}{' v' + str(ver) if ver else ''}: {s.get('sqa_model_forecasts', 0)} model forecasts, "
            f"{s.get('sqa_model_fits', 0)} fits")


def _quota_desc(runs: _Runs, level: str) -> str:
    """Where GFS's spot tasks wait: the quota's share of the updates at room 0 and the 1-GPU tasks' JQT."""
    g = runs.get(level, "gfs")
    if "sqa_room_zero_share" not in g:
        return ""
    return (f"; SQA: quota room < 1 GPU at {100 * g['sqa_room_zero_share']:.0f} % of the updates, f = 0 at "
            f"{100 * g['sqa_f_zero_share']:.0f} %; 1-GPU spot JQT {g.get('spot_jqt_1gpu', float('nan')):.0f} s "
            f"(YARN-CS {runs.get(level, 'yarn-cs').get('spot_jqt_1gpu', float('nan')):.0f} s)")


def _eta_desc(runs: _Runs, level: str) -> str:
    """Eq. 11's eta as it ran, and the eviction target eps = 1 - p it steers e toward."""
    g = runs.get(level, "gfs")
    if "sqa_eta_max" not in g:
        return ""
    return (f"; Eq. 11: eta median {g['sqa_eta_median']:.3g}, max {g['sqa_eta_max']:.3g}, > 10 at "
            f"{100 * g['sqa_eta_above_10']:.0f} % of the updates; target e = 1 - p = 10 %")


def run(ctx: ReproduceContext) -> dict[str, Measurement]:
    runs = _Runs(ctx)
    skip_table = "forecasting" in ctx.skip
    runs.prefetch(plan(ctx.quick), forecasting=not ctx.quick and not skip_table)
    out: dict[str, Measurement] = {}
    levels = ["medium"] if ctx.quick else list(LEVELS)
    quick_reason = "quick mode replays the Medium load only (run without --quick)"

    def with_causes(fn: Callable[[str], float], level: str) -> dict[str, float | str]:
        """The measure with GFS replaced by each mechanism variant (every load, full mode) and each
        one-deviation variant (Medium)."""
        variants = {} if ctx.quick else dict(MECHANISMS)
        if level == "medium":
            variants.update({"estimator_persistence": CAUSES["estimator_persistence"]} if ctx.quick else CAUSES)
        return {n: round(v, 4) if math.isfinite(v := fn(pol)) else "n/a" for n, pol in variants.items()}

    # --- Table 5 ---------------------------------------------------------------------------------------------
    for level in LEVELS:
        keys = (f"t5_{level}_hp_jqt_reduction", f"t5_{level}_spot_jqt_reduction", f"t5_{level}_evict_ratio")
        if level not in levels:
            for k in keys:
                out[k] = Measurement(None, not_testable=quick_reason)
            continue
        g = runs.get(level, "gfs")
        base = {b: runs.get(level, b) for b in BASELINES}

        def hp_red(pol: str, level=level) -> float:  # Table 5's IMP row: against the best baseline
            best = min(runs.metric(level, b, "hp_jqt_mean") for b in BASELINES)
            return _reduction(runs.metric(level, pol, "hp_jqt_mean"), best)

        def spot_red(pol: str, level=level) -> float:
            best = min(runs.metric(level, b, "spot_jqt_mean") for b in BASELINES)
            return _reduction(runs.metric(level, pol, "spot_jqt_mean"), best)

        def ev_ratio(pol: str, level=level) -> float:
            best = min(runs.metric(level, b, "evict_rate_runs") for b in BASELINES)
            return _ratio(runs.metric(level, pol, "evict_rate_runs"), best)

        row = ", ".join(f"{b} HP JQT {s.get('hp_jqt_mean', float('nan')):.0f} s, spot JQT "
                        f"{s.get('spot_jqt_mean', float('nan')):.0f} s, e {100 * s.get('evict_rate_runs', 0):.2f} %"
                        for b, s in base.items())
        gdesc = (f"GFS HP JQT {g.get('hp_jqt_mean', float('nan')):.0f} s, spot JQT {g.get('spot_jqt_mean', float('nan')):.0f} s, "
                 f"e {100 * g.get('evict_rate_runs', 0):.2f} % ({_forecaster(g)}); {row}")
        out[keys[0]] = _m(hp_red("gfs"), gdesc, with_causes(hp_red, level))
        out[keys[1]] = _m(spot_red("gfs"), gdesc + _quota_desc(runs, level), with_causes(spot_red, level))
        out[keys[2]] = _m(ev_ratio("gfs"), gdesc + _eta_desc(runs, level), with_causes(ev_ratio, level))
        # the claims file's per-load keys (CLAIMS_FORMAT.md: <measure>@<setting>)
        out[f"t5_hp_jqt_reduction@{level}"] = out[keys[0]]
        out[f"t5_spot_jqt_reduction@{level}"] = out[keys[1]]
        out[f"t5_evict_reduction@{level}"] = _m(1.0 - ev_ratio("gfs"), gdesc + _eta_desc(runs, level),
                                                 with_causes(lambda pol, level=level: 1.0 - ev_ratio(pol, level), level))
        best_spot = min(BASELINES, key=lambda b: runs.metric(level, b, "spot_jqt_mean"))
        out[f"t5_spot_wait_share@{level}"] = _m(
            _ratio(runs.metric(level, best_spot, "spot_jqt_mean"), runs.metric(level, best_spot, "spot_jct_mean")),
            f"{best_spot} (the best baseline on spot JQT): spot JQT / spot JCT at {level}")
        out[f"t5_yarn_evict@{level}"] = _m(runs.metric(level, "yarn-cs", "evict_rate_runs"),
                                           f"YARN-CS spot evictions / spot runs at {level} (the workload's contention)")
    out["t5_medium_yarn_evict"] = _m(runs.metric("medium", "yarn-cs", "evict_rate_runs"),
                                     "YARN-CS spot evictions / spot runs at Medium (the workload's contention)")

    # --- Table 6 -----------------------------------------------------------------------------------------------
    if ctx.quick:
        out["t6_spot_jqt_h4_over_h1"] = Measurement(None, not_testable=quick_reason)
        out["t6_evict_h4_over_h1"] = Measurement(None, not_testable=quick_reason)
    else:
        rows = {h: runs.get("medium", "gfs" if h == 1 else f"gfs:H={h}") for h in (1, 2, 4)}
        desc = "; ".join(f"H={h}: spot JQT {s['spot_jqt_mean']:.0f} s, e {100 * s['evict_rate_runs']:.2f} %, "
                         f"HP JQT {s['hp_jqt_mean']:.0f} s" for h, s in rows.items())
        out["t6_spot_jqt_h4_over_h1"] = _m(_ratio(rows[4]["spot_jqt_mean"], rows[1]["spot_jqt_mean"]), desc)
        out["t6_evict_h4_over_h1"] = _m(_ratio(rows[4]["evict_rate_runs"], rows[1]["evict_rate_runs"]), desc)

    # --- ablations at Medium -------------------------------------------------------------------------------------
    for name, metric in ABLATIONS.items():
        key = f"abl_{name.replace('-', '_')}_ratio"
        if ctx.quick and name != "gfs-e":
            out[key] = Measurement(None, not_testable="quick mode runs only the GFS-e ablation")
            continue
        a, g = runs.metric("medium", name, metric), runs.metric("medium", "gfs", metric)
        causes: dict[str, float | str] = {}
        detail = f"{name} / gfs on {metric} at Medium: {a:.4g} / {g:.4g}"
        if name == "gfs-d" and not ctx.quick:  # is it Eq. 11's windup? GFS with the anti-windup raise instead
            b = runs.metric("medium", MECHANISMS["eta_raise_binding"], metric)
            causes["eta_raise_binding"] = round(v, 4) if math.isfinite(v := _ratio(a, b)) else "n/a"
            detail += _eta_desc(runs, "medium") + f"; GFS with eta_raise=binding: {b:.4g}"
        if name in ANTI_WINDUP_ABLATIONS and not ctx.quick:  # both sides with the anti-windup raise
            va = runs.metric("medium", f"{name}:eta_raise=binding", metric)
            vb = runs.metric("medium", MECHANISMS["eta_raise_binding"], metric)
            causes["eta_raise_binding"] = round(v, 4) if math.isfinite(v := _ratio(va, vb)) else "n/a"
            detail += f"; both with eta_raise=binding: {va:.4g} / {vb:.4g}"
        out[key] = _m(_ratio(a, g), detail, causes)

    # --- §4.6.1 estimator study (spot tasks at Medium) -------------------------------------------------------------
    for short, metric in ESTIMATOR_METRICS.items():
        ol, pw = runs.metric("medium", "gfs", metric), runs.metric("medium", "gfs-e", metric)
        pers = runs.metric("medium", "gfs:estimator=persistence", metric)
        causes: dict[str, float | str] = {"persistence_vs_gfs_e": round(_reduction(pers, pw), 4)
                                          if math.isfinite(_reduction(pers, pw)) else "n/a"}
        if not ctx.quick:
            seas = runs.metric("medium", "gfs:estimator=seasonal", metric)
            r = _reduction(seas, pw)
            causes["seasonal_vs_gfs_e"] = round(r, 4) if math.isfinite(r) else "n/a"
        out[f"est_{short}_reduction"] = _m(
            _reduction(ol, pw), f"spot {metric} at Medium: OrgLinear {ol:.4g}, GFS-e (previous-week peak) {pw:.4g}, "
                                f"persistence {pers:.4g} ({_forecaster(runs.get('medium', 'gfs'))})", causes)

    g = runs.get("medium", "gfs")
    out["speed_gfs_replay_cpu_s"] = _m(g["cpu_s"], f"CPU seconds of the GFS replay at Medium with OrgLinear in the "
                                                   f"loop ({len(runs.workload('medium')):,} tasks; training "
                                                   f"{g.get('sqa_fit_cpu_seconds', 0):.2f} s CPU, "
                                                   f"{g.get('sqa_fit_seconds', 0):.2f} s wall)")
    _write_table(ctx, runs)
    if runs.forecasting is None:  # one worker (or quick mode): the table runs here, after the replays
        from pipelines.papers.gfs_forecasting import forecasting_measurements  # §4.2: OrgLinear vs the baselines

        runs.forecasting = forecasting_measurements(
            ctx, study="left out with --skip forecasting" if skip_table else None)
    out.update(runs.forecasting)
    return out


def _write_table(ctx: ReproduceContext, runs: _Runs) -> None:
    """All replays as one markdown table in ``ctx.out / gfs_replays.md``."""
    from pathlib import Path

    cols = [("hp_jqt_mean", "HP JQT s", 1), ("hp_jct_mean", "HP JCT h", 3600), ("spot_jqt_mean", "spot JQT s", 1),
            ("spot_jct_mean", "spot JCT h", 3600), ("evict_rate_runs", "e % runs", 0.01), ("alloc_mean", "alloc %", 0.01),
            ("cpu_s", "CPU s", 1)]
    lines = ["| load | policy | " + " | ".join(c[1] for c in cols) + " |", "|---|---|" + "---|" * len(cols)]
    for (level, pol), s in runs.summaries.items():
        cells = []
        for k, _, unit in cols:
            v = s.get(k)
            cells.append("-" if not isinstance(v, (int, float)) or not math.isfinite(v) else f"{v / unit:.3g}")
        lines.append(f"| {level} | {pol} | " + " | ".join(cells) + " |")
    out = Path(ctx.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gfs_replays.md").write_text("\n".join(lines) + "\n")
