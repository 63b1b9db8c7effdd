"""A-SRPT's claims (``schedcast reproduce asrpt``): Fig. 6 (total JCT vs jobs), Fig. 7 (share of single-GPU
jobs), Fig. 8 (NIC bandwidth on the 0 %-single-GPU set), Fig. 9 (predictors) and Table II (Heavy-Edge vs the
exact ILP), measured on schedcast's replays of the PAI-shaped trace at the paper's scale.

Workload (sim/asrpt/pai_workload.py, ``PAPER``; configs/workloads/pai-paper.yaml): N jobs at the rate of
150,000 in 60 days (2,500 a day: N / 2,500 days) on pai-250 (250 x 8 V100, 10 Gb/s NICs), so every size
has the same offered load, ~0.6 on the jobs' best placements (the iteration median is calibrated on the
baselines to the largest at which they keep up at these sizes; pai_workload's docstring has the
measurements). A history of N/4 jobs of the same groups precedes the replayed N. Fig. 7 and 8 keep
75,000 jobs, so fewer single-GPU jobs are a heavier load (as in the paper, whose job count is fixed).
Quick mode keeps the offered loads with a sixtieth of the jobs on a tenth of the cluster (25 x 8) over
a sixth of the span (10 days at 150,000), and a smaller Table II.

Predictions (§V-1-c, causal): the random forest on (group, user) (models.tabular.IterationForest, unseen
groups 0, as the paper) is refit at the start of each fifth of the replay on the jobs that had finished by
then (submit + run time on the best placement <= that moment, history included; the most recent
``max_rows``); the last fifth is predicted by the forest trained on the first 80 %. ``mean`` / ``median``:
the group's jobs finished before the submission (sim.predictors, causal); ``perfect``: the true count.
Every policy gets the same predictions (durations = iterations x alpha~_min), Heavy-Edge mapping and the
iteration-time model (NIC share, Eq. 4-7).

Why the runner builds its cells instead of an experiment spec (configs/experiments/papers/lazer, lucid have
one): a cell here is (case, policy, setting) where the case is a PAI-shaped trace with a history of N/4 jobs
of the same groups cut off before the replay, on a cluster scaled in quick mode; the predictions are the
causal random forest refit per fifth of that case's own timeline (not a registered predictor: it needs the
history and the finish times), shared by the seven policies; and the iteration-time model of a setting (NIC
rule, bandwidth, Heavy-Edge variant) is one object whose alpha caches the case's replays share (the sweep's
time is dominated by them otherwise). An experiment spec names workloads by preset and predictors by spec,
so it could express none of the three without new registry entries that only this runner would use. Every
replay still goes through the one replay path (:func:`replay`: ``pipelines.replay.run_replay`` with those
objects as ``extras``), and claims.yaml stays the single source of what is tested.

Causes of a miss are measured one rule at a time on the cause workload: ``nic_whole`` (the whole NIC per
stage instead of the x/g share, every policy rerun), ``start_min`` (the first reading of Alg. 1's start
rule), ``refine`` (``heavy-edge:refine=true``, every policy rerun), ``tau_100`` (a 100x longer window),
``perfect`` (true iterations), ``work_conserving`` (ours, not the paper's: later jobs of the real queue
may start when its head cannot — measures what the strict head-of-line order costs) and ``load`` (the
smallest Fig. 6 size). Fig. 6's per-baseline claims reuse those replays against each baseline; Fig. 7 switches
nic_whole, start_min, tau_100 and work_conserving on the single-GPU share where A-SRPT does worst.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from evaluation.claims import Measurement, ReproduceContext

BASELINES = ("spjf", "spwf", "wcs-duration", "wcs-workload", "wcs-subtime")
POLICIES = ("a-srpt", "a-srpt-perfect", *BASELINES)
FULL_SPAN_DAYS = 60.0
FULL_JOBS = 150_000  # N jobs arrive over N / FULL_JOBS x 60 days: every size has the load of 150,000 jobs in 60 days

QUICK = dict(scale=1 / 60, servers=25, span_scale=1 / 6, fig6=(37_500, 150_000), fig7=(0.8, 0.0), fig7_jobs=75_000, fig8=(1.0, 50.0),
             fig8_jobs=75_000, cause_jobs=150_000, rf_trees=5, rf_rows=4_000,
             t2_models=("vgg16", "resnet50"), t2_cases=2, t2_gpus=8, t2_servers=4)
FULL = dict(scale=1.0, servers=250, span_scale=1.0, fig6=(37_500, 75_000, 112_500, 150_000), fig7=(0.8, 0.6, 0.4, 0.2, 0.0), fig7_jobs=75_000,
            fig8=(1.0, 5.0, 10.0, 25.0, 50.0), fig8_jobs=75_000, cause_jobs=75_000, rf_trees=30, rf_rows=30_000,
            t2_models=("vgg16", "resnet50", "gnmt", "bert-large", "gpt-6.7b"), t2_cases=20, t2_gpus=16,
            t2_servers=8)


# -- workloads and predictions ------------------------------------------------------------------------
@dataclass
class Case:
    """One replayed workload: its history, the replayed jobs, per-predictor iterations and per-setting
    performance models (their alpha caches are shared by the replays of the case)."""

    label: str
    full: Any  # history + replayed rows (pandas)
    history: int
    w: Any = None
    preds: dict[str, np.ndarray] = field(default_factory=dict)
    perfs: dict[tuple, Any] = field(default_factory=dict)
    rf_error: float = float("nan")
    rf_fit_cpu_s: float = float("nan")
    rf_fit_rows: int = 0


def make_case(jobs: int, seed: int, scale: float, single_share: float = 0.75, label: str = "",
              servers: int = 250, span_scale: float = 1.0) -> Case:
    """N = ``jobs`` x ``scale`` replayed jobs (plus N/4 history) over ``span_scale`` x 60 days x jobs /
    150,000 on ``servers`` x 8 GPUs of pai-250."""
    from features.jobtable import LoadReport, finalize
    from sim.asrpt.pai_workload import PAPER, PaiSpec, generate_pai
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    n = max(50, int(round(jobs * scale)))
    hist = n // 4
    span = FULL_SPAN_DAYS * jobs / FULL_JOBS * span_scale * (n + hist) / n
    shape = dict(PAPER, single_gpu_share=single_share, span_days=span)
    frame = generate_pai(PaiSpec(jobs=n + hist, **shape), seed=seed).frame
    rest = frame.iloc[hist:].copy()
    rest["submit_time"] = rest["submit_time"] - rest["submit_time"].iloc[0]
    table = finalize(rest.drop(columns=["model", "num_nodes", "job_name", "gpu_type", "job_class"], errors="ignore"),
                     LoadReport(source=label, format="synthetic", rows_read=len(rest), synthetic=True),
                     path=label or "pai", sort=False)
    cluster = load_cluster("pai-250")
    if servers != sum(len(p.capacities) for p in cluster.partitions):
        from sim.cluster import Cluster, Partition

        cluster = Cluster(f"pai-{servers}", [Partition("default", [8] * servers, ["V100"] * servers)],
                          gpu_type="V100", intra_node_bandwidth_gbps=cluster.intra_node_bandwidth_gbps,
                          inter_node_bandwidth_gbps=cluster.inter_node_bandwidth_gbps)
    w = build_workload(table, cluster)
    if len(w) != len(rest):
        raise RuntimeError(f"{len(rest) - len(w)} jobs rejected by pai-250")
    return Case(label or f"pai-{jobs}", frame, hist, w)


def _case(cfg: dict, jobs: int, seed: int, share: float = 0.75, label: str = "") -> Case:
    return make_case(jobs, seed, cfg["scale"], share, label, cfg["servers"], cfg["span_scale"])


def rf_predictions(case: Case, trees: int, max_rows: int, seed: int = 0, folds: int = 5,
                   bootstrap: bool = False) -> np.ndarray:
    """Causal random-forest iterations of the replayed jobs (module docstring). ``bootstrap``: trees on
    bootstrap samples (sklearn's default; a group missing from a tree's sample falls into a leaf of its
    neighbours in id order, measured as the ``rf-bootstrap`` predictor)."""
    from models.tabular import IterationForest

    f, h = case.full, case.history
    submit = f["submit_time"].to_numpy(dtype=float)
    done_at = submit + f["duration"].to_numpy(dtype=float)
    y = f["iterations"].to_numpy(dtype=float)
    X = f[["group_id", "user"]]
    n = len(f) - h
    out = np.zeros(n)
    bounds = [h + (n * b) // folds for b in range(folds)] + [len(f)]
    for b in range(folds):
        lo, hi = bounds[b], bounds[b + 1]
        if lo >= hi:
            continue
        known = np.flatnonzero(done_at <= submit[lo])
        if len(known) > max_rows:
            known = known[np.argsort(done_at[known])[-max_rows:]]
        if len(known) == 0:
            continue  # nothing finished yet: every group unseen, predicted 0
        # the paper's forest (MSE splits on raw iterations, group and user ids, unseen groups 0); its
        # hyper-parameters are not given: unbounded leaves, every tree on every row (a 5-job leaf or a
        # bootstrap sample merges a small group with its neighbours in id order: 186 % error vs 38 %)
        model = IterationForest(unseen="zero", n_estimators=trees, min_samples_leaf=1, max_samples=None,
                                random_state=seed, bootstrap=bootstrap)
        c0 = time.process_time()
        model.fit(X.iloc[known], y[known])
        if not bootstrap:  # the last fit is the forest on the first 80 % (the paper's 84 s, asrpt.txt:285)
            case.rf_fit_cpu_s, case.rf_fit_rows = time.process_time() - c0, len(known)
        out[lo - h:hi - h] = np.maximum(0.0, model.predict(X.iloc[lo:hi]))
    return out


def predictions(case: Case, kind: str, cfg: dict, seed: int = 0) -> np.ndarray:
    if kind not in case.preds:
        truth = case.full["iterations"].to_numpy(dtype=float)[case.history:]
        if kind in ("rf", "rf-bootstrap"):
            case.preds[kind] = rf_predictions(case, cfg["rf_trees"], cfg["rf_rows"], seed,
                                              bootstrap=kind == "rf-bootstrap")
        elif kind == "perfect":
            case.preds[kind] = truth
        else:
            from sim.predictors import predict_kind

            case.preds[kind] = np.asarray(predict_kind("iterations", f"group-{kind}", case.full, seed),
                                          dtype=float)[case.history:]
    return case.preds[kind]


def prediction_error(case: Case, kind: str) -> float:
    """Mean |pred - true| / true over the replayed jobs (an unseen group, predicted 0, counts 1)."""
    truth = case.full["iterations"].to_numpy(dtype=float)[case.history:]
    return float(np.mean(np.abs(case.preds[kind] - truth) / truth))


def absolute_error(case: Case, kind: str) -> float:
    """Mean |pred - true| in iterations over the replayed jobs (the paper's Fig. 9 errors, asrpt.txt:322)."""
    truth = case.full["iterations"].to_numpy(dtype=float)[case.history:]
    return float(np.mean(np.abs(case.preds[kind] - truth)))


#: Fig. 4's "predicted correctly": within this relative error of the true iteration count
EXACT = 0.01


def exact_share(case: Case, kind: str = "rf") -> float:
    """Share of the replayed jobs predicted within :data:`EXACT` of their true iterations (Fig. 4)."""
    truth = case.full["iterations"].to_numpy(dtype=float)[case.history:]
    return float(np.mean(np.abs(case.preds[kind] - truth) <= EXACT * truth))


def performance(case: Case, nic_gbit: float = 10.0, nic: str = "share", refine: bool = False):
    key = (nic_gbit, nic, refine)
    if key not in case.perfs:
        from sim.asrpt.performance import IterationSpeed

        perf = IterationSpeed(inter_gbit=nic_gbit, assign=True, ref_gbit=10.0, nic=nic, refine=refine)
        perf.bind_workload(case.w)
        case.perfs[key] = perf
    return case.perfs[key]


def replay_inputs(case: Case, cfg: dict, pred: str = "rf", nic_gbit: float = 10.0, nic: str = "share",
                  refine: bool = False) -> dict[str, Any]:
    """The extras every policy of a replay shares (pipelines.replay.prepare_replay's ``extras``): the
    iteration-time model of the setting (its alpha caches shared by the case's replays) and the
    predictions (iterations, and durations = iterations x alpha~_min)."""
    perf = performance(case, nic_gbit, nic, refine)
    it = predictions(case, pred, cfg)
    amin = [(perf.alpha_min(m, g) or 1.0) if m is not None else 1.0 for m, g in zip(perf.model, case.w.gpus)]
    return {"performance": perf,
            "predictions": {"iterations": it.tolist(), "duration": [float(p * a) for p, a in zip(it, amin)]}}


def replay_spec(policy: str, nic: str = "share", refine: bool = False, time_decisions: bool = False):
    """The ReplaySpec of one replay: the policy (A-SRPT told the NIC rule), Heavy-Edge (paper or refined),
    no failures, predictions given as extras."""
    from pipelines.replay import ReplaySpec

    spec = policy
    if spec.startswith("a-srpt") and nic != "share":
        spec += (":" if ":" not in spec else ",") + f"nic={nic}"
    return ReplaySpec(policy=spec, label=policy, placement="heavy-edge:refine=true" if refine else "heavy-edge",
                      predictor="unused", failures="none", time_decisions=time_decisions)


def replay(case: Case, policy: str, cfg: dict, pred: str = "rf", nic_gbit: float = 10.0, nic: str = "share",
           refine: bool = False, time_decisions: bool = False) -> dict[str, Any]:
    """One replay on the one replay path (pipelines.replay.run_replay): total JCT (h), makespan (h), mean
    wait (h), replay seconds (``replay_s``: engine; ``scored_s``: with the evaluation, wall;
    ``scored_cpu_s``: the same in CPU seconds of this process, what a loaded machine does not inflate);
    A-SRPT's stats."""
    from pipelines.replay import prepare_replay, run_replay

    w = case.w
    spec = replay_spec(policy, nic, refine, time_decisions)
    prepared = prepare_replay(spec, built=(None, w), extras=replay_inputs(case, cfg, pred, nic_gbit, nic, refine))
    t0, c0 = time.perf_counter(), time.process_time()
    rr = run_replay(spec, prepared)
    cpu = time.process_time() - c0
    res = rr.result
    end, start, sub = np.array(res.end), np.array(res.first_start), np.array(w.submit)
    out = {"policy": policy, "jobs": len(w), "total_jct_h": float((end - sub).sum() / 3600),
           "wait_h": float((start - sub).sum() / 3600), "makespan_h": float(end.max() / 3600),
           "replay_s": res.wall_seconds, "scored_s": time.perf_counter() - t0, "scored_cpu_s": cpu}
    if policy.startswith("a-srpt"):
        out.update({k: v for k, v in rr.policy_stats.items() if not isinstance(v, list)})
    if time_decisions and res.decision_seconds:
        d = np.array(res.decision_seconds) * 1e3
        out.update(decision_p99_ms=float(np.percentile(d, 99)), decisions=len(d))
    return out


class Runs:
    """Replays kept by (case, policy, setting), with a progress line each."""

    def __init__(self, ctx: ReproduceContext, cfg: dict) -> None:
        self.ctx, self.cfg, self.done, self.rows = ctx, cfg, {}, []
        self.log = None
        if getattr(ctx, "out", None) is not None:  # one JSON line per replay as it ends: a ledger stopped
            from pathlib import Path            # half-way still leaves its replays

            Path(ctx.out).mkdir(parents=True, exist_ok=True)
            self.log = Path(ctx.out) / "asrpt_replays.jsonl"
            self.log.write_text("")

    def get(self, case: Case, policy: str, **kw) -> dict[str, Any]:
        key = (case.label, policy, tuple(sorted(kw.items())))
        if key not in self.done:
            r = replay(case, policy, self.cfg, **kw)
            r.update(case=case.label, **{k: v for k, v in kw.items()})
            self.done[key] = r
            self.rows.append(r)
            if self.log is not None:
                import json

                with open(self.log, "a") as fh:
                    fh.write(json.dumps(r, default=float) + "\n")
            self.ctx.progress(f"{case.label} {policy} {kw or ''}: total JCT {r['total_jct_h']:,.0f} h "
                              f"({r['replay_s']:.1f} s)")
        return self.done[key]

    def reduction(self, case: Case, vs: str | None = None, policy: str = "a-srpt", **kw) -> float:
        """1 - JCT(policy) / JCT(baseline); ``vs`` None: the best baseline."""
        mine = self.get(case, policy, **kw)["total_jct_h"]
        names = [vs] if vs else list(BASELINES)
        best = min(self.get(case, b, **kw)["total_jct_h"] for b in names)
        return 1.0 - mine / best if best > 0 else float("nan")


# -- Table II -------------------------------------------------------------------------------------------
def table2(cfg: dict, seed: int = 0, nic: str = "share") -> dict[str, dict[str, float]]:
    """Heavy-Edge (paper and refined) vs the exact ILP: ``gap`` is the per-iteration time of Heavy-Edge's
    mapping over the ILP's on the same servers (those the ``heavy-edge`` placement chose: the tightest
    that holds the job, else the most available), ``gap_all`` over the ILP free to use any free GPU
    (server choice included); and the time of each. ``nic``: the NIC rule of Eq. 5-6 both are timed with
    (``whole``: the ``nic_whole`` cause)."""
    from sim.asrpt.ilp import optimal_mapping
    from sim.asrpt.iteration import Bandwidth, alpha
    from sim.asrpt.profiles import StageCatalog
    from sim.placement.heavy_edge import heavy_edge_map, place_ordered
    from sim.placement.pool import NodePool

    cat, bw, per = StageCatalog(), Bandwidth(nic=nic), 8
    rows: dict[str, dict[str, float]] = {}
    for model in cfg["t2_models"]:
        conf = cat.config(model, cfg["t2_gpus"])
        if conf is None:
            continue
        rng = np.random.default_rng([seed, sum(map(ord, model))])
        acc: dict[str, list[float]] = {k: [] for k in ("gap", "gap_refine", "gap_all", "gap_all_refine", "ms",
                                                       "ms_refine", "ilp_ms")}
        for _ in range(cfg["t2_cases"]):
            while True:
                free = [int(v) for v in rng.integers(0, per + 1, size=cfg["t2_servers"])]
                if sum(free) >= conf.gpus:
                    break
            best = optimal_mapping(conf, free, bw)
            acc["ilp_ms"].append(best.seconds * 1e3)
            for refine, tag in ((False, ""), (True, "_refine")):
                # CPU time of this process: a loaded machine inflates wall time, not the work Heavy-Edge does
                t0 = time.process_time()
                pool = NodePool([per] * len(free))
                for n, f in enumerate(free):
                    if per - f:
                        pool.allocate([(n, per - f)], -1 - n)
                counts = [g for _, g in place_ordered(pool, conf.gpus, most_free=True)]
                x = heavy_edge_map(conf, counts, bw, refine=refine)
                acc["ms" + tag].append((time.process_time() - t0) * 1e3)
                a = alpha(conf, x, bw)
                if a < best.alpha * (1 - 1e-9):
                    raise AssertionError(f"{model}: Heavy-Edge {a} beat the ILP {best.alpha} on {free}")
                acc["gap_all" + tag].append(a / best.alpha - 1.0)
                if not tag:
                    same = optimal_mapping(conf, counts, bw)
                acc["gap" + tag].append(a / same.alpha - 1.0)
        rows[model] = {k: float(np.mean(v)) for k, v in acc.items()}
        rows[model]["gap_max"] = float(np.max(acc["gap"]))
        rows[model]["cases"] = acc  # per case (the interval's samples)
    return rows


# -- the runner -----------------------------------------------------------------------------------------
def _m(value: float, detail: str, causes: dict[str, float | str] | None = None) -> Measurement:
    if value is None or not math.isfinite(value):
        return Measurement(None, detail, not_testable=f"no value ({detail})", causes=causes or {})
    return Measurement(float(value), detail, causes=causes or {})


def _rounded(c: dict[str, Any]) -> dict[str, float | str]:
    return {k: round(v, 4) if isinstance(v, float) and math.isfinite(v) else (v if isinstance(v, str) else "n/a")
            for k, v in c.items()}


def _bw(bw: float) -> str:
    return f"bw{bw:g}"


class _Acc:
    """Per-seed samples of each measurement key, with the first seed's detail and causes."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}
        self.detail: dict[str, str] = {}
        self.causes: dict[str, dict[str, float | str]] = {}

    def add(self, key: str, value: float, detail: str = "", causes: dict | None = None) -> None:
        self.samples.setdefault(key, []).append(float(value))
        if detail and key not in self.detail:
            self.detail[key] = detail
        if causes and key not in self.causes:
            self.causes[key] = _rounded(causes)

    def measurements(self, seeds: list[int]) -> dict[str, Measurement]:
        out = {}
        for key, samples in self.samples.items():
            d = self.detail.get(key, "")
            out[key] = Measurement(samples=samples, causes=self.causes.get(key, {}),
                                   detail=(d + "; " if d else "") + f"seeds {seeds}"
                                   + ("; causes on the first seed" if self.causes.get(key) else ""))
        return out


def _wait_share(runs: Runs, case: Case, **kw) -> float:
    """The best baseline's (by total JCT) total wait / total JCT: do jobs queue in this setting?"""
    best = min(BASELINES, key=lambda b: runs.get(case, b, **kw)["total_jct_h"])
    r = runs.get(case, best, **kw)
    return r["wait_h"] / r["total_jct_h"] if r["total_jct_h"] > 0 else float("nan")


def run(ctx: ReproduceContext) -> dict[str, Measurement]:
    cfg = QUICK if ctx.quick else FULL
    seeds = list(ctx.seeds) or [0]
    runs = Runs(ctx, cfg)
    acc = _Acc()
    t_start = time.perf_counter()
    settings: dict[str, dict[str, Any]] = {}
    servers = cfg["servers"]

    def setting(name: str, jobs: int, share: float, bw: float, case: Case) -> None:
        s = settings.setdefault(name, {"trace": "PAI-shaped synthetic (sim/asrpt/pai_workload.py)",
                                       "cluster": f"{servers} x 8 V100, {bw:g} Gb/s NICs", "gpus": servers * 8,
                                       "jobs": f"{jobs:,} at the paper's scale ({len(case.w):,} replayed)",
                                       "single_gpu_share": share, "seeds": []})
        s["seeds"].append(int(case.label.rsplit("-s", 1)[1]))

    for i, seed in enumerate(seeds):
        first = i == 0
        ctx.progress(f"asrpt: seed {seed}")
        # Fig. 6: total JCT vs jobs
        cases6 = {n: _case(cfg, n, seed, label=f"fig6-{n}-s{seed}") for n in cfg["fig6"]}
        cause_case = cases6.get(cfg["cause_jobs"]) or _case(cfg, cfg["cause_jobs"], seed, label=f"cause-s{seed}")
        small = cases6[min(cases6)]

        def causes_of(measure) -> dict[str, float | str]:
            return {"nic_whole": measure(cause_case, dict(nic="whole"), "a-srpt"),
                    "start_min": measure(cause_case, {}, "a-srpt:start=min"),
                    "refine": measure(cause_case, dict(refine=True), "a-srpt"),
                    "tau_100": measure(cause_case, {}, "a-srpt:tau=100"),
                    "perfect": measure(cause_case, {}, "a-srpt-perfect"),
                    "work_conserving": measure(cause_case, {}, "a-srpt:work_conserving=true"),
                    "load": measure(small, {}, "a-srpt")}

        def vs(b):
            return lambda case, kw, policy: runs.reduction(case, b, policy, **kw)

        c6 = {b: causes_of(vs(b)) for b in (None, *BASELINES)} if first else {}
        on_cause = f"causes on {len(cause_case.w):,} replayed jobs"
        for n, case in cases6.items():
            s = f"n{n}"
            setting(s, n, 0.75, 10.0, case)
            mine = runs.get(case, "a-srpt")
            line = (f"A-SRPT {mine['total_jct_h']:,.0f} h (its real queue waited beside "
                    f"{mine.get('real_queue_idle_gpu_h', float('nan')):,.0f} free GPU-h), "
                    + ", ".join(f"{b} {runs.get(case, b)['total_jct_h']:,.0f} h" for b in BASELINES) + f"; {on_cause}")
            acc.add(f"fig6_reduction_vs_best@{s}", runs.reduction(case), line, c6.get(None))
            for b in BASELINES:
                acc.add(f"fig6_reduction_vs_{b.replace('-', '_')}@{s}", runs.reduction(case, b), line, c6.get(b))
            acc.add(f"baseline_wait_share@{s}", _wait_share(runs, case), "best baseline's total wait / total JCT")

        # Fig. 7: single-GPU share (75,000 jobs)
        cases7 = {}
        for share in cfg["fig7"]:
            s = f"single{int(round(100 * share))}"
            case = _case(cfg, cfg["fig7_jobs"], seed, share, label=f"fig7-{int(100 * share)}-s{seed}")
            cases7[s] = case
            setting(s, cfg["fig7_jobs"], share, 10.0, case)
            acc.add(f"baseline_wait_share@{s}", _wait_share(runs, case), "best baseline's total wait / total JCT")
        red7 = {s: runs.reduction(c) for s, c in cases7.items()}
        worst7 = cases7[min(red7, key=red7.get)]
        c7 = {"nic_whole": runs.reduction(worst7, None, "a-srpt", nic="whole"),
              "start_min": runs.reduction(worst7, None, "a-srpt:start=min"),
              "tau_100": runs.reduction(worst7, None, "a-srpt:tau=100"),
              "work_conserving": runs.reduction(worst7, None, "a-srpt:work_conserving=true")} if first else None
        for s, v in red7.items():
            acc.add(f"fig7_reduction_vs_best@{s}", v, f"causes on {worst7.label}" if c7 else "", c7)

        # Fig. 8: NIC bandwidth on the 0 %-single-GPU set
        case0 = cases7.get("single0") or _case(cfg, cfg["fig8_jobs"], seed, 0.0, label=f"fig7-0-s{seed}")
        lo_bw, hi_bw = min(cfg["fig8"]), max(cfg["fig8"])
        c8 = {"nic_whole": runs.reduction(case0, None, "a-srpt", nic_gbit=lo_bw, nic="whole"),
              "start_min": runs.reduction(case0, None, "a-srpt:start=min", nic_gbit=lo_bw),
              "tau_100": runs.reduction(case0, None, "a-srpt:tau=100", nic_gbit=lo_bw),
              "work_conserving": runs.reduction(case0, None, "a-srpt:work_conserving=true", nic_gbit=lo_bw)} \
            if first else None
        red8 = {}
        for bw in cfg["fig8"]:
            s = _bw(bw)
            setting(s, cfg["fig8_jobs"], 0.0, bw, case0)
            red8[bw] = runs.reduction(case0, None, "a-srpt", nic_gbit=bw)
            acc.add(f"fig8_reduction_vs_best@{s}", red8[bw], "0 % single-GPU jobs", c8)
            acc.add(f"fig8_reduction_vs_wcs_duration@{s}", runs.reduction(case0, "wcs-duration", "a-srpt", nic_gbit=bw),
                    "0 % single-GPU jobs", c8)
            acc.add(f"baseline_wait_share@{s}", _wait_share(runs, case0, nic_gbit=bw), "")
        acc.add("fig8_gain_low_minus_high_bandwidth", red8[lo_bw] - red8[hi_bw],
                f"reduction vs the best baseline at {lo_bw:g} Gb/s minus at {hi_bw:g} Gb/s", c8)

        # Fig. 9 and Fig. 4: predictors, on the cause workload
        case9 = cause_case
        jct = {k: runs.get(case9, "a-srpt" if k != "perfect" else "a-srpt-perfect", pred=k)["total_jct_h"]
               for k in ("rf", "mean", "median", "perfect")}
        rel = {k: prediction_error(case9, k) for k in ("rf", "mean", "median")}
        ab = {k: absolute_error(case9, k) for k in ("rf", "mean", "median")}
        d9 = (f"{len(case9.w):,} replayed jobs: total JCT " + ", ".join(f"{k} {v:,.0f} h" for k, v in jct.items())
              + "; mean |error| (iterations) " + ", ".join(f"{k} {v:,.0f}" for k, v in ab.items())
              + "; mean relative error " + ", ".join(f"{k} {100 * v:.0f} %" for k, v in rel.items()))
        c9 = None
        if first:
            jb = runs.get(case9, "a-srpt", pred="rf-bootstrap")["total_jct_h"]
            c9 = {"load": c6[None]["load"], "rf_bootstrap": jb / jct["perfect"] - 1.0}
        acc.add("fig9_rf_over_perfect", jct["rf"] / jct["perfect"] - 1.0, d9, c9)
        acc.add("fig9_perfect_vs_mean", 1.0 - jct["perfect"] / jct["mean"], d9)
        acc.add("fig9_rf_vs_mean", 1.0 - jct["rf"] / jct["mean"], d9, c9)
        acc.add("fig9_rf_vs_median", 1.0 - jct["rf"] / jct["median"], d9, c9)
        ce = {"rf_bootstrap_error": absolute_error(case9, "rf-bootstrap")} if first else None
        acc.add("fig9_rf_error_reduction_vs_median", 1.0 - ab["rf"] / ab["median"], d9, ce)
        acc.add("fig9_rf_error_reduction_vs_mean", 1.0 - ab["rf"] / ab["mean"], d9, ce)
        acc.add("fig4_exact_share", exact_share(case9), f"RF predictions within {100 * EXACT:g} % of the true "
                f"iterations, {len(case9.w):,} replayed jobs")
        acc.add("rf_fit_cpu_s", case9.rf_fit_cpu_s, f"CPU seconds of the last causal fit ({case9.rf_fit_rows:,} "
                f"rows, {cfg['rf_trees']} trees)")

    out = acc.measurements(seeds)
    for s, meta in settings.items():
        meta["seeds"] = sorted(set(meta["seeds"]), key=meta["seeds"].index)
    ctx.settings.update(settings)
    _policy_tables(ctx, runs.rows, settings)

    # Table II (last: its exact ILPs are the slowest part). Samples: the cases (free GPUs per server drawn at
    # random), not seeds; Heavy-Edge timed as CPU time of this process, the ILP (sim.asrpt.ilp) as wall time.
    if ctx.wants("t2-heavy-edge-near-optimal", "t2-heavy-edge-fast", "t2-ilp-far-slower"):
        ctx.progress("Table II: Heavy-Edge (paper, refined) vs the exact ILP")
        t2 = table2(cfg, seeds[0])
        t2w = table2(cfg, seeds[0], nic="whole")
        for model, r in t2.items():
            cases = r["cases"]
            d = (f"{model}, {len(cases['gap'])} cases of {cfg['t2_gpus']} GPUs on {cfg['t2_servers']} servers: gap "
                 f"{100 * r['gap']:.1f} % (refined {100 * r['gap_refine']:.1f} %; to the ILP on any free GPUs "
                 f"{100 * r['gap_all']:.1f} %), {r['ms']:.2f} CPU ms vs ILP {r['ilp_ms']:.0f} ms wall")
            out[f"t2_heavy_edge_gap@{model}"] = Measurement(
                samples=cases["gap"], detail=d, causes={"refine": r["gap_refine"], "nic_whole": t2w[model]["gap"]})
            out[f"t2_heavy_edge_ms@{model}"] = Measurement(samples=cases["ms"], detail=d)
            out[f"t2_ilp_over_heavy_edge_time@{model}"] = Measurement(
                samples=[i / max(m, 1e-6) for i, m in zip(cases["ilp_ms"], cases["ms"])], detail=d)
            ctx.settings[model] = {"trace": f"Table II case: {model}", "cluster": f"{cfg['t2_servers']} servers x 8 GPUs",
                                   "gpus": cfg["t2_gpus"], "seeds": [seeds[0]], "cases": len(cases["gap"]),
                                   "tables": ["asrpt_table2.csv"]}
    else:
        t2 = {}
    _write(ctx, runs.rows, t2, time.perf_counter() - t_start)
    return out


def _policy_tables(ctx: ReproduceContext, rows: list[dict], settings: dict[str, dict]) -> None:
    """One CSV per setting (SETTING/policies.csv): each policy's total JCT, wait and makespan per seed."""
    import csv
    from pathlib import Path

    def setting_of(r: dict) -> str | None:
        label = str(r.get("case", ""))
        kind, _, rest = label.partition("-")
        size = rest.rsplit("-s", 1)[0]
        if kind == "fig6":
            return f"n{size}"
        if kind == "fig7":
            return _bw(r["nic_gbit"]) if "nic_gbit" in r else f"single{size}"
        return None

    by: dict[str, list[dict]] = {}
    for r in rows:
        s = setting_of(r)
        if s in settings:
            by.setdefault(s, []).append(r)
    for s, rs in by.items():
        path = Path(ctx.out) / s / "policies.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", newline="") as fh:
            wr = csv.writer(fh)
            wr.writerow(["policy", "variant", "seed case", "jobs", "total_jct_h", "wait_h", "makespan_h"])
            for r in rs:
                variant = ",".join(f"{k}={r[k]}" for k in ("pred", "nic", "refine", "nic_gbit") if k in r)
                wr.writerow([r["policy"], variant, r["case"], r["jobs"], f"{r['total_jct_h']:.6g}",
                             f"{r['wait_h']:.6g}", f"{r['makespan_h']:.6g}"])
        settings[s].setdefault("tables", []).append(f"{s}/policies.csv")


def _write(ctx: ReproduceContext, rows: list[dict], t2: dict, seconds: float) -> None:
    """replays.csv, table2.csv under ``ctx.out`` (plain files; the ledger writes the page)."""
    import csv
    from pathlib import Path

    out = Path(ctx.out)
    out.mkdir(parents=True, exist_ok=True)
    keys = sorted({k for r in rows for k in r})
    with open(out / "asrpt_replays.csv", "w", newline="") as fh:
        wr = csv.DictWriter(fh, fieldnames=keys)
        wr.writeheader()
        wr.writerows(rows)
    with open(out / "asrpt_table2.csv", "w", newline="") as fh:
        wr = csv.writer(fh)
        wr.writerow(["model", "gap_mean", "gap_max", "gap_refine_mean", "gap_any_servers", "gap_any_servers_refine",
                     "heavy_edge_ms", "refined_ms", "ilp_ms"])
        for m, r in t2.items():  # noqa: B007
            wr.writerow([m, r["gap"], r["gap_max"], r["gap_refine"], r["gap_all"], r["gap_all_refine"], r["ms"],
                         r["ms_refine"], r["ilp_ms"]])
    ctx.progress(f"asrpt: {len(rows)} replays in {seconds:.0f} s")
