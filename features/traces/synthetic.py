"""Seeded synthetic Helios-like traces, for when no real trace is at hand.

Jobs have users, virtual clusters, job names that recur in groups (hyper-parameter sweeps submitted
together), diurnal and weekly arrival cycles, heavy-tailed (truncated log-normal) durations and a GPU
count mix. Presets in configs/workloads/ match the published statistics of Helios Earth / Saturn /
Uranus as Lazer (DAC '26, Table 1) reports them. Every table it returns says it is synthetic.
"""
from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd
import yaml
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from features.jobtable import JobTable, LoadReport, finalize
from features import plugins
from features.plugins import Registry, new_registry
from features.paths import configs_dir

DAY = 86_400.0
#: Relative arrival rate by hour of day (busy afternoons, quiet nights), normalised to mean 1.
_HOURLY = np.array([0.55, 0.45, 0.4, 0.35, 0.35, 0.4, 0.5, 0.7, 0.95, 1.2, 1.35, 1.4,
                    1.3, 1.4, 1.5, 1.5, 1.45, 1.35, 1.2, 1.1, 1.0, 0.9, 0.8, 0.65])
_WEEKDAY = np.array([1.1, 1.1, 1.1, 1.1, 1.05, 0.8, 0.75])  # Monday first


class SyntheticSpec(BaseModel):
    """Knobs of the generator; presets are YAML files of these fields."""

    model_config = ConfigDict(extra="forbid")

    name: str = "synthetic"
    jobs: int = Field(10_000, ge=1)
    mean_duration: float = Field(3600.0, gt=0, description="mean exclusive run time, s")
    mean_interarrival: float = Field(60.0, gt=0, description="mean time between submissions, s")
    gpu_mix: dict[int, float] = Field(default_factory=lambda: {1: 0.7, 2: 0.1, 4: 0.08, 8: 0.1, 16: 0.02})
    duration_sigma: float = Field(2.2, gt=0, description="log-normal sigma: heavier tail when larger")
    max_duration: float = Field(30 * DAY, gt=0)
    gpu_duration_exponent: float = Field(0.2, ge=0, description="larger jobs run longer: d ~ gpus^e")
    mean_group_size: float = Field(2.5, ge=1, description="mean jobs per recurring group (sweep)")
    group_duration_sigma: float = Field(0.3, ge=0, description="spread of durations within a group")
    num_users: int = Field(200, ge=1)
    num_vcs: int = Field(10, ge=1)
    diurnal: bool = True
    start: str = "2020-04-01T00:00:00+00:00"
    cluster: str | None = Field(None, description="built-in cluster config this preset is sized for")
    source: str | None = Field(None, description="where the preset's statistics come from")

    @field_validator("gpu_mix")
    @classmethod
    def _mix(cls, mix: dict[int, float]) -> dict[int, float]:
        if not mix or any(k < 1 for k in mix) or any(v < 0 for v in mix.values()) or sum(mix.values()) <= 0:
            raise ValueError("gpu_mix maps GPU counts >= 1 to non-negative weights with a positive sum")
        total = sum(mix.values())
        return {int(k): float(v) / total for k, v in sorted(mix.items())}

    @model_validator(mode="after")
    def _tail(self) -> "SyntheticSpec":
        if self.max_duration < self.mean_duration:
            raise ValueError("max_duration must be at least mean_duration")
        return self

    @property
    def mean_gpus(self) -> float:
        return sum(k * v for k, v in self.gpu_mix.items())


#: A preset name: letters, digits, '-' and '_' (never a path: no '/', '..' or suffix).
_PRESET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")


def preset_names() -> list[str]:
    return sorted(p.stem for p in (configs_dir() / "workloads").glob("*.yaml"))


def check_preset_name(name: str) -> str:
    """``name`` if it is a known preset of configs/workloads/, else a one-line ValueError. A preset is
    named, never given as a path: ``--synthetic ../../x`` or ``/tmp/evil`` would read any YAML file
    as a preset and run the generator it names."""
    text = str(name)
    if not _PRESET_NAME.fullmatch(text):
        raise ValueError(f"synthetic preset {text!r} is not a preset name (a name such as "
                         f"{', '.join(preset_names()[:4])}; never a path); known: {', '.join(preset_names())}")
    if text not in preset_names():
        raise ValueError(f"unknown synthetic preset {text!r}; known: {', '.join(preset_names())}")
    return text


def read_preset(name: str) -> dict:
    """The raw mapping of configs/workloads/<name>.yaml (one-line ValueError if unknown or malformed)."""
    path = configs_dir() / "workloads" / f"{check_preset_name(name)}.yaml"
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a preset is a mapping of fields")
    return data


def load_preset(name: str, **overrides) -> SyntheticSpec:
    """Read configs/workloads/<name>.yaml and apply overrides (e.g. jobs=10_000 for a scaled run).
    Only for presets of this module's generator (no ``generator:`` key)."""
    data = read_preset(name)
    if "generator" in data:
        raise ValueError(f"preset {name!r} is built by {data['generator']}; use build_preset({name!r})")
    data.update({k: v for k, v in overrides.items() if v is not None})
    return SyntheticSpec(**data)


# -- the generator registry -------------------------------------------------------------------------
#: ``function(params, seed, jobs) -> JobTable``: a workload generator.
Generator = Callable[[dict, int, "int | None"], JobTable]
#: Entry-point group through which an installed package adds generators (name -> function).
ENTRY_POINT_GROUP = "schedcast.generators"
#: The one registry of generators (features.plugins.Registry). Built-ins are imported on first use (their
#: modules import pandas-heavy code); their module paths are written here, in code: no string from a
#: config file or flag ever becomes an import.
GENERATORS: Registry[Generator] = new_registry("generators", noun="generator")
_DESCRIPTIONS: dict[str, str] = {}
for _name, (_target, _text) in {
    "gfs": ("features.traces.gfs:generate_from_preset", "GFS-shaped HP / spot tasks (GfsSpec fields)"),
    "gfs-contended": ("features.traces.gfs:contended_from_preset",
                      "GFS HP / spot tasks, HP demand in a band with bursts, Table 3 mixes (ContendedSpec fields)"),
    "failures": ("features.traces.failures:generate_from_preset",
                 "jobs with failures, SchedMate's setting (FailureWorkloadSpec)"),
    "venus-shaped": ("features.traces.lucid_synthetic:venus_shaped",
                     "Helios-like jobs on Venus' VCs, Lucid's setting (preset, cluster)"),
    "helios-shaped": ("features.traces.helios_shaped:generate_from_preset",
                      "Helios-shaped jobs on the real Venus submission intensity, Lazer's setting (HeliosShapedSpec)"),
    "philly-window": ("features.traces.lucid_synthetic:philly_window",
                      "real Philly jobs of a date window, Lucid's test week Oct 1-7 2017 (trace, start, end)"),
}.items():
    GENERATORS.register_lazy(_name, _target)
    _DESCRIPTIONS[_name] = _text
# A-SRPT's PAI-shaped generator draws its jobs with the simulator's stage catalogue and iteration model, so it
# lives in sim.asrpt.pai_workload and is registered by the layer that wires the product together
# (pipelines/__init__.py) or by importing sim.asrpt: features never imports sim.
_DESCRIPTIONS["pai"] = "PAI-shaped jobs for A-SRPT (PaiSpec; sim.asrpt.pai_workload)"
#: what this process registered by code (the registry's own table: tests set entries in it)
_REGISTERED = GENERATORS._items
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")


def register_generator(name: str, function: Generator, *, replace: bool = False) -> Generator:
    """Register ``function(params, seed, jobs) -> JobTable`` as generator ``name`` (what a preset's or a
    spec's ``generator:`` names). Code registers generators (schedcast's own, a test, a ``--plugin``
    module, an installed plug-in through the ``schedcast.generators`` entry-point group); a file only
    names one."""
    if not _NAME.fullmatch(str(name)):
        raise ValueError(f"generator name {name!r}: letters, digits, '-', '_' and '.', starting with a letter")
    if not callable(function):
        raise TypeError(f"generator {name!r} must be a function (params, seed, jobs) -> JobTable")
    if not replace and (name in _REGISTERED or GENERATORS.builtin(name)):
        if GENERATORS.lookup(name) is not function:  # the same function again (a worker's set-up) is a no-op
            raise ValueError(f"generator {name!r} registered twice")
    GENERATORS.register(name, function, replace=True)
    return function


def _entry_points() -> dict[str, object]:
    return plugins.entry_points_of(ENTRY_POINT_GROUP)


def generator_names() -> list[str]:
    """Every generator a preset or a spec may name: built-in, registered, and installed plug-ins."""
    return sorted(GENERATORS.names())


def check_generator_name(ref: str) -> str:
    """``ref`` if it names a known generator (only a ``--plugin`` module may be imported), else a one-line
    ValueError; an import path (``package.module:function``) is refused: it would run whatever module a
    file names."""
    text = str(ref)
    if ":" in text or "/" in text:
        raise ValueError(f"generator {text!r} is an import path; name a registered generator instead "
                         f"({', '.join(generator_names())}); third-party generators come from an installed "
                         f"package's '{ENTRY_POINT_GROUP}' entry points or a --plugin module")
    if text not in GENERATORS.names():
        raise ValueError(f"unknown generator {text!r}; registered: {', '.join(generator_names())}")
    return text


def get_generator(ref: str) -> Generator:
    """The function of generator ``ref`` (a registered name; see :func:`check_generator_name`)."""
    return GENERATORS.lookup(check_generator_name(ref))


def check_generator_params(ref: str, params: dict | None) -> None:
    """Refuse parameters generator ``ref`` does not take, before any work: a generator may carry a
    ``check_params(params)`` attribute (schedcast's own do). A one-line ValueError names the parameter."""
    checker = getattr(get_generator(ref), "check_params", None)
    if checker is None:
        return
    try:
        checker(dict(params or {}))
    except Exception as exc:  # pydantic's ValidationError: its first error, one line
        errors = getattr(exc, "errors", None)
        if callable(errors):
            first = errors()[0]
            where = ".".join(str(x) for x in first.get("loc", ())) or "params"
            raise ValueError(f"generator {ref!r}: parameter {where!r}: {first.get('msg')}") from None
        if isinstance(exc, (ValueError, TypeError)):
            raise ValueError(str(exc).splitlines()[0]) from None
        raise


def registered_generators(names: "list[str] | set[str]") -> dict[str, Generator]:
    """The generators among ``names`` that this process registered at run time (not built-in, not an
    installed plug-in): a parallel engine ships them to its workers with the cells, by reference."""
    return {n: _REGISTERED[n] for n in names
            if n in _REGISTERED and not GENERATORS.builtin(n) and n not in _entry_points()}


def build_preset(name: str, seed: int = 0, jobs: int | None = None,
                 cluster_gpus: int | None = None) -> tuple[JobTable, str | None]:
    """Build the workload of preset ``name`` and return it with the preset's default cluster.

    A preset either holds :class:`SyntheticSpec` fields (this module's Helios-like generator) or names
    a registered generator, ``generator: gfs`` (GFS-, PAI-, failure-shaped workloads), called as
    ``function(params, seed, jobs)`` with the preset's other fields as ``params``: new workload shapes
    plug in with a YAML file and a registered function (an installed package's ``schedcast.generators``
    entry point), without touching the CLI.
    ``cluster_gpus``: the GPUs of a cluster chosen instead of the preset's; a generator preset whose
    load is sized for its cluster (a ``cluster_gpus`` key) is sized for this one instead.
    """
    data = read_preset(name)
    if cluster_gpus is not None and "generator" in data and "cluster_gpus" in data:
        data["cluster_gpus"] = int(cluster_gpus)
    ref = data.pop("generator", None)
    if ref is None:
        plugins.check_domains("generator", "synthetic", SyntheticSpec, data)  # finite, in the fields' bounds
        spec = SyntheticSpec(**{**data, **({"jobs": jobs} if jobs is not None else {})})
        return generate(spec, seed=seed), spec.cluster
    cluster = data.pop("cluster", None)
    for key in ("name", "source"):
        data.pop(key, None)
    return call_generator(ref, data, seed, jobs, preset=name), cluster


def call_generator(ref: str, params: dict, seed: int, jobs: int | None, preset: str | None = None) -> JobTable:
    """Build a table with the registered generator ``ref`` (a preset's ``generator:``, or one named by
    an experiment spec): ``function(params, seed, jobs) -> JobTable``. A name that is not registered,
    or a generator that returns something else than a JobTable, is a one-line ValueError (the input
    is at fault, exit 2)."""
    where = f"preset {preset!r}" if preset else f"generator {ref!r}"
    try:
        function = get_generator(ref)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}" if preset else str(exc)) from None
    plugins.check_domains("generator", ref, None, params)  # every number finite (its fields are a dict)
    table = function(params, seed, jobs)
    if not isinstance(table, JobTable):
        raise ValueError(f"generator {ref!r} of {where} returned a {type(table).__name__}, not a JobTable")
    table.frame.attrs["synthetic"] = True
    return table


def _arrival_times(spec: SyntheticSpec, n: int, rng: np.random.Generator) -> np.ndarray:
    """Non-homogeneous Poisson arrivals: unit-rate arrivals mapped through the cumulative intensity."""
    gaps = rng.exponential(spec.mean_interarrival, size=n)
    gaps[0] = 0.0
    operational = np.cumsum(gaps)
    if not spec.diurnal:
        return operational
    start = pd.Timestamp(spec.start)
    horizon = operational[-1] * 3 + 7 * DAY
    hours = np.arange(int(horizon // 3600) + 2)
    stamps = start + pd.to_timedelta(hours, unit="h")
    rate = _HOURLY[stamps.hour] * _WEEKDAY[stamps.weekday]
    rate = rate / rate.mean()
    cumulative = np.concatenate([[0.0], np.cumsum(rate * 3600.0)])  # operational seconds at hour edges
    edges = np.arange(len(cumulative)) * 3600.0
    return np.interp(operational, cumulative, edges)


_ARCH = ["resnet", "bert", "gpt", "vit", "swin", "yolo", "unet", "lstm", "t5", "convnext", "mae", "clip",
         "dino", "deeplab", "wav2vec", "conformer", "efficientnet", "mobilenet", "moco", "detr"]
_TASK = ["pretrain", "finetune", "eval", "sweep", "distill", "ablation", "debug", "train"]


def _names(ids: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Human-like job names: '<arch>_<task>_lr<k>_run<id>', so that normalised names recur."""
    arch = rng.integers(0, len(_ARCH), size=len(ids))
    task = rng.integers(0, len(_TASK), size=len(ids))
    return np.array([f"{_ARCH[a]}_{_TASK[t]}_lr{i % 7}_run{i}" for a, t, i in zip(arch, task, ids)], dtype=object)


def group_assignment(rng: np.random.Generator, n: int, mean_group_size: float) -> np.ndarray:
    """Group index of each of ``n`` jobs: groups of geometric size (mean ``mean_group_size``) in order,
    the last one cut to fit (what recurring sweeps look like)."""
    sizes = rng.geometric(1.0 / mean_group_size, size=n)
    ends = np.cumsum(sizes)
    n_groups = int(np.searchsorted(ends, n) + 1)
    sizes = sizes[:n_groups].copy()
    sizes[-1] -= ends[n_groups - 1] - n
    return np.repeat(np.arange(n_groups), sizes)


def generate(spec: SyntheticSpec, seed: int = 0) -> JobTable:
    """Draw a synthetic job table; identical spec and seed give identical tables."""
    rng = np.random.default_rng(seed)
    n = spec.jobs
    # Recurring groups: consecutive submissions share user, VC, name, GPU count and a base duration.
    group_of_job = group_assignment(rng, n, spec.mean_group_size)
    n_groups = int(group_of_job[-1]) + 1 if n else 0

    user_weights = 1.0 / np.arange(1, spec.num_users + 1) ** 1.1  # Zipf-like activity
    user_weights /= user_weights.sum()
    vc_weights = rng.dirichlet(np.full(spec.num_vcs, 2.0))
    user_vc = rng.choice(spec.num_vcs, size=spec.num_users, p=vc_weights)
    g_user = rng.choice(spec.num_users, size=n_groups, p=user_weights)
    counts = np.array(list(spec.gpu_mix))
    g_gpus = rng.choice(counts, size=n_groups, p=np.array(list(spec.gpu_mix.values())))
    g_base = rng.normal(0.0, spec.duration_sigma, size=n_groups) + spec.gpu_duration_exponent * np.log(g_gpus)
    g_name = rng.integers(0, 10 * n_groups + 10, size=n_groups)

    log_d = g_base[group_of_job] + rng.normal(0.0, spec.group_duration_sigma, size=n)
    # Shift in log space so that the capped durations have the target mean (bisection on the shift).
    cap = spec.max_duration
    lo, hi = np.log(1e-3) - log_d.max(), np.log(cap) - log_d.min()
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if np.minimum(np.exp(log_d + mid), cap).mean() < spec.mean_duration:
            lo = mid
        else:
            hi = mid
    duration = np.maximum(np.round(np.minimum(np.exp(log_d + hi), cap)), 1.0)

    submit = _arrival_times(spec, n, rng)
    user = g_user[group_of_job]
    frame = pd.DataFrame({
        "job_id": [f"syn-{i}" for i in range(n)],
        "submit_time": np.round(submit, 3),
        "submit_ts": pd.Timestamp(spec.start) + pd.to_timedelta(np.round(submit, 3), unit="s"),
        "duration": duration,
        "num_gpus": g_gpus[group_of_job],
        "num_nodes": np.maximum(1, np.ceil(g_gpus[group_of_job] / 8)).astype(int),
        "user": [f"u{u:04d}" for u in user],
        "org": [f"vc{v:02d}" for v in user_vc[user]],
        "job_name": _names(g_name, rng)[group_of_job],
        "group_id": [f"g{g}" for g in group_of_job],
        "status": "COMPLETED",
    })
    report = LoadReport(source=f"synthetic:{spec.name}(seed={seed}, jobs={n})", format="synthetic",
                        rows_read=n, synthetic=True)
    report.notes.append("SYNTHETIC trace: statistics follow the preset, individual jobs are invented")
    if spec.source:
        report.notes.append(f"preset statistics from: {spec.source}")
    table = finalize(frame, report, path=report.source)
    table.frame.attrs["synthetic"] = True
    return table


def generate_preset(name: str, seed: int = 0, **overrides) -> JobTable:
    if "generator" in read_preset(name):
        return build_preset(name, seed=seed, jobs=overrides.get("jobs"))[0]
    return generate(load_preset(name, **overrides), seed=seed)

