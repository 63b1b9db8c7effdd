"""Training entry points: data -> features -> time-based split -> fit -> scores -> MLflow run + registry.

One task object per task (:data:`TASKS`: duration, iterations, throughput, demand, packing) holds what
differs between tasks: how its data is loaded from a :class:`DataSource` (and so reloaded for a
retraining comparison), its holdout, how it trains, its baselines, its primary metric, units and plots
(drawn by :mod:`evaluation.plots`). Every task trains on the data before a holdout window at the end of
the data (relative to the data's own end, never fixed dates) and scores on the holdout.
``TrainResult`` carries what the CLI prints, what MLflow logs (including the data lineage) and what
retraining compares. ``schedcast evaluate`` rebuilds the same holdout with :func:`holdout` and scores
with :func:`evaluate_on_holdout`, so it reproduces the training run's holdout scores.

The module-level ``train_duration`` ... ``train_packing``, ``holdout``, ``evaluate_on_holdout``,
``make_forecaster`` and ``log_result`` are the stable API (benchmarks import them).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from evaluation import scores  # noqa: F401 - re-exported
from features.jobtable import JobTable
from models.tabular import make_duration_model, make_throughput_model  # noqa: F401  (re-exported)

# The shared helpers and the tasks live in pipelines.train_common and pipelines.train_tasks (this file
# was 864 lines); every name callers imported from here is still here.
from pipelines.train_common import (DAY, TABLE_LINEAGE_COLUMNS, DataSource, _as_source, _dataset_inputs,  # noqa: F401
                                    _dates, _fit_and_score, _prefix_sha256, _stamp, _table_dates, check_params,
                                    content_sha256, data_fingerprint_of, demand_windows, duration_split, extends,
                                    first_jobs, make_forecaster, score_forecast, source_bytes, source_sha256,
                                    table_view)
from pipelines.train_tasks import (HOLDOUT_DAYS, MIN_HOLDOUT, PRIMARY_METRIC, TASKS, DemandTask,  # noqa: F401
                                   DurationTask, IterationsTask, PackingTask, Task, ThroughputTask, TrainResult)


# -- the stable module-level API ---------------------------------------------------------------------
def holdout(task: str, data: dict[str, Any], test_days: float | None = None, horizon: int | None = None,
            freq: str = "10min", labels: str = "solo"):
    """The holdout a training run of ``task`` on ``data`` scores on, built without training a model (what
    `schedcast evaluate` scores a registered model on). ``data`` holds what the train_* function takes:
    table / series / demand + attrs / data_dir."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}")
    return TASKS[task].holdout(data, test_days, horizon, freq, labels)



def train_duration(table: JobTable, *, algo: str = "lightgbm", test_days: float = 30.0, fast: bool = True,
                   source: str | Path | DataSource | None = None, **params) -> TrainResult:
    """Duration model on job features (QSSF LightGBM, Lucid GA2M, RF baseline). Scores on the jobs
    submitted in the last ``test_days``; the baselines are the training median and each job's
    rolling mean of its group's past durations."""
    return TASKS["duration"].train({"table": table, "source": source}, algo=algo, test_days=test_days, fast=fast,
                                   **params)


def train_iterations(table: JobTable, *, unseen: str = "zero", test_days: float = 30.0,
                     source: str | Path | DataSource | None = None, **params) -> TrainResult:
    """A-SRPT's random forest on (group id, user); unseen groups -> 0 (paper) or the fallback. Baselines:
    the training median and each group's training median."""
    return TASKS["iterations"].train({"table": table, "source": source}, algo=unseen, test_days=test_days,
                                     **params)


def train_throughput(series: pd.DataFrame, *, algo: str = "blend-last", target: str = "submit_gpu_job", horizon: int = 1,
                     test_days: float = 31.0, fast: bool = True, source: str | Path | DataSource | None = None,
                     **params) -> TrainResult:
    """Lucid's throughput predictor on the 10-minute series; scored against the naive last value."""
    return TASKS["throughput"].train({"series": series, "source": source}, algo=algo, test_days=test_days,
                                     fast=fast, horizon=horizon, target=target, **params)

def train_demand(demand: pd.DataFrame, attrs: pd.DataFrame, *, algo: str = "orglinear", freq: str = "10min",
                 lookback: int | None = None, horizon: int | None = None, test_days: float = 7.0,
                 source: str | Path | DataSource | None = None, **params) -> TrainResult:
    """Per-org demand forecaster: trained before the last ``test_days``, scored on rolling origins
    every ``horizon`` steps over the holdout; baseline: the seasonal-naive forecast."""
    return TASKS["demand"].train({"demand": demand, "attrs": attrs, "source": source}, algo=algo,
                                 test_days=test_days, horizon=horizon, freq=freq, lookback=lookback, **params)


def train_packing(data: str | Path | None = None, *, labels: str = "solo", **params) -> TrainResult:
    """Lucid's packing tree, scored by leave-one-model-out cross-validation, then fitted on all rows."""
    return TASKS["packing"].train({"data_dir": data, "source": DataSource("packing", path=str(data) if data else None)},
                                  algo=labels, **params)


def evaluate_on_holdout(task: str, predictor, holdout) -> dict[str, float]:
    """Score any model with the task's predict protocol (a schedcast estimator or a loaded pyfunc) on a
    holdout produced by the training function above, so champion and challenger see the same rows."""
    if task not in TASKS:
        raise ValueError(task)
    return TASKS[task].evaluate(predictor, holdout)


# -- logging -----------------------------------------------------------------------------------------
def best_baseline(result: TrainResult) -> tuple[str, float] | None:
    """The baseline with the lowest primary metric (name, value), if any baseline has it."""
    metric = TASKS[result.task].primary
    found = [(name, float(b[metric])) for name, b in result.baselines.items()
             if metric in b and b[metric] is not None and np.isfinite(b[metric])]
    return min(found, key=lambda x: x[1]) if found else None


def describe(result: TrainResult) -> str:
    """The model version's description: what, on which data, how well against the baselines."""
    task = TASKS[result.task]
    lin = result.lineage
    text = (f"{result.task} model ({result.algo}) trained on {lin.get('source_desc') or 'in-memory data'}"
            f" ({lin.get('rows', '?')} rows, {lin.get('start', '')} .. {lin.get('end', '')}; sha256 "
            f"{lin.get('sha256', '')[:12]}...). Holdout: {lin.get('holdout_rows', '?')} {task.holdout_unit}"
            + (f" from {lin['holdout_start']}" if lin.get("holdout_start") else "")
            + f". {task.primary} = {result.primary:.4g} {task.units.get(task.primary, '')}".rstrip())
    base = best_baseline(result)
    if base:
        text += f" vs baseline {base[0]} {base[1]:.4g}"
    return text + "."


#: The MLflow name's suffix per training unit (a task's ``units``), as simulation metrics carry theirs
#: (evaluation.catalog): ``log_mae`` -> ``log_mae_log_s``, ``mae`` -> ``mae_s``; unitless scores (r2,
#: rank correlations, F1) and names that already end in a unit are logged as they are.
UNIT_SUFFIX = {"s": "_s", "log-s": "_log_s", "share": "_frac", "GPUs": "_gpus", "jobs/10 min": "_jobs_per_10min"}


def metric_name(key: str, units: dict[str, str]) -> str:
    """The logged name of a training metric ``key`` (``baseline.NAME.METRIC`` too), with its unit."""
    from evaluation.catalog import UNIT_ENDINGS

    base = key.rsplit(".", 1)[-1] if key.startswith("baseline.") else key
    if base.endswith(UNIT_ENDINGS):
        return key
    return key + UNIT_SUFFIX.get(units.get(base, ""), "")


def log_result(result: TrainResult, *, register: bool = True, alias: str | None = "challenger",
               tags: dict | None = None, champion_if_none: bool = False, serving: bool = True):
    """Log a TrainResult to MLflow (and register it under the task's name) with its dataset inputs,
    description and version tags (algorithm, data, code version, primary metric and best baseline).
    Duration / iterations models are logged with models.serving's raw-record pyfunc when available."""
    from evaluation import plots
    from models.registry import log_estimator

    task = TASKS[result.task]
    metrics = {metric_name(k, task.units): v for k, v in result.metrics.items()}
    for name, base in result.baselines.items():
        for k, v in base.items():
            metrics[metric_name(f"baseline.{name}.{k}", task.units)] = v
    lin = result.lineage
    run_tags = {f"schedcast.data.{k}": v for k, v in lin.items() if v not in (None, "")}
    run_tags.update({"schedcast.algorithm": result.algo, "schedcast.primary_metric": task.primary, **(tags or {})})
    # rows and date range stay on the run (schedcast.data.*): the version keeps what identifies it
    version_tags = {"algorithm": result.algo, "primary_metric": task.primary,
                    "data": lin.get("source_desc", ""), "data.sha256": lin.get("sha256", "")}
    if result.primary is not None and np.isfinite(result.primary):  # logged metrics carry units in their names
        version_tags[f"metric.{task.primary}"] = f"{result.primary:.6g}"
    base = best_baseline(result)
    if base:
        version_tags["best_baseline"] = f"{base[0]} {base[1]:.4g}"
    serving_kw = _serving_model(result) if serving else {}
    logged = log_estimator(result.estimator, kind=result.task, X_example=result.X_example, params=result.params,
                           metrics=metrics, fingerprint=result.fingerprint, figures=result.figures,
                           register_as=result.task if register else None, alias=alias if register else None,
                           columns=result.columns, extra=result.extra, tags=run_tags,
                           run_name=f"{result.task}-{result.algo}", datasets=result.datasets,
                           description=describe(result), version_tags=version_tags,
                           champion_if_none=champion_if_none, **serving_kw)
    plots.close(result.figures)
    return logged


def _serving_model(result: TrainResult) -> dict[str, Any]:
    """python_model / input_example / signature of models.serving's raw-record pyfunc for duration and
    iterations (a scheduler sends raw job records); {} when it is not available."""
    if result.task not in ("duration", "iterations") or result.history is None:
        return {}
    try:
        from models.serving import raw_record_model
    except ImportError:
        return {}
    model, example = raw_record_model(result.task, result.estimator, result.history)
    return {"python_model": model, "input_example": example, "signature": getattr(model, "signature", None)}
