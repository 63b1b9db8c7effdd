"""Lazer evaluation (DAC '26): Table 2, Fig. 3 breakdown, Fig. 8e BO efficiency, Fig. 8f delay.

    python benchmarks/bench_lazer.py                     # Philly + Earth/Saturn/Uranus at 20k jobs
    python benchmarks/bench_lazer.py --jobs 5000 --traces philly earth
    python benchmarks/bench_lazer.py --full              # presets at full size (427K/698K/329K jobs; long)
    python benchmarks/bench_lazer.py --speed             # Philly replay time and decision time only

Every job gets a model of Lazer's workload (ConvNeXt, EfficientNet, VGG19, ViT, Swin, Conformer, TNT;
larger jobs lean to larger models) and load / pause-and-save times from sim.profiles.CostModel's
defaults. Scaled-down presets keep the preset's arrival rate and cluster size, so the offered load is
the full trace's; only the span is shorter. Writes CSVs, plots and report.md to --out.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")  # one torch thread: two on two shared cores is far slower
warnings.filterwarnings("ignore", message="A not p.d., added jitter")

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's packages, not an installed copy's
    sys.path.insert(0, str(ROOT))

from evaluation.metrics import check_identities, evaluate  # noqa: E402
from features.paths import data_dir  # noqa: E402
from features.traces import load_trace  # noqa: E402
from features.traces.synthetic import generate, load_preset  # noqa: E402
from models.deferral import BODeferralPredictor, GridDeferral, RandomDeferral  # noqa: E402
from sim import simulate  # noqa: E402
from sim.cluster import load_cluster  # noqa: E402
from sim.engine import Engine  # noqa: E402
from sim.policies import get_policy  # noqa: E402
from sim.profiles import CostModel, ProfileCatalog  # noqa: E402
from sim.workload import build_workload  # noqa: E402

POLICIES = ["sjf", "srtf", "pollux-60", "muri-360", "optimus-600", "lazer", "lazer:protect_loading=True",
            "lazer:respect_wq=True", "lazer:protect_loading=True,respect_wq=True"]
_LABELS = {"sjf": "SJF", "srtf": "SRTF", "pollux-60": "Pollux", "muri-360": "Muri", "optimus-600": "Optimus",
           "lazer": "Lazer", "lazer:respect_wq=True": "Lazer+WQ", "lazer:protect_loading=True": "Lazer+PL",
           "lazer:protect_loading=True,respect_wq=True": "Lazer+PL+WQ"}


def label(policy: str) -> str:
    return _LABELS.get(policy, policy)


def workloads(args) -> dict:
    data = data_dir(args.data_dir)
    catalog, costs = ProfileCatalog.build("lazer", data), CostModel()
    out = {}
    for name in args.traces:
        if name == "philly":
            table = load_trace(data / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz")
            cluster = load_cluster("philly-pool", data)
        else:
            spec = load_preset(name, jobs=None if args.full else args.jobs)
            table = generate(spec, seed=args.seed)
            cluster = load_cluster(spec.cluster, data)
            if args.offered_load:
                cluster = sized_for_load(table.frame, cluster, args.offered_load)
        out[name] = build_workload(table, cluster, costs=costs, catalog=catalog, seed=args.seed)
    return out


def offered_load(frame: pd.DataFrame, gpus: int) -> float:
    """GPU-seconds of work / (submission span x GPUs)."""
    work = float((frame["duration"] * frame["num_gpus"].astype(float)).sum())
    span = float(frame["submit_time"].max() - frame["submit_time"].min()) or 1.0
    return work / (span * gpus)


def sized_for_load(frame: pd.DataFrame, cluster, target: float):
    """The same cluster with as many 8-GPU nodes as give the target offered load (at least enough nodes
    for the largest job)."""
    from sim.cluster import Cluster, Partition

    per_node = cluster.partitions[0].capacities[0]
    work = offered_load(frame, 1)
    nodes = max(int(np.ceil(work / (target * per_node))), int(np.ceil(frame["num_gpus"].max() / per_node)))
    part = Partition("default", [per_node] * nodes, [cluster.partitions[0].gpu_types[0]] * nodes)
    return Cluster(f"{cluster.name}@load{target:g}", [part], cluster.gpu_type)


def table2(results: dict) -> pd.DataFrame:
    rows = []
    for trace, runs in results.items():
        for policy, ev in runs.items():
            s = ev["summary"]
            rows.append({"trace": trace, "policy": label(policy),
                         "JCT P50": s["jct_p50"] / 60, "JCT P95": s["jct_p95"] / 60,
                         "wait P50": s["wait_p50"] / 60, "wait P95": s["wait_p95"] / 60,
                         "futile P50": s["futile_p50"] / 60, "futile P95": s["futile_p95"] / 60,
                         "futile total h": s["futile_total"] / 3600, "preemptions": s["preemptions"],
                         "delay mean ms": s.get("decision_mean_ms"), "delay P99 ms": s.get("decision_p99_ms"),
                         "preempt-decision mean ms": s.get("lazer_decision_mean_ms"),
                         "preempt-decision P99 ms": s.get("lazer_decision_p99_ms"),
                         "BO-decision P99 ms": s.get("bo_decision_p99_ms"),
                         "sim s": s["sim_seconds"]})
    return pd.DataFrame(rows)


def breakdown(results: dict) -> pd.DataFrame:
    rows = []
    for trace, runs in results.items():
        for policy, ev in runs.items():
            j = ev["jobs"]
            rows.append({"trace": trace, "policy": label(policy), **{k: j[k].mean() / 60 for k in
                                                                       ("wait", "load", "train", "save")}})
    return pd.DataFrame(rows)


def plot_breakdown(frame: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    traces = list(dict.fromkeys(frame["trace"]))
    fig, axes = plt.subplots(1, len(traces), figsize=(4 * len(traces), 3.8), squeeze=False)
    colors = {"wait": "#d95f02", "load": "#7570b3", "train": "#1b9e77", "save": "#e7298a"}
    for ax, trace in zip(axes[0], traces):
        sub = frame[frame["trace"] == trace]
        bottom = np.zeros(len(sub))
        for part, color in colors.items():
            ax.bar(sub["policy"], sub[part], bottom=bottom, color=color, label=part)
            bottom += sub[part].to_numpy()
        ax.set_title(trace)
        ax.set_ylabel("mean time per job (min)")
        ax.tick_params(axis="x", rotation=45)
    axes[0][0].legend(fontsize=8)
    fig.suptitle("JCT breakdown (wait / load / train / pause-save)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def bo_efficiency(workload, n_contexts: int, evaluations: int, seed: int) -> tuple[pd.DataFrame, dict]:
    """Fig. 8e: best f(X|c) found within N evaluations by BO, random search and grid search.

    Decision situations are recorded from a replay with the longest deferral (100 s), which observes
    for each decision the first threat arrival a* in (t0, t0 + 100 + l]. Offline, for a context with
    a threat at F* = a* - t0: F(X) = F* if F* <= X + l else 0, and f(X|c) = |X - F(X)|. Each searcher
    then gets `evaluations` evaluations of f for that fixed context.
    """
    # Not a scheduling result: the replay only records the deferral predictor's decision situations
    # (the policy objects' observations), so it runs the Engine itself rather than the replay path.
    _, factory, _ = get_policy("lazer:deferral=100")
    engine = Engine(workload, factory)
    engine.run()
    obs = [o for p in engine.policies for o in p.observations if o[2] > 0]
    if not obs:
        return pd.DataFrame(), {"contexts": 0}
    pick = np.linspace(0, len(obs) - 1, min(n_contexts, len(obs))).round().astype(int)
    curves = {"BO": [], "random": [], "grid": []}
    for k, i in enumerate(pick):
        context, _, f_star, _ = obs[i]
        load = context[2]

        def f(x: float) -> float:
            F = f_star if f_star <= x + load else 0.0
            return abs(x - F)

        for name, searcher in (("BO", BODeferralPredictor(seed=seed + k)), ("random", RandomDeferral(seed=seed + k)),
                               ("grid", GridDeferral())):
            best, curve = np.inf, []
            for _ in range(evaluations):
                x = searcher.suggest(context)
                value = f(x)
                searcher.observe(context, x, value)
                best = min(best, value)
                curve.append(best)
            curves[name].append(curve)
    frame = pd.DataFrame({name: np.mean(c, axis=0) for name, c in curves.items()})
    frame.index = np.arange(1, evaluations + 1)
    frame.index.name = "evaluations"
    return frame, {"contexts": int(len(pick)), "decisions_with_threat": len(obs)}


def plot_bo(frame: pd.DataFrame, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for col in frame.columns:
        ax.plot(frame.index, frame[col], label=col)
    ax.set_xlabel("evaluations")
    ax.set_ylabel("best f(X|c) found (s), mean over contexts")
    ax.set_yscale("symlog", linthresh=1.0)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


SPEED_POLICIES = ["srtf", "lazer", "lazer:protect_loading=True"]


def _ms(values, q: float) -> float:
    a = np.asarray(values, dtype=float)
    return float(np.percentile(a, q) * 1e3) if len(a) else float("nan")


def speed(args) -> pd.DataFrame:
    """Philly replay (--costs lazer) per policy: wall and CPU seconds, time per scheduling call, and
    for Lazer the time of each preemption decision that asked the deferral predictor (wall and CPU:
    on a shared machine wall times include waiting for a core)."""
    args.traces = ["philly"]
    w = workloads(args)["philly"]
    rows = []
    for policy in args.policies if args.policies != POLICIES else SPEED_POLICIES:
        # Engine speed: the timed call is the simulator alone (no evaluation or identity checks), so it
        # stays on sim.simulate; the JCT / futile / preemption columns only identify the timed replay
        # (the scheduling results are bench_lazer's Table 2 and the ledger, on pipelines.replay.run_replay).
        t0, c0 = time.perf_counter(), time.process_time()
        r = simulate(w, policy, seed=args.seed, time_decisions=True)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        s = evaluate(r)["summary"]
        st = r.policy_stats
        pw = st.get("lazer_predicted_decision_times", [])
        pc = st.get("lazer_predicted_decision_cpu_times", [])
        rows.append({"policy": label(policy), "replay s": wall, "replay CPU s": cpu,
                     "call P50 ms": _ms(r.decision_seconds, 50), "call P99 ms": _ms(r.decision_seconds, 99),
                     "call max ms": _ms(r.decision_seconds, 100), "BO decisions": len(pw),
                     "decision P50 ms": _ms(pw, 50), "decision P99 ms": _ms(pw, 99), "decision max ms": _ms(pw, 100),
                     "decision CPU P50 ms": _ms(pc, 50), "decision CPU P99 ms": _ms(pc, 99),
                     "decision CPU max ms": _ms(pc, 100), "GP fits": st.get("bo_fits", 0),
                     "GP fit s": st.get("bo_fit_seconds", 0.0), "JCT mean h": s["jct_mean"] / 3600,
                     "futile total h": s["futile_total"] / 3600, "preemptions": s["preemptions"]})
        print(f"  {policy:<28} {wall:6.1f} s (CPU {cpu:5.1f} s)", flush=True)
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", nargs="+", default=["philly", "earth", "saturn", "uranus"])
    ap.add_argument("--jobs", type=int, default=20_000, help="jobs per synthetic preset (scaled-down run)")
    ap.add_argument("--full", action="store_true", help="presets at full size")
    ap.add_argument("--policies", nargs="+", default=POLICIES)
    ap.add_argument("--offered-load", type=float, default=None,
                    help="synthetic presets: shrink the cluster to this offered load (e.g. 0.9) instead of "
                         "the size in cluster_summary.csv")
    ap.add_argument("--bo-contexts", type=int, default=10)
    ap.add_argument("--evaluations", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--speed", action="store_true",
                    help="only time the Philly replay of srtf, lazer and lazer:protect_loading=True (or --policies)")
    ap.add_argument("--data-dir")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "lazer"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t_all = time.perf_counter()
    if args.speed:
        frame = speed(args)
        frame.to_csv(out / "speed.csv", index=False)
        fmt = lambda v: f"{v:,.2f}" if isinstance(v, float) else str(v)  # noqa: E731
        text = frame.to_string(index=False, float_format=fmt)
        (out / "speed.md").write_text(f"# Lazer speed (Philly, --costs lazer)\n\nCommand: `{' '.join(sys.argv)}`; "
                                      f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end.\n\n"
                                      f"```\n{text}\n```\n")
        print("\n" + text + f"\n\nwrote {out}/speed.csv, speed.md")
        return
    wls = workloads(args)
    results: dict = {}
    stats: dict = {}
    for trace, w in wls.items():
        results[trace] = {}
        print(f"\n{trace}: {len(w):,} jobs on {w.cluster.describe()}; offered load "
              f"{offered_load(w.frame.assign(num_gpus=w.gpus), w.cluster.gpus):.2f}; mean load {np.mean(w.load_time):.0f} s, "
              f"mean save {np.mean(w.save_time):.0f} s", flush=True)
        for policy in args.policies:
            from pipelines.replay import ReplaySpec, prepare_replay, run_replay  # the one replay path

            replay = ReplaySpec(policy=policy, seed=args.seed, failures="none", time_decisions=True)
            done = run_replay(replay, prepare_replay(replay, built=(None, w)))  # evaluated, identities checked
            r, ev = done.result, done.evaluation
            d = np.asarray(r.decision_seconds)
            ev["summary"]["decision_mean_ms"] = float(d.mean() * 1e3)
            ev["summary"]["decision_p99_ms"] = float(np.percentile(d, 99) * 1e3)
            lz = np.asarray(r.policy_stats.pop("lazer_decision_times", []) or [np.nan])
            ev["summary"]["lazer_decision_mean_ms"] = float(np.nanmean(lz) * 1e3)
            ev["summary"]["lazer_decision_p99_ms"] = float(np.nanpercentile(lz, 99) * 1e3)
            bo = r.policy_stats.pop("lazer_predicted_decision_times", [])
            r.policy_stats.pop("lazer_predicted_decision_cpu_times", None)
            ev["summary"]["bo_decision_p99_ms"] = _ms(bo, 99)
            results[trace][policy] = ev
            stats[f"{trace}/{policy}"] = r.policy_stats
            print(f"  {policy:<12} {r.wall_seconds:7.1f} s  JCT P50 {ev['summary']['jct_p50'] / 60:8.1f} min  "
                  f"futile total {ev['summary']['futile_total'] / 3600:7.2f} h", flush=True)
    t2 = table2(results)
    bd = breakdown(results)
    t2.to_csv(out / "table2.csv", index=False)
    bd.to_csv(out / "breakdown.csv", index=False)
    plot_breakdown(bd, out / "breakdown.png")
    first = next(iter(wls))
    bo, bo_meta = bo_efficiency(wls[first], args.bo_contexts, args.evaluations, args.seed)
    if len(bo):
        bo.to_csv(out / "bo_efficiency.csv")
        plot_bo(bo, out / "bo_efficiency.png")
    fmt = lambda v: f"{v:,.2f}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["# Lazer evaluation", "", f"Command: `{' '.join(sys.argv)}`; total {time.perf_counter() - t_all:.0f} s.",
             "", "## Table 2 (minutes; delay = time per scheduling call; preempt-decision = Lazer's orchestrator + predictor per decision)", "",
             "```", t2.to_string(index=False, float_format=fmt), "```",
             "", "## JCT breakdown, mean minutes per job (Fig. 3)", "", bd.to_string(index=False, float_format=fmt),
             "", f"## BO efficiency on {first} (Fig. 8e): best f found, mean over {bo_meta.get('contexts')} contexts",
             ""]
    if len(bo):
        lines.append(bo.loc[[e for e in (1, 5, 10, 20, 50, 100) if e in bo.index]].to_string(float_format=fmt))
    lines += ["", "## Policy statistics", "", "```", json.dumps(stats, indent=1, default=float), "```"]
    (out / "report.md").write_text("\n".join(lines))
    print("\n" + t2.to_string(index=False, float_format=fmt))
    print("\n" + bd.to_string(index=False, float_format=fmt))
    if len(bo):
        print(f"\nBO efficiency ({bo_meta}):\n" + bo.loc[[e for e in (1, 5, 10, 20, 50, 100) if e in bo.index]]
              .to_string(float_format=fmt))
    print(f"\nwrote {out}/ (table2.csv, breakdown.csv/png, bo_efficiency.csv/png, report.md)")


if __name__ == "__main__":
    main()
