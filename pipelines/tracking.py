"""Simulations as MLflow runs: one parent run per invocation, one nested run per replay.

A replay run carries what is needed to trust and repeat it: the policy and its parameters, cluster,
placement, trace source and fingerprint, seed and code version (params); the columns of summary.csv and,
where a workload has more than one partition / job class / size group, the main ones per group (metrics);
the result files (artifacts); and lineage to the models that drove it: for a ``models:/NAME@ALIAS``
predictor the resolved version and the run that trained it (params, tags and, on MLflow 3, a model
input link), so that the UI leads from a JCT to the model behind it.

When tracking is on (:func:`tracking_destination`): ``--track``, an explicit ``--tracking-uri`` or a set
``$MLFLOW_TRACKING_URI``; ``--no-track`` turns it off. A plain ``schedcast simulate`` never imports mlflow.

Everything talks to the store through ``MlflowClient`` with batched calls (one ``log_batch`` per run),
and only from the process that writes the result folder, so a sqlite store has a single writer.
"""
from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any, Iterable, Mapping

from models.store import EXPERIMENTS  # noqa: E402 - one experiment per kind: training, simulations, sweeps, ledgers

EXPERIMENT = EXPERIMENTS["simulations"]
SWEEP_EXPERIMENT = EXPERIMENTS["sweeps"]
LEDGER_EXPERIMENT = EXPERIMENTS["ledgers"]
#: Per-group metrics logged for partitions, job classes and size groups (summary columns).
GROUP_METRICS = ("jobs", "jct_mean", "jct_p50", "jct_p99", "wait_mean", "wait_p99")
_PARAM_MAX = 500


def tracking_destination(track: bool | None = None, tracking_uri: str | None = None) -> str | None:
    """The tracking URI to log to, or None for no tracking.

    ``track`` is the ``--track/--no-track`` flag (None when not given): False turns tracking off; True
    turns it on (``tracking_uri``, else $MLFLOW_TRACKING_URI, else ./mlruns/mlflow.db); None turns it
    on only when a destination was named (``tracking_uri`` or $MLFLOW_TRACKING_URI).
    """
    if track is False:
        return None
    uri = tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
    if uri:
        return uri
    if track:
        from models.registry import default_tracking_uri

        return default_tracking_uri()
    return None


#: The MLflow 3 UI's workflow switch ("GenAI" / "Model training"). MLflow 3.17 decides what an experiment
#: opens on from this switch (kept in the browser, GenAI by default) or from the URL's ``workflowType``,
#: and reads the ``mlflow.experimentKind`` tag only where the switch is disabled: links schedcast prints
#: carry the parameter, and its experiments carry the tag, so both kinds of UI open on runs.
UI_RUNS_QUERY = "workflowType=machine_learning"


def ui_url(tracking_uri: str, experiment_id: str, run_id: str | None = None) -> str | None:
    """The MLflow UI page of an experiment (or of one run) on an http(s) tracking server, opening in the
    model-training view; None for a local store (its UI is wherever `schedcast server` serves it)."""
    if not tracking_uri.startswith(("http://", "https://")):
        return None
    page = f"#/experiments/{experiment_id}" + (f"/runs/{run_id}" if run_id else "")
    return f"{tracking_uri.rstrip('/')}/{page}?{UI_RUNS_QUERY}"


def ui_link(tracking_uri: str, run_id: str, experiment_id: str | None = None) -> str:
    """Where to see a run: its UI page on a tracking server, or for a local store the page the UI of
    `schedcast server` (http://127.0.0.1:5000) will show, and the command that starts it. The experiment
    is looked up when not given."""
    if experiment_id is None:
        try:
            from mlflow import MlflowClient

            experiment_id = MlflowClient(tracking_uri=tracking_uri).get_run(run_id).info.experiment_id
        except Exception:  # noqa: BLE001 - a link is a courtesy: never fail a finished command over it
            return f"run {run_id} in {tracking_uri}"
    url = ui_url(tracking_uri, experiment_id, run_id)
    if url:
        return url
    from models.registry import default_tracking_uri

    start = "schedcast server" if tracking_uri == default_tracking_uri() else \
        f"schedcast server --backend-store-uri {tracking_uri}"
    return f"{ui_url('http://127.0.0.1:5000', experiment_id, run_id)} (start the UI with `{start}`)"


# One implementation, in the lowest layer that needs it (model runs are tagged with it too).
from models.provenance import code_version  # noqa: E402


def _key(text: str) -> str:
    """A metric / param name MLflow accepts (letters, digits, _ - . / and space)."""
    return re.sub(r"[^0-9A-Za-z_\-./ ]", "_", str(text))[:250]


def _metric_key(text: str) -> str:
    """A logged metric's name: the catalog's unit-bearing name (``jct_mean`` -> ``jct_mean_s``)."""
    from evaluation.catalog import file_name

    return _key(file_name(str(text)))


def _value(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= _PARAM_MAX else text[: _PARAM_MAX - 3] + "..."


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            import numpy as np

            if isinstance(value, np.generic):
                value = value.item()
            else:
                return None
        except ImportError:  # pragma: no cover
            return None
    value = float(value)
    return value if math.isfinite(value) else None


def summary_metrics(summary: Mapping[str, Any], breakdowns: Mapping[str, Any] | None = None) -> dict[str, float]:
    """The numeric, finite columns of a summary row that the metric catalog names, plus ``partition/NAME/COL``, ``class/NAME/COL`` and
    ``size/NAME/COL`` for breakdowns with more than one group (one group repeats the summary). Keys are
    in-memory (unit-less) names; group names are made key-safe (``<=8 GPUs`` -> ``le8``); the unit
    suffix is added where they are logged (:meth:`Tracker.log`)."""
    from evaluation.catalog import group_label, known

    # only what the metric catalog names (evaluation.catalog): a policy's own statistics stay in summary.csv
    out = {_key(k): v for k, v in ((k, _finite(v)) for k, v in summary.items() if known(k)) if v is not None}
    prefixes = {"by_partition": ("partition", "partition"), "by_class": ("class", "job_class"),
                "by_size": ("size", "size")}
    for key, (prefix, column) in prefixes.items():
        frame = (breakdowns or {}).get(key)
        if frame is None or len(frame) < 2 or column not in frame:
            continue
        for row in frame.to_dict("records"):
            for col in GROUP_METRICS:
                v = _finite(row.get(col))
                if v is not None:
                    out[_key(f"{prefix}/{group_label(row[column])}/{col}")] = v
    return out


#: Summary columns the parent run of a simulate invocation logs per policy (the printed comparison).
COMPARISON_METRICS = ("jct_mean", "jct_p50", "jct_p95", "jct_p99", "wait_mean", "wait_p95", "wait_p99.9",
                      "futile_p95", "preemptions", "makespan", "gpu_utilisation", "load_reached", "sim_seconds")


def comparison_metrics(runs: Mapping[str, Mapping[str, Any]]) -> dict[str, float]:
    """The comparison table as metrics of the parent run: ``POLICY/METRIC`` (``fifo/jct_mean_s`` once
    logged), so the parent run's page and the runs table compare policies without opening children."""
    out: dict[str, float] = {}
    for policy, ev in runs.items():
        summary = ev.get("summary") or {}
        for col in COMPARISON_METRICS:
            v = _finite(summary.get(col))
            if v is not None:
                out[_key(f"{policy}/{col}")] = v
    return out


def model_lineage(resolved: Mapping[str, Any] | None, prefix: str = "predictor") -> tuple[dict[str, str], str | None]:
    """(params, logged-model id or None) for a predictor's ``describe()``: a registry model gives its
    name, resolved version, training run id and source; other predictors their kind and settings."""
    if not resolved:
        return {}, None
    params = {f"{prefix}.{k}": _value(v) for k, v in resolved.items() if k not in ("tracking_uri",) and v is not None}
    return params, resolved.get("model_id")


def _resolve_model(spec: str, tracking_uri: str | None) -> dict[str, Any]:
    """``describe()`` of a models:/ or runs:/ predictions source, best effort (spec only on failure)."""
    if not spec.startswith(("models:/", "runs:/")):
        return {"spec": spec}
    try:
        from sim.predictors import ModelPredictor

        return {"spec": spec, **ModelPredictor(spec, tracking_uri).resolve()}
    except (ValueError, ImportError, OSError) as exc:
        return {"spec": spec, "resolve_error": str(exc)[:200]}


def model_id(resolved: Mapping[str, Any], client) -> str | None:
    """The MLflow 3 logged-model id behind a resolved registry version: the version's ``model_id``, or
    its source when that is a logged model (``models:/m-...``); None before MLflow 3 or when the version
    was registered from a plain run artifact."""
    if resolved.get("model_id"):
        return str(resolved["model_id"])
    source = str(resolved.get("source") or "")
    if "name" in resolved and "version" in resolved:
        try:
            mv = client.get_model_version(resolved["name"], str(resolved["version"]))
        except Exception:  # noqa: BLE001 - lineage links are best effort; the params are always written
            mv = None
        if mv is not None:
            if getattr(mv, "model_id", None):
                return str(mv.model_id)
            source = str(mv.source or source)
    if source.startswith("models:/m-") and "/" not in source[len("models:/"):]:
        return source[len("models:/"):]
    return None


_model_id = model_id  # the old private name


def _context_tags() -> dict[str, str]:
    """What MLflow's own ``start_run`` records about who and what started a run (``mlflow.user`` is the
    UI's "Created by", ``mlflow.source.name`` / ``.type`` its "Source"), so simulation runs show them
    like training runs do."""
    tags = {"mlflow.source.type": "LOCAL"}
    try:
        from mlflow.tracking.context.registry import resolve_tags

        tags.update({k: str(v) for k, v in resolve_tags().items() if k.startswith("mlflow.")})
    except Exception:  # noqa: BLE001 - context providers are best effort (MLflow's own start_run is too)
        import getpass

        tags["mlflow.user"] = getpass.getuser()
    if tags.get("mlflow.source.name", "-c") in ("-c", ""):
        tags["mlflow.source.name"] = "schedcast"
    return tags


class Tracker:
    """A parent run and its nested runs in one experiment of one store (MlflowClient, batched)."""

    def __init__(self, tracking_uri: str, experiment: str = EXPERIMENT) -> None:
        import warnings

        from models.registry import _file_lock, _quiet_mlflow, mark_model_development, sqlite_path
        from models.store import experiment_tags

        import mlflow
        from mlflow import MlflowClient

        _quiet_mlflow()
        self.uri = tracking_uri
        db = sqlite_path(tracking_uri)
        if db is not None:
            db.parent.mkdir(parents=True, exist_ok=True)
        self.client = MlflowClient(tracking_uri=tracking_uri, registry_uri=tracking_uri)
        self._context = _context_tags()
        lock = _file_lock(db.with_name(db.name + ".lock")) if db is not None else None
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore")
            if lock is not None:
                lock.__enter__()
            try:
                exp = self.client.get_experiment_by_name(experiment)
                if exp is None:
                    location = (db.parent / "artifacts").resolve().as_uri() if db is not None else None
                    self.experiment_id = self.client.create_experiment(
                        experiment, artifact_location=location, tags=experiment_tags(experiment))
                else:
                    self.experiment_id = exp.experiment_id
                    mark_model_development(self.client, exp.experiment_id, exp.tags, experiment)
            finally:
                if lock is not None:
                    lock.__exit__(None, None, None)
        self._mlflow = mlflow

    def start(self, name: str, params: Mapping[str, Any] | None = None, tags: Mapping[str, Any] | None = None,
              parent: str | None = None, metrics: Mapping[str, float] | None = None,
              started: float | None = None) -> str:
        """Create a run (nested under ``parent``) and log its params and metrics in one batch (each
        store call is a commit: on sqlite a few ms of fsync each). ``started`` (epoch seconds): when the
        work began, so that the run's duration in the UI is the work's, not the logging's."""
        all_tags = {**self._context, "mlflow.runName": name, "schedcast.kind": "simulation",
                    **{k: str(v) for k, v in (tags or {}).items()}}
        if parent:
            all_tags["mlflow.parentRunId"] = parent
        run = self.client.create_run(self.experiment_id, run_name=name, tags=all_tags,
                                     start_time=None if started is None else int(started * 1000))
        if params or metrics:
            self.log(run.info.run_id, params=params, metrics=metrics)
        return run.info.run_id

    def log(self, run_id: str, *, params: Mapping[str, Any] | None = None,
            metrics: Mapping[str, float] | None = None, tags: Mapping[str, Any] | None = None) -> None:
        from mlflow.entities import Metric, Param, RunTag
        from mlflow.utils.time import get_current_time_millis

        now = get_current_time_millis()
        p = [Param(_key(k), _value(v)) for k, v in (params or {}).items()]
        m = [Metric(_metric_key(k), float(v), now, 0) for k, v in (metrics or {}).items()]
        t = [RunTag(_key(k), _value(v)) for k, v in (tags or {}).items()]
        while p or m or t:  # MLflow's batch limits: 100 params, 100 tags, 1000 entries in all
            bp, p = p[:100], p[100:]
            bt, t = t[:100], t[100:]
            room = 1000 - len(bp) - len(bt)
            bm, m = m[:room], m[room:]
            self.client.log_batch(run_id, metrics=bm, params=bp, tags=bt)

    def artifacts(self, run_id: str, paths: Iterable[str | Path], artifact_path: str | None = None) -> None:
        for path in paths:
            path = Path(path)
            if path.is_dir():
                self.client.log_artifacts(run_id, str(path), artifact_path)
            elif path.exists():
                self.client.log_artifact(run_id, str(path), artifact_path)

    def link_models(self, run_id: str, model_ids: Iterable[str | None]) -> None:
        """Model inputs of a run (MLflow 3 logged models): the UI shows them on the run page."""
        ids = [m for m in model_ids if m]
        if not ids:
            return
        try:
            from mlflow.entities import LoggedModelInput

            self.client.log_inputs(run_id, models=[LoggedModelInput(model_id=m) for m in ids])
        except Exception:  # noqa: BLE001 - older MLflow / foreign stores: the lineage params stay
            pass

    def end(self, run_id: str, status: str = "FINISHED", ended: float | None = None) -> None:
        """End a run; ``ended`` (epoch seconds): when its work ended (default: now)."""
        self.client.set_terminated(run_id, status, end_time=None if ended is None else int(ended * 1000))

    def url(self, run_id: str) -> str:
        """A link to the run's UI page (:func:`ui_link`)."""
        return ui_link(self.uri, run_id, self.experiment_id)


def _policy_params(policy: str) -> tuple[dict[str, Any], bool]:
    """(name + coerced parameters, uses predictions) of a policy spec, best effort."""
    try:
        from sim.policies import get_policy

        info, _, params = get_policy(policy)
        merged = {**info.defaults, **params}
        uses = bool(info.uses_predictions or merged.get("history") is False)
        return {"policy.name": info.name, **{f"policy.{k}": v for k, v in merged.items()}}, uses
    except (ValueError, ImportError):
        return {"policy.name": policy.split(":")[0]}, True


def replay_params(policy: str, meta: Mapping[str, Any], code: str) -> tuple[dict[str, Any], dict[str, Any], list]:
    """(params, tags, model ids) of one replay run from its policy and a result folder's meta.json."""
    pparams, uses_predictions = _policy_params(policy)
    trace = meta.get("trace") or {}
    params: dict[str, Any] = {
        "policy": policy, **pparams,
        "cluster": meta.get("cluster_name"), "cluster.describe": meta.get("cluster"),
        "cluster.gpus": meta.get("cluster_gpus"), "placement": meta.get("placement") or "policy default",
        "trace": meta.get("trace_name"), "trace.source": trace.get("source"),
        "trace.fingerprint": meta.get("workload_fingerprint"), "jobs": meta.get("jobs"),
        "offered_load": meta.get("offered_load"), "seed": meta.get("seed"), "window": meta.get("window"),
        "failures": meta.get("failures", "none"), "performance": meta.get("performance") or "none",
        "code_version": code,
    }
    tags: dict[str, Any] = {"schedcast.policy": policy, "schedcast.trace": meta.get("trace_name"),
                            "schedcast.cluster": meta.get("cluster_name"), "schedcast.code_version": code}
    models: list = []
    if uses_predictions:
        resolved = dict(meta.get("predictor_resolved") or {"kind": meta.get("predictor")})
        lp, mid = model_lineage(resolved, "predictor")
        params.update(lp)
        params["predictor"] = meta.get("predictor")
        if resolved.get("run_id"):
            tags["schedcast.model_run_id"] = resolved["run_id"]
            tags["schedcast.model"] = f"{resolved.get('name')}/{resolved.get('version')}"
        models.append(resolved)
    else:
        params["predictor"] = "unused"
    fc = (meta.get("forecasters") or {}).get(policy)
    if fc:  # the demand forecaster that drove the policy's quotas (GFS's SQA)
        params.update({"forecaster": fc.get("estimator"), "forecaster.model_version": fc.get("model_version"),
                       "forecaster.model_fits": fc.get("model_fits")})
        tags["schedcast.forecaster"] = f"{fc.get('estimator')}" + (f"/{fc['model_version']}" if fc.get("model_version") else "")
    for kind, info in (meta.get("predict_resolved") or {}).items():
        lp, _ = model_lineage(info, f"predict.{kind}")
        params.update(lp)
        if info.get("run_id"):
            tags[f"schedcast.model_run_id.{kind}"] = info["run_id"]
        models.append(info)
    return {k: v for k, v in params.items() if v is not None}, tags, models


def _safe(name: str) -> str:
    from evaluation.report import safe_name as safe

    return safe(name)


def track_simulation(out_dir: str | Path, runs: Mapping[str, Mapping[str, Any]], meta: Mapping[str, Any],
                     tracking_uri: str, times: Mapping[str, tuple[float, float]] | None = None,
                     started: float | None = None) -> str:
    """Log a `schedcast simulate` result folder: a parent run for the invocation (command, trace, cluster,
    seed, summary.csv, meta.json, plots) and one nested run per policy (params, summary and per-group
    metrics, its job table / allocation / breakdown files, model lineage). Returns the parent run id.

    ``runs`` and ``meta`` are what evaluation.report.write_results wrote into ``out_dir``. ``times``: per
    policy, the (start, end) epoch seconds of its replay, and ``started`` the command's start: the runs'
    durations in the UI are then the replays' and the command's.
    """
    out = Path(out_dir)
    tracker = Tracker(tracking_uri)
    code = code_version()
    meta = dict(meta)
    if meta.get("predict") and "predict_resolved" not in meta:
        meta["predict_resolved"] = {k: _resolve_model(v, tracking_uri) for k, v in meta["predict"].items()}
    name = f"{meta.get('kind', 'simulate')}: {meta.get('trace_name')} on {meta.get('cluster_name')} (seed {meta.get('seed')})"
    parent = tracker.start(name, params={
        "command": meta.get("command"), "trace": meta.get("trace_name"), "cluster": meta.get("cluster_name"),
        "trace.fingerprint": meta.get("workload_fingerprint"), "seed": meta.get("seed"),
        "policies": ",".join(runs), "placement": meta.get("placement"), "predictor": meta.get("predictor"),
        "code_version": code, "out_dir": str(out.resolve())},
        tags={"schedcast.kind": "simulate", "schedcast.code_version": code}, started=started)
    status = "FAILED"
    try:
        for policy, ev in runs.items():
            params, tags, models = replay_params(policy, meta, code)
            when = (times or {}).get(policy)
            child = tracker.start(f"{policy} | {meta.get('trace_name')} | seed {meta.get('seed')}",
                                  params=params, tags=tags, parent=parent,
                                  metrics=summary_metrics(ev["summary"], ev), started=when[0] if when else None)
            safe = _safe(policy)
            tracker.artifacts(child, [out / "summary.csv", out / f"jobs_{safe}.parquet",
                                      out / f"allocation_{safe}.parquet",
                                      *(out / f"{k}_{safe}.csv" for k in ("by_partition", "by_size", "by_class"))])
            tracker.link_models(child, [model_id(m, tracker.client) for m in models])
            tracker.end(child, ended=when[1] if when else None)
        tracker.log(parent, metrics=comparison_metrics(runs))
        tracker.artifacts(parent, [out / "summary.csv", out / "meta.json", out / "jct_cdf.png",
                                   out / "gpu_allocation.png"])
        status = "FINISHED"
    finally:
        tracker.end(parent, status)
    return parent


__all__ = ["EXPERIMENT", "LEDGER_EXPERIMENT", "SWEEP_EXPERIMENT", "Tracker", "code_version", "comparison_metrics", "ui_link", "ui_url", "model_lineage", "replay_params", "summary_metrics",
           "track_simulation", "tracking_destination"]
