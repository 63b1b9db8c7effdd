"""GFS benchmark (issue 12): Table 5 (Low / Medium / High spot load), Table 6 (quota horizon H), Tables 8-10
(ablations), the real Alibaba v2023 pods, the quota over time, PTS decision time with >= 2,000 queued tasks
and a full High-load replay timed with the share spent forecasting.

    python benchmarks/bench_gfs.py                       # scaled (1/8 of the A100 pool), about 4-6 min on 2 cores
    python benchmarks/bench_gfs.py --full                # the 432-node A100 pool (3,456 GPUs), longer
    python benchmarks/bench_gfs.py --only table5 speed   # some sections

Writes benchmarks/results/gfs/report.md, results.json and quota.png. Workloads: the GFS-shaped generator
(features/traces/gfs.py; presets configs/workloads/gfs-{low,medium,high}.yaml): HP per organisation follows the
Helios Earth per-VC series, spot at x1 / x2 / x4 the base rate, a 24 h HP-only warm-up (12 h scaled) that the
metrics exclude. Scaled runs use configs/clusters/gfs-a100-small.yaml (54 of the 432 A100 nodes) with the
generator's cluster_gpus = 432, so loads are the same shares of the cluster as at full size. Metrics:
evaluation/gfs_metrics.py. Figures depend on the machine; the report states CPU, Python and the load.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's packages, not an installed copy's
    sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from evaluation.gfs_metrics import gfs_summary, plot_quota  # noqa: E402
from features.traces.gfs import GfsSpec, generate, load_v2023_hp_spot  # noqa: E402
from sim import simulate  # noqa: E402
from sim.cluster import load_cluster  # noqa: E402
from sim.workload import build_workload  # noqa: E402

OUT = ROOT / "benchmarks" / "results" / "gfs"
LEVELS = {"Low": 1, "Medium": 2, "High": 4}
BASELINES = ["gfs", "yarn-cs", "chronus", "lyra", "fgd"]
ABLATIONS = ["gfs", "gfs-e", "gfs-d", "gfs-s", "gfs-p", "gfs-sp"]
COLUMNS = [("hp_jct_mean", "HP JCT mean (h)", 3600), ("hp_jct_p99", "HP JCT P99 (h)", 3600),
           ("hp_jqt_mean", "HP JQT (s)", 1), ("spot_jct_mean", "spot JCT (h)", 3600),
           ("spot_jqt_mean", "spot JQT (h)", 3600), ("evict_rate_runs", "e runs %", 0.01),
           ("evict_rate_hours", "e GPU-h %", 0.01), ("alloc_mean", "alloc %", 0.01),
           ("quota_coverage", "coverage %", 0.01), ("wall_seconds", "replay s", 1)]


def workload_for(multiplier: float, full: bool, days: float, seed: int = 0):
    gpus = 3456 if full else 432
    spec = GfsSpec(spot_multiplier=multiplier, cluster_gpus=gpus, days=days, warmup_hours=24 if full else 12)
    table = generate(spec, seed=seed)
    return build_workload(table, load_cluster("gfs-a100" if full else "gfs-a100-small"))


def run(w, policy: str, seed: int = 0) -> tuple[dict, object]:
    from pipelines.replay import ReplaySpec, prepare_replay, run_replay  # the one replay path

    replay = ReplaySpec(policy=policy, seed=seed, failures="none")
    r = run_replay(replay, prepare_replay(replay, built=(None, w))).result
    s = gfs_summary(r)
    s["policy"] = policy
    return s, r


def table(rows: list[dict], title: str) -> str:
    head = "| policy | " + " | ".join(c[1] for c in COLUMNS) + " |"
    out = [f"**{title}**", "", head, "|" + "---|" * (len(COLUMNS) + 1)]
    for row in rows:
        cells = []
        for key, _, unit in COLUMNS:
            v = row.get(key)
            cells.append("-" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v / unit:.3g}")
        out.append(f"| {row['policy']} | " + " | ".join(cells) + " |")
    return "\n".join(out) + "\n"


def section_table5(args, results, report, keep):
    for level, mult in LEVELS.items():
        w = workload_for(mult, args.full, args.days)
        rows = []
        for pol in BASELINES:
            s, r = run(w, pol)
            rows.append(s)
            if level == "High" and pol == "gfs":
                keep["gfs"] = r
        results[f"table5/{level}"] = rows
        report.append(table(rows, f"Table 5 analogue, {level} spot load (x{mult}; {len(w)} tasks, "
                                  f"{sum(c == 'spot' for c in w.job_class)} spot)"))


def section_table6(args, results, report, keep):
    w = workload_for(LEVELS["High"], args.full, args.days)
    rows = []
    for H in (1, 2, 4):
        s, _ = run(w, f"gfs:H={H}")
        rows.append(s)
    results["table6"] = rows
    report.append(table(rows, "Table 6 analogue, quota horizon H (hours), High load"))


def section_ablations(args, results, report, keep):
    w = workload_for(LEVELS["High"], args.full, args.days)
    rows = []
    for pol in ABLATIONS + ["gfs:summed=true"]:
        s, r = run(w, pol)
        rows.append(s)
        if pol == "gfs-e":
            keep["gfs-e"] = r
        if pol == "gfs":
            keep.setdefault("gfs", r)
    results["ablations"] = rows
    report.append(table(rows, "Tables 8-10 analogue, ablations at High load (gfs-e: previous-week peak; gfs-d: "
                              "eta fixed; gfs-s: best-fit placement; gfs-p: random preemption; gfs-sp: both)"))


def section_v2023(args, results, report, keep):
    from features.paths import data_dir

    path = Path(data_dir()) / "alibaba/gpu_v2023/openb_pod_list_default.csv"
    if not path.exists():
        report.append("v2023: shared data not found, skipped\n")
        return
    import pandas as pd

    t = load_v2023_hp_spot(path)
    cluster = load_cluster("alibaba-v2023")
    if args.v2023_copies > 1:  # FGD-style inflation: repeat the pod list (ids suffixed, seeded jitter)
        rng = np.random.default_rng(0)
        parts = []
        for c in range(args.v2023_copies):
            part = t.frame.copy()
            part["job_id"] = part["job_id"].astype(str) + (f"-{c}" if c else "")
            part["submit_time"] = part["submit_time"] + (rng.uniform(0, 600, len(part)) if c else 0.0)
            parts.append(part)
        t.frame = pd.concat(parts).sort_values("submit_time", kind="stable").reset_index(drop=True)
    f = t.frame
    demand = np.where(f["gpu_fraction"].notna(), f["gpu_fraction"].fillna(0) * f["num_gpus"], f["num_gpus"])
    cap = sum(p.gpus for p in cluster.partitions)
    sub, dur = f["submit_time"].to_numpy(float), f["duration"].to_numpy(float)

    def busy(k: float) -> float:
        """Mean GPU demand of the pods alive (without queueing) over the middle 90 % of compressed arrivals."""
        st = sub / k
        grid = np.linspace(*np.percentile(st, [5, 95]), 200)
        return float(np.mean([demand[(st <= g) & (st + dur > g)].sum() for g in grid])) / cap

    offered = busy(1.0)
    lo, hi = 1.0, 1e6
    for _ in range(40):  # the compression giving the target demand (monotone in k), by bisection
        mid = (lo * hi) ** 0.5
        lo, hi = (mid, hi) if busy(mid) < args.v2023_load else (lo, mid)
    k = hi
    f["submit_time"] = f["submit_time"] / k  # compress arrivals (durations kept)
    w = build_workload(t, cluster)
    rows = []
    for pol in BASELINES + ["fgd:preempt=false"]:
        s, _ = run(w, pol)
        rows.append(s)
    results["v2023"] = rows
    report.append(table(rows, f"Real Alibaba v2023 pods (qos LS = HP, BE = spot; {len(w)} pods on the v2023 node "
                              f"list, {w.report['jobs_rejected']} rejected; the pod list x{args.v2023_copies}; arrivals compressed x{k:.0f} so that "
                              f"the GPUs demanded by live pods average {args.v2023_load:g} of the cluster instead of "
                              f"{offered:.3f} over the middle 90 % of arrivals, durations kept)"))


def section_speed(args, results, report, keep):
    """PTS decision time with >= 2,000 queued tasks on the 432-node A100 pool."""
    import pandas as pd

    from features.jobtable import LoadReport, finalize
    from sim.engine import Engine
    from sim.policies import get_policy

    rng = np.random.default_rng(0)
    rows = [(0.0, 30 * 3600.0, 1, 8, "hp", "o0")] * 400  # 3,200 of 3,456 GPUs held by long HP tasks
    n_spot = 3000
    for t in np.sort(rng.uniform(0, 600, n_spot)):
        rows.append((float(t), 7200.0, 1, int(rng.choice([1, 2, 4, 8], p=[.55, .15, .15, .15])), "spot", "o1"))
    for t in np.arange(600.0, 7200.0, 10.0):
        rows.append((float(t), 3600.0, 1, int(rng.choice([1, 2, 4, 8])), "hp", f"o{int(rng.integers(2, 10))}"))
    rows.sort(key=lambda r: r[0])
    frame = pd.DataFrame({"job_id": [f"t{i}" for i in range(len(rows))], "submit_time": [r[0] for r in rows],
                          "submit_ts": pd.NaT, "duration": [r[1] for r in rows],
                          "num_gpus": [r[2] * r[3] for r in rows], "num_pods": [r[2] for r in rows],
                          "gpus_per_pod": [r[3] for r in rows], "job_class": [r[4] for r in rows],
                          "org": [r[5] for r in rows],
                          "checkpoint_interval": [3600.0 if r[4] == "spot" else np.nan for r in rows]})
    t = finalize(frame, LoadReport(source="speed", format="synthetic", rows_read=len(frame)), path="speed", sort=False)
    w = build_workload(t, load_cluster("gfs-a100"))
    out = {}
    for name in ("gfs", "yarn-cs"):
        info, factory, params = get_policy(name)
        samples: list[tuple[int, float]] = []

        def timed_factory(factory=factory, samples=samples):
            pol = factory()
            inner = pol.schedule

            def schedule():
                q = pol.waiting_count()
                t0 = time.perf_counter()
                inner()
                samples.append((q, time.perf_counter() - t0))
            pol.schedule = schedule
            return pol

        Engine(w, timed_factory, policy_name=name).run()
        big = np.array([dt for q, dt in samples if q >= 2000])
        out[name] = {"calls_with_2000_queued": int(len(big)), "p50_ms": float(np.percentile(big, 50) * 1e3),
                     "p99_ms": float(np.percentile(big, 99) * 1e3), "max_ms": float(big.max() * 1e3),
                     "max_queue": int(max(q for q, _ in samples))}
    results["speed"] = out
    lines = ["**PTS decision time** (one `schedule()` call of the partition: HP pass with Alg. 2, then the spot "
             "pass; 432 x 8 A100 nodes, 400 long HP tasks, 3,000 spot tasks queued, an HP arrival every 10 s)", "",
             "| policy | calls with >= 2,000 queued | P50 ms | P99 ms | max ms | max queue |", "|---|---|---|---|---|---|"]
    for name, v in out.items():
        lines.append(f"| {name} | {v['calls_with_2000_queued']} | {v['p50_ms']:.3f} | {v['p99_ms']:.3f} | "
                     f"{v['max_ms']:.1f} | {v['max_queue']} |")
    report.append("\n".join(lines) + "\n")


def section_replay(args, results, report, keep):
    """A full-size High-load replay (3,456 GPUs) timed, with the SQA's forecasting share."""
    t0, c0 = time.perf_counter(), time.process_time()
    w = workload_for(LEVELS["High"], True, args.replay_days)
    gen_wall, gen_cpu = time.perf_counter() - t0, time.process_time() - c0
    t0, c0 = time.perf_counter(), time.process_time()
    r = simulate(w, "gfs")
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    fc = float(r.policy_stats.get("sqa_forecast_seconds", 0.0)) + float(r.policy_stats.get("sqa_fit_seconds", 0.0))
    s = gfs_summary(r)
    results["replay"] = {"tasks": len(w), "days": args.replay_days, "generate_wall_s": gen_wall,
                         "generate_cpu_s": gen_cpu, "replay_wall_s": wall, "replay_cpu_s": cpu,
                         "forecast_s": fc, "forecast_share": fc / wall if wall else 0.0,
                         "sqa_fits": r.policy_stats.get("sqa_fits"), "summary": s}
    report.append(f"**Full High-load replay**: {len(w):,} tasks ({args.replay_days:g} measured days + 24 h warm-up, "
                  f"3,456 GPUs): generating {gen_wall:.1f} s wall / {gen_cpu:.1f} s CPU; replay under `gfs` "
                  f"{wall:.1f} s wall / {cpu:.1f} s CPU, of which forecasting and retraining (SQA) {fc:.2f} s "
                  f"({100 * fc / wall:.1f} %), {r.policy_stats.get('sqa_fits')} retrainings.\n")


def sqa_history(preset: str = "gfs-medium", seed: int = 0) -> tuple[np.ndarray, list[str], int]:
    """The hourly maxima of the HP GPUs per organisation that the SQA keeps in a ``preset`` replay (the largest
    history handed to its estimator's ``fit``), the organisations and the warm-up length in hours."""
    import yaml

    from pipelines.replay import ReplaySpec, WorkloadSource, prepare_replay, run_replay
    from sim.policies.gfs import estimators

    seen: list[np.ndarray] = []
    real_fit = estimators.Persistence.fit

    def recording_fit(self, hist):
        seen.append(np.array(hist))
        return real_fit(self, hist)

    estimators.Persistence.fit = recording_fit
    try:
        spec = ReplaySpec(policy="gfs:estimator=persistence", seed=seed, failures="none",
                          workload=WorkloadSource(synthetic=preset))
        run_replay(spec, prepare_replay(spec))
    finally:
        estimators.Persistence.fit = real_fit
    hist = max(seen, key=len)
    orgs = [f"org{i}" for i in range(hist.shape[1])]
    return hist, orgs, int(yaml.safe_load((ROOT / "configs" / "workloads" / f"{preset}.yaml").read_text())["warmup_hours"])


def epoch_validation(hist: np.ndarray, orgs: list[str], end: int, grid: list[tuple[int, int]],
                     seeds: tuple[int, ...] = (0, 1, 2), p: float = 0.9) -> list[dict]:
    """Time-based validation of the in-replay OrgLinear's epochs (first fit, warm starts): the replay's own
    schedule on ``hist[:end]`` only (retrain every 24 h from the first hour a fit is possible, each fit on the
    past only; score the next 24 one-hour-ahead forecasts). Scores: the pinball loss at ``p`` of the summed
    quantile (what the quota reads) and the MAE of the per-organisation mean, averaged over fits and seeds."""
    import time as _time

    from sim.policies.gfs.estimators import ModelEstimator, Persistence, z_value

    z = z_value(p)

    def score(make):
        losses, maes, cpu = [], [], 0.0
        for seed in seeds:
            est = make(seed)
            first = 48 + 1 + 24
            for t in range(((first + 23) // 24) * 24, end - 23, 24):
                c0 = _time.process_time()
                est.fit(hist[:t])
                cpu += _time.process_time() - c0
                for u in range(t, t + 24):
                    mu, sig = est.predict(hist[:u], u, 1)
                    q = float(np.sum(mu[:, 0] + z * (sig[:, 0] if sig is not None else 0.0)))
                    y = float(hist[u].sum())
                    losses.append(max(p * (y - q), (p - 1) * (y - q)))
                    maes.append(float(np.mean(np.abs(hist[u] - mu[:, 0]))))
        return {"ql_sum": float(np.mean(losses)), "mae": float(np.mean(maes)), "fit_cpu_s": cpu / len(seeds)}

    rows = [{"estimator": "persistence", **score(lambda seed: Persistence())}]
    for epochs, warm in grid:
        rows.append({"estimator": "orglinear", "epochs": epochs, "warm_epochs": warm,
                     **score(lambda seed: ModelEstimator("orglinear", orgs, 1, seed, epochs=epochs,
                                                         warm_epochs=warm))})
    return rows


def section_epochs(args, results, report, keep):
    """How the in-replay OrgLinear's epoch counts were chosen (time-based validation on the warm-up only)."""
    hist, orgs, warmup = sqa_history()
    grid = [(e, w) for e in (1, 2, 4, 8) for w in (1, 2, 4)]
    rows = epoch_validation(hist, orgs, warmup, grid)
    results["epochs"] = rows
    lines = ["| estimator | epochs | warm epochs | QL0.9 of the sum | MAE per org | fit CPU s |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['estimator']} | {r.get('epochs', '')} | {r.get('warm_epochs', '')} | {r['ql_sum']:.3f} | "
                     f"{r['mae']:.3f} | {r['fit_cpu_s']:.2f} |")
    report.append(f"**In-replay OrgLinear epochs** (gfs-medium SQA history, {hist.shape[1]} organisations, the "
                  f"{warmup} h HP-only warm-up only: retrain every 24 h, score the next 24 one-hour-ahead forecasts; "
                  f"mean of seeds 0-2):\n\n" + "\n".join(lines) + "\n")


SECTIONS = {"table5": section_table5, "table6": section_table6, "ablations": section_ablations,
            "v2023": section_v2023, "speed": section_speed, "replay": section_replay,
            "epochs": section_epochs}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--full", action="store_true", help="the 432-node A100 pool instead of its 1/8 subsample")
    p.add_argument("--days", type=float, default=2.0, help="measured days per replay (default 2)")
    p.add_argument("--replay-days", type=float, default=17.0, help="measured days of the timed full replay")
    p.add_argument("--v2023-load", type=float, default=0.8,
                   help="demand (share of the GPUs) the v2023 arrivals are compressed to")
    p.add_argument("--v2023-copies", type=int, default=4,
                   help="copies of the v2023 pod list, ids suffixed, arrivals jittered (all the pods of one copy at once "
                        "ask for 0.88 of the cluster's GPUs; fewer copies compress arrivals harder: x2 puts 90 %% of "
                        "them into 170 s)")
    p.add_argument("--only", nargs="*", choices=list(SECTIONS), help="sections to run (default: all)")
    p.add_argument("--out", default=str(OUT))
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    keep: dict = {}
    report = [f"# GFS benchmark\n\nCommand: `python benchmarks/bench_gfs.py {' '.join(argv or sys.argv[1:])}`  \n"
              f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python "
              f"{platform.python_version()}, load average {os.getloadavg()[0]:.1f} at start (shared machine: "
              f"wall times are inflated when it is loaded).  \nScale: "
              f"{'full A100 pool (432 x 8 GPUs)' if args.full else '1/8 of the A100 pool (54 x 8 GPUs, gfs-a100-small)'}"
              f", {args.days:g} measured days after the warm-up. Times in the tables exclude the warm-up tasks.\n"]
    for name in args.only or list(SECTIONS):
        t0 = time.perf_counter()
        SECTIONS[name](args, results, report, keep)
        print(f"{name}: {time.perf_counter() - t0:.1f} s", flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1, default=float))  # after every section
        (out / "report.md").write_text("\n".join(report))
    if keep:
        plot_quota({k: v for k, v in keep.items()}, str(out / "quota.png"))
        report.append("Quota over time (High load): `quota.png` (solid: quota Q_H; dotted: inventory f(p, H)).\n")
    (out / "results.json").write_text(json.dumps(results, indent=1, default=float))
    (out / "report.md").write_text("\n".join(report))
    print(f"wrote {out / 'report.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
