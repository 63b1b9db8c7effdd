"""Predictors reach policies through one interface: ``predict(jobs: DataFrame) -> ndarray`` of durations.

Predictions are made once per job, from what is known at submission, before the replay starts (no
model inference inside the event loop). Online learners that need completions live in the policy
(e.g. QSSF's history predictor).

Every predictor also says what it is (``describe() -> dict``), so that a result folder records the
exact model that drove a run: a registry alias is resolved to its version and run id when the model
is loaded, and that version (not whatever the alias points at later) is the one used.
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from features.plugins import Registry, new_registry, parse_spec


@runtime_checkable
class Predictor(Protocol):
    def predict(self, jobs: pd.DataFrame) -> np.ndarray: ...


class OraclePredictor:
    """The true duration: the upper bound of what any model can give."""

    name = "oracle"

    def predict(self, jobs: pd.DataFrame) -> np.ndarray:
        return jobs["duration"].to_numpy(dtype=float)

    def describe(self) -> dict[str, Any]:
        return {"kind": "oracle"}


class NoisyOraclePredictor:
    """True duration x exp(N(0, sigma^2)): seeded multiplicative log-normal error, median-unbiased.

    sigma = 0.5 puts about two thirds of predictions within a factor 1.65 of the truth.
    """

    def __init__(self, sigma: float, seed: int = 0):
        if sigma < 0:
            raise ValueError("sigma must be >= 0")
        self.sigma, self.seed = float(sigma), int(seed)
        self.name = f"noisy-oracle(sigma={sigma:g})"

    def predict(self, jobs: pd.DataFrame) -> np.ndarray:
        rng = np.random.default_rng(self.seed)
        noise = rng.normal(0.0, self.sigma, size=len(jobs))
        return jobs["duration"].to_numpy(dtype=float) * np.exp(noise)

    def describe(self) -> dict[str, Any]:
        return {"kind": "noisy-oracle", "sigma": self.sigma, "seed": self.seed}


class _ModelBacked:
    """Shared by model-backed predictors: the same job frame asked again (one replay per policy) is
    answered from the last result instead of recomputing features and calling the model."""

    _last: tuple[int, int, np.ndarray] | None = None  # (id, rows, predictions) of the last frame

    def predict(self, jobs: pd.DataFrame) -> np.ndarray:
        if self._last is not None and self._last[:2] == (id(jobs), len(jobs)):
            return self._last[2]
        out = self._predict(jobs)
        self._last = (id(jobs), len(jobs), out)
        return out

    def _predict(self, jobs: pd.DataFrame) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError


def parse_model_uri(uri: str) -> dict[str, str]:
    """'models:/NAME@ALIAS' -> {name, alias}; 'models:/NAME/VERSION' -> {name, version};
    'runs:/ID/PATH' -> {run_id, path}. Raises ValueError naming the expected forms."""
    if uri.startswith("models:/"):
        rest = uri[len("models:/"):]
        if "@" in rest:
            name, _, alias = rest.partition("@")
            if name and alias and "/" not in alias:
                return {"name": name, "alias": alias}
        else:
            name, _, version = rest.partition("/")
            if name and version:
                return {"name": name, "version": version}
    elif uri.startswith("runs:/"):
        run_id, _, path = uri[len("runs:/"):].partition("/")
        if run_id and path:
            return {"run_id": run_id, "path": path}
    raise ValueError(f"bad model URI {uri!r}: use models:/NAME@ALIAS, models:/NAME/VERSION or runs:/RUN_ID/PATH")


class ModelPredictor(_ModelBacked):
    """A duration model from the MLflow registry ('models:/duration@champion', 'models:/NAME/3',
    'runs:/ID/model'), fed the same job features it was trained on (features.duration), computed from
    the replayed trace's own past. An alias is resolved once (``resolve()``) and the resolved version
    is what is loaded and recorded."""

    def __init__(self, uri: str, tracking_uri: str | None = None):
        self.uri, self.tracking_uri, self.name = uri, tracking_uri, uri
        self.parts = parse_model_uri(uri)
        self._model = None
        self._resolved: dict[str, Any] | None = None

    def resolve(self) -> dict[str, Any]:
        """Look the model up in the registry (no model is loaded): name, alias, version, run id, source.
        A missing registry, model, alias or version is a ValueError that says which."""
        if self._resolved is not None:
            return self._resolved
        import os

        uri = self.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI")
        if uri is None:
            from models.registry import default_tracking_uri

            uri = default_tracking_uri()
        if uri.startswith("sqlite:///") and not Path(uri[len("sqlite:///"):]).exists():
            raise ValueError(f"model {self.uri}: no model registry at {uri} (train one first, e.g. "
                             "`schedcast train duration`, or give --tracking-uri)")
        import mlflow
        from mlflow.exceptions import MlflowException

        mlflow.set_tracking_uri(uri)
        mlflow.set_registry_uri(uri)
        client = mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri)
        info: dict[str, Any] = {"kind": "mlflow-model", "uri": self.uri, "tracking_uri": uri, **self.parts}
        try:
            if "run_id" in self.parts:
                client.get_run(self.parts["run_id"])
                info["load_uri"] = self.uri
            else:
                if "alias" in self.parts:
                    mv = client.get_model_version_by_alias(self.parts["name"], self.parts["alias"])
                else:
                    mv = client.get_model_version(self.parts["name"], self.parts["version"])
                info.update(version=str(mv.version), run_id=mv.run_id, source=mv.source,
                            load_uri=f"models:/{mv.name}/{mv.version}")
        except MlflowException as exc:
            reason = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else type(exc).__name__
            raise ValueError(f"model {self.uri} is not available in {uri}: {reason}") from None
        self._resolved = info
        return info

    def describe(self) -> dict[str, Any]:
        return dict(self.resolve())

    def _predict(self, jobs: pd.DataFrame) -> np.ndarray:
        from features.duration import duration_features
        from models.registry import load

        from mlflow.exceptions import MlflowException

        info = self.resolve()
        try:
            if self._model is None:
                self._model = load(info["load_uri"])
            X = duration_features(jobs)
            schema = self._model.metadata.get_input_schema()
            if schema is not None:
                X = X[[c for c in schema.input_names() if c in X.columns]]
            out = self._model.predict(X)
        except MlflowException as exc:
            reason = str(exc).rsplit("Error:", 1)[-1].strip()[:500]
            raise ValueError(f"model {self.uri} cannot predict these jobs: {reason}") from None
        return np.maximum(np.asarray(out, dtype=float), 0.0)


class RestPredictor(_ModelBacked):
    """A duration model behind an `mlflow models serve` endpoint (POST .../invocations)."""

    def __init__(self, url: str, batch: int = 5000, timeout: float = 120.0):
        self.url = url if url.rstrip("/").endswith("invocations") else url.rstrip("/") + "/invocations"
        self.batch, self.timeout, self.name = batch, timeout, url

    def describe(self) -> dict[str, Any]:
        return {"kind": "rest", "url": self.url}

    def _predict(self, jobs: pd.DataFrame) -> np.ndarray:
        import json
        import urllib.error
        import urllib.request

        from features.duration import duration_features

        X = duration_features(jobs)
        out = []
        for i in range(0, len(X), self.batch):
            part = X.iloc[i: i + self.batch]
            body = {"dataframe_split": json.loads(part.to_json(orient="split", index=False))}
            req = urllib.request.Request(self.url, data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                    payload = json.loads(resp.read())
            except urllib.error.HTTPError as exc:
                detail = exc.read()[:300].decode("utf-8", "replace").replace("\n", " ")
                raise ValueError(f"model server {self.url} answered HTTP {exc.code}: {detail}") from None
            except (urllib.error.URLError, OSError) as exc:
                reason = getattr(exc, "reason", exc)
                raise ValueError(f"cannot reach the model server at {self.url}: {reason} (is `mlflow models "
                                 "serve` running there?)") from None
            except json.JSONDecodeError:
                raise ValueError(f"model server {self.url} did not answer with JSON") from None
            preds = payload["predictions"] if isinstance(payload, dict) and "predictions" in payload else payload
            if not isinstance(preds, list):
                raise ValueError(f"model server {self.url} answered without a list of predictions")
            if len(preds) != len(part):
                raise ValueError(f"model server {self.url} answered {len(preds)} predictions for {len(part)} jobs")
            try:
                out.extend(float(p) for p in preds)
            except (TypeError, ValueError, OverflowError):
                raise ValueError(f"model server {self.url} answered with non-numeric predictions") from None
        values = np.asarray(out, dtype=float)
        from features.jobtable import MAX_DURATION_S

        # a duration is finite, >= 0 and at most a year (the job table's bound): -1000 or 1e308 is a broken
        # server, not a prediction to clip or to schedule by
        bad = ~np.isfinite(values) | (values < 0) | (values > MAX_DURATION_S)
        if bad.any():
            first = int(np.flatnonzero(bad)[0])
            raise ValueError(f"model server {self.url} answered {int(bad.sum())} prediction(s) that are no duration "
                             f"(first: {values[first]!r} for job {jobs['job_id'].iloc[first]}; a duration is in "
                             f"[0, {MAX_DURATION_S:.0f}] s)")
        return values


def _noisy(sigma: float = 0.5, seed: int = 0) -> "NoisyOraclePredictor":
    return NoisyOraclePredictor(sigma, seed=seed)


#: duration predictors by name (features.plugins; entry-point group ``schedcast.predictors``): a Predictor
#: class or factory called with the spec's parameters (and ``seed`` when it takes one). ``models:/``,
#: ``runs:/`` and http(s) URLs are addresses, not names.
PREDICTORS: Registry = new_registry("predictors", noun="predictor")
PREDICTORS.register("oracle", OraclePredictor)
PREDICTORS.register("noisy", _noisy)
PREDICTORS.register_lazy("lucid-pretrained", "sim.policies.lucid.pretrained:LucidPretrained")
PREDICTORS.register_lazy("lucid-generated", "sim.policies.lucid.generated:LucidGenerated")


def make_predictor(spec: str | Predictor | None, seed: int = 0, tracking_uri: str | None = None) -> Predictor:
    """'oracle', 'noisy:SIGMA' (e.g. noisy:0.5, or noisy:sigma=0.5), 'models:/NAME@ALIAS' (or runs:/...), an
    http(s) serving URL, a registered name ('name:key=value,...'), or a Predictor instance."""
    if spec is None or spec == "oracle":
        return OraclePredictor()
    if isinstance(spec, str):
        if spec.startswith(("models:/", "runs:/")):
            return ModelPredictor(spec, tracking_uri)
        if spec.startswith(("http://", "https://")):
            return RestPredictor(spec)
        name, params = parse_spec(spec, "predictor", positional="sigma" if spec.startswith("noisy") else None)
        if name == "noisy":
            sigma = params.pop("sigma", 0.5)
            try:
                sigma = float(sigma)
            except (TypeError, ValueError):
                sigma = -1.0
            if params or not np.isfinite(sigma) or sigma < 0:
                raise ValueError(f"bad predictor {spec!r}: noisy:SIGMA needs a number >= 0 (e.g. noisy:0.5)")
            return NoisyOraclePredictor(sigma, seed=seed)
        if name not in PREDICTORS:
            raise ValueError(f"{PREDICTORS.unknown_message(name)} (or models:/NAME@ALIAS, runs:/ID/PATH, an "
                             "http(s) serving URL)")
        factory = PREDICTORS.lookup(name)
        PREDICTORS.check_params(name, params, factory)  # each number in its declared Domain (else finite)
        try:
            accepts_seed = "seed" in inspect.signature(factory).parameters
        except (TypeError, ValueError):
            accepts_seed = False
        try:
            predictor = factory(**params, **({"seed": seed} if accepts_seed and "seed" not in params else {}))
        except TypeError as exc:
            raise ValueError(f"bad predictor {spec!r}: {exc}") from None
        spec = predictor
    if not isinstance(spec, Predictor):
        raise TypeError("a predictor needs predict(jobs) -> array")
    return spec


def describe_predictor(predictor: Predictor) -> dict[str, Any]:
    """What drove a run, for meta.json: the predictor's own ``describe()``, else its class and name."""
    describe = getattr(predictor, "describe", None)
    if callable(describe):
        return describe()
    return {"kind": type(predictor).__name__, "name": getattr(predictor, "name", None)}


def predict_durations(predictor: Predictor, jobs: pd.DataFrame) -> list[float]:
    """Call the predictor once and check its output: one finite, non-negative value per job."""
    values = np.asarray(predictor.predict(jobs), dtype=float).reshape(-1)
    if len(values) != len(jobs):
        raise ValueError(f"predictor returned {len(values)} values for {len(jobs)} jobs")
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        raise ValueError(f"predictor returned {int(bad.sum())} invalid values (first at job "
                         f"{jobs['job_id'].iloc[int(np.flatnonzero(bad)[0])]})")
    return values.tolist()


# -- per-kind predictions (--predict KIND=SPEC) --------------------------------------------------------
#: what ``predict_kind`` accepts as SPEC
KIND_SPECS = ("oracle (alias perfect), noisy:SIGMA, group-median, group-mean, models:/NAME@ALIAS "
              "(or models:/NAME/VERSION, runs:/ID/PATH) or an http(s) serving URL")


def _end_times(frame: pd.DataFrame) -> np.ndarray:
    """When each job of the trace finished: submit (+ recorded queueing) + duration."""
    queue = frame["queue_time"].fillna(0.0).to_numpy(dtype=float) if "queue_time" in frame else 0.0
    return frame["submit_time"].to_numpy(dtype=float) + queue + frame["duration"].to_numpy(dtype=float)


def group_statistic(keys, submit, end, values, stat: str = "median") -> np.ndarray:
    """Per job: the ``stat`` (median or mean) of ``values`` over the jobs of the same group that ended
    strictly before its submission — what a scheduler knows then; 0 for a group with no finished job
    yet (an unseen group, as A-SRPT's random forest predicts 0 for one)."""
    import bisect

    if stat not in ("median", "mean"):
        raise ValueError(f"stat must be median or mean, not {stat!r}")
    keys = np.asarray(keys, dtype=object)
    submit, end, values = (np.asarray(a, dtype=float) for a in (submit, end, values))
    n = len(keys)
    out = np.zeros(n)
    by_submit = np.argsort(submit, kind="stable")
    by_end = np.argsort(end, kind="stable")
    seen: dict = {}
    k = 0
    for i in by_submit:
        t = submit[i]
        while k < n and end[by_end[k]] < t:
            j = by_end[k]
            entry = seen.get(keys[j])
            if entry is None:
                entry = seen[keys[j]] = [[], 0.0]
            if stat == "median":
                bisect.insort(entry[0], values[j])
            else:
                entry[0].append(values[j])
            entry[1] += values[j]
            k += 1
        entry = seen.get(keys[i])
        if entry is None or not entry[0]:
            continue
        vals = entry[0]
        m = len(vals)
        if stat == "mean":
            out[i] = entry[1] / m
        else:
            out[i] = vals[m // 2] if m % 2 else 0.5 * (vals[m // 2 - 1] + vals[m // 2])
    return out


def _truth(kind: str, frame: pd.DataFrame) -> np.ndarray:
    """The true value of ``kind`` per job: the duration, the iterations (the trace's column or derived,
    sim.asrpt.jobs) or a numeric column named like the kind."""
    if kind == "duration":
        return frame["duration"].to_numpy(dtype=float)
    if kind == "iterations":
        from sim.asrpt.jobs import job_models, true_iterations

        return true_iterations(frame, job_models(frame))
    return pd.to_numeric(frame[kind], errors="coerce").to_numpy(dtype=float)


def _model_target(predictor: "ModelPredictor") -> str:
    """What a registered model predicts: its run's ``target`` parameter, else ``duration`` (schedcast's
    ``iterations`` task fits the random forest to durations)."""
    info = predictor.resolve()
    run_id = info.get("run_id")
    if not run_id:
        return "duration"
    import mlflow

    client = mlflow.MlflowClient(tracking_uri=info["tracking_uri"], registry_uri=info["tracking_uri"])
    return str(client.get_run(run_id).data.params.get("target", "duration"))


def predict_kind(kind: str, spec: str, frame: pd.DataFrame, seed: int = 0,
                 tracking_uri: str | None = None) -> list[float]:
    """Per-job estimates of ``kind`` (``--predict KIND=SPEC``), one finite value >= 0 per row of ``frame``.

    Kinds: ``duration``, ``iterations`` (A-SRPT; true counts from the trace's ``iterations`` column, else
    duration / alpha~_min at the reference NIC, sim.asrpt.jobs) or any numeric column of the frame.
    Specs: ``oracle`` / ``perfect`` (the truth), ``noisy:SIGMA`` (truth x exp(N(0, SIGMA^2)), seeded by
    ``seed``), ``group-median`` / ``group-mean`` (of the same recurring group's jobs finished before the
    submission, sim.asrpt.jobs.group_keys; 0 for an unseen group, as the paper), a registry model
    (``models:/iterations@champion``) or a serving URL. A model trained on durations (what schedcast's
    ``iterations`` task does) answers iterations as its predicted duration / alpha~_min of the job. Bad
    kinds or specs are one-line ValueErrors."""
    where = f"--predict {kind}={spec}"
    kind, spec = str(kind).strip(), str(spec).strip()
    if kind not in ("duration", "iterations") and kind not in frame:
        raise ValueError(f"{where}: unknown kind {kind!r}; use duration, iterations or a numeric column of the trace")
    n = len(frame)
    if spec in ("oracle", "perfect"):
        values = _truth(kind, frame)
    elif spec == "noisy" or spec.startswith("noisy:"):
        text = spec.partition(":")[2] or "0.5"
        try:
            sigma = float(text)
        except ValueError:
            sigma = -1.0
        if not np.isfinite(sigma) or sigma < 0:
            raise ValueError(f"{where}: noisy:SIGMA needs a number >= 0 (e.g. noisy:0.3)")
        rng = np.random.default_rng([int(seed), 0x5EED])
        values = _truth(kind, frame) * np.exp(rng.normal(0.0, sigma, size=n))
    elif spec in ("group-median", "group-mean"):
        from sim.asrpt.jobs import group_keys

        values = group_statistic(group_keys(frame), frame["submit_time"], _end_times(frame), _truth(kind, frame),
                                 spec.partition("-")[2])
    elif spec.startswith(("models:/", "runs:/", "http://", "https://")):
        if kind not in ("duration", "iterations"):
            raise ValueError(f"{where}: models predict durations or iterations, not {kind!r}")
        try:
            predictor = make_predictor(spec, seed=seed, tracking_uri=tracking_uri)
            values = np.asarray(predict_durations(predictor, frame), dtype=float)
            target = _model_target(predictor) if isinstance(predictor, ModelPredictor) else "duration"
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        if kind != target:  # a duration model asked for iterations, or an iterations model for durations
            from sim.asrpt.jobs import job_models

            ratio = _truth_ratio(frame, job_models(frame))
            values = ratio * values if kind == "iterations" else values / np.where(ratio > 0, ratio, 1.0)
    else:
        raise ValueError(f"{where}: unknown spec {spec!r}; use {KIND_SPECS}")
    values = np.asarray(values, dtype=float).reshape(-1)
    if len(values) != n:
        raise ValueError(f"{where}: {len(values)} values for {n} jobs")
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        raise ValueError(f"{where}: {int(bad.sum())} invalid values (first at job "
                         f"{frame['job_id'].iloc[int(np.flatnonzero(bad)[0])]})")
    return values.tolist()


def _truth_ratio(frame: pd.DataFrame, models) -> np.ndarray:
    """Iterations per second of duration on the best placement at the reference NIC: 1 / alpha~_min
    (1 for jobs without a profile)."""
    from sim.asrpt.jobs import true_iterations

    probe = frame[["num_gpus"]].assign(duration=1.0)
    return true_iterations(probe, models)
