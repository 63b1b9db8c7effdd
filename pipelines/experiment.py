"""The experiment runner's old module: a thin re-export of the package pipelines.experiments (spec,
cells, executors, store, tracking, runner, cli), kept so that `import pipelines.experiment` and its
public names go on working. New code imports from pipelines.experiments."""
from __future__ import annotations

from typing import Any

from pipelines.experiments.cli import add_parsers, cmd_report, cmd_run  # noqa: F401 - the CLI's entry points


def __getattr__(name: str) -> Any:
    if name == "venus_shaped":  # moved to the generator registry (generator: venus-shaped)
        from features.traces.lucid_synthetic import venus_shaped

        return venus_shaped
    import pipelines.experiments as package

    return getattr(package, name)


__all__ = ["Cell", "ExperimentSpec", "PolicyEntry", "WorkloadSpec", "build_report", "cached_workload", "check_metric",
           "check_resources", "collect", "expand", "finished", "load_spec", "make_engine", "make_executor", "parse_spec",
           "run_cell", "run_experiment"]
