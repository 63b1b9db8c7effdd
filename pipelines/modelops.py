"""`schedcast train`, `evaluate`, `retrain` and `models`: the model lifecycle in MLflow.

Quiet by default: library warnings and INFO logs (MLflow, Lightning, GluonTS, torch) are silenced for
the duration of a command; ``--verbose`` shows them. SIGTERM is turned into an interrupt while a
command runs, so an MLflow run ends as FAILED and a half-registered version is rolled back
(models.registry.log_estimator) instead of staying RUNNING / alias-less; SIGKILL cannot be caught.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from typing import Any, Iterator

from pipelines.simulate import jobs_arg, non_negative_int, positive_int, preset_arg, tracking_uri_arg

#: Default algorithm per task (``--algo`` overrides). One place to change a task's default.
TASK_DEFAULT_ALGO = {"duration": "lightgbm", "iterations": "zero", "throughput": "blend-last", "demand": "orglinear",
                     "packing": "solo"}


def default_algo(task: str) -> str | None:
    """The task's default algorithm: schedcast's table, else the ``algo`` default of the task's ``train``
    (a plug-in task names its own)."""
    if task in TASK_DEFAULT_ALGO:
        return TASK_DEFAULT_ALGO[task]
    import inspect

    from pipelines.train_tasks import TASKS

    param = inspect.signature(TASKS[task].train).parameters.get("algo")
    return param.default if param is not None and isinstance(param.default, str) else None


def task_arg(text: str) -> str:
    """A registered training task (built-in, ``--plugin`` module or installed entry point)."""
    from features.plugins import UnknownName
    from pipelines.train_tasks import TASKS

    try:
        TASKS.lookup(text)
    except UnknownName as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text


#: Exit code of a command stopped by SIGTERM (128 + 15), by Ctrl-C (128 + 2).
EXIT_SIGTERM, EXIT_SIGINT = 143, 130


class Terminated(KeyboardInterrupt):
    """SIGTERM while a command runs (a KeyboardInterrupt, so every `finally` and context manager runs)."""


def alias_arg(text: str) -> str:
    """argparse type: a registry alias MLflow accepts (letters, digits, '_' and '-', at most 255), checked
    before any training: not 'latest' (MLflow's own) nor v<N> (a version), no path ('../x')."""
    import re

    value = text.strip()
    if value == "none":
        return value
    if not re.fullmatch(r"[A-Za-z0-9_\-]{1,255}", value):
        raise argparse.ArgumentTypeError(f"{text!r} is not an alias: letters, digits, '_' and '-' only (at most 255)")
    if value.lower() == "latest" or re.fullmatch(r"[vV]\d+", value):
        raise argparse.ArgumentTypeError(f"{text!r} is reserved by MLflow ('latest' and v<N> name versions); "
                                         "choose another alias")
    return value


def _params(items: list[str] | None) -> dict[str, Any]:
    """``--param KEY=VALUE ...``: estimator hyper-parameters (values as Python literals, else strings)."""
    import ast

    params: dict[str, Any] = {}
    for item in items or []:
        key, eq, value = item.partition("=")
        key = key.strip()
        if not eq or not key.isidentifier():
            raise ValueError(f"--param {item!r}: an estimator hyper-parameter is KEY=VALUE, e.g. n_estimators=200")
        try:
            params[key] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            params[key] = value.strip()
    return params


def data_source(args: argparse.Namespace):
    """The pipelines.train.DataSource the task's arguments name (recorded as the run's lineage)."""
    from features.paths import data_dir
    from pipelines.train import DataSource

    task = args.task
    if args.jobs is not None and task not in ("duration", "iterations"):
        raise ValueError(f"--jobs applies to job traces (duration, iterations), not to {task}")
    if task in ("duration", "iterations"):
        if args.synthetic:
            return DataSource("synthetic", preset=args.synthetic, seed=args.seed, jobs=args.jobs)
        path = args.trace or data_dir(args.data_dir) / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz"
        return DataSource("trace", path=str(path), format=args.format, jobs=args.jobs)
    if task == "throughput":
        return DataSource("series", path=args.series, data_dir=args.data_dir)
    if task == "demand":
        return DataSource("series", path=args.series, freq=args.freq, data_dir=args.data_dir)
    if task == "packing":
        return DataSource("packing", path=str(data_dir(args.data_dir)))
    raise ValueError(f"unknown task {task!r}")


def _task_data(args: argparse.Namespace) -> dict[str, Any]:
    """Load the data the task's arguments name, once: the inputs of the task's train / holdout."""
    from pipelines.train import TASKS

    return TASKS[args.task].load(data_source(args))


def _task_trainer(args: argparse.Namespace, data: dict[str, Any] | None = None):
    """A zero-argument function that trains the task's model on the data the arguments name."""
    from pipelines.train import TASKS

    from pipelines.train import check_params

    params = _params(args.param)
    task = TASKS[args.task]
    algo = args.algo or default_algo(args.task)
    check_params(args.task, algo, not args.full, params)  # before the data is loaded: a typo costs no time
    d = data if data is not None else _task_data(args)

    def train():
        try:
            return task.train(d, algo=algo, test_days=args.test_days, fast=not args.full, horizon=args.horizon,
                              freq=args.freq, **params)
        except TypeError as exc:  # a hyper-parameter of the wrong type, found by the estimator's fit
            if not params:
                raise
            raise ValueError(f"--param {' '.join(args.param)}: the {args.task} model ({algo}) rejected it: "
                             f"{exc}") from None

    return train


# -- quiet, signals ----------------------------------------------------------------------------------
NOISY_LOGGERS = ("mlflow", "alembic", "lightning", "lightning.pytorch", "lightning.fabric", "pytorch_lightning",
                 "gluonts", "torch", "interpret", "py.warnings")


@contextlib.contextmanager
def quiet(verbose: bool, task: str | None = None, algo: str | None = None) -> Iterator[None]:
    """Silence library warnings and logs below ERROR for the block (not with ``verbose``)."""
    import logging
    import warnings

    if verbose:
        os.environ["SCHEDCAST_VERBOSE"] = "1"
        try:
            yield
        finally:
            os.environ.pop("SCHEDCAST_VERBOSE", None)
        return
    if task == "demand" and algo in ("orglinear", "deepar", None):
        with contextlib.suppress(ImportError), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import lightning.pytorch  # noqa: F401 - it resets its logger's level on import: import first
    saved = {name: logging.getLogger(name).level for name in NOISY_LOGGERS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in NOISY_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)
        try:
            yield
        finally:
            for name, level in saved.items():
                logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM raises Terminated in the main thread for the block (MLflow runs end FAILED, registration
    rolls back); a no-op outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise Terminated(f"signal {signum}")

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def _guarded(command: str, fn) -> int:
    """Run ``fn`` with SIGTERM as an interrupt; report an interrupt in one line with 143 / 130."""
    from models.registry import LockTimeout, store_errors

    try:
        with terminate_as_interrupt(), store_errors():  # a full disk / read-only store: one line, exit 2
            return fn()
    except Terminated:
        print(f"schedcast {command}: terminated; the MLflow run is marked FAILED and no half-registered "
              "version is left", file=sys.stderr)
        return EXIT_SIGTERM
    except KeyboardInterrupt:
        print(f"schedcast {command}: interrupted; the MLflow run is marked FAILED", file=sys.stderr)
        return EXIT_SIGINT
    except LockTimeout as exc:
        print(f"schedcast {command}: {exc}", file=sys.stderr)
        return 1


# -- output ------------------------------------------------------------------------------------------
def _fmt(v: Any) -> str:
    if v is None:
        return "-"
    v = float(v)
    if v != v:  # NaN
        return "n/a*"
    if abs(v) >= 1e4:
        return f"{v:,.0f}"
    return f"{v:.4g}"


def metrics_table(result) -> str:
    """Model and baselines side by side, with units; NaN (e.g. Spearman of a constant prediction) is
    shown as n/a* and explained below the table."""
    return format_metrics(result.task, result.metrics, result.baselines)


def format_metrics(task_name: str, metrics: dict[str, float], baselines: dict[str, dict[str, float]] | None = None,
                   label: str = "model") -> str:
    """The task's metrics with units (those in Task.units; raw MSE and MAPE shares are left out)."""
    from pipelines.train import TASKS

    task = TASKS[task_name]
    baselines = baselines or {}
    names = [label] + list(baselines)
    cols = [metrics] + [baselines[n] for n in baselines]
    keys = [k for k in task.units if k in metrics]
    rows = [["metric", "unit"] + names]
    for k in keys:
        rows.append([k + (" (primary)" if k == task.primary else ""), task.units[k]] + [_fmt(c.get(k)) for c in cols])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  " + "  ".join(cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in enumerate(zip(r, widths)))
             for r in rows]
    notes = []
    if any("log-s" == task.units.get(k) for k in keys):
        notes.append("log-s: mean |ln(1 + predicted s) - ln(1 + actual s)|; lower is better")
    if any("n/a*" in line for line in lines):
        notes.append("n/a*: undefined (a constant prediction has no rank correlation)")
    return "\n".join(lines + [f"  {n}" for n in notes])


def _headline(result) -> str:
    from pipelines.train import TASKS

    t = TASKS[result.task]
    lin = result.lineage
    where = f" from {lin['holdout_start']}" if lin.get("holdout_start") else ""
    return (f"{result.task} ({result.algo}) trained in {result.train_seconds:.1f} s on "
            f"{lin.get('source_desc') or 'in-memory data'} ({lin.get('rows', '?')} rows); holdout: "
            f"{result.holdout_rows:,} {t.holdout_unit}{where}")


# -- commands ----------------------------------------------------------------------------------------
def cmd_train(args: argparse.Namespace) -> int:
    return _guarded("train", lambda: _train(args))


def _train(args: argparse.Namespace) -> int:
    """Train, log and register. The champion alias is never moved to an unchecked version: with a
    champion in place ``--alias champion`` is refused (the retraining gate decides, `schedcast retrain`),
    and a first version becomes champion only when it is not worse than the best baseline (or with
    ``--allow-worse-than-baseline``); the "first champion" step is a compare-and-set under the alias lock."""
    from pipelines.progress import step

    algo = args.algo or default_algo(args.task)
    alias = None if args.alias == "none" else args.alias
    # the spinner from the first second: importing MLflow and loading the data take seconds of silence
    with step(f"loading the {args.task} data and the model store"), quiet(args.verbose, args.task, algo):
        from models.registry import CHAMPION, alias_version, check_tracking_uri, configure, resolve_tracking_uri
        from pipelines.train import TASKS, best_baseline, log_result

        check_tracking_uri(resolve_tracking_uri(args.tracking_uri))  # a bad store: refused before any work
        trainer = _task_trainer(args)  # parameters checked and data loaded before the store is touched
        uri = configure(args.tracking_uri)
    with quiet(args.verbose, args.task, algo):
        if alias == CHAMPION and not args.no_register:
            current = alias_version(args.task, CHAMPION)
            if current is not None:
                raise ValueError(f"--alias champion would replace {args.task}@champion (version {current}) with an "
                                 f"unchecked model; promote through the gate: `schedcast retrain {args.task} ...` "
                                 "(or register it as challenger and compare with `schedcast evaluate`)")
        with step(f"training {args.task} ({algo})"):  # demand: ~35 s without output otherwise
            result = trainer()
        print(_headline(result))
        print(metrics_table(result))
        if args.no_register:
            logged = log_result(result, register=False)
            from pipelines.tracking import ui_link

            print(f"logged run {logged.run_id} (not registered) to {uri}\nMLflow UI: {ui_link(uri, logged.run_id)}")
            return 0
        base = best_baseline(result)
        worse = base is not None and result.primary > base[1]
        metric = f"{TASKS[result.task].primary} {result.primary:.4g}"
        if worse and alias == CHAMPION and not args.allow_worse_than_baseline:
            raise ValueError(f"not registered: {metric} is worse than the baseline {base[0]} {base[1]:.4g}, so it "
                             "cannot become champion; give --allow-worse-than-baseline to make it champion anyway")
        may_lead = not worse or args.allow_worse_than_baseline
        # "champion" is set only if none exists under the alias lock (another process may have set one)
        first_alias = None if alias == CHAMPION else alias
        logged = log_result(result, register=True, alias=first_alias, champion_if_none=may_lead)
    if alias == CHAMPION and CHAMPION not in logged.aliases:
        print(f"schedcast train: another process made version {alias_version(args.task, CHAMPION)} "
              f"{args.task}@champion meanwhile; version {logged.version} is registered without an alias (compare "
              "them with `schedcast retrain`)", file=sys.stderr)
        return 1
    if CHAMPION in logged.aliases and alias != CHAMPION:
        print(f"no champion existed: version {logged.version} is now {args.task}@champion")
    elif worse and alias_version(args.task, CHAMPION) is None:
        print(f"warning: version {logged.version} is not champion: its {metric} is worse than the baseline "
              f"{base[0]} {base[1]:.4g} (give --allow-worse-than-baseline to make it champion anyway)")
    from pipelines.tracking import ui_link

    print(f"registered {args.task} version {logged.version} (aliases {', '.join(logged.aliases) or 'none'}); "
          f"run {logged.run_id}; store {uri}\nMLflow UI: {ui_link(uri, logged.run_id)}")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from models.registry import configure, load, unwrap
    from pipelines.train import evaluate_on_holdout, holdout

    with quiet(args.verbose, args.task, args.algo):
        configure(args.tracking_uri)
        uri = args.model or f"models:/{args.task}@champion"
        model = load(uri, trust_local=args.trust_local_models)
        ho = holdout(args.task, _task_data(args), args.test_days, args.horizon, args.freq,
                     labels=args.algo or "solo")
        # The estimator inside the pyfunc, called exactly as training scored it.
        metrics = evaluate_on_holdout(args.task, unwrap(model), ho)
    from pipelines.train import TASKS

    t = TASKS[args.task]
    print(f"{uri} on the {args.task} holdout ({t.holdout_size(ho):,} {t.holdout_unit}):")
    print(format_metrics(args.task, metrics))
    return 0


def cmd_retrain(args: argparse.Namespace) -> int:
    return _guarded("retrain", lambda: _retrain(args))


def _retrain(args: argparse.Namespace) -> int:
    from models.registry import check_tracking_uri, configure, resolve_tracking_uri
    from pipelines.retrain import FAILED, RetrainRefused, retrain

    algo = args.algo or default_algo(args.task)
    check_tracking_uri(resolve_tracking_uri(args.tracking_uri))  # a bad store: refused before any work
    try:
        with quiet(args.verbose, args.task, algo):
            trainer = _task_trainer(args)
            configure(args.tracking_uri)
            decision = retrain(args.task, trainer, margin=args.margin, horizon=args.horizon, freq=args.freq,
                               labels=algo, allow_worse_than_baseline=args.allow_worse_than_baseline)
    except RetrainRefused as exc:
        print(f"REFUSED (exit {exc.code}), champion untouched: {exc}")
        return exc.code
    except (KeyboardInterrupt, ValueError, FileNotFoundError):
        raise  # interrupts: _guarded; usage and data errors: the CLI's one-line error, exit 2
    except Exception as exc:  # noqa: BLE001 - any failure leaves the champion untouched; say so and exit 1
        print(f"schedcast retrain: FAILED, champion untouched: {type(exc).__name__}: {exc}", file=sys.stderr)
        return FAILED
    verdict = {0: "PROMOTED", 3: "KEPT CHAMPION"}.get(decision.exit_code, "FAILED")
    print(f"{verdict}: {decision.reason}")
    print(f"  challenger version {decision.challenger_version}; champion before {decision.champion_version_before}, "
          f"after {decision.champion_version_after}")
    run_id = decision.details.get("decision_run_id")
    if run_id:
        from models.registry import resolve_tracking_uri
        from pipelines.tracking import ui_link

        print(f"MLflow UI: {ui_link(resolve_tracking_uri(args.tracking_uri), run_id)}")
    return decision.exit_code


def cmd_models(args: argparse.Namespace) -> int:
    """The registry as a table; a sqlite store is read directly (no mlflow import)."""
    from models.registry import MODEL_COLUMNS, list_models, resolve_tracking_uri

    uri = resolve_tracking_uri(args.tracking_uri)
    rows = list_models(uri)
    if not rows:
        print(f"no registered models in {uri}")
        return 0
    if not args.all:
        rows = [r for r in rows if r["aliases"]] or rows
    table = [list(MODEL_COLUMNS)] + [[str(r[c]) for c in MODEL_COLUMNS] for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(MODEL_COLUMNS))]
    for i, r in enumerate(table):
        print("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    hidden = "" if args.all else " (versions with an alias; --all lists every version)"
    print(f"store {uri}{hidden}")
    return 0


# -- arguments ---------------------------------------------------------------------------------------
def _finite(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if v != v or v in (float("inf"), float("-inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text}")
    return v


def _non_negative(text: str) -> float:
    """argparse type of --margin: a relative improvement >= 0."""
    v = _finite(text)
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0 (a relative improvement), got {text}")
    return v


def _positive(text: str) -> float:
    """argparse type of --test-days: a number of days > 0."""
    v = _finite(text)
    if v <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of days > 0, got {text}")
    return v


def _add_task_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("task", type=task_arg, help="duration, iterations, throughput, demand, packing, or a plug-in's task "
                   "(entry-point group schedcast.tasks)")
    p.add_argument("--algo", help="duration: lightgbm|ebm|rf; iterations: zero|fallback (unseen groups); "
                   "throughput: ebm|lightgbm|rf|lightgbm-l1|rf-log|blend-last; demand: orglinear|dlinear|deepar|seasonal-naive|gfs-e; "
                   "packing: solo|pairs (labels)")
    p.add_argument("--trace", help="duration/iterations: job trace (default: the Philly file)")
    p.add_argument("--format")
    p.add_argument("--synthetic", metavar="PRESET", type=preset_arg)
    p.add_argument("--jobs", type=jobs_arg, help="synthetic: number of jobs; trace: the first N jobs by "
                   "submission (recorded in the run's lineage)")
    p.add_argument("--series", help="throughput/demand: series file (default: Venus / Earth in the data dir)")
    p.add_argument("--freq", default="10min", help="demand: bin size")
    p.add_argument("--horizon", type=positive_int, help="throughput/demand: steps ahead")
    p.add_argument("--test-days", type=_positive, help="holdout at the end of the data (default 30/31/7 days)")
    p.add_argument("--full", action="store_true", help="full model settings (EBM interactions, 8 bags)")
    p.add_argument("--param", nargs="*", metavar="KEY=VALUE", help="estimator hyper-parameters")
    p.add_argument("--data-dir")
    p.add_argument("--seed", type=non_negative_int, default=0, help="synthetic data: the generator's seed (>= 0)")
    p.add_argument("--tracking-uri", type=tracking_uri_arg, help="MLflow tracking URI (default: sqlite:///mlruns/mlflow.db here)")
    p.add_argument("--verbose", "-v", action="store_true", help="show library warnings and logs (MLflow, "
                   "Lightning, GluonTS, torch), silenced by default")


def _allow_worse(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-worse-than-baseline", action="store_true", help="let a first version become "
                   "champion although its primary metric is worse than the best baseline's")


def add_parsers(sub) -> None:
    """Register `train`, `evaluate`, `retrain` and `models`."""
    p = sub.add_parser("train", help="train a model, log it to MLflow and register it")
    _add_task_args(p)
    p.add_argument("--alias", type=alias_arg, default="challenger", help="alias for the new version: challenger (default), "
                   "champion (only when the model has none: a champion is replaced only by `retrain`'s gate) or "
                   "none; the first version of a model becomes champion when it is not worse than the best "
                   "baseline (or with --allow-worse-than-baseline)")
    p.add_argument("--no-register", action="store_true")
    _allow_worse(p)
    p.set_defaults(func=cmd_train)

    p = sub.add_parser("evaluate", help="score a registered model on the task's holdout")
    _add_task_args(p)
    p.add_argument("--model", help="model URI (default models:/TASK@champion)")
    p.add_argument("--trust-local-models", action="store_true", help="allow --model to be a local directory or "
                   "direct artifact URI: a model is a pickle and loading it runs its code")
    p.set_defaults(func=cmd_evaluate)

    p = sub.add_parser("retrain", help="scheduled retraining: challenger vs champion on a trustworthy holdout; "
                       "exit 0 promoted, 3 kept, 1 failed or champion moved meanwhile, 2 usage, "
                       "4 refused (data lineage), 5 refused (holdout too small)")
    _add_task_args(p)
    p.add_argument("--margin", type=_non_negative, default=0.02, help="relative improvement needed to promote "
                   "(>= 0)")
    _allow_worse(p)
    p.set_defaults(func=cmd_retrain)

    p = sub.add_parser("models", help="registered models: version, aliases, algorithm, primary metric, data")
    p.add_argument("--tracking-uri", type=tracking_uri_arg)
    p.add_argument("--all", action="store_true", help="every version, not only those with an alias")
    p.set_defaults(func=cmd_models)
