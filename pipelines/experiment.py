"""`schedcast experiment run SPEC` and `schedcast experiment report RUN|SPEC`: grids of replays.

A spec (configs/experiments/*.yaml, validated by :class:`ExperimentSpec`) names workloads (trace files or
synthetic presets, a cluster, optional offered-load sizing, costs, failures, performance model,
predictions), policies (registry names, ``all``, parameter grids), duration predictors, seeds and the
metrics to rank by. It expands into cells, one replay each: (workload, policy, predictor, seed).

Cells run on an engine: ``dask`` (default: a LocalCluster of worker processes bound to 127.0.0.1, one
per core, or the user's scheduler with ``--dask-scheduler tcp://HOST:PORT``), ``ray`` (``--ray-address``)
or ``serial`` (this process). Each worker builds a workload once and keeps it for the next cells of the
same workload (cells are routed to workers by workload). A run folder holds one result folder per cell
(``cells/ID/``, the files of `schedcast simulate`) and a status file (``cells/ID.json``); running the
same spec into the same folder again skips every cell already finished with the same cell hash and
code version, so an interrupted sweep resumes. A cell that fails is recorded with its error
(``skipped``: the policy cannot run on that workload, a one-line reason; ``failed``: anything else, with
the traceback) and the other cells go on. The driver alone writes the MLflow store (tracking on as for
simulate: --track, --tracking-uri or $MLFLOW_TRACKING_URI): a parent run for the invocation with one
nested run per cell, and the leaderboard (evaluation.leaderboard) as its artifact.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import math
import os
import re
import shutil
import sys
import time
import traceback
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Literal


DEFAULT_METRICS = ["jct_mean", "jct_p99", "wait_mean", "gpu_utilisation"]
#: Bounds of a spec, checked before any cell runs (as pipelines.simulate's for the same flags).
MAX_JOBS = 10_000_000
MAX_SEEDS = 10_000
MAX_SEED = 2**32 - 1
RESULTS_ROOT = Path("results") / "experiments"
#: Exceptions that mean "this policy cannot run on this workload" (a recorded skip, not a crash).
_SKIP_ERRORS: tuple[type[BaseException], ...] = (ValueError, NotImplementedError, KeyError, LookupError)


# -- the spec ---------------------------------------------------------------------------------------
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
                from pipelines.simulate import _duration

                return [_duration(v) if isinstance(v, str) else v for v in value]
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

                _register_generators()
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


def _m() -> dict[str, Any]:
    global _MODELS
    if _MODELS is None:
        _MODELS = _define_models()
    return _MODELS


def __getattr__(name: str) -> Any:
    if name in ("ExperimentSpec", "WorkloadSpec", "PolicyEntry"):
        return _m()[name]
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


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _check_seeds(seeds: list[int] | None) -> list[int] | None:
    """Seeds are whole numbers in [0, 2**32): numpy refuses negative seeds, but only once a cell runs."""
    for seed in seeds or []:
        if not 0 <= seed <= MAX_SEED:
            raise ValueError(f"a seed must be a whole number in [0, {MAX_SEED}], got {seed}")
    return seeds


def _register_generators() -> None:
    """Register schedcast's generators that live in pipelines/ (features/ cannot import them)."""
    from features.traces.synthetic import register_generator

    register_generator("venus-shaped", venus_shaped)


#: Metric names a spec may rank by: the summary's columns (evaluation.metrics.summarize / evaluate),
#: and their per-group forms ``class/NAME/METRIC``, ``partition/NAME/METRIC``, ``size/NAME/METRIC``.
_BASE_METRICS = {"jobs", "jct_mean", "wait_mean", "futile_p50", "futile_p95", "futile_total", "preemptions",
                 "load_total", "makespan", "total_flow_time", "mean_slowdown", "failed_jobs", "failures",
                 "lost_work_total", "gpu_utilisation", "gpu_sharing_factor", "events", "decision_p50_ms",
                 "decision_p99_ms", "jct_p50_min", "load_reached", "top5_gpu_share"} | {f"{m}_p{p}" for m in ("jct", "wait")
                                                    for p in ("50", "95", "99", "99.9")}
_GROUP_METRIC = re.compile(r"(class|partition|size)/[^/]+/(?P<base>[^/]+)")


def check_metric(name: str) -> str:
    """``name`` if it is a metric a cell reports, else a one-line ValueError listing them."""
    m = _GROUP_METRIC.fullmatch(name)
    if name in _BASE_METRICS or (m and m.group("base") in _BASE_METRICS):
        return name
    raise ValueError(f"unknown metric {name!r}; use one of {', '.join(sorted(_BASE_METRICS))} or "
                     "class/NAME/METRIC, partition/NAME/METRIC, size/NAME/METRIC")


def load_spec(path: str | Path) -> ExperimentSpec:
    """Read and validate a spec; every error is one line naming the file and the field."""
    import yaml

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"experiment spec {path} not found")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({_one_line(exc)})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: an experiment spec is a mapping (name, workloads, policies, ...)")
    return parse_spec(data, source=str(path))


def parse_spec(data: dict[str, Any], source: str = "spec") -> ExperimentSpec:
    """Validate a spec mapping (pydantic, then the registry: policy names and parameters, predictors,
    presets); a ValueError names the field, e.g. ``spec: field policies[2].grid: ...``."""
    from pydantic import ValidationError

    _register_generators()
    try:
        spec = _m()["ExperimentSpec"].model_validate(data)
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
            for spec_text, _label in _expand_entry(_entry(entry)):
                _policy_info(spec_text)
        except ValueError as exc:
            raise ValueError(f"{source}: field {where}: {_one_line(exc)}") from None
        if isinstance(entry, _m()["PolicyEntry"]):
            for j, w in enumerate(entry.workloads or []):
                if w not in {x.name for x in spec.workloads}:
                    raise ValueError(f"{source}: field {where}.workloads[{j}]: no workload named {w!r}")
    for i, name in enumerate(spec.exclude):
        if name not in POLICIES:
            raise ValueError(f"{source}: field exclude[{i}]: unknown policy {name!r}")
    from sim.predictors import make_predictor

    lists = [("predictors", spec.predictors)] + [
        (f"policies[{i}].predictors", e.predictors) for i, e in enumerate(spec.policies)
        if isinstance(e, _m()["PolicyEntry"]) and e.predictors]
    for where, predictors in lists:
        for j, p in enumerate(predictors):
            if p.startswith(("models:/", "runs:/", "http://", "https://")):
                if p.startswith(("models:/", "runs:/")):
                    from sim.predictors import parse_model_uri

                    try:
                        parse_model_uri(p)
                    except ValueError as exc:
                        raise ValueError(f"{source}: field {where}[{j}]: {_one_line(exc)}") from None
                continue
            try:
                make_predictor(p)
            except ValueError as exc:
                raise ValueError(f"{source}: field {where}[{j}]: {_one_line(exc)}") from None
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
    _check_extras(spec, source)


def _check_extras(spec: ExperimentSpec, source: str) -> None:
    """failures / placement / performance / predict of the spec, its workloads and its policy entries:
    their syntax and registry names (what needs no workload), before any cell runs."""
    from sim.failures import parse_failure_spec
    from sim.placement import make_placement

    places: list[tuple[str, Any]] = [("", spec)]
    places += [(f"workloads[{i}].", w) for i, w in enumerate(spec.workloads)]
    places += [(f"policies[{i}].", e) for i, e in enumerate(spec.policies) if isinstance(e, _m()["PolicyEntry"])]
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
                text = str(text).strip()
                if text.startswith(("models:/", "runs:/")):
                    from sim.predictors import parse_model_uri

                    parse_model_uri(text)
                elif not (text in ("oracle", "perfect", "group-median", "group-mean") or text == "noisy"
                          or text.startswith(("noisy:", "http://", "https://"))):
                    raise ValueError(f"--predict {kind}={text}: unknown spec {text!r}")
        except (ValueError, TypeError, KeyError) as exc:
            raise ValueError(f"{source}: field {prefix}{field_name}: {_one_line(exc)}") from None


def check_resources(spec: ExperimentSpec, data_dir: str | None = None, source: str = "spec") -> None:
    """What the cells will read, checked before any of them runs (also by ``--dry-run``): each
    workload's cluster config (built, so CSV node lists and bounds are checked) and trace file (a
    readable regular file). A one-line ValueError names the field."""
    from features.paths import resolve_data_path
    from sim.cluster import load_cluster

    for i, w in enumerate(spec.workloads):
        if w.cluster:
            try:
                load_cluster(w.cluster, data_dir)
            except (ValueError, OSError) as exc:
                raise ValueError(f"{source}: field workloads[{i}].cluster: {_one_line(exc)}") from None
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


def _entry(entry: str | PolicyEntry) -> PolicyEntry:
    entry_cls = _m()["PolicyEntry"]
    if isinstance(entry, entry_cls):
        return entry
    from sim.policies import parse_policy_spec

    name, params = parse_policy_spec(entry)
    return entry_cls(name=name, params=params, label=entry if params else None)


def _expand_entry(entry: PolicyEntry) -> list[tuple[str, str]]:
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


def _uses_predictions(spec_text: str) -> bool:
    info, params = _policy_info(spec_text)
    return bool(info.uses_predictions or {**info.defaults, **params}.get("history") is False)


# -- cells ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Cell:
    """One replay: everything that determines its numbers (its hash is the resume key)."""

    workload: str
    policy: str
    label: str
    seed: int
    predictor: str
    source: dict[str, Any] = field(hash=False)
    placement: str | None = None
    failures: str = "none"
    performance: str = "none"
    predict: tuple[tuple[str, str], ...] = ()
    window: tuple[float, float] | None = None

    def key(self) -> str:
        body = {k: v for k, v in asdict(self).items() if k != "label"}
        body["source"] = {k: v for k, v in self.source.items() if k != "data_dir"}
        text = json.dumps(body, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    @property
    def id(self) -> str:
        pred = "" if self.predictor in ("oracle", "unused") else f"-{self.predictor}"
        safe = "".join(ch if ch.isalnum() or ch in "-._" else "_" for ch in f"{self.workload}-{self.label}{pred}")
        return f"{safe[:80]}-s{self.seed}-{self.key()[:10]}"

    def describe(self) -> str:
        pred = f" [{self.predictor}]" if self.predictor not in ("oracle", "unused") else ""
        return f"{self.label}{pred} | {self.workload} | seed {self.seed}"


def expand(spec: ExperimentSpec, data_dir: str | None = None) -> list[Cell]:
    """The spec's grid as cells, grouped by workload (so a worker reuses what it built): workloads x
    policies (``all`` = every registered policy, minus ``exclude``; an explicit entry replaces the
    ``all`` entry of the same name) x parameter grid x predictors (for policies that use predictions;
    others get 'unused') x seeds. Duplicates (same hash) are dropped."""
    from sim.policies import POLICIES

    entries: list[PolicyEntry] = []
    explicit = {(_entry(e)).name for e in spec.policies if not (isinstance(e, str) and e == "all")}
    for e in spec.policies:
        if isinstance(e, str) and e == "all":
            entries += [_m()["PolicyEntry"](name=n) for n in POLICIES if n not in spec.exclude and n not in explicit]
        else:
            entries.append(_entry(e))
    cells: dict[str, Cell] = {}
    for w in spec.workloads:
        source = w.source(data_dir)
        for entry in entries:
            if entry.workloads and w.name not in entry.workloads:
                continue
            for policy, label in _expand_entry(entry):
                predictors = (entry.predictors or spec.predictors) if _uses_predictions(policy) else ["unused"]
                predict = entry.predict if entry.predict is not None else (
                    w.predict if w.predict is not None else spec.predict)
                for predictor in predictors:
                    for seed in (w.seeds or spec.seeds):
                        cell = Cell(workload=w.name, policy=policy, label=label, seed=int(seed),
                                    predictor=predictor, source=source,
                                    placement=entry.placement or w.placement or spec.placement,
                                    failures=entry.failures or w.failures or spec.failures,
                                    performance=entry.performance or w.performance or spec.performance,
                                    predict=tuple(sorted(predict.items())), window=w.window)
                        cells.setdefault(cell.key(), cell)
    return list(cells.values())


# -- running one cell (in a worker) -----------------------------------------------------------------
_WORKLOADS: "OrderedDict[str, tuple[Any, Any]]" = OrderedDict()
_PREDICTORS: dict[tuple, Any] = {}
_CACHE_SIZE = int(os.environ.get("SCHEDCAST_EXPERIMENT_CACHE", "4"))


def _seed_matters(source: dict[str, Any]) -> bool:
    """A trace replayed without a cost catalog is the same workload for every seed (the seed only
    reaches the policies); a synthetic trace or a catalog assignment depends on it."""
    return bool(source.get("synthetic") or source.get("generator")) or source.get("costs", "none") != "none"


def cached_workload(source: dict[str, Any], seed: int) -> tuple[Any, Any, bool]:
    """(JobTable, Workload, was cached): built once per worker process and kept (LRU, a few)."""
    from pipelines.simulate import build_source

    wseed = seed if _seed_matters(source) else 0
    key = json.dumps({**source, "seed": wseed}, sort_keys=True, default=str)
    if key in _WORKLOADS:
        _WORKLOADS.move_to_end(key)
        return (*_WORKLOADS[key], True)
    trace = source.get("trace")
    if trace and not Path(trace).exists():
        from features.paths import resolve_data_path

        trace = str(resolve_data_path(trace, source.get("data_dir")))
    table, workload = build_source(**{**source, "trace": trace}, seed=wseed)
    if not len(workload):
        raise ValueError("no job is left to simulate in this workload")
    _WORKLOADS[key] = (table, workload)
    while len(_WORKLOADS) > max(_CACHE_SIZE, 1):
        _WORKLOADS.popitem(last=False)
    return table, workload, False


def venus_shaped(params: dict[str, Any], seed: int, jobs: int | None) -> Any:
    """Lucid's Venus-shaped setting (benchmarks/bench_lucid.py): synthetic Helios-like jobs (preset
    ``params['preset']``, default earth) spread over Venus' real VCs in proportion to their GPUs (each
    generated VC is mapped to a Venus VC drawn by size, seeded). Use with ``cluster: venus``; jobs
    larger than their VC are rejected (and counted) by the workload layer. A preset generator:
    ``function(params, seed, jobs) -> JobTable``."""
    import numpy as np

    from features.traces.synthetic import generate, load_preset
    from sim.cluster import load_cluster

    cluster = load_cluster(params.get("cluster", "venus"), params.get("data_dir"))
    spec = load_preset(params.get("preset", "earth"), jobs=jobs or params.get("jobs"),
                       num_vcs=len(cluster.partitions))
    table = generate(spec, seed=seed)
    sizes = np.array([p.gpus for p in cluster.partitions], dtype=float)
    rng = np.random.default_rng(seed)
    vc_of_org = {f"vc{i:02d}": cluster.partitions[k].name
                 for i, k in enumerate(rng.choice(len(sizes), size=spec.num_vcs, p=sizes / sizes.sum()))}
    table.frame["org"] = table.frame["org"].map(vc_of_org).astype("string")
    return table


def _predictor(spec: str, seed: int, tracking_uri: str | None):
    """Predictors are kept per worker, so a registry model is loaded once and its answers for a cached
    workload's frame are reused (sim.predictors caches by frame)."""
    from sim.predictors import make_predictor

    key = (spec, seed if spec.startswith("noisy") else 0, tracking_uri)
    if key not in _PREDICTORS:
        _PREDICTORS[key] = make_predictor(spec, seed=seed, tracking_uri=tracking_uri)
    return _PREDICTORS[key]


def _extras(cell: Cell, workload, tracking_uri: str | None) -> dict[str, Any]:
    """--failures / --performance / --predict for one cell (sim.failures, sim.performance,
    sim.predictors helpers, when they exist in this tree)."""
    extras: dict[str, Any] = {}
    if cell.failures and cell.failures != "none":
        try:
            from sim.failures import failures_from_spec
        except ImportError:
            raise ValueError(f"failures {cell.failures!r}: sim.failures.failures_from_spec is not available") from None
        failures, restart = failures_from_spec(cell.failures, workload, cell.seed)
        extras["failures"] = failures
        if restart is not None:
            extras["restart"] = restart
    if cell.performance and cell.performance != "none":
        from sim.performance import make_performance

        extras["performance"] = make_performance(cell.performance, workload)
    if cell.predict:
        try:
            from sim.predictors import predict_kind
        except ImportError:
            raise ValueError("predict: sim.predictors.predict_kind is not available") from None
        extras["predictions"] = {kind: predict_kind(kind, spec, workload.frame, cell.seed, tracking_uri)
                                 for kind, spec in cell.predict}
    return extras


def _json_safe(summary: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in summary.items():
        if hasattr(v, "item"):
            v = v.item()
        out[k] = v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
    return out


def run_cell(cell: Cell, cell_dir: str, code: str, tracking_uri: str | None = None, plots: bool = False,
             check_invariants: bool = False, trust_local: bool = False,
             generators: dict[str, Callable] | None = None) -> dict[str, Any]:
    """Replay one cell, write its result folder (evaluation.report.write_results) and return its status
    record; never raises for the cell's own errors (they are the record's ``error``).

    ``tracking_uri`` is the store the user configured and ``trust_local`` their --trust-local-models:
    they hold for this cell only (models.registry.trust_scope), so a store named inside the spec is
    refused in a worker as in the driver. ``generators``: generators the driver registered at run time
    (name -> function, pickled by reference), registered here before the workload is built."""
    from models.registry import trust_scope

    _register_generators()
    if generators:
        from features.traces.synthetic import register_generator

        for name, function in generators.items():
            register_generator(name, function, replace=True)
    with trust_scope(tracking_uri, trust_local):
        return _run_cell(cell, cell_dir, code, tracking_uri, plots, check_invariants)


def _run_cell(cell: Cell, cell_dir: str, code: str, tracking_uri: str | None, plots: bool,
              check_invariants: bool) -> dict[str, Any]:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("MPLBACKEND", "Agg")
    t0, c0 = time.perf_counter(), time.process_time()
    record: dict[str, Any] = {"id": cell.id, "key": cell.key(), "code_version": code, "cell": asdict(cell),
                              "pid": os.getpid()}
    stage = "workload"
    try:
        from evaluation.metrics import check_identities, evaluate
        from evaluation.report import write_results
        from pipelines.tracking import summary_metrics
        from sim import simulate
        from sim.sizing import offered_load

        table, workload, cached = cached_workload(cell.source, cell.seed)
        t_load = time.perf_counter() - t0
        stage = "setup"
        extras = _extras(cell, workload, tracking_uri)
        predictor = None if cell.predictor == "unused" else _predictor(cell.predictor, cell.seed, tracking_uri)
        stage = "replay"
        t1 = time.perf_counter()
        result = simulate(workload, cell.policy, placement=cell.placement, predictor=predictor, seed=cell.seed,
                          check_invariants=check_invariants, tracking_uri=tracking_uri, **extras)
        ev = evaluate(result, cell.window)
        check_identities(ev["jobs"])
        t_replay = time.perf_counter() - t1
        stage = "write"
        t2 = time.perf_counter()
        from sim.predictors import describe_predictor

        meta = {"kind": "experiment-cell", "cell": asdict(cell), "cell_key": cell.key(), "code_version": code,
                "trace": table.report.as_dict(), "trace_name": cell.workload, "workload": workload.report,
                "cluster": workload.cluster.describe(), "cluster_name": workload.cluster.name,
                "cluster_gpus": workload.cluster.gpus, "offered_load": offered_load(workload, workload.cluster.gpus),
                "policies": [cell.label], "placement": cell.placement or "policy default",
                "predictor": cell.predictor,
                "predictor_resolved": describe_predictor(predictor) if predictor is not None else {"kind": "unused"},
                "failures": cell.failures, "performance": cell.performance, "predict": dict(cell.predict),
                "seed": cell.seed, "window": list(cell.window) if cell.window else None,
                "measured_jobs": int(len(ev["jobs"]) if cell.window is None else ev["summary"]["jobs"]),
                "jobs": len(workload), "workload_fingerprint": workload.fingerprint,
                "units": "times in seconds (columns *_s); gpu_utilisation_frac is a share in [0, 1]"}
        write_results(cell_dir, {cell.label: ev}, meta, force=True, plots=plots)
        record.update(status="ok", summary=_json_safe(ev["summary"]), metrics=summary_metrics(ev["summary"], ev),
                      meta={k: meta[k] for k in ("trace_name", "cluster", "cluster_name", "cluster_gpus",
                                                 "offered_load", "placement", "predictor", "predictor_resolved",
                                                 "failures", "performance", "predict", "seed", "window", "jobs",
                                                 "workload_fingerprint", "trace")},
                      workload_cached=cached, load_s=t_load, replay_s=t_replay, write_s=time.perf_counter() - t2)
    except Exception as exc:  # noqa: BLE001 - a cell's failure is its record, the sweep goes on
        skipped = isinstance(exc, _SKIP_ERRORS) or type(exc).__name__ in ("TraceError", "SimulationError",
                                                                            "OutputError")
        record.update(status="skipped" if skipped and stage in ("workload", "setup", "replay") else "failed",
                      stage=stage, error=f"{type(exc).__name__}: {_one_line(exc)[:500]}",
                      traceback=traceback.format_exc(limit=20))
    record.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, finished=time.time())
    return record


# -- engines ----------------------------------------------------------------------------------------
Submit = Callable[[Cell, str], Any]


class SerialEngine:
    """Cells one after the other in this process (debugging; the reference for parallel runs)."""

    name = "serial"
    workers = 1

    def __init__(self, **_: Any) -> None:
        pass

    def run(self, jobs: list[tuple[Cell, dict[str, Any]]]) -> Iterator[tuple[Cell, dict[str, Any]]]:
        for cell, kwargs in jobs:
            yield cell, run_cell(cell, **kwargs)

    def close(self) -> None:
        pass


class DaskEngine:
    """A Dask LocalCluster on 127.0.0.1 (worker processes, one thread each, no dashboard) or the user's
    scheduler. Cells of one workload are routed to one worker (loosely: idle workers may steal), so
    the workload is built once per worker, not once per cell."""

    name = "dask"

    def __init__(self, workers: int | None = None, scheduler: str | None = None, connect_timeout: float = 20.0,
                 **_: Any) -> None:
        import logging

        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ValueError("--engine dask needs dask[distributed] (pip install 'schedcast[ml]' or "
                             "'dask[distributed]'); --engine serial runs without it") from None
        self.cluster = None
        if scheduler:
            try:
                self.client = Client(scheduler, timeout=f"{connect_timeout}s")
            except (OSError, TimeoutError) as exc:
                raise ValueError(f"cannot reach the Dask scheduler at {scheduler}: {_one_line(exc)}") from None
        else:
            n = workers or os.cpu_count() or 1
            os.environ.setdefault("OMP_NUM_THREADS", "1")
            os.environ.setdefault("MPLBACKEND", "Agg")
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        self.workers = len(self.client.scheduler_info()["workers"]) or (workers or 1)

    def run(self, jobs: list[tuple[Cell, dict[str, Any]]]) -> Iterator[tuple[Cell, dict[str, Any]]]:
        from distributed import as_completed

        addresses = sorted(self.client.scheduler_info()["workers"])
        slot: dict[str, str] = {}
        futures = {}
        for cell, kwargs in jobs:
            group = json.dumps(cell.source, sort_keys=True, default=str) + (
                f"#{cell.seed}" if _seed_matters(cell.source) else "")
            if addresses and group not in slot:
                slot[group] = addresses[len(slot) % len(addresses)]
            fut = self.client.submit(run_cell, cell, pure=False, key=f"cell-{cell.id}-{time.time_ns()}",
                                     workers=[slot[group]] if addresses else None, allow_other_workers=True,
                                     **kwargs)
            futures[fut] = cell
        for fut in as_completed(futures):
            cell = futures[fut]
            try:
                record = fut.result()
            except Exception as exc:  # noqa: BLE001 - a worker died (KilledWorker) or could not unpickle
                record = {"id": cell.id, "key": cell.key(), "cell": asdict(cell), "status": "failed",
                          "stage": "worker", "error": f"{type(exc).__name__}: {_one_line(exc)[:500]}",
                          "wall_s": float("nan"), "cpu_s": float("nan"), "finished": time.time()}
            fut.release()
            yield cell, record

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


class RayEngine:
    """Ray tasks (``--ray-address auto`` or ray://HOST:10001 for an existing cluster; without an address
    Ray starts a local one, which opens ports beyond loopback). Needs ray installed everywhere."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None, **_: Any) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("--engine ray needs Ray (pip install 'ray[default]' on this machine and every "
                             "node of the Ray cluster); --engine dask needs no extra package") from None
        self.ray = ray
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False,
                 **({"num_cpus": workers} if workers and not address else {}))
        self.remote = ray.remote(num_cpus=1)(run_cell)
        self.workers = int(ray.cluster_resources().get("CPU", workers or 1))

    def run(self, jobs: list[tuple[Cell, dict[str, Any]]]) -> Iterator[tuple[Cell, dict[str, Any]]]:
        pending = {self.remote.remote(cell, **kwargs): cell for cell, kwargs in jobs}
        while pending:
            ready, _ = self.ray.wait(list(pending), num_returns=1)
            for ref in ready:
                cell = pending.pop(ref)
                try:
                    record = self.ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a worker died
                    record = {"id": cell.id, "key": cell.key(), "cell": asdict(cell), "status": "failed",
                              "stage": "worker", "error": f"{type(exc).__name__}: {_one_line(exc)[:500]}",
                              "wall_s": float("nan"), "cpu_s": float("nan"), "finished": time.time()}
                yield cell, record

    def close(self) -> None:
        self.ray.shutdown()


def make_engine(engine: str, workers: int | None = None, scheduler: str | None = None,
                ray_address: str | None = None):
    if engine == "serial":
        return SerialEngine()
    if engine == "dask":
        return DaskEngine(workers=workers, scheduler=scheduler)
    if engine == "ray":
        return RayEngine(workers=workers, address=ray_address)
    raise ValueError(f"unknown engine {engine!r}; use dask, ray or serial")


# -- the run folder ---------------------------------------------------------------------------------
def default_out(spec: ExperimentSpec) -> Path:
    return RESULTS_ROOT / spec.name


def _status_path(out: Path, cell: Cell) -> Path:
    return out / "cells" / f"{cell.id}.json"


def finished(out: Path, cell: Cell, code: str) -> dict[str, Any] | None:
    """The record of a cell already finished (status ok) with the same hash and code version whose
    result folder is complete; None when it must run."""
    try:
        record = json.loads(_status_path(out, cell).read_text())
        meta = json.loads((out / "cells" / cell.id / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(meta, dict):  # malformed: the cell runs again
        return None
    if (record.get("status") == "ok" and record.get("key") == cell.key() and record.get("code_version") == code
            and meta.get("complete") and meta.get("cell_key") == cell.key()):
        return record
    return None


def _write_json(path: Path, data: Any) -> None:
    _write_text(path, json.dumps(data, indent=1, default=str))


def _write_text(path: Path, text: str) -> None:
    """Whole or not at all: a temporary file beside ``path``, renamed over it (a full disk leaves the
    old file, never an empty one)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class _RunLock:
    """An advisory lock on ``out/.run.lock`` held for a run. ``sole``: no other live run holds it, so
    what earlier runs left (temporary folders, a RUNNING parent run) belongs to a dead process. A run
    that finds the lock held goes on as before (concurrent runs into one folder are allowed) and
    tidies nothing."""

    def __init__(self, out: Path) -> None:
        import fcntl

        self.fh = open(out / ".run.lock", "a+")
        try:
            fcntl.flock(self.fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            self.sole = True
        except BlockingIOError:
            self.sole = False

    def release(self) -> None:
        if not self.fh.closed:
            self.fh.close()  # closing releases the lock


def _previous_run(out: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _clean_stale(out: Path) -> None:
    """Remove the temporary folders and files of runs that were killed (``cells/.ID.*.partial``,
    ``.NAME.PID.tmp``): only names this module and evaluation.outdir create."""
    for folder in (out, out / "cells"):
        for p in folder.glob(".*.partial"):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
        for p in folder.glob(".*.tmp"):
            if p.is_file() and re.fullmatch(r"\..+\.\d+\.tmp", p.name):
                p.unlink(missing_ok=True)


def _fail_orphaned_parent(tracker, previous: dict[str, Any] | None, tracking_uri: str) -> None:
    """Mark FAILED the parent run of a killed earlier run into this folder (same store), left RUNNING."""
    if not previous or previous.get("state") != "running" or not previous.get("parent_run_id"):
        return
    if previous.get("tracking_uri") != tracking_uri:
        return
    run_id = str(previous["parent_run_id"])
    try:
        if tracker.client.get_run(run_id).info.status == "RUNNING":
            tracker.end(run_id, "FAILED")
            print(f"note: MLflow parent run {run_id} of an interrupted earlier run marked FAILED", file=sys.stderr)
    except Exception as exc:  # noqa: BLE001 - the old run may be gone; it must not stop this one
        print(f"warning: could not mark the interrupted parent run {run_id} FAILED ({_one_line(exc)[:200]})",
              file=sys.stderr)


class _CellProgress:
    """A rich progress bar over cells with an ETA (on a terminal), else one line per finished cell."""

    def __init__(self, total: int, done: int, show_bar: bool) -> None:
        self.total, self.count = total, done
        self.bar = None
        if show_bar:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                       TimeRemainingColumn)

            self.bar = Progress(TextColumn("cells"), BarColumn(), MofNCompleteColumn(), TextColumn("{task.description}"),
                                TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                                console=Console(stderr=True), transient=False)
            self.task = self.bar.add_task("", total=total, completed=done)
            self.bar.start()

    def advance(self, cell: Cell, record: dict[str, Any]) -> None:
        self.count += 1
        status = record["status"]
        text = f"{status:<7} {cell.describe()}  {record.get('wall_s', float('nan')):.2f} s"
        if status != "ok":
            text += f"  ({record.get('error', '')[:160]})"
        if self.bar is not None:
            self.bar.update(self.task, advance=1, description=f"last: {cell.label[:30]}")
            if status != "ok":
                self.bar.console.print(text)
        else:
            print(f"[{self.count}/{self.total}] {text}", flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


@dataclass
class RunOutcome:
    out: Path
    cells: int
    ran: int
    reused: int
    ok: int
    skipped: int
    failed: int
    wall_s: float
    cpu_s: float
    parent_run_id: str | None
    report: dict[str, Path]


def run_experiment(spec: ExperimentSpec, out: str | Path, *, engine: str = "dask", workers: int | None = None,
                   scheduler: str | None = None, ray_address: str | None = None, data_dir: str | None = None,
                   tracking_uri: str | None = None, rerun: bool = False, progress: bool = False,
                   spec_text: str | None = None, report: bool = True, trust_local: bool = False) -> RunOutcome:
    """Run every cell of ``spec`` not already finished in ``out`` on ``engine``; write status files,
    results.csv and the leaderboard; track in MLflow when ``tracking_uri`` is given.

    Before any cell runs: the spec's files are checked (:func:`check_resources`), and, when no other
    run holds the folder (``out/.run.lock``), what a killed run left is tidied: temporary ``.partial``
    result folders and ``.tmp`` files, and its MLflow parent run still RUNNING is marked FAILED."""
    from features.traces.synthetic import generator_names, registered_generators
    from pipelines.tracking import code_version

    t0, c0 = time.perf_counter(), time.process_time()
    out = Path(out)
    check_resources(spec, data_dir)
    (out / "cells").mkdir(parents=True, exist_ok=True)
    lock = _RunLock(out)
    previous = _previous_run(out) if lock.sole else None
    if lock.sole:
        _clean_stale(out)
    code = code_version()
    cells = expand(spec, data_dir)
    todo, reused = [], 0
    for cell in cells:
        if not rerun and finished(out, cell, code) is not None:
            reused += 1
        else:
            todo.append(cell)
    _write_text(out / "spec.yaml", spec_text if spec_text is not None else json.dumps(spec.model_dump(), indent=1))
    run_info = {"spec": spec.name, "code_version": code, "engine": engine, "cells": len(cells), "to_run": len(todo),
                "reused": reused, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "spec_hash": hashlib.sha256(json.dumps(spec.model_dump(), sort_keys=True, default=str).encode()).hexdigest()[:16]}
    tracker = parent = None
    if tracking_uri:
        from pipelines.tracking import Tracker

        tracker = Tracker(tracking_uri)
        _fail_orphaned_parent(tracker, previous, tracking_uri)
        parent = tracker.start(f"experiment {spec.name}", params={
            "spec": spec.name, "spec_hash": run_info["spec_hash"], "code_version": code, "engine": engine,
            "workers": workers or "", "cells": len(cells), "cells_to_run": len(todo), "cells_reused": reused,
            "seeds": spec.seeds, "rank_by": spec.rank_by, "out_dir": str(out.resolve())},
            tags={"schedcast.kind": "experiment", "schedcast.code_version": code})
        run_info["parent_run_id"] = parent
        run_info["tracking_uri"] = tracking_uri
    # written now too: a run killed before its end leaves "state: running", which the next run tidies up
    _write_json(out / "run.json", {**run_info, "state": "running", "pid": os.getpid()})
    counts = {"ok": 0, "skipped": 0, "failed": 0}
    eng = None
    status = "FAILED"
    bar = _CellProgress(len(cells), reused, progress)
    try:
        if todo:
            t_start = time.perf_counter()
            eng = make_engine(engine, workers=workers, scheduler=scheduler, ray_address=ray_address)
            run_info.update(workers=eng.workers, engine_start_s=time.perf_counter() - t_start)
            kwargs = {"code": code, "tracking_uri": tracking_uri, "plots": spec.plots,
                      "check_invariants": spec.check_invariants, "trust_local": trust_local,
                      "generators": registered_generators(generator_names())}
            jobs = [(c, {"cell_dir": str((out / "cells" / c.id).resolve()), **kwargs}) for c in todo]
            t_cells = time.perf_counter()
            logger = _TrackingThread(tracker, parent, spec, out, code) if tracker is not None else None
            try:
                for cell, record in eng.run(jobs):
                    _write_json(_status_path(out, cell), record)
                    counts[record["status"]] = counts.get(record["status"], 0) + 1
                    if logger is not None:
                        logger.submit(cell, record)
                    bar.advance(cell, record)
            finally:
                if logger is not None:
                    logger.close()
                    run_info.update(tracking_s=logger.busy_s, tracking_cpu_s=logger.cpu_s, tracking_wait_s=logger.wait_s,
                                    tracking_errors=logger.errors)
            run_info.update(cells_s=time.perf_counter() - t_cells)
        status = "FINISHED"
    finally:
        bar.close()
        if eng is not None:
            eng.close()
        run_info.update(finished=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), state=status.lower(),
                        wall_s=time.perf_counter() - t0, driver_cpu_s=time.process_time() - c0, **counts)
        _write_json(out / "run.json", run_info)
        lock.release()
        paths: dict[str, Path] = {}
        if report:
            paths = build_report(out, spec)
        if tracker is not None:
            tracker.log(parent, metrics={"cells_ok": counts["ok"], "cells_skipped": counts["skipped"],
                                         "cells_failed": counts["failed"], "wall_s": run_info["wall_s"]})
            tracker.artifacts(parent, [out / "spec.yaml", out / "run.json", *paths.values()])
            tracker.end(parent, status)
    return RunOutcome(out=out, cells=len(cells), ran=len(todo), reused=reused, ok=counts["ok"],
                      skipped=counts["skipped"], failed=counts["failed"], wall_s=run_info["wall_s"],
                      cpu_s=run_info["driver_cpu_s"], parent_run_id=parent, report=paths)


class _TrackingThread:
    """Logs finished cells from one background thread of the driver (the store's only writer), so the
    driver keeps collecting results while a sqlite store commits; ``close()`` waits for the backlog."""

    def __init__(self, tracker, parent: str, spec: ExperimentSpec, out: Path, code: str) -> None:
        from concurrent.futures import ThreadPoolExecutor

        self.args = (tracker, parent, spec)
        self.out, self.code = out, code
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="schedcast-tracking")
        self.futures: list = []
        self.busy_s = self.cpu_s = self.wait_s = 0.0
        self.errors: list[str] = []

    def _log(self, cell: Cell, record: dict[str, Any]) -> None:
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            tracker, parent, spec = self.args
            _track_cell(tracker, parent, spec, cell, record, self.out, self.code)
        except Exception as exc:  # noqa: BLE001 - a store hiccup must not lose the sweep's results
            self.errors.append(f"{cell.id}: {type(exc).__name__}: {_one_line(exc)[:200]}")
        finally:
            self.busy_s += time.perf_counter() - t0
            self.cpu_s += time.thread_time() - c0

    def submit(self, cell: Cell, record: dict[str, Any]) -> None:
        self.futures.append(self.pool.submit(self._log, cell, record))

    def close(self) -> None:
        t0 = time.perf_counter()
        self.pool.shutdown(wait=True)
        self.wait_s = time.perf_counter() - t0
        for err in self.errors[:5]:
            print(f"warning: MLflow tracking failed for cell {err}", file=sys.stderr)


def _track_cell(tracker, parent: str, spec: ExperimentSpec, cell: Cell, record: dict[str, Any], out: Path,
                code: str) -> None:
    """One nested run per cell: the replay's params / metrics / files and lineage, or its error."""
    from pipelines.tracking import _model_id, replay_params

    meta = dict(record.get("meta") or {"trace_name": cell.workload, "seed": cell.seed, "predictor": cell.predictor})
    params, tags, models = replay_params(cell.policy, meta, code)
    params.update({"experiment": spec.name, "workload": cell.workload, "label": cell.label, "cell": cell.id,
                   "cell_key": cell.key(), "predictor": cell.predictor})
    tags.update({"schedcast.cell_status": record["status"]})
    if record["status"] != "ok":
        tags["schedcast.error"] = record.get("error", "")
    metrics = dict(record.get("metrics") or {})
    metrics.update({"cell_wall_s": record.get("wall_s", float("nan")), "cell_cpu_s": record.get("cpu_s", float("nan"))})
    run = tracker.start(cell.describe(), params=params, tags=tags, parent=parent,
                        metrics={k: v for k, v in metrics.items() if v == v})
    folder = out / "cells" / cell.id
    if record["status"] == "ok" and folder.is_dir():
        tracker.artifacts(run, sorted(p for p in folder.iterdir() if p.suffix in (".csv", ".parquet", ".json", ".png")))
        tracker.link_models(run, [_model_id(m, tracker.client) for m in models])
    tracker.end(run, "FINISHED" if record["status"] == "ok" else "FAILED")


def collect(out: str | Path, spec: ExperimentSpec | None = None) -> list[dict[str, Any]]:
    """The status records of a run folder: the spec's cells when given (in spec order; cells never run
    are 'missing'), else every cells/*.json."""
    out = Path(out)
    if spec is None:
        return [rec for rec in (_read_status(p) for p in sorted((out / "cells").glob("*.json"))) if rec is not None]
    records = []
    for cell in expand(spec):
        rec = _read_status(_status_path(out, cell))
        records.append(rec if rec is not None else
                       {"id": cell.id, "key": cell.key(), "cell": asdict(cell), "status": "missing"})
    return records


_STATUSES = ("ok", "skipped", "failed", "missing")


def _read_status(path: Path) -> dict[str, Any] | None:
    """A cell's status record; None when there is none. A file that is there but is not a status
    record (not JSON, not a mapping, no known status, or a cell that is not a mapping) is a one-line
    ValueError naming it (exit 2): a report built on it would be wrong or crash."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the cell status file ({_one_line(exc)})") from None
    try:
        rec = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: malformed cell status file (not JSON: {_one_line(exc)}); delete it to run "
                         "the cell again") from None
    if (not isinstance(rec, dict) or rec.get("status") not in _STATUSES or not isinstance(rec.get("id"), str)
            or not isinstance(rec.get("cell", {}), dict)
            or not isinstance(rec.get("metrics", {}) or {}, dict) or not isinstance(rec.get("summary", {}) or {}, dict)):
        raise ValueError(f"{path}: malformed cell status file (expected a mapping with id, status "
                         f"{'/'.join(_STATUSES)}, cell); delete it to run the cell again")
    return rec


def build_report(out: str | Path, spec: ExperimentSpec | None = None) -> dict[str, Path]:
    """results.csv, leaderboard.csv and leaderboard.html of a run folder (evaluation.leaderboard)."""
    from evaluation.leaderboard import write_report

    out = Path(out)
    if spec is None:
        spec = _spec_of_run(out)
    records = collect(out, spec)
    return write_report(out, records, metrics=spec.metrics if spec else DEFAULT_METRICS,
                        rank_by=spec.rank_by if spec else "jct_mean", title=spec.name if spec else out.name,
                        description=spec.description if spec else "")


def _spec_of_run(out: Path) -> ExperimentSpec | None:
    path = out / "spec.yaml"
    if not path.is_file():
        return None
    import yaml

    try:
        return parse_spec(yaml.safe_load(path.read_text()), source=str(path))
    except (ValueError, yaml.YAMLError):
        return None


# -- CLI ----------------------------------------------------------------------------------------------
def _workers_arg(text: str) -> int:
    """argparse type: local workers, 1 .. 4 x the CPU cores (at least 8): 100,000 would fork until the
    machine stops."""
    from pipelines.simulate import positive_int

    value = positive_int(text)
    limit = max(8, 4 * (os.cpu_count() or 1))
    if value > limit:
        raise argparse.ArgumentTypeError(f"at most {limit} local workers on this machine (4 x its CPU cores), "
                                         f"got {value}")
    return value


def _tracking_uri_arg(text: str) -> str:
    from pipelines.simulate import tracking_uri_arg

    return tracking_uri_arg(text)


def cmd_run(args: argparse.Namespace) -> int:
    from pipelines.tracking import tracking_destination

    spec = load_spec(args.spec)
    out = Path(args.out) if args.out else default_out(spec)
    if out.exists() and not out.is_dir():
        raise ValueError(f"--out {out} is a file")
    check_resources(spec, args.data_dir, source=str(args.spec))
    cells = expand(spec, args.data_dir)
    if args.dry_run:
        for cell in cells:
            print(f"{cell.id}  {cell.describe()}")
        print(f"{len(cells)} cells")
        return 0
    if args.engine == "serial" and (args.dask_scheduler or args.ray_address):
        raise ValueError("--dask-scheduler / --ray-address need --engine dask / ray")
    if args.ray_address and args.engine != "ray":
        raise ValueError("--ray-address needs --engine ray")
    if args.dask_scheduler and args.engine != "dask":
        raise ValueError("--dask-scheduler needs --engine dask")
    uri = tracking_destination(args.track, args.tracking_uri)
    print(f"experiment {spec.name}: {len(cells)} cells ({len(spec.workloads)} workloads) -> {out}/"
          + (f"; tracking in {uri}" if uri else ""), flush=True)
    outcome = run_experiment(spec, out, engine=args.engine, workers=args.workers, scheduler=args.dask_scheduler,
                             ray_address=args.ray_address, data_dir=args.data_dir, tracking_uri=uri,
                             rerun=args.rerun, progress=not args.no_progress and sys.stderr.isatty(),
                             spec_text=Path(args.spec).read_text(),
                             trust_local=bool(getattr(args, "trust_local_models", False)))
    rate = outcome.ran / outcome.wall_s * 60 if outcome.wall_s > 0 else float("nan")
    print(f"\n{outcome.ok + outcome.reused} ok ({outcome.reused} reused from earlier runs), {outcome.skipped} skipped, "
          f"{outcome.failed} failed of {outcome.cells} cells; {outcome.wall_s:.1f} s wall ({rate:.1f} cells/min)")
    if outcome.report:
        top = outcome.report.get("top")
        if top is not None and top.exists():  # the top of each workload's leaderboard, not only file paths
            print("\n" + top.read_text(encoding="utf-8").rstrip())
        print("report: " + ", ".join(str(p) for p in outcome.report.values()))
    if outcome.parent_run_id:
        print(f"MLflow: parent run {outcome.parent_run_id} in {uri}")
    if outcome.cells and outcome.ok + outcome.reused == 0:
        first = next((r.get("error") for r in collect(out, spec) if r.get("status") in ("skipped", "failed")), None)
        print(f"schedcast: error: no cell of {spec.name} succeeded ({outcome.skipped} skipped, {outcome.failed} "
              f"failed)" + (f"; first: {_one_line(first)[:300]}" if first else ""), file=sys.stderr)
        return 1 if outcome.failed else 2
    return 0 if outcome.failed == 0 else 1


def cmd_report(args: argparse.Namespace) -> int:
    target = Path(args.target)
    spec = None
    if target.is_file():
        spec = load_spec(target)
        out = Path(args.out) if args.out else default_out(spec)
    else:
        out = target
    if not (out / "cells").is_dir():
        raise ValueError(f"{out} is not an experiment run folder (no cells/); run `schedcast experiment run` first")
    paths = build_report(out, spec)
    print("report: " + ", ".join(str(p) for p in paths.values()))
    return 0


def add_parsers(sub) -> None:
    """Register `experiment run` and `experiment report`."""
    p = sub.add_parser("experiment", help="run a grid of replays from a spec (Dask / Ray), rebuild its report",
                       description="Experiments: a spec (configs/experiments/*.yaml) expands into cells "
                       "(workload x policy x parameters x predictor x seed), run in parallel, resumable, "
                       "tracked in MLflow, summarised in a leaderboard (CSV + static HTML).")
    esub = p.add_subparsers(dest="experiment_command", required=True, metavar="ACTION")
    r = esub.add_parser("run", help="run a spec's cells (finished cells in --out are skipped)",
                        description="Run every cell of SPEC not already finished in --out (same cell hash and "
                        "code version), on a Dask LocalCluster bound to 127.0.0.1 by default.")
    r.add_argument("spec", help="experiment spec (YAML), e.g. configs/experiments/leaderboard.yaml")
    r.add_argument("--out", metavar="DIR", help="run folder (default results/experiments/<spec name>); "
                   "reused: finished cells are skipped")
    r.add_argument("--engine", choices=["dask", "ray", "serial"], default="dask",
                   help="dask (default), ray, or serial (in this process)")
    r.add_argument("--workers", type=_workers_arg, metavar="N", help="local workers (default: CPU cores)")
    r.add_argument("--dask-scheduler", metavar="ADDR", help="an existing Dask scheduler, e.g. tcp://HOST:8786: "
                   "its workers need schedcast installed, the data (--data-dir) and --out on a file system they "
                   "share with this machine, at the same paths")
    r.add_argument("--ray-address", metavar="ADDR", help="an existing Ray cluster (auto, ray://HOST:10001); same "
                   "needs as --dask-scheduler, plus `pip install 'ray[default]'` everywhere")
    r.add_argument("--data-dir", help="shared data directory (default $SCHEDCAST_DATA or ../shared/data)")
    r.add_argument("--track", action=argparse.BooleanOptionalAction, default=None,
                   help="log to MLflow (default: only when --tracking-uri or $MLFLOW_TRACKING_URI is set)")
    r.add_argument("--tracking-uri", type=_tracking_uri_arg, help="MLflow tracking URI (runs and models:/ predictors)")
    r.add_argument("--trust-local-models", action="store_true", help="allow models from a local path or from a "
                   "tracking store the spec names other than the configured one (a model is a pickle: it runs its code)")
    r.add_argument("--rerun", action="store_true", help="run every cell again, even finished ones")
    r.add_argument("--dry-run", action="store_true", help="list the cells and stop")
    r.add_argument("--no-progress", action="store_true", help="one line per cell instead of a progress bar")
    r.set_defaults(func=cmd_run)
    rep = esub.add_parser("report", help="rebuild results.csv and the leaderboard of a run",
                          description="Rebuild results.csv, leaderboard.csv and leaderboard.html from a run "
                          "folder (or from a spec: its default or --out folder).")
    rep.add_argument("target", metavar="RUN_DIR|SPEC")
    rep.add_argument("--out", metavar="DIR", help="with a SPEC: its run folder (default results/experiments/<name>)")
    rep.set_defaults(func=cmd_report)


__all__ = ["Cell", "ExperimentSpec", "PolicyEntry", "WorkloadSpec", "build_report", "cached_workload", "check_metric",
           "check_resources", "collect",
           "expand", "finished", "load_spec", "make_engine", "parse_spec", "run_cell", "run_experiment"]
