"""The `schedcast` command line. Heavy libraries are imported inside the commands that need them."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, Sequence

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


def cmd_policies(args: argparse.Namespace) -> int:
    from sim.policies import POLICIES

    width = max(map(len, POLICIES))
    for name in sorted(POLICIES):
        info = POLICIES[name]
        flags = ("P" if info.preemptive else "-") + ("M" if info.uses_predictions else "-")
        print(f"{name:<{width}}  {flags}  {info.summary}")
        if args.verbose:
            print(f"{'':<{width}}      {info.citation}")
    print("\nflags: P preemptive, M uses a duration predictor (--predictor). Parameters: "
          "--policy 'name:key=value,...', e.g. periodic-srtf:interval=120")
    return 0


def cmd_clusters(args: argparse.Namespace) -> int:
    from sim.cluster import cluster_names, load_cluster, load_cluster_config

    for name in cluster_names():
        cfg = load_cluster_config(name)
        try:
            desc = load_cluster(name, args.data_dir).describe()
        except (FileNotFoundError, ValueError) as exc:
            desc = f"{name}: unavailable ({exc})"
        print(f"{desc}\n    {cfg.description}")
    return 0


def cmd_data_check(args: argparse.Namespace) -> int:
    import json

    from features.traces import load_trace

    table = load_trace(args.path, args.format)
    if args.json:
        print(json.dumps(table.report.as_dict(), indent=2))
    else:
        print(table.report.render())
        f = table.frame
        if len(f):
            print(f"jobs:       {len(f):,}; span {f['submit_time'].max() / 86400:.1f} days; "
                  f"mean duration {f['duration'].mean() / 3600:.2f} h; "
                  f"GPUs/job mean {f['num_gpus'].astype(float).mean():.2f}, max {f['num_gpus'].max()}")
    return 0


def cmd_data_formats(args: argparse.Namespace) -> int:
    from features.traces import FORMATS

    for name, (_, desc) in FORMATS.items():
        print(f"{name:<14} {desc}")
    print(f"{'synthetic':<14} seeded generator: `schedcast simulate --synthetic PRESET` (presets in "
          "configs/workloads/)")
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


TASK_DEFAULT_ALGO = {"duration": "lightgbm", "iterations": "zero", "throughput": "ebm", "demand": "orglinear",
                     "packing": "solo"}


def _params(items: list[str] | None) -> dict[str, Any]:
    from sim.policies import parse_policy_spec

    return parse_policy_spec("x:" + ",".join(items))[1] if items else {}


def _task_data(args: argparse.Namespace) -> dict[str, Any]:
    """Load the data the task's arguments name, once: the inputs of pipelines.train's functions."""
    from features.paths import data_dir

    task = args.task
    if task in ("duration", "iterations"):
        from features.traces import load_trace
        from features.traces.synthetic import generate_preset

        if args.synthetic:
            return {"table": generate_preset(args.synthetic, seed=args.seed, jobs=args.jobs), "source": None}
        source = args.trace or data_dir(args.data_dir) / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz"
        return {"table": load_trace(source, args.format), "source": source}
    if task == "throughput":
        from features.series import load_throughput

        return {"series": load_throughput(args.series, args.data_dir), "source": args.series}
    if task == "demand":
        from features.series import load_demand

        demand, attrs = load_demand(args.series, args.data_dir, freq=args.freq)
        return {"demand": demand, "attrs": attrs, "source": args.series}
    if task == "packing":
        return {"data_dir": args.data_dir}
    raise ValueError(f"unknown task {task!r}")


def _task_trainer(args: argparse.Namespace):
    """A zero-argument function that trains the task's model on the data the arguments name."""
    from pipelines import train as T

    params = _params(args.param)
    task, algo = args.task, args.algo or TASK_DEFAULT_ALGO[args.task]
    d = _task_data(args)
    days = args.test_days if args.test_days is not None else T.HOLDOUT_DAYS.get(task)
    if task == "duration":
        return lambda: T.train_duration(d["table"], algo=algo, test_days=days, fast=not args.full,
                                        source=d["source"], **params)
    if task == "iterations":
        return lambda: T.train_iterations(d["table"], unseen=algo, test_days=days, source=d["source"], **params)
    if task == "throughput":
        return lambda: T.train_throughput(d["series"], algo=algo, horizon=args.horizon or 1, test_days=days,
                                          fast=not args.full, source=d["source"], **params)
    if task == "demand":
        return lambda: T.train_demand(d["demand"], d["attrs"], algo=algo, freq=args.freq, horizon=args.horizon,
                                      test_days=days, source=d["source"], **params)
    return lambda: T.train_packing(d["data_dir"], labels=algo, **params)


def _print_metrics(title: str, metrics: dict[str, float]) -> None:
    print(title)
    for k, v in metrics.items():
        if isinstance(v, (int, float)):
            print(f"  {k:<28} {v:,.4f}")


def cmd_train(args: argparse.Namespace) -> int:
    from models.registry import CHAMPION, alias_version, configure, set_alias
    from pipelines.train import log_result

    uri = configure(args.tracking_uri)
    result = _task_trainer(args)()
    _print_metrics(f"{args.task} ({result.algo}) on the holdout, trained in {result.train_seconds:.1f} s:",
                   result.metrics)
    for name, base in result.baselines.items():
        _print_metrics(f"baseline {name}:", {k: v for k, v in base.items() if k in ("mae", "rmse", "log_mae",
                                                                                    "spearman", "r2")})
    if args.no_register:
        logged = log_result(result, register=False)
        print(f"logged run {logged.run_id} (not registered) to {uri}")
        return 0
    alias = None if args.alias == "none" else args.alias
    logged = log_result(result, register=True, alias=alias)
    if alias_version(args.task, CHAMPION) is None:
        set_alias(args.task, CHAMPION, logged.version)
        print(f"no champion existed: version {logged.version} is now {args.task}@champion")
    print(f"registered {args.task} version {logged.version} (alias {alias}); run {logged.run_id}; store {uri}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from models.registry import configure, load, unwrap
    from pipelines.train import evaluate_on_holdout, holdout

    configure(args.tracking_uri)
    uri = args.model or f"models:/{args.task}@champion"
    result_holdout = holdout(args.task, _task_data(args), args.test_days, args.horizon, args.freq,
                             labels=args.algo or "solo")
    model = load(uri)
    predictor = unwrap(model) if args.task == "demand" else model
    metrics = evaluate_on_holdout(args.task, predictor, result_holdout)
    _print_metrics(f"{uri} on the {args.task} holdout:", metrics)
    return 0


def cmd_retrain(args: argparse.Namespace) -> int:
    from models.registry import configure
    from pipelines.retrain import FAILED, retrain

    try:
        configure(args.tracking_uri)
        decision = retrain(args.task, _task_trainer(args), margin=args.margin)
    except Exception as exc:  # noqa: BLE001 - any failure leaves the champion untouched; say so and exit 1
        print(f"schedcast retrain: FAILED, champion untouched: {type(exc).__name__}: {exc}", file=sys.stderr)
        return FAILED
    verdict = "PROMOTED" if decision.promoted else "KEPT CHAMPION"
    print(f"{verdict}: {decision.reason}")
    print(f"  challenger version {decision.challenger_version}; champion before {decision.champion_version_before}, "
          f"after {decision.champion_version_after}")
    return decision.exit_code


def cmd_models(args: argparse.Namespace) -> int:
    from models.registry import configure, list_models

    uri = configure(args.tracking_uri)
    rows = list_models()
    if not rows:
        print(f"no registered models in {uri}")
    for r in rows:
        print(f"{r['name']:<12} latest v{r['latest']}  aliases {r['aliases']}")
    return 0


def cmd_server(args: argparse.Namespace) -> int:
    import os
    import subprocess
    from pathlib import Path as P

    from models.registry import default_tracking_uri

    backend = args.backend_store_uri or default_tracking_uri()
    root = P(os.getcwd()) / "mlruns" / "artifacts"
    cmd = ["mlflow", "server", "--host", args.host, "--port", str(args.port), "--backend-store-uri", backend,
           "--default-artifact-root", args.artifact_root or root.as_uri()]
    if backend.startswith("sqlite:///"):
        P(backend[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    print("starting:", " ".join(cmd), f"\nUI at http://{args.host}:{args.port}", flush=True)
    return subprocess.call(cmd)


def _add_task_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", choices=["duration", "iterations", "throughput", "demand", "packing"])
    p.add_argument("--algo", help="duration: lightgbm|ebm|rf; iterations: zero|fallback (unseen groups); "
                   "throughput: ebm|lightgbm|rf; demand: orglinear|dlinear|deepar|seasonal-naive|gfs-e; "
                   "packing: solo|pairs (labels)")
    p.add_argument("--trace", help="duration/iterations: job trace (default: the Philly file)")
    p.add_argument("--format")
    p.add_argument("--synthetic", metavar="PRESET")
    p.add_argument("--jobs", type=int)
    p.add_argument("--series", help="throughput/demand: series file (default: Venus / Earth in the data dir)")
    p.add_argument("--freq", default="10min", help="demand: bin size")
    p.add_argument("--horizon", type=int, help="throughput/demand: steps ahead")
    p.add_argument("--test-days", type=float, help="holdout at the end of the data (default 30/31/7 days)")
    p.add_argument("--full", action="store_true", help="full model settings (EBM interactions, 8 bags)")
    p.add_argument("--param", nargs="*", metavar="KEY=VALUE", help="estimator hyper-parameters")
    p.add_argument("--data-dir")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--tracking-uri", help="MLflow tracking URI (default: sqlite:///mlruns/mlflow.db here)")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="schedcast", description="GPU-cluster scheduling lab: replay "
                                     "traces under scheduling policies and score them.")
    sub = parser.add_subparsers(dest="command", required=True)

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

    p = sub.add_parser("policies", help="list every registered policy")
    p.add_argument("-v", "--verbose", action="store_true", help="also print the citation")
    p.set_defaults(func=cmd_policies)

    p = sub.add_parser("clusters", help="list built-in cluster configs")
    p.add_argument("--data-dir")
    p.set_defaults(func=cmd_clusters)

    data = sub.add_parser("data", help="inspect traces").add_subparsers(dest="data_command", required=True)
    p = data.add_parser("check", help="load a trace and print its load report")
    p.add_argument("path")
    p.add_argument("--format")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_data_check)
    p = data.add_parser("formats", help="list trace formats")
    p.set_defaults(func=cmd_data_formats)

    p = sub.add_parser("train", help="train a model, log it to MLflow and register it")
    _add_task_args(p)
    p.add_argument("--alias", default="challenger", help="alias for the new version: challenger, champion or "
                   "none (the first version of a model always becomes champion)")
    p.add_argument("--no-register", action="store_true")
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="score a registered model on the task's holdout")
    _add_task_args(p)
    p.add_argument("--model", help="model URI (default models:/TASK@champion)")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("retrain", help="scheduled retraining: challenger vs champion on a recent holdout; "
                       "exit 0 promoted, 3 kept, 1 failed")
    _add_task_args(p)
    p.add_argument("--margin", type=float, default=0.02, help="relative improvement needed to promote")
    p.set_defaults(func=cmd_retrain)

    p = sub.add_parser("models", help="registered models and their aliases")
    p.add_argument("--tracking-uri")
    p.set_defaults(func=cmd_models)

    p = sub.add_parser("server", help="start an MLflow tracking server and UI (127.0.0.1 by default)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--backend-store-uri")
    p.add_argument("--artifact-root")
    p.set_defaults(func=cmd_server)

    p = sub.add_parser("demo", help="a first run on a seeded synthetic workload (no data needed)")
    p.add_argument("--jobs", type=int, default=None)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    from features.jobtable import TraceError
    from sim.engine import SimulationError

    try:
        return args.func(args)
    except (TraceError, SimulationError, ValueError, FileNotFoundError) as exc:
        print(f"schedcast: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("schedcast: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
