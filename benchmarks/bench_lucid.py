"""Lucid evaluation (ASPLOS '23): Table 4, Fig. 9 (per-VC queueing), Table 5 (large vs small jobs),
Fig. 11 ablations, GPU utilisation with / without packing, share of jobs finished while profiling,
scheduling latency, and the interpretability figures (Figs. 6-7).

    python benchmarks/bench_lucid.py                  # ~20 minutes on 2 cores
    python benchmarks/bench_lucid.py --jobs 5000 --seeds 1 --no-sensitivity   # a quick look

Traces: Philly on one pool (108 x 8) and per VC; a Venus-shaped setting (Venus VC sizes, synthetic jobs
spread over the VCs by size); Earth and Saturn presets scaled down (same arrival rate) on one pool sized
to --offered-load (at their real sizes they are almost idle and every policy ties).
Lucid runs with its own estimator (initial=history: mean duration of finished jobs of the same GPU
demand, then weekly retrained LightGBM) and a profiler of ``--profiler-nodes`` nodes (default 5 % of the
cluster) carved out of the cluster, so that every policy has the same GPUs.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's packages, not an installed copy's
    sys.path.insert(0, str(ROOT))

from evaluation.metrics import check_identities, evaluate  # noqa: E402
from features.paths import data_dir  # noqa: E402
from features.traces import load_trace  # noqa: E402
from features.traces.synthetic import generate, load_preset  # noqa: E402
from sim import simulate  # noqa: E402
from sim.cluster import load_cluster  # noqa: E402
from sim.workload import build_workload  # noqa: E402

BASELINES = ["fifo", "sjf", "qssf", "horus", "tiresias", "tiresias-rounds"]
SENSITIVITY = {  # label -> Lucid parameters added to the benchmark's Lucid spec
    "lucid (defaults)": "",
    "min_remaining=0": "min_remaining=0",
    "min_remaining=600": "min_remaining=600",
    "pair_ratio=inf": "pair_ratio=1e18",
    "G_SS fixed at 2": "dynamic=False",
    "no profiler": "profiler=False",
    "profiler added (not carved)": "profiler_from=extra",
    "no borrowing": "borrow_nodes=0",
    "trend forecast (no throughput model)": "forecast=trend",
    "1-node profiler": "profiler_nodes=1",
    "1-node profiler, FIFO order (nospace)": "profiler_nodes=1,space_aware=False",
}
ABLATIONS = ["lucid-nobinder", "lucid-noshare", "lucid-noestimator", "lucid-nospace"]


def venus_shaped(jobs: int, seed: int, data):
    """Synthetic Helios-like jobs on Venus' real VC sizes: each job's VC drawn in proportion to size
    (the same generator experiment specs name as ``pipelines.experiment:venus_shaped``)."""
    from pipelines.experiment import venus_shaped as generate_venus_shaped

    table = generate_venus_shaped({"cluster": "venus", "data_dir": data}, seed, jobs)
    # Jobs larger than their VC are rejected (and counted) by the workload layer.
    return table, load_cluster("venus", data)


def workloads(args) -> dict[str, list]:
    """trace -> workloads (one per seed for the synthetic traces; Philly is one trace)."""
    from bench_lazer import sized_for_load

    data = data_dir(args.data_dir)
    wanted = set(args.traces.split(",")) if args.traces else None
    out: dict[str, list] = {}
    if wanted is None or wanted & {"philly-pool", "philly-vc"}:
        philly = load_trace(data / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz")
        out = {"philly-pool": [build_workload(philly, load_cluster("philly-pool", data))],
               "philly-vc": [build_workload(philly, load_cluster("philly-vc", data))]}
    seeds = range(args.seed, args.seed + args.seeds)
    out["venus-shaped"] = [build_workload(*venus_shaped(args.jobs, seed, data)) for seed in seeds]
    for preset in ("earth", "saturn"):
        name = f"{preset}@load{args.offered_load:g}" if args.offered_load else preset
        out[name] = []
        for seed in seeds:
            spec = load_preset(preset, jobs=args.jobs)
            table = generate(spec, seed=seed)
            cluster = load_cluster(spec.cluster, data)
            if args.offered_load:
                cluster = sized_for_load(table.frame, cluster, args.offered_load)
            out[name].append(build_workload(table, cluster))
    return {k: v for k, v in out.items() if wanted is None or k in wanted}


def run(w, spec):
    from pipelines.replay import ReplaySpec, prepare_replay, run_replay  # the one replay path

    replay = ReplaySpec(policy=spec, failures="none", time_decisions=True)
    done = run_replay(replay, prepare_replay(replay, built=(None, w)))  # evaluated, identities checked
    r, ev = done.result, done.evaluation
    d = np.asarray(r.decision_seconds) * 1e3
    ev["summary"]["decision_p99_ms"] = float(np.percentile(d, 99)) if len(d) else float("nan")
    ev["stats"] = r.policy_stats
    return ev


def latency_with_queue(queued: int = 2048, nodes: int = 64, seed: int = 0) -> dict:
    """Lucid's decision time with ``queued`` jobs waiting (one source: the ledger's measurement)."""
    from pipelines.papers.lucid import decision_latency

    return decision_latency(queued=queued, nodes=nodes, seed=seed)


def binder_sensitivity(ws: list, prof: str) -> pd.DataFrame:
    """Lucid's defaults against one change at a time, averaged over the given traces."""
    rows = []
    for label, extra in SENSITIVITY.items():
        res = []
        for w in ws:
            spec = f"lucid:initial=history,{prof}" + (f",{extra}" if extra else "")  # later keys win
            ev = run(w, spec)
            res.append((ev["summary"]["jct_mean"] / 3600, ev["summary"]["wait_mean"] / 3600,
                        ev["summary"]["wait_p99.9"] / 3600, ev["stats"].get("lucid_packs", 0)))
        m = np.mean(res, axis=0)
        rows.append({"variant": label, "avg JCT h": m[0], "avg queue h": m[1], "P99.9 queue h": m[2], "packs": m[3]})
        print(f"  sensitivity {label:<28} avg JCT {m[0]:.3f} h  avg queue {m[1]:.3f} h", flush=True)
    return pd.DataFrame(rows)


def interpretability(out: Path, data) -> list[str]:
    """Figs. 6-7: the packing tree, the throughput GA2M's `hour` shape, one local duration explanation."""
    from features.series import load_throughput
    from pipelines import train as T

    written = []
    pk = T.train_packing(data)
    pk.figures["tree"].savefig(out / "packing_tree.png", dpi=120)
    written.append("packing_tree.png")
    th = T.train_throughput(load_throughput(data=data), algo="ebm")
    th.figures["shape_hour"].savefig(out / "throughput_hour_shape.png", dpi=120)
    written.append("throughput_hour_shape.png")
    du = T.train_duration(load_trace(data / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz"), algo="ebm")
    du.figures["local_explanation"].savefig(out / "duration_local_explanation.png", dpi=120)
    du.figures["shape_num_gpus"].savefig(out / "duration_gpu_shape.png", dpi=120)
    written += ["duration_local_explanation.png", "duration_gpu_shape.png"]
    return written


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=20_000)
    ap.add_argument("--profiler-nodes", default="auto", help="profiler size: nodes, or auto (5%% of the "
                    "cluster's nodes); carved out of the cluster unless --profiler-extra")
    ap.add_argument("--profiler-extra", action="store_true", help="add the profiler nodes to the cluster instead "
                    "(Lucid then has more GPUs than the baselines)")
    ap.add_argument("--offered-load", type=float, default=0.9, help="Earth / Saturn presets: cluster sized to this "
                    "offered load (0 = the sizes in cluster_summary.csv, which leave them almost idle)")
    ap.add_argument("--traces", help="comma-separated subset of: philly-pool, philly-vc, venus-shaped, "
                    "earth@load0.9, saturn@load0.9 (default: all)")
    ap.add_argument("--skip-figures", action="store_true", help="no interpretability figures (quicker)")
    ap.add_argument("--queued", type=int, default=2048, help="queue length for the decision-latency test")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--seeds", type=int, default=3, help="synthetic traces per setting (seeds seed..seed+N-1)")
    ap.add_argument("--no-sensitivity", dest="sensitivity", action="store_false",
                    help="skip the binder / profiler sensitivity runs on the saturn traces")
    ap.add_argument("--data-dir")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "lucid"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    prof = f"profiler_nodes={args.profiler_nodes}" + (",profiler_from=extra" if args.profiler_extra else "")
    lucid = f"lucid:initial=history,{prof}"
    runs, per_vc, sizes = [], [], []
    wls = workloads(args)
    for trace, ws in wls.items():
        specs = BASELINES + [lucid] + ([f"{a}:initial=history,{prof}" if a != "lucid-noestimator" else f"{a}:{prof}"
                                        for a in ABLATIONS] if trace in ("philly-vc", "venus-shaped") else [])
        print(f"\n{trace}: {len(ws)} trace(s) of {len(ws[0]):,} jobs, {ws[0].cluster.describe()}", flush=True)
        for spec in specs:
            name = spec.split(":")[0]
            for seed, w in enumerate(ws):
                ts = time.perf_counter()
                ev = run(w, spec)
                s = ev["summary"]
                runs.append({"trace": trace, "policy": name, "seed": args.seed + seed, "avg JCT h": s["jct_mean"] / 3600,
                             "avg queue h": s["wait_mean"] / 3600, "P99.9 queue h": s["wait_p99.9"] / 3600,
                             "GPU held %": 100 * s["gpu_utilisation"], "sharing factor": s["gpu_sharing_factor"],
                             "decision P99 ms": s["decision_p99_ms"], "packs": ev["stats"].get("lucid_packs", 0),
                             "done while profiling %": 100 * ev["stats"].get("lucid_finished_in_profiler", 0) / len(w),
                             "nodes borrowed": ev["stats"].get("lucid_nodes_borrowed", 0),
                             "sim s": time.perf_counter() - ts})
                for _, r in ev["by_partition"].iterrows():
                    per_vc.append({"trace": trace, "policy": name, "seed": seed, "vc": r["partition"], "jobs": r["jobs"],
                                   "avg queue h": r["wait_mean"] / 3600})
                for _, r in ev["by_size"].iterrows():
                    sizes.append({"trace": trace, "policy": name, "seed": seed, "size": r["size"], "jobs": r["jobs"],
                                  "avg JCT h": r["jct_mean"] / 3600, "avg queue h": r["wait_mean"] / 3600})
            last = pd.DataFrame(runs[-len(ws):])
            print(f"  {name:<18} {last['sim s'].sum():6.1f} s  avg JCT {last['avg JCT h'].mean():.3f} h  "
                  f"avg queue {last['avg queue h'].mean():.4f} h ({', '.join(f'{v:.3f}' for v in last['avg queue h'])})",
                  flush=True)
    runs = pd.DataFrame(runs)
    runs.to_csv(out / "table4_runs.csv", index=False)
    table4 = runs.drop(columns="seed").groupby(["trace", "policy"], sort=False).mean().reset_index()
    table4.insert(2, "traces", runs.groupby(["trace", "policy"], sort=False).size().to_numpy())
    vc = pd.DataFrame(per_vc).groupby(["trace", "policy", "vc"], sort=False).mean(numeric_only=True).reset_index()
    size = pd.DataFrame(sizes).groupby(["trace", "policy", "size"], sort=False).mean(numeric_only=True).reset_index()
    table4.to_csv(out / "table4.csv", index=False)
    vc.drop(columns="seed").to_csv(out / "per_vc_queue.csv", index=False)
    size = size.drop(columns="seed")
    size.to_csv(out / "large_small.csv", index=False)
    sensitivity = pd.DataFrame()
    if args.sensitivity and any(t.startswith("saturn") for t in wls):
        sensitivity = binder_sensitivity(next(v for k, v in wls.items() if k.startswith("saturn")), prof)
        sensitivity.to_csv(out / "sensitivity.csv", index=False)
    latency = pd.DataFrame([latency_with_queue(args.queued)])
    latency.to_csv(out / "latency.csv", index=False)
    figs = [] if args.skip_figures else interpretability(out, data_dir(args.data_dir))
    ablation = table4[table4["policy"].isin(["lucid"] + ABLATIONS)]
    ablation = ablation[ablation.groupby("trace")["policy"].transform("size") > 1]
    if len(ablation):
        from evaluation.report import plot_grouped_bars

        plot_grouped_bars(ablation, "trace", "policy", ["avg JCT h", "avg queue h"], out / "ablations.png",
                          "Lucid ablations (Fig. 11), relative to Lucid", normalise_to="lucid")
        figs.append("ablations.png")
    ratio = []
    for trace in table4["trace"].unique():
        t = table4[table4["trace"] == trace].set_index("policy")
        for base in ("tiresias", "tiresias-rounds"):
            if "lucid" in t.index and base in t.index:
                ratio.append({"trace": trace, "baseline": base,
                              "JCT base/Lucid": t.at[base, "avg JCT h"] / t.at["lucid", "avg JCT h"],
                              "queue base/Lucid": t.at[base, "avg queue h"] / max(t.at["lucid", "avg queue h"], 1e-9),
                              "P99.9 queue base/Lucid": t.at[base, "P99.9 queue h"] /
                              max(t.at["lucid", "P99.9 queue h"], 1e-9)})
    ratio = pd.DataFrame(ratio)
    fmt = lambda v: f"{v:,.4g}"  # noqa: E731
    report = ["# Lucid evaluation", "", f"Command: `{' '.join(sys.argv)}`; total {time.perf_counter() - t0:.0f} s.",
              "", "## Table 4 (and ablations, utilisation, profiling share, decision latency)", "",
              "Means over the traces of each setting (`traces`: one per seed; per-seed rows in table4_runs.csv). "
              "`GPU held %`: physical GPUs held, first submission to last completion (including the drain of "
              "30-day jobs); `sharing factor`: job-GPUs served per held GPU.", "", "```",
              table4.to_string(index=False, float_format=fmt), "```", "", "## Baseline / Lucid ratios", "", "```",
              ratio.to_string(index=False, float_format=fmt), "```", "", "## Large (>8 GPUs) vs small jobs (Table 5)",
              "", "```", size[size["policy"].isin(["tiresias", "lucid"])].to_string(index=False, float_format=fmt),
              "```", "", "## Per-VC average queueing (Fig. 9), philly-vc", "", "```",
              vc[(vc["trace"] == "philly-vc") & vc["policy"].isin(["tiresias", "lucid"])].pivot_table(
                  index="vc", columns="policy", values="avg queue h").to_string(float_format=fmt), "```", "",
              f"## Scheduling latency with >= {args.queued:,} jobs queued (one VC of 64 x 8 GPUs, binder on)", "",
              "```", latency.to_string(index=False, float_format=fmt), "```", "",
              "## Binder and profiler sensitivity (saturn traces)", "", "```",
              sensitivity.to_string(index=False, float_format=fmt) if len(sensitivity) else "(not run)", "```", "",
              "Figures: " + ", ".join(figs)]
    (out / "report.md").write_text("\n".join(report))
    print("\n" + table4.to_string(index=False, float_format=fmt))
    print("\n" + ratio.to_string(index=False, float_format=fmt))
    print("\n" + latency.to_string(index=False, float_format=fmt))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; wrote {out}/")


if __name__ == "__main__":
    main()
