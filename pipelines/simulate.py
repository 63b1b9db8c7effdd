"""`schedcast simulate` and `schedcast demo`: build a workload, replay it under policies, write results."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

DEFAULT_POLICIES = ["fifo", "sjf", "srtf", "tiresias", "pollux-60"]


def _duration(text: str) -> float:
    """Seconds from '3600', '90m', '12h' or '2d'."""
    units = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
    text = text.strip().lower()
    if text and text[-1] in units:
        return float(text[:-1]) * units[text[-1]]
    return float(text)


def _add_workload_args(p: argparse.ArgumentParser) -> None:
    src = p.add_mutually_exclusive_group()
    src.add_argument("--trace", help="trace file (format guessed from the name unless --format)")
    src.add_argument("--synthetic", metavar="PRESET", help="seeded synthetic trace preset (earth, saturn, "
                     "uranus, demo, ...)")
    p.add_argument("--format", help="trace format (see `schedcast data formats`)")
    p.add_argument("--jobs", type=int, help="synthetic: number of jobs; trace: keep the first N jobs")
    p.add_argument("--cluster", help="built-in cluster name or YAML path (see `schedcast clusters`)")
    p.add_argument("--costs", default="none", metavar="CATALOG",
                   help="'none' (load/save times 0) or a profile catalog (lazer, lucid) giving each job a "
                        "model, load and pause-and-save times")
    p.add_argument("--default-gpus", type=int, help="GPU count for jobs whose trace has none")
    p.add_argument("--data-dir", help="shared data directory (default $SCHEDCAST_DATA or ../shared/data)")
    p.add_argument("--seed", type=int, default=0)


def _build_workload(args: argparse.Namespace):
    from features.traces import load_trace
    from features.traces.synthetic import load_preset, generate
    from sim.cluster import load_cluster
    from sim.profiles import CostModel, ProfileCatalog
    from sim.workload import build_workload

    if args.synthetic:
        spec = load_preset(args.synthetic, jobs=args.jobs)
        table = generate(spec, seed=args.seed)
        cluster_name = args.cluster or spec.cluster
        limit = None
    elif args.trace:
        table = load_trace(args.trace, args.format)
        cluster_name = args.cluster
        limit = args.jobs
    else:
        raise ValueError("give --trace PATH or --synthetic PRESET")
    if not cluster_name:
        raise ValueError("give --cluster (see `schedcast clusters`)")
    cluster = load_cluster(cluster_name, args.data_dir)
    catalog = costs = None
    if args.costs != "none":
        catalog = ProfileCatalog.build(args.costs, args.data_dir)
        costs = CostModel()
    workload = build_workload(table, cluster, costs=costs, catalog=catalog, seed=args.seed,
                              default_gpus=args.default_gpus, limit=limit)
    return table, workload


def _progress_factory(enabled: bool):
    if not enabled:
        return lambda label: (None, lambda: None)
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    def make(label: str):
        progress = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed:,}/"
                            "{task.total:,} jobs"), TimeElapsedColumn(), TimeRemainingColumn(),
                            transient=True)
        progress.start()
        task = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        return update, progress.stop

    return make


def cmd_simulate(args: argparse.Namespace) -> int:
    from evaluation.metrics import check_identities, evaluate
    from evaluation.report import render_table, write_results
    from sim import simulate

    t0 = time.perf_counter()
    table, workload = _build_workload(args)
    print(table.report.render())
    print(f"cluster:    {workload.cluster.describe()}")
    rep = workload.report
    print(f"workload:   {rep['jobs_kept']} jobs simulated, {rep['jobs_rejected']} rejected "
          f"{rep['rejected'] if rep['rejected'] else ''}".rstrip())
    for note in rep["notes"]:
        print(f"note: {note}")
    if not len(workload):
        raise ValueError("no job is left to simulate")
    window = None
    if args.window:
        window = (_duration(args.window[0]), _duration(args.window[1]))
    runs: dict[str, dict[str, Any]] = {}
    make_progress = _progress_factory(not args.no_progress and sys.stderr.isatty())
    from sim.predictors import make_predictor

    # One predictor for all policies: a registry or REST model is loaded and asked once per job frame.
    predictor = make_predictor(args.predictor, seed=args.seed, tracking_uri=getattr(args, "tracking_uri", None))
    for policy in args.policy:
        update, stop = make_progress(f"{policy:>14}")
        try:
            result = simulate(workload, policy, placement=args.placement, predictor=predictor,
                              seed=args.seed, check_invariants=args.check_invariants, progress=update,
                              tracking_uri=getattr(args, "tracking_uri", None))
        finally:
            stop()
        ev = evaluate(result, window)
        check_identities(ev["jobs"])
        runs[policy] = ev
        print(f"  {policy}: {result.events:,} events in {result.wall_seconds:.2f} s")
    title = f"\n{workload.cluster.name} | {table.report.source} | {len(workload):,} jobs"
    if window:
        title += f" | window {window[0]:g}-{window[1]:g} s"
    print(render_table([r["summary"] for r in runs.values()], title))
    out = Path(args.out or f"results/simulate-{time.strftime('%Y%m%d-%H%M%S')}")
    meta = {"command": " ".join(sys.argv), "trace": table.report.as_dict(), "workload": rep,
            "cluster": workload.cluster.describe(), "cluster_gpus": workload.cluster.gpus, "policies": args.policy, "placement": args.placement,
            "predictor": args.predictor, "seed": args.seed, "window": window,
            "workload_fingerprint": workload.fingerprint}
    write_results(out, runs, meta)
    print(f"\nresults in {out}/ "
          "(summary.csv, jobs_*.parquet, allocation_*.parquet, breakdowns, jct_cdf.png, gpu_allocation.png); "
          f"total {time.perf_counter() - t0:.1f} s")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    ns = argparse.Namespace(
        trace=None, synthetic="demo", format=None, jobs=args.jobs, cluster=None, costs="none",
        default_gpus=None, data_dir=None, seed=args.seed, policy=DEFAULT_POLICIES, placement="consolidate",
        predictor="oracle", window=None, out=args.out or "results/demo", no_progress=True,
        check_invariants=False, tracking_uri=None)
    print("schedcast demo: a seeded SYNTHETIC Helios-like workload on a 16x8-GPU cluster "
          "(no external data needed)\n")
    return cmd_simulate(ns)




def add_parsers(sub) -> None:
    """Register `simulate` and `demo`."""
    p = sub.add_parser("simulate", help="replay a trace under one or more policies")
    _add_workload_args(p)
    p.add_argument("--policy", nargs="+", default=DEFAULT_POLICIES, help="registry names (see `schedcast "
                   "policies`), optionally name:key=value,...")
    p.add_argument("--placement", default="consolidate", help="first-fit, consolidate (strict, Lucid) or "
                   "best-fit")
    p.add_argument("--predictor", default="oracle", help="for prediction-based policies: oracle, "
                   "noisy:SIGMA, models:/duration@champion (MLflow registry) or an `mlflow models serve` URL")
    p.add_argument("--tracking-uri", help="MLflow tracking URI for models:/ predictors (default: local sqlite)")
    p.add_argument("--window", nargs=2, metavar=("START", "END"), help="measure only jobs submitted in "
                   "[START, END) (e.g. 1d 20d)")
    p.add_argument("--out", help="output folder (default results/simulate-<time>)")
    p.add_argument("--check-invariants", action="store_true", help="check invariants after every event "
                   "(slow)")
    p.add_argument("--no-progress", action="store_true")
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser("demo", help="a first run on a seeded synthetic workload (no data needed)")
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out")
    p.set_defaults(func=cmd_demo)
