"""Experiment specs: the YAML schema (pydantic models built on first use), its validation against the
registries (policies and parameters, predictors, presets, metrics, failures, placement, performance,
predict) and the files a spec's cells will read, all before any cell runs; one-line errors name the field."""
from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    ExperimentSpec = Any
    PolicyEntry = Any


DEFAULT_METRICS = ["jct_mean", "jct_p99", "wait_mean", "gpu_utilisation"]


#: Bounds of a spec, checked before any cell runs (as pipelines.simulate's for the same flags).


MAX_JOBS = 10_000_000


MAX_SEEDS = 10_000


MAX_SEED = 2**32 - 1


RESULTS_ROOT = Path("results") / "experiments"


def _define_models() -> dict[str, Any]:
    """The spec's pydantic models, built on first use: `schedcast` imports this module on every start
    (to add its sub-commands), and building them costs about 0.2 s."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

    class _Strict(BaseModel):
        model_config = ConfigDict(extra="forbid")


    class WorkloadSpec(_Strict):
        """One workload: what `schedcast simulate` builds from --trace/--synthetic and its options."""

        name: str = Field(min_length=1)
        synthetic: str | None = None
        trace: str | None = None
        generator: str | None = None
        params: dict[str, Any] = Field(default_factory=dict)
        format: str | None = None
        jobs: int | None = Field(None, ge=1, le=MAX_JOBS)
        cluster: str | None = None
        offered_load: float | None = Field(None, gt=0, le=10)
        costs: str = "none"
        default_gpus: int | None = Field(None, ge=1)
        window: tuple[float, float] | None = None
        seeds: list[int] | None = None
        failures: str | None = None
        performance: str | None = None
        predict: dict[str, str] | None = None
        placement: str | None = None

        @field_validator("window", mode="before")
        @classmethod
        def _window(cls, value: Any) -> Any:
            """[START, END] in seconds or as times like 57d, 12h."""
            if isinstance(value, (list, tuple)):
                from pipelines.simulate import parse_duration

                return [parse_duration(v) if isinstance(v, str) else v for v in value]
            return value

        @field_validator("window")
        @classmethod
        def _finite_window(cls, value: Any) -> Any:
            if value is not None and not all(math.isfinite(v) and v >= 0 for v in value):
                raise ValueError(f"window: START and END are finite times >= 0, got {list(value)}")
            return value

        @field_validator("offered_load")
        @classmethod
        def _load(cls, value: Any) -> Any:
            if value is not None and value < 1e-3:  # 1e-300 would ask for ~1e300 nodes
                raise ValueError(f"offered_load must be at least 0.001, got {value:g}")
            return value

        @field_validator("generator")
        @classmethod
        def _registered(cls, value: Any) -> Any:
            """A registered generator name: never an import path (it would run any module a file names)."""
            if value is not None:
                from features.traces.synthetic import check_generator_name

                check_generator_name(value)
            return value

        @field_validator("seeds")
        @classmethod
        def _seeds(cls, value: Any) -> Any:
            return _check_seeds(value)

        @model_validator(mode="after")
        def _one_source(self) -> "WorkloadSpec":
            if sum(bool(x) for x in (self.synthetic, self.trace, self.generator)) != 1:
                raise ValueError("give exactly one of 'synthetic' (a preset), 'trace' (a file) or 'generator' "
                                 "('package.module:function')")
            if (self.trace or self.generator) and not self.cluster:
                raise ValueError(f"a {'trace' if self.trace else 'generator'} workload needs 'cluster'")
            if self.params and not self.generator:
                raise ValueError("'params' are for a 'generator' workload")
            if self.window is not None and self.window[1] <= self.window[0]:
                raise ValueError("window: END must be after START")
            return self

        def source(self, data_dir: str | None) -> dict[str, Any]:
            """build_source keyword arguments (without the seed). The trace path stays as the spec wrote it (a
            relative path that does not exist here is resolved against the data directory when the workload
            is built), so a cell's hash does not depend on where the data lives."""
            trace = self.trace
            if self.generator:
                return {"generator": self.generator, "params": self.params, "jobs": self.jobs, "cluster": self.cluster,
                        "offered_load": self.offered_load, "costs": self.costs, "default_gpus": self.default_gpus,
                        "data_dir": data_dir}
            return {"synthetic": self.synthetic, "trace": trace, "format": self.format, "jobs": self.jobs,
                    "cluster": self.cluster, "offered_load": self.offered_load, "costs": self.costs,
                    "default_gpus": self.default_gpus, "data_dir": data_dir}


    class PolicyEntry(_Strict):
        """A policy (registry name), its fixed parameters, an optional grid (every combination is a cell),
        and per-policy overrides of predictors, placement, failures, performance and predictions."""

        name: str = Field(min_length=1)
        label: str | None = None
        params: dict[str, Any] = Field(default_factory=dict)
        grid: dict[str, list[Any]] = Field(default_factory=dict)
        predictors: list[str] | None = None
        placement: str | None = None
        failures: str | None = None
        performance: str | None = None
        predict: dict[str, str] | None = None
        workloads: list[str] | None = None

        @field_validator("label")
        @classmethod
        def _label(cls, label: str | None) -> str | None:
            if label is not None:
                from pipelines.simulate import check_label

                check_label(label)
            return label

        @field_validator("grid")
        @classmethod
        def _grid(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
            for key, values in grid.items():
                if not values:
                    raise ValueError(f"grid {key!r} has no values")
            return grid


    class ExperimentSpec(_Strict):
        name: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_.\-]+$")
        description: str = ""
        workloads: list[WorkloadSpec] = Field(min_length=1)
        policies: list[str | PolicyEntry] = Field(min_length=1)
        exclude: list[str] = Field(default_factory=list)
        seeds: list[int] = Field(default_factory=lambda: [0], min_length=1)
        predictors: list[str] = Field(default_factory=lambda: ["oracle"], min_length=1)
        placement: str | None = None
        failures: str = "none"
        performance: str = "none"
        predict: dict[str, str] = Field(default_factory=dict)
        metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_METRICS), min_length=1)
        rank_by: str = "jct_mean"
        plots: bool = False
        check_invariants: bool = False

        @field_validator("seeds", mode="before")
        @classmethod
        def _seeds(cls, value: Any) -> Any:
            if isinstance(value, int) and not isinstance(value, bool):  # seeds: 3 -> [0, 1, 2]
                if value < 1:
                    raise ValueError("a seed count must be >= 1")
                if value > MAX_SEEDS:
                    raise ValueError(f"a seed count must be <= {MAX_SEEDS}")
                return list(range(value))
            return value

        @field_validator("seeds")
        @classmethod
        def _seed_values(cls, value: Any) -> Any:
            return _check_seeds(value)

        @field_validator("policies", mode="before")
        @classmethod
        def _policies(cls, value: Any) -> Any:
            return [value] if isinstance(value, str) else value

        @model_validator(mode="after")
        def _names(self) -> "ExperimentSpec":
            names = [w.name for w in self.workloads]
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValueError(f"workload names must be unique: {sorted(dup)}")
            if self.rank_by not in self.metrics:
                self.metrics = [self.rank_by, *self.metrics]
            return self

    return {"ExperimentSpec": ExperimentSpec, "WorkloadSpec": WorkloadSpec, "PolicyEntry": PolicyEntry}


_MODELS: dict[str, Any] | None = None


def spec_models() -> dict[str, Any]:
    global _MODELS
    if _MODELS is None:
        _MODELS = _define_models()
    return _MODELS


def __getattr__(name: str) -> Any:
    if name in ("ExperimentSpec", "WorkloadSpec", "PolicyEntry"):
        return spec_models()[name]
    if name == "_BASE_METRICS":  # the catalog's names (kept for callers of the old constant)
        from evaluation.catalog import CATALOG

        return frozenset(CATALOG)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _where(loc: tuple) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in ("str", "PolicyEntry", "function-after[_grid(), dict[str,list[any]]]"):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(top level)"


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def _check_seeds(seeds: list[int] | None) -> list[int] | None:
    """Seeds are whole numbers in [0, 2**32): numpy refuses negative seeds, but only once a cell runs."""
    for seed in seeds or []:
        if not 0 <= seed <= MAX_SEED:
            raise ValueError(f"a seed must be a whole number in [0, {MAX_SEED}], got {seed}")
    return seeds


#: Metric names a spec may list and rank by: the catalog's (evaluation.catalog), and their per-group forms


#: ``class/NAME/METRIC``, ``partition/NAME/METRIC``, ``size/NAME/METRIC``.


#: (``_BASE_METRICS``, read through the module's ``__getattr__``: the catalog imports pydantic, which


#: `schedcast` does not load on start.)


_GROUP_METRIC = re.compile(r"(class|partition|size)/[^/]+/(?P<base>[^/]+)")


def check_metric(name: str) -> str:
    """``name`` if it is a metric a cell reports (a catalog name, or its per-group form), else a one-line
    ValueError listing them."""
    from evaluation.catalog import CATALOG

    m = _GROUP_METRIC.fullmatch(name)
    if name in CATALOG or (m and m.group("base") in CATALOG):
        return name
    raise ValueError(f"unknown metric {name!r}; use one of {', '.join(sorted(CATALOG))} or "
                     "class/NAME/METRIC, partition/NAME/METRIC, size/NAME/METRIC")


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate a spec; every error is one line naming the file and the field."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"experiment spec {path} not found")
    from features.yamlio import DuplicateKeyError, load_yaml

    try:
        data = load_yaml(path.read_text())
    except DuplicateKeyError as exc:
        raise ValueError(f"{path}: line {exc.problem_mark.line + 1}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({one_line(exc)})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an experiment spec is a mapping (name, workloads, policies, ...)")
    return parse_spec(data, source=str(path))


def parse_spec(data: dict[str, Any], source: str = "spec") -> ExperimentSpec:
    """Validate a spec mapping (pydantic, then the registry: policy names and parameters, predictors,
    presets); a ValueError names the field, e.g. ``spec: field policies[2].grid: ...``."""
    from pydantic import ValidationError

    try:
        spec = spec_models()["ExperimentSpec"].model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        # A union (str | PolicyEntry) reports one error per branch: show the dict branch for dicts.
        err = next((e for e in errors if "PolicyEntry" in e["loc"]), errors[0])
        msg = err["msg"].removeprefix("Value error, ")
        raise ValueError(f"{source}: field {_where(err['loc'])}: {msg}") from None
    _check_registry(spec, source)
    return spec


def _check_registry(spec: ExperimentSpec, source: str) -> None:
    from sim.policies import POLICIES

    for i, entry in enumerate(spec.policies):
        where = f"policies[{i}]"
        name = entry if isinstance(entry, str) else entry.name
        if name == "all":
            continue
        try:
            for spec_text, _label in expand_entry(policy_entry(entry)):
                _policy_info(spec_text)
        except ValueError as exc:
            raise ValueError(f"{source}: field {where}: {one_line(exc)}") from None
        if isinstance(entry, spec_models()["PolicyEntry"]):
            for j, w in enumerate(entry.workloads or []):
                if w not in {x.name for x in spec.workloads}:
                    raise ValueError(f"{source}: field {where}.workloads[{j}]: no workload named {w!r}")
    for i, name in enumerate(spec.exclude):
        if name not in POLICIES:
            raise ValueError(f"{source}: field exclude[{i}]: unknown policy {name!r}")
    from sim.predictors import make_predictor

    lists = [("predictors", spec.predictors)] + [
        (f"policies[{i}].predictors", e.predictors) for i, e in enumerate(spec.policies)
        if isinstance(e, spec_models()["PolicyEntry"]) and e.predictors]
    for where, predictors in lists:
        for j, p in enumerate(predictors):
            if p.startswith(("models:/", "runs:/", "http://", "https://")):
                if p.startswith(("models:/", "runs:/")):
                    from sim.predictors import parse_model_uri

                    try:
                        parse_model_uri(p)
                    except ValueError as exc:
                        raise ValueError(f"{source}: field {where}[{j}]: {one_line(exc)}") from None
                continue
            try:
                make_predictor(p)
            except ValueError as exc:
                raise ValueError(f"{source}: field {where}[{j}]: {one_line(exc)}") from None
    from features.traces.synthetic import preset_names

    presets = set(preset_names())
    for i, w in enumerate(spec.workloads):
        if w.synthetic and w.synthetic not in presets:
            raise ValueError(f"{source}: field workloads[{i}].synthetic: unknown preset {w.synthetic!r}; "
                             f"known: {', '.join(sorted(presets))}")
    try:
        check_metric(spec.rank_by)
    except ValueError as exc:
        raise ValueError(f"{source}: field rank_by: {exc}") from None
    for j, metric in enumerate(spec.metrics):
        try:
            check_metric(metric)
        except ValueError as exc:
            raise ValueError(f"{source}: field metrics[{j}]: {exc}") from None
    from features.traces.synthetic import check_generator_params
    from sim.profiles import CATALOGS

    for i, w in enumerate(spec.workloads):
        if w.generator:
            try:
                check_generator_params(w.generator, w.params)
            except ValueError as exc:
                raise ValueError(f"{source}: field workloads[{i}].params: {one_line(exc)}") from None
        if w.costs != "none" and w.costs not in CATALOGS:
            raise ValueError(f"{source}: field workloads[{i}].costs: unknown catalog {w.costs!r}; use none or "
                             f"{', '.join(CATALOGS)}")
    _check_extras(spec, source)


def _check_extras(spec: ExperimentSpec, source: str) -> None:
    """failures / placement / performance / predict of the spec, its workloads and its policy entries:
    their syntax and registry names (what needs no workload), before any cell runs."""
    from sim.failures import parse_failure_spec
    from sim.placement import make_placement

    places: list[tuple[str, Any]] = [("", spec)]
    places += [(f"workloads[{i}].", w) for i, w in enumerate(spec.workloads)]
    places += [(f"policies[{i}].", e) for i, e in enumerate(spec.policies) if isinstance(e, spec_models()["PolicyEntry"])]
    for prefix, obj in places:
        field_name = ""
        try:
            field_name = "failures"
            if obj.failures:
                parse_failure_spec(obj.failures)
            field_name = "placement"
            if obj.placement:
                make_placement(obj.placement)
            field_name = "performance"
            if obj.performance and obj.performance != "none":
                from sim.performance import make_performance

                make_performance(obj.performance)
            field_name = "predict"
            for kind, text in (obj.predict or {}).items():
                import difflib

                near = difflib.get_close_matches(str(kind), ["duration", "iterations"], n=1, cutoff=0.75)
                if near and near[0] != kind:  # a misspelt kind skipped every cell of the entry
                    raise ValueError(f"unknown kind {kind!r}: did you mean {near[0]!r}? (duration, iterations or "
                                     "a numeric column of the trace)")
                text = str(text).strip()
                if text.startswith(("models:/", "runs:/")):
                    from sim.predictors import parse_model_uri

                    parse_model_uri(text)
                elif not (text in ("oracle", "perfect", "group-median", "group-mean") or text == "noisy"
                          or text.startswith(("noisy:", "http://", "https://"))):
                    raise ValueError(f"--predict {kind}={text}: unknown spec {text!r}")
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{source}: field {prefix}{field_name}: {one_line(exc)}") from None


def check_resources(spec: ExperimentSpec, data_dir: str | None = None, source: str = "spec",
                    load: bool = False) -> None:
    """What the cells will read, checked before any of them runs (also by ``--dry-run``): each
    workload's cluster config (built, so CSV node lists and bounds are checked) and trace file (a
    readable regular file whose format is known or can be guessed; with ``load``, also loaded, so a file
    that is no trace of its format, ``/etc/passwd``, is refused before any work: the loaded table is kept
    in the trace cache for the cells). A one-line ValueError names the field."""
    from features.paths import resolve_data_path
    from sim.cluster import load_cluster

    for i, w in enumerate(spec.workloads):
        if w.cluster:
            try:
                load_cluster(w.cluster, data_dir)
            except (ValueError, OSError) as exc:
                raise ValueError(f"{source}: field workloads[{i}].cluster: {one_line(exc)}") from None
        if w.trace:
            path = Path(w.trace)
            if not path.exists():
                path = Path(resolve_data_path(w.trace, data_dir))
            where = f"{source}: field workloads[{i}].trace"
            if not path.exists():
                raise ValueError(f"{where}: {w.trace} not found (here or in the data directory)")
            if not path.is_file():
                raise ValueError(f"{where}: {path} is not a regular file (a folder, FIFO or device)")
            try:
                with open(path, "rb") as fh:
                    fh.read(1)
            except OSError as exc:
                raise ValueError(f"{where}: {path} cannot be read ({exc.strerror or exc})") from None
            from features.traces import TraceError, guess_format, load_trace

            try:
                fmt = w.format or guess_format(path)
                if load:
                    load_trace(path, fmt)
            except TraceError as exc:
                raise ValueError(f"{where}: not a trace: {one_line(exc)}") from None


def policy_entry(entry: str | PolicyEntry) -> PolicyEntry:
    entry_cls = spec_models()["PolicyEntry"]
    if isinstance(entry, entry_cls):
        return entry
    from sim.policies import parse_policy_spec

    name, params = parse_policy_spec(entry)
    return entry_cls(name=name, params=params, label=entry if params else None)


def expand_entry(entry: PolicyEntry) -> list[tuple[str, str]]:
    """(policy spec 'name:k=v,...', label) for every combination of the entry's grid."""
    from sim.policies import policy_spec

    keys = list(entry.grid)
    out = []
    for combo in itertools.product(*(entry.grid[k] for k in keys)) if keys else [()]:
        params = {**entry.params, **dict(zip(keys, combo))}
        spec = policy_spec(entry.name, params)
        shown = dict(zip(keys, combo)) if entry.label else params  # a label stands for the fixed params
        label = (entry.label or entry.name) + (":" + ",".join(f"{k}={v}" for k, v in shown.items()) if shown else "")
        out.append((spec, label))
    return out


def _policy_info(spec_text: str):
    from sim.policies import get_policy

    info, _, params = get_policy(spec_text)
    return info, params


def _predictor_unused(cls: type, params: dict[str, Any], predict: dict[str, str]) -> bool:
    """Whether a policy that can read duration predictions does not with these parameters (and the
    cell's per-kind predictions): its cells are then not crossed with the spec's predictors, which would
    only repeat the same replay. Each rule is the one the policy's code follows."""
    from sim.policies.asrpt import ASrpt
    from sim.policies.lucid import Lucid

    if "duration" in predict:  # sim.simulate: a per-kind duration estimate replaces the predictor's values
        return True
    if issubclass(cls, Lucid):  # sim/policies/lucid/coordinator.py: predictions only for the estimator's start
        return params.get("estimator", True) is False or params.get("initial", "given") == "history"
    if issubclass(cls, ASrpt):  # sim/policies/asrpt.py predicted_iterations: true counts, or iterations first
        return params.get("iterations", "predicted") == "perfect" or "iterations" in predict
    if cls.__name__ == "SchedMateSjf":  # sim/policies/schedmate.py estimate: host=history reads none
        return params.get("host", "prediction") == "history"
    return False


def uses_predictions(spec_text: str, predict: dict[str, str] | None = None) -> bool:
    """Whether the policy ``spec_text`` reads the duration predictor (so cells cross it with the spec's
    predictors); ``predict``: the cell's per-kind predictions (an iterations model replaces A-SRPT's use
    of durations)."""
    info, params = _policy_info(spec_text)
    merged = {**info.defaults, **params}
    if not (info.uses_predictions or merged.get("history") is False):
        return False
    full = {name: f.default for name, f in info.params_model.model_fields.items() if not f.is_required()}
    return not _predictor_unused(info.cls, {**full, **merged}, dict(predict or {}))  # the class's own defaults too


def default_out(spec: ExperimentSpec) -> Path:
    return RESULTS_ROOT / spec.name
