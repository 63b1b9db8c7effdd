"""One registry names every policy; the CLI, configs and tests read it, so no policy is hidden.

Parameters are typed: the registry derives a pydantic model from each policy's ``__init__`` signature
(type hints and defaults) unless the class declares its own ``Params`` model. Strings from the CLI are
coerced by type (``lazer:respect_wq=false`` is False), and unknown or mistyped parameters are refused
with one line naming the policy, the field and the valid parameters. ``configs/policies/*.yaml`` are
validated by the same models (:func:`load_policy_config`).
"""
from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from features.plugins import PluginError, Registry, check_domains, format_spec, new_registry, parse_spec, split_params
from sim.policies.asrpt import ASrpt, ASrptPerfect
from sim.policies.base import Policy
from sim.policies.lazer import Lazer
from sim.policies.lucid import Horus, Lucid
from sim.policies.preemptive import PeriodicSrtf, Srtf, Tiresias, TiresiasRounds
from sim.policies.queueing import (Fifo, FifoBackfill, Qssf, Sjf, Spjf, Spwf, WcsDuration, WcsSubTime,
                                   WcsWorkload)


def params_model(cls: type[Policy]) -> type[BaseModel]:
    """The pydantic model of a policy's parameters: ``cls.Params`` if declared, else one derived from
    ``cls.__init__`` (every parameter needs a type hint; ``**kwargs`` lets extra names through untyped,
    which the contract forbids and is kept only so a policy being migrated still runs)."""
    own = cls.__dict__.get("_params_model")
    if own is not None:
        return own
    declared = getattr(cls, "Params", None)
    if isinstance(declared, type) and issubclass(declared, BaseModel):
        model = declared
    else:
        init = cls.__init__
        hints = typing.get_type_hints(init) if init is not object.__init__ else {}
        fields: dict[str, Any] = {}
        extra = "forbid"
        sig = inspect.signature(init) if init is not object.__init__ else None
        for name, p in (list(sig.parameters.items())[1:] if sig else []):
            if p.kind is p.VAR_KEYWORD:
                extra = "allow"
                continue
            if p.kind is p.VAR_POSITIONAL:
                continue
            fields[name] = (hints.get(name, Any), ... if p.default is p.empty else p.default)
        model = create_model(f"{cls.__name__}Params", __config__=ConfigDict(extra=extra), **fields)
    setattr(cls, "_params_model", model)
    return model


def _type_name(annotation: Any) -> str:
    if annotation is None or annotation is type(None):
        return "None"
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, getattr(__import__("types"), "UnionType", None)):
        return " | ".join(_type_name(a) for a in args)
    if origin is not None and args:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(_type_name(a) for a in args)}]"
    return str(annotation).replace("typing.", "")


@dataclass(frozen=True)
class PolicyInfo:
    name: str
    cls: type[Policy]
    summary: str
    citation: str
    defaults: dict[str, Any] = field(default_factory=dict)

    @property
    def preemptive(self) -> bool:
        return self.cls.preemptive

    @property
    def uses_predictions(self) -> bool:
        return self.cls.uses_predictions

    @property
    def params_model(self) -> type[BaseModel]:
        return params_model(self.cls)

    def parameters(self) -> list[tuple[str, str, Any, str]]:
        """(name, type, default, description) per parameter; defaults include this entry's overrides
        (e.g. ``lucid-nobinder`` shows binder=False)."""
        docs = getattr(self.cls, "param_docs", {})
        rows = []
        for name, f in self.params_model.model_fields.items():
            default = self.defaults.get(name, None if f.is_required() else f.default)
            rows.append((name, _type_name(f.annotation), default, f.description or docs.get(name, "")))
        return rows

    def _valid_list(self) -> str:
        return ", ".join(f"{n}: {t} = {d!r}" for n, t, d, _ in self.parameters()) or "(none)"

    def validate(self, params: dict[str, Any]) -> dict[str, Any]:
        """Coerce ``params`` (registry defaults first) to their declared types; a one-line ValueError
        naming the policy, the field and the valid parameters if one is unknown or mistyped."""
        model = self.params_model
        merged = {**self.defaults, **params}
        if model.model_config.get("extra") == "forbid":
            unknown = [k for k in merged if k not in model.model_fields]
            if unknown:
                raise ValueError(f"bad parameters for policy {self.name!r}: unknown parameter {unknown[0]!r}; valid parameters: "
                                 f"{self._valid_list()}")
        try:
            checked = model.model_validate(merged)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(x) for x in err["loc"][:1]) or "?"
            raise ValueError(f"bad parameters for policy {self.name!r}: bad value {merged.get(where)!r} for parameter {where!r} "
                             f"({err['msg']}); valid parameters: {self._valid_list()}") from None
        out = checked.model_dump(exclude_unset=True)
        out.update({k: v for k, v in (checked.model_extra or {}).items()})
        check_domains("policy", self.name, self.cls, out)  # each number in its declared Domain (else finite)
        return out

    def factory(self, **params: Any) -> Callable[[], Policy]:
        merged = self.validate(params)
        try:
            self.cls(**merged)  # fail fast on bad parameters, before the replay starts
        except (TypeError, ValueError) as exc:
            raise ValueError(f"bad parameters for policy {self.name!r}: {exc}") from None
        return lambda: self.cls(**merged)


def _as_info(name: str, entry: Any) -> PolicyInfo:
    """What the registry stores: a PolicyInfo; a bare Policy class (an entry point, a plug-in module's
    ``POLICIES.register("name", cls)``) becomes one named by its registry name."""
    if isinstance(entry, PolicyInfo):
        return entry
    if not (isinstance(entry, type) and issubclass(entry, Policy)):
        raise PluginError(f"policy {name!r} must be a subclass of sim.policies.base.Policy, not {entry!r}")
    info = PolicyInfo(name, entry, entry.summary, entry.citation, {})
    info.validate({})  # typed parameters: every one needs a type hint and valid defaults
    return info


#: name -> PolicyInfo: the one registry of policies (features.plugins.Registry; entry-point group
#: ``schedcast.policies``, whose entries are Policy subclasses).
POLICIES: Registry[PolicyInfo] = new_registry("policies", noun="policy", adapt=_as_info)


def register(cls: type[Policy], name: str | None = None, summary: str | None = None,
             **defaults: Any) -> type[Policy]:
    """Register ``cls`` as policy ``name`` (default ``cls.name``), with registry defaults for an
    ablation or a named setting (``pollux-60`` is PeriodicSrtf with interval=60). The parameters are
    checked now: a registry default must itself be valid."""
    _register(cls, name, summary, defaults, check=True)
    return cls


def _register(cls: type[Policy], name: str | None, summary: str | None, defaults: dict[str, Any],
              check: bool) -> None:
    info = PolicyInfo(name or cls.name, cls, summary or cls.summary, cls.citation, defaults)
    if info.name in POLICIES._items:
        raise ValueError(f"policy {info.name!r} registered twice")
    if check:
        info.validate({})
    POLICIES.register(info.name, info)


def _register_builtin(cls: type[Policy], name: str | None = None, summary: str | None = None,
                      **defaults: Any) -> type[Policy]:
    """:func:`register` for schedcast's own policies, whose parameters are checked when a replay asks
    for one (PolicyInfo.factory) and, for every entry, by tests/test_policies.py. Why: checking
    builds each class's pydantic model, 0.1 s of every command's start-up for 38 entries."""
    _register(cls, name, summary, defaults, check=False)
    return cls


for _cls in (Fifo, FifoBackfill, Sjf, Srtf, Tiresias, TiresiasRounds, PeriodicSrtf, Qssf, Spjf, Spwf, WcsDuration,
             WcsWorkload, WcsSubTime, Lazer, Lucid, Horus, ASrpt, ASrptPerfect):
    _register_builtin(_cls)
_register_builtin(PeriodicSrtf, "pollux-60", "SRTF decided every 60 s (Pollux's scheduling interval)", interval=60.0)
_register_builtin(PeriodicSrtf, "muri-360", "SRTF decided every 360 s (Muri's scheduling interval)", interval=360.0)
_register_builtin(PeriodicSrtf, "optimus-600", "SRTF decided every 600 s (Optimus' scheduling interval)", interval=600.0)
_register_builtin(Lucid, "lucid-nobinder", "Lucid ablation: naive bin-packing instead of the binder", binder=False)
_register_builtin(Lucid, "lucid-noshare", "Lucid ablation: no GPU sharing", sharing=False)
_register_builtin(Lucid, "lucid-noestimator", "Lucid ablation: no duration estimator (FIFO order)", estimator=False)
_register_builtin(Lucid, "lucid-nospace", "Lucid ablation: profiler without space-aware order", space_aware=False)


# Plug-in modules register their own policies through ``register_policies(_register_builtin)``, so a new system
# (GFS, SchedMate) lives in its own files. Each is imported here, eagerly, and must keep heavy imports
# inside functions: `from sim.policies import POLICIES` is on every simulation's start-up path.
_PLUGIN_MODULES = ("sim.policies.gfs", "sim.policies.schedmate")


def _load_plugins() -> None:
    import importlib

    for module_name in _PLUGIN_MODULES:
        importlib.import_module(module_name).register_policies(_register_builtin)


_load_plugins()


def parse_policy_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """'name' or 'name:key=value,key=value' in the one grammar (features.plugins.parse_spec: values as
    Python literals, e.g. thresholds=[3600,36000]; true/false as booleans; anything else stays a string
    and is coerced by the parameter's type)."""
    return parse_spec(spec, "policy")


_split_params = split_params


def load_policy_config(path: str | Path) -> tuple[str, dict[str, Any]]:
    """Read a ``configs/policies/*.yaml`` file (``policy: NAME`` and an optional ``params:`` mapping)
    and validate it with the policy's parameter model. Returns (registry name, coerced parameters)."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"{path}: cannot read policy config ({exc.__class__.__name__}: "
                         f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    if not isinstance(data, dict) or not isinstance(data.get("policy"), str):
        raise ValueError(f"{path}: a policy config needs 'policy: NAME' (and optionally 'params:')")
    extra = set(data) - {"policy", "params", "description"}
    if extra:
        raise ValueError(f"{path}: unknown key(s) {sorted(extra)}; allowed: policy, params, description")
    name, params = data["policy"], data.get("params") or {}
    if not isinstance(params, dict):
        raise ValueError(f"{path}: 'params' must be a mapping")
    if name not in POLICIES:
        raise ValueError(f"{path}: {POLICIES.unknown_message(name)}")
    try:
        return name, POLICIES[name].validate(params)
    except ValueError as exc:
        raise ValueError(f"{path}: {exc}") from None


def policy_spec(name: str, params: dict[str, Any]) -> str:
    """The 'name:key=value,...' spec of a name and parameters (the inverse of :func:`parse_policy_spec`)."""
    return format_spec(name, params)


def get_policy(spec: str) -> tuple[PolicyInfo, Callable[[], Policy], dict[str, Any]]:
    """A registry spec ('name[:key=value,...]') or the path of a policy config (``.yaml``/``.yml``).
    Returns the registry entry, a policy factory and the coerced parameters."""
    if spec.endswith((".yaml", ".yml")) and ":" not in spec:
        name, params = load_policy_config(spec)
    else:
        name, params = parse_policy_spec(spec)
    info = POLICIES.lookup(name)
    factory = info.factory(**params)
    return info, factory, info.validate(params)


__all__ = ["POLICIES", "Policy", "PolicyInfo", "get_policy", "load_policy_config", "params_model",
           "parse_policy_spec", "policy_spec", "register"]
