"""`schedcast train`, `evaluate`, `retrain` and `models`: the model lifecycle in MLflow."""
from __future__ import annotations

import argparse
import sys
from typing import Any

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


def add_parsers(sub) -> None:
    """Register `train`, `evaluate`, `retrain` and `models`."""
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
