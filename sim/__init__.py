"""The event-driven replay simulator: cluster, workload, engine, policies and placement plug-ins."""
from __future__ import annotations

from typing import Callable

from sim.engine import Engine, SimResult, SimulationError
from sim.placement import Placement
from sim.predictors import Predictor, make_predictor, predict_durations
from sim.workload import Workload


def simulate(workload: Workload, policy: str = "fifo", *, placement: str | Placement = "consolidate",
             predictor: str | Predictor | None = None, seed: int = 0, check_invariants: bool = False,
             record_events: bool = False, time_decisions: bool = False,
             progress: Callable[[int, int], None] | None = None, tracking_uri: str | None = None) -> SimResult:
    """Replay ``workload`` under ``policy`` (a registry name, optionally 'name:key=value,...')."""
    from sim.policies import get_policy

    info, factory, params = get_policy(policy)
    prepare = getattr(info.cls, "prepare_workload", None)
    if prepare is not None:  # e.g. Lucid: job profiles and a profiling partition
        workload = prepare(workload, {**info.defaults, **params})
    predictions = None
    if info.uses_predictions or params.get("history") is False:
        predictions = predict_durations(make_predictor(predictor, seed=seed, tracking_uri=tracking_uri), workload.frame)
    engine = Engine(workload, factory, placement=placement, predictions=predictions,
                    check_invariants=check_invariants, record_events=record_events,
                    time_decisions=time_decisions, progress=progress, policy_name=policy)
    return engine.run()


__all__ = ["Engine", "SimResult", "SimulationError", "Workload", "simulate"]
