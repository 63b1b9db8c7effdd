"""Lucid evaluation (ASPLOS '23): Table 4, Fig. 9 (per-VC queueing), Table 5 (large vs small jobs),
Fig. 11 ablations, GPU utilisation with / without packing, share of jobs finished while profiling,
scheduling latency, and the interpretability figures (Figs. 6-7).

    python benchmarks/bench_lucid.py                  # ~10 minutes on 2 cores
    python benchmarks/bench_lucid.py --jobs 5000      # smaller synthetic traces

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
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from evaluation.metrics import check_identities, evaluate  # noqa: E402
from features.paths import data_dir  # noqa: E402
from features.traces import load_trace  # noqa: E402
from features.traces.synthetic import generate, load_preset  # noqa: E402
from sim import simulate  # noqa: E402
from sim.cluster import load_cluster  # noqa: E402
from sim.workload import build_workload  # noqa: E402

BASELINES = ["fifo", "sjf", "qssf", "horus", "tiresias"]
ABLATIONS = ["lucid-nobinder", "lucid-noshare", "lucid-noestimator", "lucid-nospace"]


def venus_shaped(jobs: int, seed: int, data):
    """Synthetic Helios-like jobs on Venus' real VC sizes: each job's VC drawn in proportion to size."""
    cluster = load_cluster("venus", data)
    spec = load_preset("earth", jobs=jobs, num_vcs=len(cluster.partitions))
    table = generate(spec, seed=seed)
    sizes = np.array([p.gpus for p in cluster.partitions], dtype=float)
    rng = np.random.default_rng(seed)
    vc_of_org = {f"vc{i:02d}": cluster.partitions[k].name
                 for i, k in enumerate(rng.choice(len(sizes), size=spec.num_vcs, p=sizes / sizes.sum()))}
    table.frame["org"] = table.frame["org"].map(vc_of_org).astype("string")
    # Jobs larger than their VC are rejected (and counted) by the workload layer.
    return table, cluster


def workloads(args) -> dict:
    data = data_dir(args.data_dir)
    philly = load_trace(data / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz")
    out = {"philly-pool": build_workload(philly, load_cluster("philly-pool", data)),
           "philly-vc": build_workload(philly, load_cluster("philly-vc", data))}
    table, cluster = venus_shaped(args.jobs, args.seed, data)
    out["venus-shaped"] = build_workload(table, cluster)
    from bench_lazer import sized_for_load

    for preset in ("earth", "saturn"):
        spec = load_preset(preset, jobs=args.jobs)
        table = generate(spec, seed=args.seed)
        cluster = load_cluster(spec.cluster, data)
        if args.offered_load:
            cluster = sized_for_load(table.frame, cluster, args.offered_load)
        out[f"{preset}@load{args.offered_load:g}" if args.offered_load else preset] = build_workload(table, cluster)
    return out


def run(w, spec):
    r = simulate(w, spec, time_decisions=True)
    ev = evaluate(r)
    check_identities(ev["jobs"])
    d = np.asarray(r.decision_seconds) * 1e3
    ev["summary"]["decision_p99_ms"] = float(np.percentile(d, 99)) if len(d) else float("nan")
    ev["stats"] = r.policy_stats
    return ev


def latency_with_queue(queued: int = 2048, nodes: int = 64, seed: int = 0) -> dict:
    """Lucid's orchestrator + binder decision time with ``queued`` jobs waiting in one VC (the paper
    claims < 3 ms at 2,048). The cluster is filled with long jobs at t=0, then ``queued`` more arrive;
    every later completion triggers a scheduling pass over the whole queue (try start, then pack;
    at most ``Lucid.MAX_FAILED_PACKS`` failed packing attempts per pass)."""
    from features.jobtable import LoadReport, finalize
    from sim.cluster import Cluster, Partition
    from sim.policies.lucid import Lucid

    rng = np.random.default_rng(seed)
    fill = nodes  # one 8-GPU job per node, ending at spread times
    n = fill + queued + 256
    gpus = np.concatenate([np.full(fill, 8), rng.choice([1, 2, 4, 8], size=n - fill, p=[.6, .2, .1, .1])])
    submit = np.concatenate([np.zeros(fill), np.sort(rng.uniform(1, 100, size=n - fill))])
    duration = np.concatenate([rng.uniform(3600, 7 * 86400, size=fill), rng.lognormal(8, 1.5, size=n - fill)])
    frame = pd.DataFrame({"job_id": [f"j{i}" for i in range(n)], "submit_time": submit, "submit_ts": pd.NaT,
                          "duration": duration, "num_gpus": gpus})
    table = finalize(frame, LoadReport(source="latency", format="synthetic", rows_read=n), path="latency")
    w = build_workload(table, Cluster("latency", [Partition("vc", [8] * nodes, ["x"] * nodes)]))
    seen: list[tuple[int, float]] = []
    original = Lucid.schedule

    def timed(self):
        size = len(self.queue) if not self.is_profiler else -1
        t0 = time.perf_counter()
        original(self)
        seen.append((size, time.perf_counter() - t0))

    Lucid.schedule = timed
    try:
        # A profiler as large as the VC profiles the whole queue quickly, so the binder sees profiled jobs.
        r = simulate(w, f"lucid:profiler_nodes={nodes},profiler_from=extra,update_interval=0,dynamic=False")
    finally:
        Lucid.schedule = original
    at = np.array([sec for size, sec in seen if size >= queued]) * 1e3
    return {"queued >=": queued, "passes": len(at), "packs": r.policy_stats.get("lucid_packs", 0), "P50 ms": float(np.percentile(at, 50)),
            "P99 ms": float(np.percentile(at, 99)), "max ms": float(at.max())}


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
    ap.add_argument("--data-dir")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "lucid"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    prof = f"profiler_nodes={args.profiler_nodes}" + (",profiler_from=extra" if args.profiler_extra else "")
    lucid = f"lucid:initial=history,{prof}"
    rows, per_vc, sizes = [], [], []
    wls = workloads(args)
    for trace, w in wls.items():
        if args.traces and trace not in args.traces.split(","):
            continue
        specs = BASELINES + [lucid] + ([f"{a}:initial=history,{prof}" if a != "lucid-noestimator" else f"{a}:{prof}"
                                        for a in ABLATIONS] if trace in ("philly-vc", "venus-shaped") else [])
        print(f"\n{trace}: {len(w):,} jobs, {w.cluster.describe()}", flush=True)
        for spec in specs:
            ts = time.perf_counter()
            ev = run(w, spec)
            s, name = ev["summary"], spec.split(":")[0]
            rows.append({"trace": trace, "policy": name, "avg JCT h": s["jct_mean"] / 3600,
                         "avg queue h": s["wait_mean"] / 3600, "P99.9 queue h": s["wait_p99.9"] / 3600,
                         "GPU util %": 100 * s["gpu_utilisation"], "decision P99 ms": s["decision_p99_ms"],
                         "packs": ev["stats"].get("lucid_packs", 0),
                         "done while profiling %": 100 * ev["stats"].get("lucid_finished_in_profiler", 0) / len(w),
                         "sim s": time.perf_counter() - ts})
            for _, r in ev["by_partition"].iterrows():
                per_vc.append({"trace": trace, "policy": name, "vc": r["partition"], "jobs": r["jobs"],
                               "avg queue h": r["wait_mean"] / 3600})
            for _, r in ev["by_size"].iterrows():
                sizes.append({"trace": trace, "policy": name, "size": r["size"], "jobs": r["jobs"],
                              "avg JCT h": r["jct_mean"] / 3600, "avg queue h": r["wait_mean"] / 3600})
            print(f"  {name:<18} {rows[-1]['sim s']:6.1f} s  avg JCT {rows[-1]['avg JCT h']:.3f} h  "
                  f"avg queue {rows[-1]['avg queue h']:.4f} h", flush=True)
    table4, vc, size = pd.DataFrame(rows), pd.DataFrame(per_vc), pd.DataFrame(sizes)
    table4.to_csv(out / "table4.csv", index=False)
    vc.to_csv(out / "per_vc_queue.csv", index=False)
    size.to_csv(out / "large_small.csv", index=False)
    latency = pd.DataFrame([latency_with_queue(args.queued)])
    latency.to_csv(out / "latency.csv", index=False)
    figs = [] if args.skip_figures else interpretability(out, data_dir(args.data_dir))
    ratio = []
    for trace in table4["trace"].unique():
        t = table4[table4["trace"] == trace].set_index("policy")
        if "lucid" in t.index and "tiresias" in t.index:
            ratio.append({"trace": trace, "JCT Tiresias/Lucid": t.at["tiresias", "avg JCT h"] / t.at["lucid", "avg JCT h"],
                          "queue Tiresias/Lucid": t.at["tiresias", "avg queue h"] / max(t.at["lucid", "avg queue h"], 1e-9),
                          "P99.9 queue Tiresias/Lucid": t.at["tiresias", "P99.9 queue h"] /
                          max(t.at["lucid", "P99.9 queue h"], 1e-9)})
    ratio = pd.DataFrame(ratio)
    fmt = lambda v: f"{v:,.4g}"  # noqa: E731
    report = ["# Lucid evaluation", "", f"Command: `{' '.join(sys.argv)}`; total {time.perf_counter() - t0:.0f} s.",
              "", "## Table 4 (and ablations, utilisation, profiling share, decision latency)", "", "```",
              table4.to_string(index=False, float_format=fmt), "```", "", "## Tiresias / Lucid ratios", "", "```",
              ratio.to_string(index=False, float_format=fmt), "```", "", "## Large (>8 GPUs) vs small jobs (Table 5)",
              "", "```", size[size["policy"].isin(["tiresias", "lucid"])].to_string(index=False, float_format=fmt),
              "```", "", "## Per-VC average queueing (Fig. 9), philly-vc", "", "```",
              vc[(vc["trace"] == "philly-vc") & vc["policy"].isin(["tiresias", "lucid"])].pivot_table(
                  index="vc", columns="policy", values="avg queue h").to_string(float_format=fmt), "```", "",
              f"## Scheduling latency with >= {args.queued:,} jobs queued (one VC of 64 x 8 GPUs, binder on)", "",
              "```", latency.to_string(index=False, float_format=fmt), "```", "",
              "Figures: " + ", ".join(figs)]
    (out / "report.md").write_text("\n".join(report))
    print("\n" + table4.to_string(index=False, float_format=fmt))
    print("\n" + ratio.to_string(index=False, float_format=fmt))
    print("\n" + latency.to_string(index=False, float_format=fmt))
    print(f"\ntotal {time.perf_counter() - t0:.0f} s; wrote {out}/")


if __name__ == "__main__":
    main()
