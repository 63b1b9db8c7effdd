"""A-SRPT benchmark (issue 13): Fig. 6-9, Table II, makespan, decision time, a 100k-job replay, the Philly
trace, and measurements of why A-SRPT wins or loses against the work-conserving baselines.

    python benchmarks/bench_asrpt.py                                  # everything (about 10 min on 2 cores)
    python benchmarks/bench_asrpt.py --only replays --sizes 2000 4000 --fig-jobs 4000 --big 0   # quick
    python benchmarks/bench_asrpt.py --only table2 --cases 40 --gpus 16 --servers 6

Writes benchmarks/results/asrpt/report.md, replays.json and table2.json (a run without Table II keeps
the last table2.json in the report). Figures depend on the machine; the report states CPU and Python.

**Table II analogue.** For every case, each of ``--servers`` 8-GPU servers has a random number of free
GPUs (seeded; total >= the job's GPUs). Heavy-Edge picks servers the way the ``heavy-edge`` placement
does (the tightest server that holds the job, else the emptiest first) and maps the stages with
``heavy_edge_map``; the ILP (scipy.optimize.milp / HiGHS) chooses any x over the same servers and over
all free GPUs. PITT is the per-iteration time alpha (sim.asrpt.iteration, ring AllReduce, B_inter 10
Gb/s, B_intra 300 GB/s).

**Replays.** The PAI-shaped trace (features/traces/pai_synthetic.py, the `pai` preset) on pai-250
(250 x 8 GPUs): ``--history`` jobs first, submitted long before (finished: the predictors' training
data), then the replayed jobs over ``--window`` seconds, so more jobs means more load (the paper's
37.5k-150k jobs on the same 2,000 GPUs scale to ``--sizes``; the ratio is stated in the report).
Speeds: ``--performance asrpt`` (sim.performance.make_performance; true iterations from the trace).
Predicted iterations (all policies get the same): ``rf`` (models.tabular.IterationForest on (group,
user) fitted to the history's iterations; unseen groups 0), ``group-median`` / ``group-mean``
(sim.predictors.predict_kind: jobs of the group finished before the submission; unseen 0),
``noisy:0.3`` and ``perfect``. Baselines order by predicted duration = predicted iterations x
alpha~_min at the replay's NIC, and place with ``heavy-edge`` (``+consolidate``: Lucid's strict
consolidate placement instead). Our variants of A-SRPT (not the paper's; sim/policies/asrpt.py):
``a-srpt-eager`` (idle GPUs take jobs still on the virtual machine, in virtual SRPT order),
``a-srpt-wc`` (work-conserving real queue; ``a-srpt-perfect-wc`` with true iterations), ``a-srpt-wce``
(both), ``a-srpt-size`` (real queue sorted by virtual size instead of virtual completion order) and
``a-srpt-packed`` (heavy_ratio 1: every profiled job on the fewest, emptiest servers).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sim.asrpt.ilp import optimal_mapping  # noqa: E402
from sim.asrpt.iteration import Bandwidth, alpha  # noqa: E402
from sim.asrpt.profiles import StageCatalog  # noqa: E402
from sim.placement.heavy_edge import heavy_edge_map, place_ordered  # noqa: E402
from sim.placement.pool import NodePool  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "asrpt"
MODELS = ["vgg16", "resnet50", "gnmt", "bert-large", "gpt-6.7b"]
PAPER_JOBS = (37_500, 150_000)


# -- Table II ----------------------------------------------------------------------------------------
def availability(rng: np.random.Generator, servers: int, need: int, per: int = 8) -> list[int]:
    while True:
        free = [int(v) for v in rng.integers(0, per + 1, size=servers)]
        if sum(free) >= need:
            return free


def heavy_edge_case(cfg, free: list[int], bw: Bandwidth, per: int = 8) -> tuple[float, float, list[int]]:
    """(PITT, seconds, GPUs per chosen server) of Heavy-Edge: server choice on a pool with these free GPUs, then the mapping."""
    t0 = time.perf_counter()
    pool = NodePool([per] * len(free))
    for n, f in enumerate(free):
        if per - f:
            pool.allocate([(n, per - f)], -1 - n)
    placement = place_ordered(pool, cfg.gpus, most_free=True)
    counts = [g for _, g in placement]
    x = heavy_edge_map(cfg, counts, bw)
    seconds = time.perf_counter() - t0
    return alpha(cfg, x, bw), seconds, counts


def table2(models: list[str], cases: int, gpus: int, servers: int, seed: int) -> dict:
    cat = StageCatalog()
    bw = Bandwidth()
    rows = {}
    for model in models:
        cfg = cat.config(model, gpus)
        if cfg is None:
            print(f"  {model}: no profile, skipped")
            continue
        rng = np.random.default_rng([seed, sum(map(ord, model))])
        he_a, he_t, ilp_a, ilp_t, gaps, worst, same_a, same_gaps = [], [], [], [], [], 0.0, [], []
        for _ in range(cases):
            free = availability(rng, servers, gpus)
            a, t, counts = heavy_edge_case(cfg, free, bw)
            res = optimal_mapping(cfg, free, bw)
            same = optimal_mapping(cfg, counts, bw)
            same_a.append(same.alpha)
            same_gaps.append(a / same.alpha - 1.0)
            if res.alpha > a * (1 + 1e-9):
                raise AssertionError(f"{model}: Heavy-Edge {a} beat the ILP {res.alpha} on {free}")
            he_a.append(a), he_t.append(t), ilp_a.append(res.alpha), ilp_t.append(res.seconds)
            gaps.append(a / res.alpha - 1.0)
            worst = max(worst, gaps[-1])
        rows[model] = {
            "stages": cfg.num_stages, "replicas": list(cfg.replicas), "cases": cases, "gpus": gpus, "servers": servers,
            "heavy_edge_pitt_s": float(np.mean(he_a)), "ilp_pitt_s": float(np.mean(ilp_a)),
            "mean_gap_pct": 100 * float(np.mean(gaps)), "max_gap_pct": 100 * worst,
            "optimal_cases": int(sum(g < 1e-9 for g in gaps)),
            "ilp_same_servers_pitt_s": float(np.mean(same_a)), "same_servers_mean_gap_pct": 100 * float(np.mean(same_gaps)),
            "same_servers_max_gap_pct": 100 * float(np.max(same_gaps)),
            "heavy_edge_ms_mean": 1e3 * float(np.mean(he_t)), "heavy_edge_ms_max": 1e3 * float(np.max(he_t)),
            "ilp_ms_mean": 1e3 * float(np.mean(ilp_t)), "ilp_ms_max": 1e3 * float(np.max(ilp_t)),
        }
        r = rows[model]
        print(f"  {model:11s} S={r['stages']:2d} PITT HE {r['heavy_edge_pitt_s']:.4f}s ILP {r['ilp_pitt_s']:.4f}s "
              f"same-servers gap {r['same_servers_mean_gap_pct']:.1f}%/{r['same_servers_max_gap_pct']:.1f}% "
              f"gap mean {r['mean_gap_pct']:.1f}% max {r['max_gap_pct']:.1f}% optimal {r['optimal_cases']}/{cases} "
              f"time HE {r['heavy_edge_ms_mean']:.2f} ms ILP {r['ilp_ms_mean']:.1f} ms", flush=True)
    return rows


# -- replays ---------------------------------------------------------------------------------------
BASELINES = ["spjf", "spwf", "wcs-duration", "wcs-workload", "wcs-subtime"]
POLICIES = ["a-srpt", "a-srpt-wc", "a-srpt-size", "a-srpt-perfect", *BASELINES, "spjf+consolidate", "wcs-duration+consolidate"]


class Case:
    """One replay setting: the replayed workload and, per predictor, predicted iterations."""

    def __init__(self, frame, history: int, cluster, label: str):
        from features.jobtable import LoadReport, finalize
        from sim.workload import build_workload

        self.full, self.history, self.label = frame, history, label
        rest = frame.iloc[history:].copy()
        rest["submit_time"] = rest["submit_time"] - rest["submit_time"].iloc[0]
        table = finalize(rest.drop(columns=["model", "num_nodes", "job_name", "gpu_type", "job_class"],
                                   errors="ignore"),
                         LoadReport(source=label, format="synthetic", rows_read=len(rest)), path=label, sort=False)
        self.w = build_workload(table, cluster)
        if len(self.w) != len(rest):
            raise RuntimeError(f"{len(rest) - len(self.w)} jobs rejected by the cluster")
        self._preds: dict[str, np.ndarray] = {}
        self._perf: dict[str, object] = {}

    def performance(self, spec: str):
        """One performance model per spec (its alpha cache is shared by the replays of this case)."""
        if spec not in self._perf:
            from sim.performance import make_performance

            self._perf[spec] = make_performance(spec, self.w)
        return self._perf[spec]

    @property
    def truth(self) -> np.ndarray:
        from sim.asrpt.jobs import job_models, true_iterations

        if "truth" not in self._preds:
            self._preds["truth"] = true_iterations(self.w.frame, job_models(self.w.frame))
        return self._preds["truth"]

    def predictions(self, kind: str) -> np.ndarray:
        if kind in self._preds:
            return self._preds[kind]
        from sim.predictors import predict_kind

        h = self.history
        if kind == "rf":
            from models.tabular import IterationForest

            hist, rest = self.full.iloc[:h], self.full.iloc[h:]
            y = predict_kind("iterations", "oracle", hist)
            model = IterationForest(unseen="zero", n_estimators=100).fit(hist[["group_id", "user"]], y)
            out = np.maximum(0.0, model.predict(rest[["group_id", "user"]]))
        else:  # on the whole frame (history finished long before), then the replayed rows
            out = np.asarray(predict_kind("iterations", kind, self.full, 0), dtype=float)[h:]
        self._preds[kind] = out
        return out

    def error(self, kind: str) -> float:
        """Mean relative iteration error |pred - true| / true (unseen groups count 1)."""
        return float(np.mean(np.abs(self.predictions(kind) - self.truth) / self.truth))


def idle_while_waiting(res, w) -> float:
    """GPU-hours left idle while at least one submitted job had not started (virtual queue included)."""
    total = sum(p.gpus for p in w.cluster.partitions)
    ev = []
    for j in range(len(w)):
        ev += [(w.submit[j], 0, 1), (res.first_start[j], -w.gpus[j], -1), (res.end[j], w.gpus[j], 0)]
    ev.sort()
    free, waiting, last, idle = total, 0, 0.0, 0.0
    for t, dg, dw in ev:
        if waiting > 0:
            idle += free * (t - last)
        last, free, waiting = t, free + dg, waiting + dw
    return idle / 3600


def replay(case: Case, policy: str, pred: str = "rf", nic: float = 10.0, tau: float = 1.0,
           time_decisions: bool = False, perf_spec: str | None = None) -> dict:
    from sim.engine import Engine
    from sim.placement import make_placement
    from sim.placement.heavy_edge import HeavyEdge
    from sim.policies import queueing
    from sim.policies.asrpt import ASrpt, ASrptPerfect

    w = case.w
    perf = case.performance(perf_spec or f"asrpt:inter_gbps={nic:g}")
    preds = case.predictions(pred)
    amin = [perf.alpha_min(m, g) or 1.0 if m is not None else 1.0 for m, g in zip(perf.model, w.gpus)]
    predictions = {"iterations": preds.tolist(), "duration": [float(p * a) for p, a in zip(preds, amin)]}
    name, _, place = policy.partition("+")
    factories = {"a-srpt": (lambda: ASrpt(tau=tau)) if not time_decisions else _timed_asrpt(tau), "a-srpt-wc": lambda: ASrpt(tau=tau, work_conserving=True),
                 "a-srpt-eager": lambda: ASrpt(tau=tau, eager=True),
                 "a-srpt-packed": lambda: ASrpt(tau=tau, heavy_ratio=1.0),
                 "a-srpt-size": lambda: ASrpt(tau=tau, order="size"),
                 "a-srpt-perfect-size": lambda: ASrptPerfect(tau=tau, order="size"),
                 "a-srpt-wce": lambda: ASrpt(tau=tau, work_conserving=True, eager=True),
                 "a-srpt-perfect": lambda: ASrptPerfect(tau=tau),
                 "a-srpt-perfect-wc": lambda: ASrptPerfect(tau=tau, work_conserving=True),
                 "spjf": queueing.Spjf, "spwf": queueing.Spwf, "wcs-duration": queueing.WcsDuration,
                 "wcs-workload": queueing.WcsWorkload, "wcs-subtime": queueing.WcsSubTime}
    placement = make_placement(place) if place else HeavyEdge()
    t0 = time.perf_counter()
    engine = Engine(w, factories[name], placement=placement, predictions=predictions, performance=perf,
                    time_decisions=time_decisions, policy_name=policy)
    res = engine.run()
    wall = time.perf_counter() - t0
    end, start, sub = np.array(res.end), np.array(res.first_start), np.array(w.submit)
    out = {"policy": policy, "pred": pred, "nic_gbit": nic, "tau": tau, "jobs": len(w),
           "total_jct_h": float((end - sub).sum() / 3600), "wait_h": float((start - sub).sum() / 3600),
           "run_h": float((end - start).sum() / 3600), "makespan_h": float(end.max() / 3600), "replay_s": wall,
           "idle_waiting_gpu_h": idle_while_waiting(res, w), "start_order": None}
    if name.startswith("a-srpt"):
        out.update(max(engine.policies, key=lambda p: p.max_waiting).stats())
    if time_decisions and res.decision_seconds:
        d = np.array(res.decision_seconds) * 1e3
        out.update(decision_p50_ms=float(np.percentile(d, 50)), decision_p99_ms=float(np.percentile(d, 99)),
                   decision_max_ms=float(d.max()), decisions=len(d))
        timings = [t for p in engine.policies for t in getattr(p, "timings", [])]
        deep = np.array([sec for waiting, sec in timings if waiting >= 2000]) * 1e3
        if len(deep):
            out.update(deep_passes=len(deep), deep_p50_ms=float(np.percentile(deep, 50)),
                       deep_p99_ms=float(np.percentile(deep, 99)), deep_max_ms=float(deep.max()))
    out["_start"] = start
    return out


def _timed_asrpt(tau: float):
    """A-SRPT whose every scheduling pass (virtual machine, real queue, Heavy-Edge placement, starts) is
    timed together with the number of jobs waiting (virtual + real queue) when it began."""
    from sim.policies.asrpt import ASrpt

    class Timed(ASrpt):
        def __init__(self):
            super().__init__(tau=tau)
            self.timings: list[tuple[int, float]] = []

        def schedule(self) -> None:
            waiting = len(self.virtual) + len(self.real)
            t0 = time.perf_counter()
            super().schedule()
            self.timings.append((waiting, time.perf_counter() - t0))

    return Timed


def _public(r: dict) -> dict:
    return {k: v for k, v in r.items() if not k.startswith("_") and k != "start_order"}


def make_pai(n: int, history: int, window: float, seed: int, single_share: float = 0.75):
    from features.traces.pai_synthetic import PaiSpec, generate_pai

    spec = PaiSpec(jobs=n + history, mean_interarrival=window / n, single_gpu_share=single_share)
    frame = generate_pai(spec, seed=seed).frame
    frame.loc[frame.index[:history], "submit_time"] -= 1e8  # the history finished long before
    return frame


def pai_case(n: int, args, single_share: float = 0.75) -> Case:
    from sim.cluster import load_cluster

    return Case(make_pai(n, args.history, args.window, args.seed, single_share), args.history,
                load_cluster("pai-250"), f"pai-{n}")


def _line(tag: str, r: dict) -> None:
    print(f"  {tag:28s} {r['policy']:26s} JCT {r['total_jct_h']:8.0f} h wait {r['wait_h']:7.0f} h run "
          f"{r['run_h']:6.0f} h mk {r['makespan_h']:5.1f} h ({r['replay_s']:.1f} s)", flush=True)


def replays(args) -> dict:
    out: dict = {"fig6": [], "fig7": [], "fig8": [], "fig9": [], "tau": [], "why": [], "philly": [],
                 "settings": {"window": args.window, "history": args.history, "seed": args.seed}}
    for n in args.sizes:
        case = pai_case(n, args)
        for pol in POLICIES:
            r = replay(case, pol)
            r["n"] = n
            out["fig6"].append(_public(r))
            _line(f"fig6 n={n}", r)
    n = args.fig_jobs or args.sizes[-1]
    out["fig_jobs"] = n
    case = pai_case(n, args)
    for share in args.shares:
        c7 = pai_case(n, args, single_share=share)
        for pol in ("a-srpt", "a-srpt-wc", "spjf", "wcs-duration"):
            r = replay(c7, pol)
            r["single_share"] = share
            out["fig7"].append(_public(r))
            _line(f"fig7 share={share}", r)
    for nic in args.nic:
        for pol in ("a-srpt", "a-srpt-wc", "a-srpt-size", "a-srpt-perfect", "spjf", "wcs-duration",
                    "wcs-duration+consolidate"):
            r = replay(case, pol, nic=nic)
            out["fig8"].append(_public(r))
            _line(f"fig8 nic={nic:g}", r)
    for kind in ("rf", "group-median", "group-mean", "noisy:0.3", "perfect"):
        for pol in ("a-srpt", "a-srpt-wc", "wcs-duration"):
            r = replay(case, pol, pred=kind)
            r.update(iteration_error=case.error(kind), zero_share=float(np.mean(case.predictions(kind) == 0)))
            out["fig9"].append(_public(r))
            _line(f"fig9 {kind}", r)
    for nic in (1.0, 10.0):
        for pol in ("a-srpt", "a-srpt-wc"):
            for tau in args.taus:
                r = replay(case, pol, tau=tau, nic=nic)
                out["tau"].append(_public(r))
                _line(f"tau={tau:g} nic={nic:g}", r)
    out["why"] = why(case)
    out["placement"] = placement_rule(case, [1.0, 10.0])
    r = replay(case, "a-srpt", time_decisions=True)
    out["decision"] = _public(r)
    print(f"  decision P99 {r.get('decision_p99_ms', float('nan')):.3f} ms with up to {r.get('max_waiting')} waiting",
          flush=True)
    if args.big:
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        big = pai_case(args.big, argparse.Namespace(history=args.history, window=args.window * args.big / n,
                                                     seed=args.seed))
        big.predictions("group-median")
        prep = time.perf_counter() - t0
        r = replay(big, "a-srpt", pred="group-median")
        r.update(prepare_s=prep, cpu_s=time.process_time() - cpu0, total_s=time.perf_counter() - t0)
        out["big"] = _public(r)
        print(f"  {args.big} jobs: A-SRPT replay {r['replay_s']:.1f} s (+{prep:.1f} s trace and predictions)", flush=True)
    if args.philly:
        out["philly"] = philly(args)
    return out


def why(case: Case) -> list[dict]:
    """Decompose A-SRPT vs the baselines at one size: waiting vs run time, idle GPUs while jobs wait, the
    strict order (a-srpt-wc), the delay rule (tau 0), predictions (perfect), and how close A-SRPT's start
    order is to smallest-predicted-work-first (Spearman rank correlation with SPWF's start times)."""
    rows = []
    runs = [("a-srpt", "rf", 1.0), ("a-srpt", "rf", 0.0), ("a-srpt-eager", "rf", 1.0), ("a-srpt-wc", "rf", 1.0),
            ("a-srpt-wce", "rf", 1.0), ("a-srpt-size", "rf", 1.0), ("a-srpt", "perfect", 1.0),
            ("a-srpt-perfect-wc", "perfect", 1.0), ("a-srpt-perfect-size", "perfect", 1.0),
            ("spwf", "rf", 1.0), ("wcs-workload", "rf", 1.0), ("wcs-duration", "rf", 1.0), ("wcs-subtime", "rf", 1.0),
            ("spwf", "perfect", 1.0), ("wcs-workload", "perfect", 1.0)]
    starts = {}
    for pol, pred, tau in runs:
        r = replay(case, pol, pred=pred, tau=tau)
        starts[(pol, pred, tau)] = r["_start"]
        rows.append(_public(r))
        _line(f"why {pred} tau={tau:g}", r)
    from scipy.stats import spearmanr

    ref = starts[("spwf", "rf", 1.0)]
    for row, key in zip(rows, runs):
        row["spearman_vs_spwf"] = float(spearmanr(starts[key], ref).statistic)
    return rows


def placement_rule(case: Case, nics: list[float]) -> list[dict]:
    """A-SRPT's placement rule for communication-light jobs (the servers with the FEWEST free GPUs) versus
    ``a-srpt-packed`` (heavy_ratio 1: every profiled multi-GPU job is treated as heavy, so it takes the
    fewest, emptiest servers) and WCS-Duration on heavy-edge, at several NICs: running hours show what
    spreading light jobs costs."""
    rows = []
    for nic in nics:
        for pol in ("a-srpt", "a-srpt-packed", "wcs-duration"):
            r = replay(case, pol, nic=nic)
            rows.append(_public(r))
            _line(f"placement nic={nic:g}", r)
    return rows


def philly(args) -> list[dict]:
    """The first ``--philly`` jobs of the processed Philly trace on philly-pool resized to offered load 0.7
    (sim.sizing), 10 Gb/s NIC, models assigned per (VC, GPUs) group (sim.asrpt.jobs)."""
    from features.traces import load_trace
    from sim.cluster import load_cluster
    from sim.sizing import sized_for_load

    path = Path(args.data_dir) / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz"
    if not path.exists():
        print(f"  philly: {path} not found, skipped")
        return []
    frame = load_trace(path, "philly").frame.iloc[: args.philly].reset_index(drop=True)
    frame = frame[frame["num_gpus"] <= 64].reset_index(drop=True)
    cl = sized_for_load(frame, load_cluster("philly-pool"), 0.7)
    case = Case(frame, 0, cl, "philly")
    from scipy.stats import spearmanr

    rows = []
    one = np.array(case.w.gpus) == 1
    sub = np.array(case.w.submit)
    for pred in ("group-median", "perfect"):
        starts = {}
        for pol in ("a-srpt", "a-srpt-wc", "a-srpt-size", "spjf", "spwf", "wcs-duration", "wcs-workload", "wcs-subtime"):
            r = replay(case, pol, pred=pred)
            r.update(iteration_error=case.error(pred), nodes=sum(len(p.capacities) for p in cl.partitions),
                     wait_1gpu_h=float((r["_start"] - sub)[one].sum() / 3600))
            starts[pol] = r["_start"]
            rows.append(r)
            _line(f"philly {pred}", r)
        for r in rows[-len(starts):]:
            r["spearman_vs_spwf"] = float(spearmanr(starts[r["policy"]], starts["spwf"]).statistic)
    return [_public(r) for r in rows]


# -- report --------------------------------------------------------------------------------------------
def _table(rows: list[dict], key: str, pols: list[str], fmt=lambda r: f"{r['total_jct_h']:.0f}") -> list[str]:
    keys = sorted({r[key] for r in rows}, key=lambda v: -v if key == "single_share" else v)
    pols = [p for p in pols if any(r["policy"] == p for r in rows)]
    out = [f"| {key} | " + " | ".join(pols) + " |", "|---" * (len(pols) + 1) + "|"]
    for k in keys:
        by = {r["policy"]: r for r in rows if r[key] == k}
        out.append(f"| {k:g} | " + " | ".join(fmt(by[p]) if p in by else "" for p in pols) + " |")
    return out


def _pct(a: float, b: float) -> str:
    return f"{100 * (a / b - 1):+.1f} %"


def write_report(t2: dict, args, command: str, rp: dict | None, seconds: float, cpu: float) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    if t2:
        (OUT / "table2.json").write_text(json.dumps(t2, indent=1))
    if rp:
        (OUT / "replays.json").write_text(json.dumps(rp, indent=1))
    lines = ["# A-SRPT benchmark", "", f"Command: `{command}`", "",
             f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs (shared), Python "
             f"{platform.python_version()}; this run: {seconds:.0f} s wall, {cpu:.0f} s CPU.", ""]
    if rp is None and (OUT / "replays.json").exists():  # keep the last replays in the report
        rp = json.loads((OUT / "replays.json").read_text())
        lines.append("(Replays below: from the last run with replays, replays.json.)")
    if rp:
        lines += _summary_lines(rp) + _replay_lines(rp, args)
    if not t2 and (OUT / "table2.json").exists():
        t2 = json.loads((OUT / "table2.json").read_text())
        lines.append("(Table II below: from the last `--only table2` or full run, table2.json.)")
    if t2:
        lines += _table2_lines(t2)
    (OUT / "report.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {OUT / 'report.md'}")


def _table2_lines(t2: dict) -> list[str]:
    first = next(iter(t2.values()))
    lines = [f"## Table II analogue: Heavy-Edge vs the exact ILP ({first['cases']} availability cases per model, "
             f"{first.get('gpus', 16)}-GPU job, {first.get('servers', 6)} servers x 8 GPUs, B_inter 10 Gb/s, ring)", "",
             "*ILP same servers* maps onto the GPUs Heavy-Edge's server choice took (the mapping gap); *ILP all "
             "free* may use any free GPU (mapping and server choice).", "",
             "| model | stages (replicas) | PITT Heavy-Edge (s) | PITT ILP same servers (s) | gap mean / max "
             "| PITT ILP all free (s) | gap mean / max | Heavy-Edge = ILP all free | Heavy-Edge ms (mean / max) "
             "| ILP all free ms (mean / max) |", "|---|---|---|---|---|---|---|---|---|---|"]
    for m, r in t2.items():
        lines.append(f"| {m} | {r['stages']} ({', '.join(map(str, r['replicas']))}) | {r['heavy_edge_pitt_s']:.4f} "
                     f"| {r['ilp_same_servers_pitt_s']:.4f} | {r['same_servers_mean_gap_pct']:.1f} % / "
                     f"{r['same_servers_max_gap_pct']:.1f} % | {r['ilp_pitt_s']:.4f} | {r['mean_gap_pct']:.1f} % / "
                     f"{r['max_gap_pct']:.1f} % | {r['optimal_cases']}/{r['cases']} | {r['heavy_edge_ms_mean']:.2f} / "
                     f"{r['heavy_edge_ms_max']:.2f} | {r['ilp_ms_mean']:.1f} / {r['ilp_ms_max']:.1f} |")
    lines += ["", "Paper (Table II): Heavy-Edge within 6 % of optimal on VGG19 in < 2 ms. VGG19 is not in the "
              "PipeDream profiles; VGG16 stands in. Large gaps to *ILP all free* come from the server choice "
              "(the ILP may use a fuller server the placement rule skips), not from the mapping.", ""]
    return lines


def _summary_lines(rp: dict) -> list[str]:
    """Headline numbers, computed from this run's results (nothing here is typed in by hand)."""
    out = ["## Summary (computed from the tables below)", ""]
    sizes = sorted({r["n"] for r in rp.get("fig6", [])})
    if sizes:
        n = sizes[-1]
        by = {r["policy"]: r for r in rp["fig6"] if r["n"] == n}
        a = by["a-srpt"]["total_jct_h"]
        wcs = min((p for p in by if p.startswith("wcs")), key=lambda p: by[p]["total_jct_h"])
        strict = [p for p in ("spjf", "spwf") if p in by]
        out.append(f"- Fig. 6, {n:,} jobs: A-SRPT (the paper's rules) {a:.0f} h total JCT: "
                   + ", ".join(f"{_pct(a, by[p]['total_jct_h'])} vs {p}" for p in strict)
                   + f", {_pct(a, by[wcs]['total_jct_h'])} vs the best work-conserving baseline ({wcs}); "
                   f"A-SRPT-Perfect {_pct(by['a-srpt-perfect']['total_jct_h'], by[wcs]['total_jct_h'])} vs {wcs} and "
                   f"{_pct(a, by['a-srpt-perfect']['total_jct_h'])} A-SRPT vs A-SRPT-Perfect (paper: within ~15 %); "
                   f"ours: work-conserving A-SRPT-WC {_pct(by['a-srpt-wc']['total_jct_h'], by[wcs]['total_jct_h'])}, "
                   f"size-ordered real queue A-SRPT-size {_pct(by['a-srpt-size']['total_jct_h'], by[wcs]['total_jct_h'])} vs {wcs}. "
                   f"Makespans {min(r['makespan_h'] for r in by.values()):.1f}-{max(r['makespan_h'] for r in by.values()):.1f} h.")
    why = {(r["policy"], r["pred"], r["tau"]): r for r in rp.get("why", [])}
    a = why.get(("a-srpt", "rf", 1.0))
    if a:
        base = why[("wcs-workload", "rf", 1.0)]
        out.append(f"- Where A-SRPT's waiting comes from ({a['jobs']:,} jobs, RF predictions): {a['wait_h']:.0f} h of waiting, "
                   f"{a['virtual_delay_h']:.0f} h of it on the virtual machine (a job enters the real queue only when "
                   f"it completes there); {a['idle_waiting_gpu_h']:.0f} GPU-h idle while jobs waited vs "
                   f"{base['idle_waiting_gpu_h']:.0f} for WCS-Workload.")
        parts = []
        for key, label in ((("a-srpt", "rf", 0.0), "tau = 0"), (("a-srpt-eager", "rf", 1.0), "eager"),
                           (("a-srpt-wc", "rf", 1.0), "work-conserving"), (("a-srpt-wce", "rf", 1.0), "both"),
                           (("a-srpt-size", "rf", 1.0), "real queue by size")):
            if key in why:
                parts.append(f"{label} {_pct(why[key]['total_jct_h'], a['total_jct_h'])} "
                             f"(idle {why[key]['idle_waiting_gpu_h']:.0f} GPU-h)")
        out.append("- Changing one rule at a time (total JCT vs A-SRPT): " + "; ".join(parts) + ".")
        p = why.get(("a-srpt", "perfect", 1.0))
        if p:
            worse = p["total_jct_h"] > a["total_jct_h"]
            out.append(f"- Perfect predictions: A-SRPT {_pct(p['total_jct_h'], a['total_jct_h'])} vs RF, with "
                       f"{p['virtual_delay_h']:.0f} h on the virtual machine and {p['idle_waiting_gpu_h']:.0f} GPU-h idle "
                       "while jobs waited" + (" (exact sizes keep long jobs on the virtual machine while GPUs idle)"
                                              if worse else "") +
                       f". Spearman of A-SRPT's start order vs SPWF's: {a['spearman_vs_spwf']:.2f} (RF).")
    pl = rp.get("placement", [])
    if pl:
        for nic in sorted({r["nic_gbit"] for r in pl}):
            by = {r["policy"]: r for r in pl if r["nic_gbit"] == nic}
            out.append(f"- Light-job placement at {nic:g} Gb/s: running {by['a-srpt']['run_h']:.0f} h (A-SRPT) vs "
                       f"{by['a-srpt-packed']['run_h']:.0f} h (fewest, emptiest servers for all) vs "
                       f"{by['wcs-duration']['run_h']:.0f} h (WCS-Duration).")
    taus = rp.get("tau", [])
    if taus:
        cells = []
        for nic in sorted({r["nic_gbit"] for r in taus}):
            for pol in dict.fromkeys(r["policy"] for r in taus):
                rows = {r["tau"]: r for r in taus if r["nic_gbit"] == nic and r["policy"] == pol}
                best = min(rows.values(), key=lambda r: r["total_jct_h"])
                if 1.0 in rows:
                    cells.append(f"{pol} at {nic:g} Gb/s: best tau {best['tau']:g} "
                                 f"({_pct(best['total_jct_h'], rows[1.0]['total_jct_h'])} vs tau 1)")
        out.append("- Delay factor: " + "; ".join(cells) + ".")
    f8 = rp.get("fig8", [])
    if f8:
        nics = sorted({r["nic_gbit"] for r in f8})
        cells = []
        for nic in nics:
            by = {r["policy"]: r for r in f8 if r["nic_gbit"] == nic}
            cells.append(f"{nic:g} Gb/s {_pct(by['a-srpt']['total_jct_h'], by['wcs-duration']['total_jct_h'])}")
        out.append("- Fig. 8, A-SRPT vs WCS-Duration by NIC: " + ", ".join(cells) + " (paper: gain largest at 1 Gb/s).")
    f9 = [r for r in rp.get("fig9", []) if r["policy"] == "a-srpt"]
    if f9:
        out.append("- Fig. 9 mean relative iteration error -> A-SRPT total JCT: " + ", ".join(
            f"{r['pred']} {r['iteration_error']:.2f} -> {r['total_jct_h']:.0f} h" for r in f9) + ".")
    ph = rp.get("philly", [])
    if ph:
        cells = []
        for pred in dict.fromkeys(r["pred"] for r in ph):
            by = {r["policy"]: r for r in ph if r["pred"] == pred}
            best = min((p for p in by if not p.startswith("a-srpt")), key=lambda p: by[p]["total_jct_h"])
            cells.append(f"{pred}: A-SRPT {_pct(by['a-srpt']['total_jct_h'], by[best]['total_jct_h'])}, A-SRPT-WC "
                         f"{_pct(by['a-srpt-wc']['total_jct_h'], by[best]['total_jct_h'])}, A-SRPT-size "
                         f"{_pct(by['a-srpt-size']['total_jct_h'], by[best]['total_jct_h'])} vs the best baseline ({best})")
        out.append("- Philly: " + "; ".join(cells) + ".")
        a = next((r for r in ph if r["policy"] == "a-srpt" and r["pred"] == "perfect"), None)
        sp = next((r for r in ph if r["policy"] == "spwf" and r["pred"] == "perfect"), None)
        if a and sp:
            out.append(f"- Philly, perfect predictions: A-SRPT waits {a['wait_h']:.0f} h ({a['wait_1gpu_h']:.0f} h of it "
                       f"1-GPU jobs) vs SPWF {sp['wait_h']:.0f} h ({sp['wait_1gpu_h']:.0f} h); only "
                       f"{a['virtual_delay_h']:.0f} h on the virtual machine and {a['real_queue_idle_gpu_h']:.0f} GPU-h "
                       "free while the real queue held jobs, so the rest is waiting in the real queue behind jobs "
                       "released earlier (the real queue keeps virtual-completion order: FIFO once it is long); "
                       f"Spearman vs SPWF {a['spearman_vs_spwf']:.2f}.")
    d, b = rp.get("decision", {}), rp.get("big")
    if d:
        out.append(f"- Decision time with >= 2,000 jobs waiting: P99 {d.get('deep_p99_ms', float('nan')):.3f} ms per "
                   f"A-SRPT pass ({d.get('deep_passes', 0):,} passes)" +
                   (f"; {b['jobs']:,}-job replay {b['replay_s']:.1f} s engine, {b['total_s']:.1f} s with trace and "
                    "predictions." if b else "."))
    return out + [""]


def _replay_lines(rp: dict, args) -> list[str]:
    args = argparse.Namespace(**{**vars(args), **rp.get("settings", {})})
    sizes = sorted({r["n"] for r in rp["fig6"]})
    scale = PAPER_JOBS[1] / max(sizes) if sizes else float("nan")
    lines = [f"## Replays: PAI-shaped trace on pai-250 (2,000 GPUs), arrivals over {args.window:.0f} s, "
             f"{args.history} history jobs, seed {args.seed}", "",
             f"Scaling: the paper replays {PAPER_JOBS[0]:,}-{PAPER_JOBS[1]:,} jobs on 2,000 GPUs; here "
             f"{', '.join(f'{s:,}' for s in sizes)} jobs (1/{scale:.0f} of the paper's largest) arrive within the "
             "same window, so load grows with the job count as in Fig. 6. Total JCT in hours (makespan in "
             "brackets). Predictions: random forest on (group, user) unless stated; all policies get the same.", ""]
    pols = [p for p in POLICIES if any(r["policy"] == p for r in rp["fig6"])]
    lines += ["### Fig. 6: total JCT (h) and makespan (h) vs number of jobs", "",
              "| jobs | " + " | ".join(pols) + " |", "|---" * (len(pols) + 1) + "|"]
    for n in sizes:
        by = {r["policy"]: r for r in rp["fig6"] if r["n"] == n}
        lines.append(f"| {n:,} | " + " | ".join(f"{by[p]['total_jct_h']:.0f} ({by[p]['makespan_h']:.1f})" for p in pols) + " |")
    last = {r["policy"]: r for r in rp["fig6"] if r["n"] == sizes[-1]}
    if "a-srpt" in last:
        a = last["a-srpt"]["total_jct_h"]
        lines += ["", f"At {sizes[-1]:,} jobs, A-SRPT's total JCT relative to each baseline: " + "; ".join(
            f"{p} {_pct(a, last[p]['total_jct_h'])}" for p in pols if p != "a-srpt") + "."]
    n = rp.get("fig_jobs")
    lines += ["", f"### Fig. 7: total JCT (h) vs single-GPU share ({n:,} jobs)", ""]
    lines += _table(rp["fig7"], "single_share", ["a-srpt", "a-srpt-wc", "spjf", "wcs-duration"])
    lines += ["", f"### Fig. 8: total JCT (h) vs NIC bandwidth, Gb/s ({n:,} jobs; durations are run times at 10 Gb/s, "
              "so a slower NIC lengthens every multi-GPU job)", ""]
    lines += _table(rp["fig8"], "nic_gbit", ["a-srpt", "a-srpt-wc", "a-srpt-size", "a-srpt-perfect", "spjf", "wcs-duration",
                                              "wcs-duration+consolidate"])
    lines += ["", f"### Fig. 9: predictors ({n:,} jobs)", "",
              "| predictor | mean relative iteration error | share predicted 0 | A-SRPT total JCT (h) | A-SRPT-WC | WCS-Duration |",
              "|---|---|---|---|---|---|"]
    for kind in dict.fromkeys(r["pred"] for r in rp["fig9"]):
        by = {r["policy"]: r for r in rp["fig9"] if r["pred"] == kind}
        lines.append(f"| {kind} | {by['a-srpt']['iteration_error']:.2f} | {by['a-srpt']['zero_share']:.2f} | "
                     f"{by['a-srpt']['total_jct_h']:.0f} | {by['a-srpt-wc']['total_jct_h']:.0f} | "
                     f"{by['wcs-duration']['total_jct_h']:.0f} |")
    lines += ["", f"### A-SRPT delay factor tau ({n:,} jobs)", "",
              "A communication-heavy job may wait tau x p_i = tau x (g_i / G) x n_i x alpha~_min_i for a faster placement: "
              "with the factor g_i / G that is a small fraction of the job's own run time, so tau must be large to matter.",
              "", "| NIC Gb/s | policy | tau | total JCT (h) | running (h) | delayed heads | delay expiries | real queue idle (GPU-h) |",
              "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['nic_gbit']:g} | {r['policy']} | {r['tau']:g} | {r['total_jct_h']:.0f} | {r['run_h']:.0f} | "
              f"{r.get('delayed_heads')} | {r.get('delay_expiries')} | {r.get('real_queue_idle_gpu_h', float('nan')):.0f} |"
              for r in rp["tau"]]
    lines += ["", f"### Why A-SRPT wins or loses ({n:,} jobs)", "",
              "JCT = waiting + running. *Idle while waiting*: GPU-hours free while some submitted job had not "
              "started (A-SRPT's virtual queue included). *Real queue idle*: GPU-hours free while A-SRPT's real queue "
              "held jobs (head-of-line blocking, the delay rule). *Spearman vs SPWF*: rank correlation of start times "
              "with strict smallest-predicted-work-first (same predictions).", "",
              "| policy | predictions | tau | total JCT (h) | waiting (h) | of which on the virtual machine (h) | running (h) "
              "| makespan (h) | idle while waiting (GPU-h) | real queue idle (GPU-h) | Spearman vs SPWF |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rp["why"]:
        lines.append(f"| {r['policy']} | {r['pred']} | {r['tau']:g} | {r['total_jct_h']:.0f} | {r['wait_h']:.0f} | "
                     f"{r['virtual_delay_h']:.0f} | " if "virtual_delay_h" in r else
                     f"| {r['policy']} | {r['pred']} | {r['tau']:g} | {r['total_jct_h']:.0f} | {r['wait_h']:.0f} | - | ")
        lines[-1] += (f"{r['run_h']:.0f} | {r['makespan_h']:.1f} | {r['idle_waiting_gpu_h']:.0f} | "
                      + (f"{r['real_queue_idle_gpu_h']:.0f}" if "real_queue_idle_gpu_h" in r else "-")
                      + f" | {r['spearman_vs_spwf']:.3f} |")
    if rp.get("placement"):
        lines += ["", f"### A-SRPT's placement of communication-light jobs ({n:,} jobs)", "",
                  "A-SRPT puts a job whose alpha_max / alpha~_min < 1.5 on the servers with the fewest free GPUs "
                  "(tight packing, often spread over several servers); *a-srpt-packed* (heavy_ratio = 1) puts every "
                  "profiled job on the fewest, emptiest servers.", "",
                  "| NIC Gb/s | policy | total JCT (h) | waiting (h) | running (h) |", "|---|---|---|---|---|"]
        lines += [f"| {r['nic_gbit']:g} | {r['policy']} | {r['total_jct_h']:.0f} | {r['wait_h']:.0f} | {r['run_h']:.0f} |"
                  for r in rp["placement"]]
    if rp.get("philly"):
        ph = rp["philly"]
        lines += ["", f"### Philly (first {ph[0]['jobs']:,} jobs of the processed trace; philly-pool resized to "
                  f"{ph[0]['nodes']} x 8 GPUs for offered load 0.7; 10 Gb/s; group = (VC, GPUs), one model per "
                  "group, iterations = duration / alpha~_min)", "",
                  "| predictions (error) | " + " | ".join(dict.fromkeys(r["policy"] for r in ph)) + " |",
                  "|---" * (len(dict.fromkeys(r["policy"] for r in ph)) + 1) + "|"]
        for pred in dict.fromkeys(r["pred"] for r in ph):
            rows = [r for r in ph if r["pred"] == pred]
            lines.append(f"| {pred} ({rows[0]['iteration_error']:.2f}) | " +
                         " | ".join(f"{r['total_jct_h']:.0f}" for r in rows) + " |")
        lines += ["", "Where the waiting is (hours; A-SRPT: on the virtual machine vs in the real queue; GPU-h left free "
                  "while the real queue held jobs):", "",
                  "| predictions | policy | waiting (h) | 1-GPU jobs' waiting (h) | on the virtual machine (h) "
                  "| real queue idle (GPU-h) | Spearman vs SPWF |", "|---|---|---|---|---|---|---|"]
        lines += [f"| {r['pred']} | {r['policy']} | {r['wait_h']:.0f} | {r['wait_1gpu_h']:.0f} | "
                  f"{r.get('virtual_delay_h', float('nan')):.0f} | {r.get('real_queue_idle_gpu_h', float('nan')):.0f} | "
                  f"{r['spearman_vs_spwf']:.2f} |" for r in ph]
    d = rp.get("decision", {})
    lines += ["", "### Speed", "",
              f"Decision time (A-SRPT incl. Heavy-Edge, {d.get('jobs', 0):,} jobs, up to {d.get('max_waiting')} jobs "
              f"waiting, {d.get('decisions', 0):,} decisions): P50 {d.get('decision_p50_ms', float('nan')):.3f} ms, "
              f"P99 {d.get('decision_p99_ms', float('nan')):.3f} ms, max {d.get('decision_max_ms', float('nan')):.1f} ms "
              "(engine-timed policy calls). A-SRPT scheduling passes that began with >= 2,000 jobs waiting: "
              f"{d.get('deep_passes', 0):,} passes, P50 {d.get('deep_p50_ms', float('nan')):.3f} ms, P99 "
              f"{d.get('deep_p99_ms', float('nan')):.3f} ms, max {d.get('deep_max_ms', float('nan')):.1f} ms.", ""]
    if rp.get("big"):
        b = rp["big"]
        lines += [f"A-SRPT replay of {b['jobs']:,} jobs (group-median predictions, same arrival rate per job count "
                  f"scaling): engine {b['replay_s']:.1f} s; with trace generation and predictions {b['total_s']:.1f} s "
                  f"wall, {b['cpu_s']:.1f} s CPU (one process).", ""]
    return lines


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=["table2", "replays", "all"], default="all")
    ap.add_argument("--sizes", type=int, nargs="+", default=[2500, 5000, 10000])
    ap.add_argument("--fig-jobs", type=int, default=None, help="jobs for Fig. 7-9 and the analysis (default: the largest size)")
    ap.add_argument("--history", type=int, default=3000)
    ap.add_argument("--window", type=float, default=1000.0, help="s over which the replayed jobs arrive")
    ap.add_argument("--nic", type=float, nargs="+", default=[1.0, 5.0, 10.0, 25.0, 50.0])
    ap.add_argument("--shares", type=float, nargs="+", default=[0.8, 0.6, 0.4, 0.2, 0.0])
    ap.add_argument("--taus", type=float, nargs="+", default=[0.0, 1.0, 10.0, 100.0])
    ap.add_argument("--big", type=int, default=100_000, help="time an A-SRPT replay of this many jobs (0: skip)")
    ap.add_argument("--philly", type=int, default=10_000, help="replay the first N Philly jobs (0: skip)")
    ap.add_argument("--data-dir", default=os.environ.get("SCHEDCAST_DATA", str(ROOT.parent / "shared" / "data")))
    ap.add_argument("--models", nargs="+", default=MODELS)
    ap.add_argument("--cases", type=int, default=20)
    ap.add_argument("--gpus", type=int, default=16)
    ap.add_argument("--servers", type=int, default=6)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(f"CPU {platform.processor() or platform.machine()}, Python {platform.python_version()}")
    command = "python benchmarks/bench_asrpt.py " + " ".join(sys.argv[1:] if argv is None else argv)
    t0, c0 = time.perf_counter(), time.process_time()
    t2 = table2(args.models, args.cases, args.gpus, args.servers, args.seed) if args.only in ("table2", "all") else {}
    rp = replays(args) if args.only in ("replays", "all") else None
    write_report(t2, args, command.strip(), rp, time.perf_counter() - t0, time.process_time() - c0)


if __name__ == "__main__":
    main()
