"""Scheduled retraining: train a challenger on the latest window, score champion and challenger on the
same recent holdout, and promote the challenger only when it is better by a margin.

Exit codes (for cron / Kubernetes): 0 promoted (or first champion), 3 champion kept, 1 failure (the
champion alias is untouched: it moves only as the very last step, after everything else succeeded).
The decision and its reasons are logged as an MLflow run (tags + decision.json) and printed.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from pipelines.train import PRIMARY_METRIC, TrainResult, evaluate_on_holdout, log_result

PROMOTED, KEPT, FAILED = 0, 3, 1


@dataclass
class Decision:
    task: str
    promoted: bool
    reason: str
    metric: str
    challenger_version: str | None = None
    champion_version_before: str | None = None
    champion_version_after: str | None = None
    challenger_score: float | None = None
    champion_score: float | None = None
    margin: float = 0.0
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return PROMOTED if self.promoted else KEPT


def retrain(task: str, train: Callable[[], TrainResult], *, margin: float = 0.02,
            score_hook: Callable[[str, dict], None] | None = None) -> Decision:
    """Run one retraining cycle for ``task`` (MLflow must already be configured).

    ``train`` builds the challenger (a TrainResult whose ``holdout`` is the recent window). The
    challenger wins when its primary metric (lower is better) is below (1 - margin) x the champion's.
    ``score_hook`` is called after each score (tests use it to inject a crash mid-run).
    """
    import mlflow

    from models.registry import CHAMPION, CHALLENGER, alias_version, load, set_alias, unwrap

    metric = PRIMARY_METRIC[task]
    before = alias_version(task, CHAMPION)
    result = train()
    logged = log_result(result, register=True, alias=CHALLENGER, tags={"schedcast.retrain": "challenger"})
    challenger_score = float(evaluate_on_holdout(task, result.estimator, result.holdout)[metric])
    if score_hook:
        score_hook("challenger", {metric: challenger_score})
    decision = Decision(task, False, "", metric, logged.version, before, before, challenger_score, None, margin)
    if before is None:
        decision.promoted, decision.reason = True, "no champion yet: the first model becomes champion"
    else:
        champion = unwrap(load(f"models:/{task}@{CHAMPION}"))
        champion_score = float(evaluate_on_holdout(task, champion, result.holdout)[metric])
        decision.champion_score = champion_score
        if score_hook:
            score_hook("champion", {metric: champion_score})
        if challenger_score < (1.0 - margin) * champion_score:
            decision.promoted = True
            decision.reason = (f"challenger {metric} {challenger_score:.4g} < (1 - {margin:g}) x champion "
                               f"{champion_score:.4g}")
        else:
            decision.reason = (f"challenger {metric} {challenger_score:.4g} is not better than champion "
                               f"{champion_score:.4g} by the margin {margin:g}")
    decision.details = {"holdout_rows": _rows(result.holdout), "fingerprint": result.fingerprint,
                        "challenger_metrics": result.metrics}
    with mlflow.start_run(run_name=f"retrain-{task}"):
        mlflow.set_tags({"schedcast.kind": "retrain-decision", "schedcast.task": task,
                         "schedcast.promoted": str(decision.promoted), "schedcast.reason": decision.reason})
        mlflow.log_metrics({k: v for k, v in (("challenger_score", challenger_score),
                                              ("champion_score", decision.champion_score)) if v is not None})
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "decision.json"
            path.write_text(json.dumps(asdict(decision), indent=2, default=str))
            mlflow.log_artifact(str(path))
    if decision.promoted:
        set_alias(task, CHAMPION, logged.version)  # the only change to the champion, and the last step
        decision.champion_version_after = logged.version
    return decision


def _rows(holdout) -> int:
    try:
        first = holdout[0]
        return int(len(first))
    except (TypeError, IndexError):
        return 0

