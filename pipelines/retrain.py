"""Scheduled retraining: train a challenger, score champion and challenger on the same trustworthy
holdout, and promote the challenger only when it is better by a margin.

Which holdout. Every training run records its data lineage (source, SHA-256, rows, split; see
pipelines.train.TrainResult.lineage). The gate compares on:

* the challenger's own holdout (the newest window) when the challenger's data is the champion's data or
  extends it, judged by content, never by path: the same SHA-256, the champion's file as a byte prefix
  of the challenger's (rows appended), or the champion's rows as the first rows of the challenger's table
  (pipelines.train.extends). A trace rewritten in place (same path, other durations) is other data;
* otherwise the champion's holdout, rebuilt from the champion's recorded source with its recorded
  split, after checking that the data still has the recorded SHA-256 (the challenger never saw it);
* otherwise nothing: the gate refuses (exit 4), because a model trained on other data cannot be judged
  on its own holdout (a synthetic challenger wins on synthetic data and loses on the real trace).

Exit codes (for cron / Kubernetes; also in docs/models.md):

====  ==================================================================================================
0     promoted (or the first champion)
1     failure: an error, or the champion alias moved while this retrain ran (nothing promoted)
2     usage error (e.g. ``--margin`` < 0, ``--jobs`` < 1)
3     champion kept (the challenger is not better by the margin)
4     refused: the challenger's data differs from the champion's and the champion's data cannot be
      reloaded and verified (missing file, changed SHA-256, or no lineage recorded)
5     refused: the comparison holdout is smaller than the task's minimum (pipelines.train.MIN_HOLDOUT)
====  ==================================================================================================

The champion alias is moved only as the very last step, under the model's alias lock, and only if it
still points at the version that was compared (compare-and-set); the decision and its reasons are
logged as an MLflow run (tags + decision.json) and printed. Refusals happen before the challenger is
registered.
"""
from __future__ import annotations

import json
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

from pipelines.train import (MIN_HOLDOUT, PRIMARY_METRIC, TASKS, DataSource, TrainResult, best_baseline,
                             evaluate_on_holdout, extends, log_result)

PROMOTED, FAILED, USAGE, KEPT, REFUSED_LINEAGE, REFUSED_HOLDOUT = 0, 1, 2, 3, 4, 5


class RetrainRefused(Exception):
    """The gate cannot compare trustworthily; ``code`` is the exit code (4 or 5)."""

    def __init__(self, code: int, message: str):
        super().__init__(message)
        self.code = code


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
    code: int | None = None
    holdout: str = ""  # which holdout was used ('challenger', 'champion-lineage', 'first')
    holdout_rows: int = 0
    min_holdout: int = 0

    @property
    def exit_code(self) -> int:
        if self.code is not None:
            return self.code
        return PROMOTED if self.promoted else KEPT


def champion_lineage(task: str, version: str) -> dict[str, str]:
    """The data lineage recorded in the run of ``task`` version ``version`` (run tags schedcast.data.*;
    older runs: their fingerprint params), plus the run's split parameters."""
    from models.registry import version_info

    info = version_info(task, version)
    tags, params = info["tags"], info["params"]
    lin = {k[len("schedcast.data."):]: v for k, v in tags.items() if k.startswith("schedcast.data.")}
    if "source" not in lin and params.get("fingerprint.data_file"):  # runs logged before lineage tags
        lin["source"] = DataSource("trace", path=params["fingerprint.data_file"]).to_json()
        lin["legacy_sha256"] = params.get("fingerprint.data_file_sha256", "")
    for k in ("test_days", "horizon", "freq", "labels", "target"):
        if k in params:
            lin.setdefault(f"param.{k}", params[k])
    return lin


def comparison_holdout(task: str, result: TrainResult, champion: dict[str, str], *, horizon: int | None = None,
                       freq: str = "10min", labels: str = "solo") -> tuple[Any, str, str]:
    """(holdout, kind, explanation) on which champion and challenger are compared; RetrainRefused (exit 4)
    when no trustworthy one exists."""
    t = TASKS[task]
    new = result.lineage
    if not champion.get("source"):
        raise RetrainRefused(REFUSED_LINEAGE, "the champion's run records no data lineage, so its data cannot be "
                             "reloaded for a fair comparison; retrain it with this version of schedcast first")
    old_src = DataSource.from_json(champion["source"])
    new_src = DataSource.from_json(new["source"]) if new.get("source") else None
    same_data = bool(champion.get("sha256")) and champion.get("sha256") == new.get("sha256")
    grown = None if same_data else extends(champion, result)
    if same_data or grown:
        why = ("the same data as the champion's" if same_data else
               "the champion's data with rows appended: its file is a byte prefix of the challenger's, SHA-256 "
               "verified" if grown == "file" else
               "the champion's data grown: its rows are the challenger's first rows, SHA-256 verified")
        return result.holdout, "challenger", f"the challenger's holdout ({why}: {old_src.describe()})"
    # Different origin: the comparison must happen on the champion's own data.
    try:
        data = t.load(old_src)
    except Exception as exc:  # noqa: BLE001 - unreachable for any reason: refuse, naming it
        raise RetrainRefused(REFUSED_LINEAGE, f"the challenger's data ({new_src.describe() if new_src else '?'}) "
                             f"differs from the champion's ({old_src.describe()}), and the champion's data cannot be "
                             f"reloaded: {type(exc).__name__}: {exc}") from None
    sha = t.data_sha256(data, labels=champion.get("param.labels", labels))
    recorded = champion.get("sha256") or ""
    if not recorded or sha != recorded:
        raise RetrainRefused(REFUSED_LINEAGE, f"the challenger's data ({new_src.describe() if new_src else '?'}) "
                             f"differs from the champion's ({old_src.describe()}), and the champion's data has changed "
                             f"since (SHA-256 {sha[:12]}... now, {recorded[:12] or 'none'}... recorded)")
    days = float(champion["param.test_days"]) if champion.get("param.test_days") not in (None, "", "None") else None
    hz = int(champion["param.horizon"]) if champion.get("param.horizon") not in (None, "", "None") else horizon
    ho = t.holdout(data, days, hz, old_src.freq or champion.get("param.freq") or freq,
                   champion.get("param.labels", labels))
    return ho, "champion-lineage", (f"the champion's holdout on its own data ({old_src.describe()}, SHA-256 verified): "
                                    f"the challenger was trained on other data ({new_src.describe() if new_src else '?'})")


def retrain(task: str, train: Callable[[], TrainResult], *, margin: float = 0.02,
            score_hook: Callable[[str, dict], None] | None = None, horizon: int | None = None,
            freq: str = "10min", labels: str = "solo", allow_worse_than_baseline: bool = False) -> Decision:
    """Run one retraining cycle for ``task`` (MLflow must already be configured).

    ``train`` builds the challenger (a TrainResult with its holdout and lineage). The challenger wins
    when its primary metric (lower is better) is below (1 - margin) x the champion's on the comparison
    holdout (module doc). ``score_hook`` is called after each score (tests use it to inject a crash or
    to hold a run at a point). Raises RetrainRefused (exit 4 / 5) before registering anything when no
    trustworthy comparison is possible. Without a champion, the challenger becomes the first champion only
    when it is not worse than its best baseline (or with ``allow_worse_than_baseline``); else exit 3.
    """
    import mlflow

    from models.registry import CHALLENGER, CHAMPION, alias_lock, alias_version, load, set_alias, unwrap

    if not margin >= 0:
        raise ValueError(f"--margin must be >= 0 (a relative improvement), got {margin}")
    metric = PRIMARY_METRIC[task]
    before = alias_version(task, CHAMPION)
    champion = champion_lineage(task, before) if before is not None else {}
    result = train()
    if before is None:
        ho, kind, why = result.holdout, "first", "no champion yet"
    else:
        ho, kind, why = comparison_holdout(task, result, champion, horizon=horizon, freq=freq, labels=labels)
    t = TASKS[task]
    rows, minimum = t.holdout_size(ho), MIN_HOLDOUT[task]
    if rows < minimum:
        raise RetrainRefused(REFUSED_HOLDOUT, f"the comparison holdout has {rows} {t.holdout_unit}, fewer than the "
                             f"minimum of {minimum} for {task}: a decision on so few would be noise (widen --test-days "
                             f"or give more data)")
    logged = log_result(result, register=True, alias=CHALLENGER, tags={"schedcast.retrain": "challenger"})
    challenger_score = float(evaluate_on_holdout(task, result.estimator, ho)[metric])
    if score_hook:
        score_hook("challenger", {metric: challenger_score})
    decision = Decision(task, False, "", metric, logged.version, before, before, challenger_score, None, margin,
                        holdout=kind, holdout_rows=rows, min_holdout=minimum)
    if before is None:
        base = best_baseline(result)
        if base is not None and result.primary > base[1] and not allow_worse_than_baseline:
            decision.reason = (f"no champion yet, but the challenger's {metric} {result.primary:.4g} is worse than "
                               f"the baseline {base[0]} {base[1]:.4g}: not made champion "
                               "(--allow-worse-than-baseline overrides)")
        else:
            decision.promoted, decision.reason = True, "no champion yet: the first model becomes champion"
    else:
        champ = unwrap(load(f"models:/{task}/{before}"))  # the version compared, whatever the alias says now
        champion_score = float(evaluate_on_holdout(task, champ, ho)[metric])
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
    decision.reason += f"; compared on {why}; {rows} {t.holdout_unit} (minimum {minimum})"
    decision.details = {"fingerprint": result.fingerprint, "challenger_metrics": result.metrics,
                        "challenger_lineage": result.lineage, "champion_lineage": champion}
    with alias_lock(task):
        now = alias_version(task, CHAMPION)
        if now != before:  # another retrain (or a person) moved the champion since we compared
            decision.promoted, decision.code = False, FAILED
            decision.champion_version_after = now  # what the alias points at now, not what was compared
            decision.reason = (f"the champion moved from version {before} to {now} while this retrain compared "
                               f"against {before}; nothing promoted (re-run to compare against {now})")
        _log_decision(mlflow, task, decision)
        if decision.promoted:
            set_alias(task, CHAMPION, logged.version)  # the only change to the champion, and the last step
            decision.champion_version_after = logged.version
    return decision


def _log_decision(mlflow, task: str, decision: Decision) -> None:
    with mlflow.start_run(run_name=f"retrain-{task}") as run:
        decision.details["decision_run_id"] = run.info.run_id  # the command prints its UI link
        mlflow.set_tags({"schedcast.kind": "retrain-decision", "schedcast.task": task,
                         "schedcast.promoted": str(decision.promoted), "schedcast.reason": decision.reason[:4000],
                         "schedcast.champion_before": str(decision.champion_version_before),
                         "schedcast.challenger": str(decision.challenger_version),
                         "schedcast.exit_code": str(decision.exit_code)})
        mlflow.log_params({"task": task, "metric": decision.metric, "margin": decision.margin,
                           "holdout": decision.holdout, "holdout_rows": decision.holdout_rows,
                           "min_holdout": decision.min_holdout, "champion_version": decision.champion_version_before,
                           "challenger_version": decision.challenger_version})
        from pipelines.train import metric_name

        unit = metric_name(decision.metric, TASKS[task].units)[len(decision.metric):] if task in TASKS else ""
        mlflow.log_metrics({k: v for k, v in ((f"challenger_score{unit}", decision.challenger_score),
                                              (f"champion_score{unit}", decision.champion_score),
                                              ("holdout_rows", float(decision.holdout_rows))) if v is not None})
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "decision.json"
            path.write_text(json.dumps(asdict(decision), indent=2, default=str))
            mlflow.log_artifact(str(path))
