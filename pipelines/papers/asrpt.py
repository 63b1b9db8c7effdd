"""A-SRPT's claims (``schedcast reproduce asrpt``): Fig. 6 (total JCT vs jobs), Fig. 7 (share of single-GPU
jobs), Fig. 8 (NIC bandwidth on the 0 %-single-GPU set), Fig. 9 (predictors) and Table II (Heavy-Edge vs the
exact ILP), measured on schedcast's replays of the PAI-shaped trace at the paper's scale.

Workload (sim/asrpt/pai_workload.py, ``PAPER``; configs/workloads/pai-paper.yaml): N consecutive jobs at
the PAI trace's own rate (758,223 jobs in two months, ~12,430 a day, asrpt.txt:260, 295: N / 12,430 days)
on pai-250 (250 x 8 V100, 10 Gb/s NICs), a third of the trace's 6,000 GPUs. The iteration median is
calibrated so the trace's own cluster would run this rate at an offered load of 0.63 (an assumption,
pai_workload's docstring); on 2,000 GPUs the same jobs offer ~1.9, so queues form (the precondition:
the best baseline's total wait >= 10 % of its total JCT). A history of 4N jobs of the same groups
precedes the replayed N, so the replayed jobs are the last 20 % of the generated trace, as the paper's
forest learns from the first 80 % (asrpt.txt:285; until issue 40 the history was N/4, and at the trace's
rate most replayed groups had no finished job to learn from). Fig. 7 and 8 keep 75,000 jobs, so fewer single-GPU jobs are a heavier load (as
in the paper, whose job count is fixed). Quick mode: a 25th of the jobs on a 25th of the cluster (10 x 8)
at a 25th of the rate, so the same offered loads over the same spans (a queue needs the days to build up),
a smaller Table II.

Predictions (§V-1-c, causal): the random forest on (group, user) (models.tabular.IterationForest, unseen
groups 0, as the paper) is refit at the start of each fifth of the replay on the jobs that had finished by
then (submit + run time on the best placement <= that moment, history included; the most recent
``max_rows``); the last fifth is predicted by the forest trained on the first 80 %. ``mean`` / ``median``:
the group's jobs finished before the submission (sim.predictors, causal); ``perfect``: the true count.
Every policy gets the same predictions (durations = iterations x alpha~_min), Heavy-Edge mapping and the
iteration-time model (NIC share, Eq. 4-7).

Why the runner builds its cells instead of an experiment spec (configs/experiments/papers/lazer, lucid have
one): a cell here is (case, policy, setting) where the case is a PAI-shaped trace with a history of 4N jobs
of the same groups cut off before the replay, on a cluster scaled in quick mode; the predictions are the
causal random forest refit per fifth of that case's own timeline (not a registered predictor: it needs the
history and the finish times), shared by the seven policies; and the iteration-time model of a setting (NIC
rule, bandwidth, Heavy-Edge variant) is one object whose alpha caches the case's replays share (the sweep's
time is dominated by them otherwise). An experiment spec names workloads by preset and predictors by spec,
so it could express none of the three without new registry entries that only this runner would use. Every
replay still goes through the one replay path (:func:`replay`: ``pipelines.replay.run_replay`` with those
objects as ``extras``), and claims.yaml stays the single source of what is tested.

Causes of a miss are measured one rule at a time on the cause workload. First the runaway's (issue 40):
``as_printed`` (the default A-SRPT there: the reference), ``order_size`` (the real queue by virtual size
instead of virtual completion order), ``tau_0`` (no delay window), ``pop`` (Alg. 1 line 7 pops a delayed
head job, which then waits aside while later jobs go on; the default ``block`` holds the queue),
``gpu_h_over_best`` (text: the GPU-hours each policy's jobs ran over those on their best placements at the
setting's bandwidth) and ``window_over_run`` (text: the delay window tau (g/G) n~ alpha~_min over the run
time on the best placement, multi-GPU jobs). Then ``nic_whole`` (the whole NIC per stage instead of the
x/g share, every policy rerun), ``start_min`` (the first reading of Alg. 1's start rule), ``refine``
(``heavy-edge:refine=true``, every policy rerun), ``tau_100`` (a 100x longer window), ``perfect`` (true
iterations), ``work_conserving`` (ours, not the paper's: later jobs of the real queue may start when its
head cannot) and ``load`` (the smallest Fig. 6 size). Fig. 6's per-baseline claims reuse those replays
against each baseline; Fig. 7 switches the queue causes, nic_whole, start_min, tau_100 and work_conserving
on the single-GPU share where A-SRPT does worst, Fig. 8 at the lowest bandwidth. Every Fig. 6-8 verdict is
decided by Alg. 1 as printed (``delay=block``, ``order=virtual``, tau 1); the causes say what each other
reading would give.

Speed (the full ledger: 3 seeds, 4 Fig. 6 sizes, 5 shares, 5 bandwidths, the causes on the first seed,
Table II): every replay runs once (:func:`_key` leaves default settings out, so Fig. 8 at 10 Gb/s is Fig. 7's
0 % set and Fig. 9's ``rf`` replay is Fig. 6's); with ``--workers N`` each seed's cases are built here, then
N forked processes compute their predictions (the causal forest: the largest single cost after the
replays) and run each replay as soon as its predictions are in, longest first, while Table II's ILPs run
beside the first seed's (:meth:`Runs.prefetch`; the measurement code itself, :func:`_seed`, runs as a
planning pass to name what it needs, so there is one list of what is measured). ``--claim ID`` builds and
replays only the parts its claims need (:data:`PART_CLAIMS`).
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

QUICK = dict(scale=1 / 25, servers=10, span_scale=1.0, fig6=(37_500, 150_000), fig7=(0.8, 0.0), fig7_jobs=75_000, fig8=(1.0, 50.0),
             fig8_jobs=75_000, cause_jobs=75_000, rf_trees=5, rf_rows=12_000,
             t2_models=("vgg16", "resnet50"), t2_cases=2, t2_gpus=8, t2_servers=4)
FULL = dict(scale=1.0, servers=250, span_scale=1.0, fig6=(37_500, 75_000, 112_500, 150_000), fig7=(0.8, 0.6, 0.4, 0.2, 0.0), fig7_jobs=75_000,
            fig8=(1.0, 5.0, 10.0, 25.0, 50.0), fig8_jobs=75_000, cause_jobs=75_000, rf_trees=30, rf_rows=30_000,
            t2_models=("vgg16", "gpt-6.7b"), t2_cases=20, t2_gpus=16,
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
    #: a planning pass (:meth:`Runs.prefetch`): predictions are not computed, only named in ``wanted``
    dry: bool = False
    wanted: set[str] = field(default_factory=set)


def make_case(jobs: int, seed: int, scale: float, single_share: float = 0.75, label: str = "",
              servers: int = 250, span_scale: float = 1.0, history: float = 4.0) -> Case:
    """N = ``jobs`` x ``scale`` replayed jobs (plus ``history`` x N before them) over ``span_scale`` x jobs / TRACE_RATE days
    (the trace's own rate) on ``servers`` x 8 GPUs of pai-250."""
    from features.jobtable import LoadReport, finalize
    from sim.asrpt.pai_workload import PAPER, TRACE_RATE, PaiSpec, generate_pai
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    n = max(50, int(round(jobs * scale)))
    hist = int(round(history * n))
    span = jobs / TRACE_RATE * span_scale * (n + hist) / n
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
    if kind not in case.preds and case.dry:
        return _pred(case, kind)
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


def _pred(case: Case, kind: str) -> np.ndarray:
    """The case's ``kind`` predictions; in a planning pass (``case.dry``) zeros, the kind named as wanted."""
    if kind not in case.preds and case.dry:
        case.wanted.add(kind)
        return np.zeros(len(case.w))
    return case.preds[kind]


def prediction_error(case: Case, kind: str) -> float:
    """Mean |pred - true| / true over the replayed jobs (an unseen group, predicted 0, counts 1)."""
    truth = case.full["iterations"].to_numpy(dtype=float)[case.history:]
    return float(np.mean(np.abs(_pred(case, kind) - truth) / truth))


def absolute_error(case: Case, kind: str) -> float:
    """Mean |pred - true| in iterations over the replayed jobs (the paper's Fig. 9 errors, asrpt.txt:322)."""
    truth = case.full["iterations"].to_numpy(dtype=float)[case.history:]
    return float(np.mean(np.abs(_pred(case, kind) - truth)))


#: Fig. 4's "predicted correctly": within this relative error of the true iteration count
EXACT = 0.01


def exact_share(case: Case, kind: str = "rf") -> float:
    """Share of the replayed jobs predicted within :data:`EXACT` of their true iterations (Fig. 4)."""
    truth = case.full["iterations"].to_numpy(dtype=float)[case.history:]
    return float(np.mean(np.abs(_pred(case, kind) - truth) <= EXACT * truth))


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
    g = np.asarray(w.gpus, dtype=float)
    perf = performance(case, nic_gbit, nic, refine)  # best placement at this setting's bandwidth
    amin = np.array([(perf.alpha_min(m, k) or 1.0) if m is not None else 1.0 for m, k in zip(perf.model, w.gpus)])
    best = case.full["iterations"].to_numpy(dtype=float)[case.history:] * amin
    out = {"policy": policy, "jobs": len(w), "total_jct_h": float((end - sub).sum() / 3600),
           # GPU-hours the jobs ran on the placements they got over those on their best placements
           "gpu_h_over_best": float(((end - start) * g).sum() / (best * g).sum()),
           "wait_h": float((start - sub).sum() / 3600), "makespan_h": float(end.max() / 3600),
           "replay_s": res.wall_seconds, "scored_s": time.perf_counter() - t0, "scored_cpu_s": cpu}
    if policy.startswith("a-srpt"):
        out.update({k: v for k, v in rr.policy_stats.items() if not isinstance(v, list)})
    if time_decisions and res.decision_seconds:
        d = np.array(res.decision_seconds) * 1e3
        out.update(decision_p99_ms=float(np.percentile(d, 99)), decisions=len(d))
    return out


#: the replay settings a key leaves out when they hold their defaults (:func:`replay`'s): the same replay
#: asked for with and without them (Fig. 8 at 10 Gb/s is Fig. 7's 0 % set; Fig. 9's ``rf`` is the default)
#: runs once
_DEFAULTS = {"pred": "rf", "nic_gbit": 10.0, "nic": "share", "refine": False}


def _key(case: Case, policy: str, kw: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """The replay's key and its settings without the defaults. A-SRPT-Perfect reads no prediction (its sizes
    are the true iterations, sim/policies/asrpt.py), so its key has no ``pred`` (tested: the same replay)."""
    kw = {k: v for k, v in kw.items() if k not in _DEFAULTS or _DEFAULTS[k] != v}
    if policy == "a-srpt-perfect":
        kw.pop("pred", None)
    return (case.label, policy, tuple(sorted(kw.items()))), kw


class _Pending(dict):
    """What a planning pass gets for a replay not run yet: every figure NaN."""

    def __missing__(self, key: str) -> float:
        return float("nan")


#: in a forked worker: the runner's configuration and the seed's cases (built before the fork)
_FORKED: tuple[dict, dict[str, Case]] | None = None


def _pool_task(job: tuple) -> tuple:
    """One task of :meth:`Runs.prefetch` on a forked worker: ("pred", label, kind), ("replay", label,
    policy, kw, {kind: predictions}) or ("t2", model, seed, nic, any_servers)."""
    assert _FORKED is not None
    cfg, cases = _FORKED
    if job[0] == "pred":
        case = cases[job[1]]
        arr = predictions(case, job[2], cfg)
        return job, arr, case.rf_fit_cpu_s, case.rf_fit_rows
    if job[0] == "replay":
        _, label, policy, kw, preds = job
        case = cases[label]
        case.preds.update(preds)
        return job[:4], replay(case, policy, cfg, **dict(kw))
    _, model, seed, nic, any_servers = job
    return job, table2_model(cfg, model, seed, nic, any_servers)


def _cost(case: Case, policy: str, kw: dict) -> float:
    """A replay's rough cost (for the pool's order: longest first)."""
    f = 2.5 if "tau=100" in policy else 1.5 if policy.startswith("a-srpt") else 1.0
    return len(case.w) * f * (1.3 if kw.get("refine") else 1.0)


class Runs:
    """Replays kept by (case, policy, setting), each run once, with a progress line each. With
    ``ctx.workers`` > 1, :meth:`prefetch` runs a seed's replays (and the predictions they need) on that
    many forked processes before the measurements read them; a replay is the same wherever it runs (its
    case, predictions and settings are; tests/test_asrpt_ledger.py compares both paths)."""

    def __init__(self, ctx: ReproduceContext, cfg: dict) -> None:
        self.ctx, self.cfg, self.done, self.rows = ctx, cfg, {}, []
        self.plan: dict[tuple, tuple[Case, str, dict]] | None = None  # a planning pass: the replays asked for
        self.log = None
        if getattr(ctx, "out", None) is not None:  # one JSON line per replay as it ends: a ledger stopped
            from pathlib import Path            # half-way still leaves its replays

            Path(ctx.out).mkdir(parents=True, exist_ok=True)
            self.log = Path(ctx.out) / "asrpt_replays.jsonl"
            self.log.write_text("")

    def get(self, case: Case, policy: str, **kw) -> dict[str, Any]:
        key, kw = _key(case, policy, kw)
        if key not in self.done:
            if self.plan is not None:
                self.plan.setdefault(key, (case, policy, kw))
                return _Pending()
            self._store(key, case, kw, replay(case, policy, self.cfg, **kw))
        return self.done[key]

    def _store(self, key: tuple, case: Case, kw: dict, r: dict[str, Any]) -> None:
        r.update(case=case.label, **kw)
        self.done[key] = r
        self.rows.append(r)
        if self.log is not None:
            import json

            with open(self.log, "a") as fh:
                fh.write(json.dumps(r, default=float) + "\n")
        self.ctx.progress(f"{case.label} {key[1]} {kw or ''}: total JCT {r['total_jct_h']:,.0f} h "
                          f"({r['replay_s']:.1f} s)")

    def _planned(self, body, cases: list[Case]) -> dict[tuple, tuple[Case, str, dict]]:
        """Run ``body`` as a planning pass: the replays it asks for that are not done (values NaN meanwhile);
        the predictions it reads land in each case's ``wanted``."""
        self.plan = {}
        for c in cases:
            c.dry = True
        try:
            body()
            return self.plan
        finally:
            self.plan = None
            for c in cases:
                c.dry = False

    def prefetch(self, body, cases: list[Case], extra: list[tuple] = ()) -> dict[tuple, Any]:
        """Run what ``body`` (the seed's measurements, re-run as planning passes until it asks for nothing
        new) needs on ``ctx.workers`` forked processes: first each case's predictions, then each replay as
        soon as its predictions are in (longest first); ``extra`` tasks (Table II's) beside them. Returns
        the extra tasks' results. With one worker nothing happens here (replays run lazily in order)."""
        global _FORKED
        if self.ctx.workers <= 1:
            return {}
        import multiprocessing
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

        byl = {c.label: c for c in cases}
        out: dict[tuple, Any] = {}
        _FORKED = (self.cfg, byl)
        try:
            with ProcessPoolExecutor(self.ctx.workers, mp_context=multiprocessing.get_context("fork")) as pool:
                # the extra tasks first (they are the longest), their results read as they come (a failure
                # surfaces at once, not after the seed's replays)
                side = {pool.submit(_pool_task, j): ("side", j) for j in extra}
                while True:
                    plan = self._planned(body, cases)
                    need = {(c.label, k) for c in cases for k in c.wanted | {"rf"}}
                    need |= {(case.label, kw.get("pred", "rf")) for case, _, kw in plan.values()}
                    need = sorted({lk for lk in need if lk[1] not in byl[lk[0]].preds},
                                  key=lambda lk: -len(byl[lk[0]].w))
                    for c in cases:
                        c.wanted.clear()
                    if not plan and not need:
                        break
                    busy = {**side, **{pool.submit(_pool_task, ("pred", *lk)): lk for lk in need}}
                    side = {}
                    todo = sorted(plan.items(), key=lambda kv: -_cost(*kv[1]))
                    while todo or busy:
                        ready = [kv for kv in todo if kv[1][2].get("pred", "rf") in kv[1][0].preds]
                        for kv in ready:
                            (case, policy, kw), pred = kv[1], kv[1][2].get("pred", "rf")
                            job = ("replay", case.label, policy, tuple(sorted(kw.items())), {pred: case.preds[pred]})
                            busy[pool.submit(_pool_task, job)] = kv[0]
                        todo = [kv for kv in todo if kv not in ready]
                        if not busy:
                            raise RuntimeError(f"asrpt: no predictions for {todo[0][0]}")
                        done, _ = wait(list(busy), return_when=FIRST_COMPLETED)
                        for f in done:
                            what = busy.pop(f)
                            res = f.result()
                            if what[0] == "side":
                                out[res[0]] = res[1]
                            elif res[0][0] == "pred":
                                case = byl[what[0]]
                                case.preds[what[1]] = res[1]
                                if what[1] == "rf":
                                    case.rf_fit_cpu_s, case.rf_fit_rows = res[2], res[3]
                            else:
                                case, _, kw = plan[what]
                                self._store(what, case, kw, res[1])
                for f in side:  # (when the first planning pass asked for nothing)
                    job, value = f.result()
                    out[job] = value
        finally:
            _FORKED = None
        return out

    def reduction(self, case: Case, vs: str | None = None, policy: str = "a-srpt", **kw) -> float:
        """1 - JCT(policy) / JCT(baseline); ``vs`` None: the best baseline."""
        mine = self.get(case, policy, **kw)["total_jct_h"]
        names = [vs] if vs else list(BASELINES)
        best = min(self.get(case, b, **kw)["total_jct_h"] for b in names)
        return 1.0 - mine / best if best > 0 else float("nan")


# -- Table II -------------------------------------------------------------------------------------------
#: HiGHS's default relative MIP gap: how far an "optimal" ILP mapping may be from the true optimum
ILP_GAP = 1e-4


def table2(cfg: dict, seed: int = 0, nic: str = "share", any_servers: bool = True) -> dict[str, dict[str, Any]]:
    """Heavy-Edge (paper and refined) vs the exact ILP for every Table II model (:func:`table2_model`)."""
    rows = {m: table2_model(cfg, m, seed, nic, any_servers) for m in cfg["t2_models"]}
    return {m: r for m, r in rows.items() if r is not None}


def table2_model(cfg: dict, model: str, seed: int = 0, nic: str = "share",
                 any_servers: bool = True) -> dict[str, Any] | None:
    """Heavy-Edge (paper and refined) vs the exact ILP on ``model``: ``gap`` is the per-iteration time of
    Heavy-Edge's mapping over the ILP's on the same servers (those the ``heavy-edge`` placement chose: the
    tightest that holds the job, else the most available), ``gap_all`` over the ILP free to use any free GPU
    (server choice included; only with ``any_servers``, the slowest ILPs); and the time of each, both in CPU
    time of this process (a loaded machine or a busy worker pool inflates wall time, not the work either
    does). ``nic``: the NIC rule of Eq. 5-6 both are timed with (``whole``: the ``nic_whole`` cause, which
    reads ``gap`` alone). None when the model has no configuration on ``t2_gpus`` GPUs."""
    from sim.asrpt.ilp import optimal_mapping
    from sim.asrpt.iteration import Bandwidth, alpha
    from sim.asrpt.profiles import StageCatalog
    from sim.placement.heavy_edge import heavy_edge_map, place_ordered
    from sim.placement.pool import NodePool

    import scipy.optimize  # noqa: F401  (imported before the first ILP is timed)

    cat, bw, per = StageCatalog(), Bandwidth(nic=nic), 8
    conf = cat.config(model, cfg["t2_gpus"])
    if conf is None:
        return None
    rng = np.random.default_rng([seed, sum(map(ord, model))])
    acc: dict[str, list[float]] = {k: [] for k in ("gap", "gap_refine", "gap_all", "gap_all_refine", "ms",
                                                   "ms_refine", "ilp_ms", "ilp_not_optimal")}
    for _ in range(cfg["t2_cases"]):
        while True:
            free = [int(v) for v in rng.integers(0, per + 1, size=cfg["t2_servers"])]
            if sum(free) >= conf.gpus:
                break
        if any_servers:
            c0 = time.process_time()
            best = optimal_mapping(conf, free, bw)
            acc["ilp_ms"].append((time.process_time() - c0) * 1e3)
        same = None
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
            if same is None:
                same = optimal_mapping(conf, counts, bw)
            # an optimum proven within HiGHS's relative MIP gap (1e-4) cannot be beaten by more than that; a solve
            # stopped by its time limit proves nothing (counted, its gap kept as measured)
            for ilp, what in (((best, "the ILP"),) if any_servers else ()) + ((same, "the ILP on its servers"),):
                if ilp.status != "optimal":
                    acc["ilp_not_optimal"].append(1.0)
                elif a < ilp.alpha * (1 - ILP_GAP):
                    raise AssertionError(f"{model}: Heavy-Edge {a} beat {what} {ilp.alpha} on {free}")
            if any_servers:
                acc["gap_all" + tag].append(a / best.alpha - 1.0)
            acc["gap" + tag].append(a / same.alpha - 1.0)
    row: dict[str, Any] = {k: float(np.mean(v)) if v else float("nan") for k, v in acc.items()}
    row["ilp_not_optimal"] = len(acc["ilp_not_optimal"])
    row["gap_max"] = float(np.max(acc["gap"]))
    row["cases"] = acc  # per case (the interval's samples)
    return row


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


#: the claims each part of the runner measures (``--claim ID`` runs only the parts its claims need)
PART_CLAIMS = {"fig6": ("fig6-",), "fig7": ("fig7-",), "fig8": ("fig8-",),
               "fig9": ("fig9-", "fig4-", "rf-training"), "t2": ("t2-",)}


def _parts(ctx: ReproduceContext) -> set[str]:
    if ctx.claims is None:
        return set(PART_CLAIMS)
    return {part for part, prefixes in PART_CLAIMS.items() if any(c.startswith(prefixes) for c in ctx.claims)}


def _setting(settings: dict[str, dict[str, Any]], servers: int, name: str, jobs: int, share: float, bw: float,
             case: Case) -> None:
    from sim.asrpt.pai_workload import PAPER, TARGET_LOAD

    s = settings.setdefault(name, {"trace": "PAI-shaped synthetic (sim/asrpt/pai_workload.py)",
                                   "cluster": f"{servers} x 8 V100, {bw:g} Gb/s NICs", "gpus": servers * 8,
                                   "jobs": f"{jobs:,} at the paper's scale ({len(case.w):,} replayed)",
                                   "single_gpu_share": share, "seeds": [], "offered_load": [],
                                   "calibration": []})
    s["seeds"].append(int(case.label.rsplit("-s", 1)[1]))
    # offered load: sum(duration x GPUs) on the best placements / (GPUs x span of the replayed arrivals)
    f = case.full.iloc[case.history:]
    span = float(f["submit_time"].max() - f["submit_time"].min()) or 1.0
    work = float((f["duration"] * f["num_gpus"]).sum())
    load = work / (servers * 8 * span)
    s["offered_load"].append(round(load, 3))
    # the calibration target: this rate on the trace's own 6,000 GPUs (the replay cluster is a third of
    # them at full scale; quick mode keeps the jobs per GPU a day)
    s["calibration"].append({"target": "offered load of these jobs at the trace's rate on its 6,000 GPUs "
                                       f"(assumed, iteration median {PAPER['median_iterations']:,.0f})",
                             "paper": TARGET_LOAD, "cite": "gfs.txt:60-62 (an assumption; the PAI figure is "
                             "not in our papers)", "reached": round(load * 2000 / 6000, 3)})


@dataclass
class _SeedCases:
    """One seed's workloads (built once, in this process, before any worker forks)."""

    cases6: dict[int, Case]
    cause: Case | None
    small: Case | None
    cases7: dict[str, Case]
    case0: Case | None

    @classmethod
    def build(cls, cfg: dict, seed: int, parts: set[str]) -> "_SeedCases":
        cases6 = {n: _case(cfg, n, seed, label=f"fig6-{n}-s{seed}") for n in cfg["fig6"]} if "fig6" in parts else {}
        cause = small = None
        if parts & {"fig6", "fig9"}:
            cause = cases6.get(cfg["cause_jobs"]) or _case(cfg, cfg["cause_jobs"], seed, label=f"cause-s{seed}")
            n0 = min(cfg["fig6"])
            small = cases6.get(n0) or _case(cfg, n0, seed, label=f"fig6-{n0}-s{seed}")
        cases7 = {}
        if "fig7" in parts:
            for share in cfg["fig7"]:
                cases7[f"single{int(round(100 * share))}"] = _case(cfg, cfg["fig7_jobs"], seed, share,
                                                                   label=f"fig7-{int(100 * share)}-s{seed}")
        case0 = None
        if "fig8" in parts:
            case0 = cases7.get("single0") or _case(cfg, cfg["fig8_jobs"], seed, 0.0, label=f"fig7-0-s{seed}")
        return cls(cases6, cause, small, cases7, case0)

    def all(self) -> list[Case]:
        out: dict[str, Case] = {}
        for c in [*self.cases6.values(), self.cause, self.small, *self.cases7.values(), self.case0]:
            if c is not None:
                out.setdefault(c.label, c)
        return list(out.values())


def _seed(runs: Runs, acc: _Acc, settings: dict[str, dict[str, Any]], cfg: dict, seed: int, first: bool,
          sc: _SeedCases, parts: set[str]) -> None:
    """One seed's measurements (Fig. 6-9 and their causes on the first seed); every replay through ``runs``."""
    servers = cfg["servers"]
    cause_case, small, cases6 = sc.cause, sc.small, sc.cases6

    def causes_of(measure) -> dict[str, float | str]:
        return {**queue_causes(measure, cause_case, {}),
                "nic_whole": measure(cause_case, dict(nic="whole"), "a-srpt"),
                "start_min": measure(cause_case, {}, "a-srpt:start=min"),
                "refine": measure(cause_case, dict(refine=True), "a-srpt"),
                "tau_100": measure(cause_case, {}, "a-srpt:tau=100"),
                "perfect": measure(cause_case, {}, "a-srpt-perfect"),
                "work_conserving": measure(cause_case, {}, "a-srpt:work_conserving=true"),
                "load": measure(small, {}, "a-srpt")}

    def vs(b):
        return lambda case, kw, policy: runs.reduction(case, b, policy, **kw)

    def queue_causes(measure, case: Case, kw: dict) -> dict[str, float | str]:
        """Issue 40 item 5, one switch at a time: queue order (order=size, tau=0), pop-at-line-7 vs block,
        placement GPU-hours per policy over the best placements, the delay window against run times."""
        gh = {p: runs.get(case, p, **kw)["gpu_h_over_best"] for p in ("a-srpt", *BASELINES)}
        return {"as_printed": measure(case, kw, "a-srpt"),  # the reference the switches below compare with
                "order_size": measure(case, kw, "a-srpt:order=size"),
                "tau_0": measure(case, kw, "a-srpt:tau=0"),
                "pop": measure(case, kw, "a-srpt:delay=pop"),
                "gpu_h_over_best": ", ".join(f"{p} {v:.3f}x" for p, v in gh.items()),
                "window_over_run": window_over_run(case)}

    def window_over_run(case: Case) -> str:
        """The delay window tau (g/G) n~ alpha~_min (tau 1) over the job's run time on its best placement
        (n alpha~_min), for the multi-GPU jobs (the only ones that can be communication-heavy)."""
        g = np.asarray(case.w.gpus, dtype=float)
        truth = case.full["iterations"].to_numpy(dtype=float)[case.history:]
        r = (g / (8 * servers)) * predictions(case, "rf", cfg) / truth
        r = r[g > 1]
        if not len(r):
            return "no multi-GPU job"
        return f"median {100 * np.median(r):.2f} %, p99 {100 * np.percentile(r, 99):.2f} % of the run time"

    # Fig. 6: total JCT vs jobs
    c6 = {b: causes_of(vs(b)) for b in (None, *BASELINES)} if first and "fig6" in parts else {}
    on_cause = f"causes on {len(cause_case.w):,} replayed jobs" if cause_case is not None else ""
    for n, case in cases6.items():
        s = f"n{n}"
        _setting(settings, servers, s, n, 0.75, 10.0, case)
        mine = runs.get(case, "a-srpt")
        line = (f"A-SRPT {mine['total_jct_h']:,.0f} h (its real queue waited beside "
                f"{mine.get('real_queue_idle_gpu_h', float('nan')):,.0f} free GPU-h), "
                + ", ".join(f"{b} {runs.get(case, b)['total_jct_h']:,.0f} h" for b in BASELINES) + f"; {on_cause}")
        acc.add(f"fig6_reduction_vs_best@{s}", runs.reduction(case), line, c6.get(None))
        for b in BASELINES:
            acc.add(f"fig6_reduction_vs_{b.replace('-', '_')}@{s}", runs.reduction(case, b), line, c6.get(b))
        acc.add(f"baseline_wait_share@{s}", _wait_share(runs, case), "best baseline's total wait / total JCT")

    # Fig. 7: single-GPU share (75,000 jobs)
    cases7 = sc.cases7
    for share in cfg["fig7"] if cases7 else ():
        s = f"single{int(round(100 * share))}"
        _setting(settings, servers, s, cfg["fig7_jobs"], share, 10.0, cases7[s])
        acc.add(f"baseline_wait_share@{s}", _wait_share(runs, cases7[s]), "best baseline's total wait / total JCT")
    red7 = {s: runs.reduction(c) for s, c in cases7.items()}
    # the causes on the share where A-SRPT does worst (known once every share's replays are in: a planning
    # pass of Runs.prefetch asks for them in its next round)
    known7 = bool(red7) and all(math.isfinite(v) for v in red7.values())
    worst7 = cases7[min(red7, key=red7.get)] if known7 else None
    c7 = {**queue_causes(vs(None), worst7, {}),
          "nic_whole": runs.reduction(worst7, None, "a-srpt", nic="whole"),
          "start_min": runs.reduction(worst7, None, "a-srpt:start=min"),
          "tau_100": runs.reduction(worst7, None, "a-srpt:tau=100"),
          "work_conserving": runs.reduction(worst7, None, "a-srpt:work_conserving=true")} \
        if first and worst7 is not None else None
    for s, v in red7.items():
        acc.add(f"fig7_reduction_vs_best@{s}", v, f"causes on {worst7.label}" if c7 else "", c7)

    # Fig. 8: NIC bandwidth on the 0 %-single-GPU set
    case0 = sc.case0
    if case0 is not None:
        lo_bw, hi_bw = min(cfg["fig8"]), max(cfg["fig8"])
        c8 = {**queue_causes(vs(None), case0, dict(nic_gbit=lo_bw)),
              "nic_whole": runs.reduction(case0, None, "a-srpt", nic_gbit=lo_bw, nic="whole"),
              "start_min": runs.reduction(case0, None, "a-srpt:start=min", nic_gbit=lo_bw),
              "tau_100": runs.reduction(case0, None, "a-srpt:tau=100", nic_gbit=lo_bw),
              "work_conserving": runs.reduction(case0, None, "a-srpt:work_conserving=true", nic_gbit=lo_bw)} \
            if first else None
        red8 = {}
        for bw in cfg["fig8"]:
            s = _bw(bw)
            _setting(settings, servers, s, cfg["fig8_jobs"], 0.0, bw, case0)
            red8[bw] = runs.reduction(case0, None, "a-srpt", nic_gbit=bw)
            acc.add(f"fig8_reduction_vs_best@{s}", red8[bw], "0 % single-GPU jobs", c8)
            acc.add(f"fig8_reduction_vs_wcs_duration@{s}", runs.reduction(case0, "wcs-duration", "a-srpt", nic_gbit=bw),
                    "0 % single-GPU jobs", c8)
            acc.add(f"baseline_wait_share@{s}", _wait_share(runs, case0, nic_gbit=bw), "")
        acc.add("fig8_gain_low_minus_high_bandwidth", red8[lo_bw] - red8[hi_bw],
                f"reduction vs the best baseline at {lo_bw:g} Gb/s minus at {hi_bw:g} Gb/s", c8)

    # Fig. 9 and Fig. 4: predictors, on the cause workload
    if "fig9" not in parts:
        return
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
        load = c6[None]["load"] if c6 else runs.reduction(small)
        c9 = {"load": load, "rf_bootstrap": jb / jct["perfect"] - 1.0}
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


def run(ctx: ReproduceContext) -> dict[str, Measurement]:
    """Every seed's measurements (:func:`_seed`), then Table II. With ``--workers N`` (N > 1) each seed's
    replays and predictions run on N forked processes first (:meth:`Runs.prefetch`), Table II's ILPs beside
    the first seed's; the measurements are the same either way (tests/test_asrpt_ledger.py)."""
    cfg = QUICK if ctx.quick else FULL
    seeds = list(ctx.seeds) or [0]
    parts = _parts(ctx)
    runs = Runs(ctx, cfg)
    acc = _Acc()
    t_start = time.perf_counter()
    settings: dict[str, dict[str, Any]] = {}
    want_t2 = "t2" in parts and ctx.wants("t2-heavy-edge-near-optimal", "t2-heavy-edge-fast", "t2-ilp-speed")
    t2_jobs = [("t2", m, seeds[0], nic, nic == "share") for nic in ("share", "whole") for m in cfg["t2_models"]]
    t2_rows: dict[tuple, Any] = {}

    for i, seed in enumerate(seeds):
        first = i == 0
        ctx.progress(f"asrpt: seed {seed}" + (f" ({ctx.workers} worker processes)" if ctx.workers > 1 else ""))
        sc = _SeedCases.build(cfg, seed, parts)
        t2_rows.update(runs.prefetch(lambda: _seed(runs, _Acc(), {}, cfg, seed, first, sc, parts), sc.all(),
                                     t2_jobs if first and want_t2 else []))
        _seed(runs, acc, settings, cfg, seed, first, sc, parts)

    out = acc.measurements(seeds)
    for s, meta in settings.items():
        meta["seeds"] = sorted(set(meta["seeds"]), key=meta["seeds"].index)
    ctx.settings.update(settings)
    _policy_tables(ctx, runs.rows, settings)

    # Table II (its exact ILPs are the slowest part: with workers they ran beside the first seed's replays).
    # Samples: the cases (free GPUs per server drawn at random), not seeds; Heavy-Edge and the ILP (sim.asrpt.ilp)
    # timed in CPU time of the process that ran them.
    if want_t2:
        ctx.progress("Table II: Heavy-Edge (paper, refined) vs the exact ILP")

        def t2_of(nic: str) -> dict[str, dict[str, Any]]:
            rows = {m: t2_rows[("t2", m, seeds[0], nic, nic == "share")] if t2_rows else
                    table2_model(cfg, m, seeds[0], nic, any_servers=nic == "share") for m in cfg["t2_models"]}
            return {m: r for m, r in rows.items() if r is not None}

        t2, t2w = t2_of("share"), t2_of("whole")
        for model, r in t2.items():
            cases = r["cases"]
            d = (f"{model}, {len(cases['gap'])} cases of {cfg['t2_gpus']} GPUs on {cfg['t2_servers']} servers: gap "
                 f"{100 * r['gap']:.1f} % (refined {100 * r['gap_refine']:.1f} %; to the ILP on any free GPUs "
                 f"{100 * r['gap_all']:.1f} %), {r['ms']:.2f} CPU ms vs ILP {r['ilp_ms']:.0f} CPU ms"
                 + (f"; {r['ilp_not_optimal']} ILP solves stopped by the time limit" if r["ilp_not_optimal"] else ""))
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

    def settings_of(r: dict) -> list[str]:
        label = str(r.get("case", ""))
        kind, _, rest = label.partition("-")
        size = rest.rsplit("-s", 1)[0]
        if kind == "fig6":
            return [f"n{size}"]
        if kind == "fig7":  # a replay at the default bandwidth (no nic_gbit: runs._key) is both Fig. 7's
            if "nic_gbit" in r:  # and, on the 0 % set, Fig. 8's at that bandwidth
                return [_bw(r["nic_gbit"])]
            return [f"single{size}"] + ([_bw(_DEFAULTS["nic_gbit"])] if size == "0" else [])
        return []

    by: dict[str, list[dict]] = {}
    for r in rows:
        for s in settings_of(r):
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
