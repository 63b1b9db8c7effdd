"""One registry names every policy; the CLI, configs and tests read it, so no policy is hidden."""
from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any, Callable

from sim.policies.base import Policy
from sim.policies.lazer import Lazer
from sim.policies.lucid import Horus, Lucid
from sim.policies.preemptive import PeriodicSrtf, Srtf, Tiresias, TiresiasRounds
from sim.policies.queueing import (Fifo, FifoBackfill, Qssf, Sjf, Spjf, Spwf, WcsDuration, WcsSubTime,
                                   WcsWorkload)


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

    def factory(self, **params: Any) -> Callable[[], Policy]:
        merged = {**self.defaults, **params}
        self.cls(**merged)  # fail fast on bad parameters, before the replay starts
        return lambda: self.cls(**merged)


POLICIES: dict[str, PolicyInfo] = {}


def register(cls: type[Policy], name: str | None = None, summary: str | None = None,
             **defaults: Any) -> type[Policy]:
    info = PolicyInfo(name or cls.name, cls, summary or cls.summary, cls.citation, defaults)
    if info.name in POLICIES:
        raise ValueError(f"policy {info.name!r} registered twice")
    POLICIES[info.name] = info
    return cls


for _cls in (Fifo, FifoBackfill, Sjf, Srtf, Tiresias, TiresiasRounds, PeriodicSrtf, Qssf, Spjf, Spwf, WcsDuration,
             WcsWorkload, WcsSubTime, Lazer, Lucid, Horus):
    register(_cls)
register(PeriodicSrtf, "pollux-60", "SRTF decided every 60 s (Pollux's scheduling interval)", interval=60.0)
register(PeriodicSrtf, "muri-360", "SRTF decided every 360 s (Muri's scheduling interval)", interval=360.0)
register(PeriodicSrtf, "optimus-600", "SRTF decided every 600 s (Optimus' scheduling interval)", interval=600.0)
register(Lucid, "lucid-nobinder", "Lucid ablation: naive bin-packing instead of the binder", binder=False)
register(Lucid, "lucid-noshare", "Lucid ablation: no GPU sharing", sharing=False)
register(Lucid, "lucid-noestimator", "Lucid ablation: no duration estimator (FIFO order)", estimator=False)
register(Lucid, "lucid-nospace", "Lucid ablation: profiler without space-aware order", space_aware=False)


def parse_policy_spec(spec: str) -> tuple[str, dict[str, Any]]:
    """'name' or 'name:key=value,key=value' (values as Python literals, e.g. thresholds=[3600,36000])."""
    name, _, rest = spec.partition(":")
    params: dict[str, Any] = {}
    if rest:
        for part in _split_params(rest):
            key, eq, value = part.partition("=")
            if not eq:
                raise ValueError(f"policy parameter {part!r} in {spec!r} is not key=value")
            try:
                params[key.strip()] = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError):
                params[key.strip()] = value.strip()
    return name.strip(), params


def _split_params(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[(" and 1 or (ch in "])" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return parts + ([cur] if cur else [])


def get_policy(spec: str) -> tuple[PolicyInfo, Callable[[], Policy], dict[str, Any]]:
    name, params = parse_policy_spec(spec)
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(sorted(POLICIES))}")
    info = POLICIES[name]
    try:
        factory = info.factory(**params)
    except TypeError as exc:
        raise ValueError(f"bad parameters for policy {name!r}: {exc}") from None
    return info, factory, params


__all__ = ["POLICIES", "Policy", "PolicyInfo", "get_policy", "parse_policy_spec", "register"]
