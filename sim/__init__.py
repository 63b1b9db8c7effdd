"""The event-driven replay simulator: cluster, workload, engine, policies and placement plug-ins."""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Iterable, Sequence

from sim.engine import Engine, InvariantViolation, SimResult, SimulationError
from sim.placement import Placement
from sim.workload import Request, Workload

if TYPE_CHECKING:
    from sim.coordinator import Coordinator
    from sim.failures import Failure, RestartRule
    from sim.performance import PerformanceModel
    from sim.predictors import Predictor


def simulate(workload: Workload, policy: str = "fifo", *, placement: str | Placement | None = None,
             predictor: "str | Predictor | None" = None,
             predictions: "Sequence[float] | dict[str, Sequence[float]] | None" = None,
             seed: int = 0, failures: "Iterable[Failure] | None" = None, restart: "RestartRule | None" = None,
             performance: "PerformanceModel | None" = None, coordinator: "Coordinator | None" = None,
             check_invariants: bool = False, record_events: bool = False, time_decisions: bool = False,
             progress: Callable[[int, int], None] | None = None, tracking_uri: str | None = None,
             fast_path: bool | None = None) -> SimResult:
    """Replay ``workload`` under ``policy`` (a registry name, optionally 'name:key=value,...').

    - ``placement``: a registry name or a Placement; None takes the policy's ``default_placement``
      (class attribute) or ``consolidate``.
    - ``predictor``: duration predictions for policies that use them (``uses_predictions``), as before;
      ``predictions`` gives estimates by name directly (``{"duration": [...], "iterations": [...]}``;
      a plain list means durations) and wins over ``predictor`` for the kinds it names.
    - ``seed``: the run seed policies draw from (``ctx.rng(stream)``).
    - ``failures``: timed failure events (sim.failures.Failure, or node_failures(...) for a seeded
      generator) with ``restart`` (sim.failures.RestartRule; default: requeue at once, always).
    - ``performance``: a performance model (sim.performance) for placement-dependent speed.
    - ``fast_path``: False replays with the general loop even where sim.kernel's specialised loop applies
      (None: on unless ``SCHEDCAST_FAST_PATH=0``); both give the same schedule.
    """
    from sim.policies import get_policy

    info, factory, params = get_policy(policy)
    prepare = getattr(info.cls, "prepare_workload", None)
    if prepare is not None:  # e.g. Lucid: job profiles and a profiling partition
        workload = prepare(workload, {**info.defaults, **params})
    by_name: dict[str, Sequence[float]] = {}
    if info.uses_predictions or params.get("history") is False:
        from sim.predictors import make_predictor, predict_durations

        by_name["duration"] = predict_durations(make_predictor(predictor, seed=seed, tracking_uri=tracking_uri),
                                                workload.frame)
    if predictions is not None:
        by_name.update(predictions if isinstance(predictions, dict) else {"duration": predictions})
    if placement is None:
        placement = getattr(info.cls, "default_placement", None) or "consolidate"
    engine = Engine(workload, factory, placement=placement, predictions=by_name or None,
                    check_invariants=check_invariants, record_events=record_events,
                    time_decisions=time_decisions, progress=progress, policy_name=policy, seed=seed,
                    failures=failures, restart=restart, performance=performance, coordinator=coordinator,
                    fast_path=fast_path)
    return engine.run()


__all__ = ["Engine", "InvariantViolation", "Request", "SimResult", "SimulationError", "Workload", "simulate"]

# The PAI-shaped workload generator (A-SRPT) lives in sim.asrpt.pai_workload: it draws jobs with the
# simulator's stage catalogue and iteration model. Declared for features' generator registry from here
# (features never imports sim); nothing is imported until a preset names it.
from features.plugins import declare as _declare

_declare("generators", "pai", "sim.asrpt.pai_workload:generate_from_preset")
