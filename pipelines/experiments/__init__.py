"""Experiments: grids of replays from a spec (`schedcast experiment run SPEC`, `experiment report`).

A spec (configs/experiments/*.yaml, validated by :class:`~pipelines.experiments.spec.ExperimentSpec`) names
workloads (trace files, synthetic presets or registered generators, a cluster, optional offered-load sizing,
costs, failures, performance model, predictions), policies (registry names, ``all``, parameter grids),
duration predictors, seeds and the metrics to rank by (evaluation.catalog). It expands into cells, one replay
each (workload, policy, predictor, seed), each replayed through the one replay path (pipelines.replay).

The package, one concern a module:

- ``spec``: the schema and its validation before any cell runs;
- ``cells``: the cells, their hash (the resume key) and :func:`run_cell` (in a worker);
- ``executors``: where cells run (``serial``, ``dask``: a LocalCluster on 127.0.0.1 or the user's scheduler,
  ``ray``);
- ``store``: the run folder (status files, lock, run.json, report), resumable: a cell already finished
  with the same hash and code version is not run again;
- ``tracking``: MLflow, written by the driver alone (a parent run, one nested run per cell);
- ``runner``: :func:`run_experiment`, the whole run;
- ``cli``: the flags.

The names are re-exported here lazily (`schedcast` imports the CLI module on every start).
"""
from __future__ import annotations

import importlib
from typing import Any

_WHERE = {
    "DEFAULT_METRICS": "spec", "MAX_JOBS": "spec", "MAX_SEEDS": "spec", "MAX_SEED": "spec", "RESULTS_ROOT": "spec",
    "ExperimentSpec": "spec", "WorkloadSpec": "spec", "PolicyEntry": "spec", "check_metric": "spec",
    "check_resources": "spec", "default_out": "spec", "load_spec": "spec", "parse_spec": "spec",
    "_BASE_METRICS": "spec",
    "Cell": "cells", "cached_workload": "cells", "expand": "cells", "replay_spec": "cells", "run_cell": "cells",
    "DaskExecutor": "executors", "RayExecutor": "executors", "SerialExecutor": "executors",
    "make_executor": "executors", "DaskEngine": "executors", "RayEngine": "executors", "SerialEngine": "executors",
    "make_engine": "executors",
    "build_report": "store", "collect": "store", "finished": "store",
    "RunOutcome": "runner", "run_experiment": "runner",
    "add_parsers": "cli", "cmd_report": "cli", "cmd_run": "cli",
}


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


__all__ = sorted(n for n in _WHERE if not n.startswith("_"))
