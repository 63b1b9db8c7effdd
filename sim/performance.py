"""Placement-dependent speed: the performance-model hook of the engine.

A model answers ``speed(job, placement, colocated)``: the rate (work seconds per wall second, > 0) at
which ``job`` trains on ``placement`` while the jobs in ``colocated`` share at least one of its GPUs
(fractional pods on the same GPU). The engine asks when a job starts and again whenever the set of
jobs sharing its GPUs changes; without a model every job runs at speed 1. Jobs packed explicitly by a
policy (``ctx.pack``) run at the speeds the policy gave. Implementations: :class:`ConstantSpeed` (tests),
:class:`sim.interference.PairInterference` (Lucid's measured pair speeds), A-SRPT's per-iteration model
(:class:`sim.asrpt.performance.IterationSpeed`). :func:`make_performance` builds one from a
``--performance`` spec.
"""
from __future__ import annotations

from features import plugins
from features.plugins import Registry, new_registry
from sim.speed import ConstantSpeed, PerformanceModel  # noqa: F401  (re-exported)


# -- --performance SPEC ------------------------------------------------------------------------------
_SPECS_HELP = ("none, asrpt[:inter_gbps=G,intra_gbyte=B,allreduce=ring|tree,assign=true|false,"
               "ref_gbps=G,gpus_per_server=N,nic=share|whole] or constant[:solo=S,shared=S,per_extra_node=F]")


def _spec_models():
    """pydantic models of the spec parameters (built lazily: pydantic is not needed for plain replays)."""
    from typing import Literal, Optional

    from pydantic import BaseModel, ConfigDict, Field

    class AsrptSpec(BaseModel):
        """A-SRPT's per-iteration time model (sim.asrpt.performance.IterationSpeed)."""

        model_config = ConfigDict(extra="forbid")
        inter_gbps: Optional[float] = Field(None, gt=0, description="NIC between servers, Gb/s (default: the cluster's)")
        intra_gbyte: Optional[float] = Field(None, gt=0, description="inside a server, GB/s (default: the cluster's)")
        allreduce: Literal["ring", "tree"] = "ring"
        assign: bool = Field(True, description="give jobs without a dl_model one model per recurring group")
        ref_gbps: float = Field(10.0, gt=0, description="NIC at which a trace duration is the best-placement run time")
        gpus_per_server: Optional[int] = Field(None, ge=1)
        nic: Literal["share", "whole"] = Field("share", description="NIC per stage on a server: x/g share (paper) or whole")

    class ConstantSpec(BaseModel):
        model_config = ConfigDict(extra="forbid")
        solo: float = Field(1.0, gt=0)
        shared: float = Field(1.0, gt=0)
        per_extra_node: float = Field(0.0, ge=0, lt=1)

    return {"asrpt": AsrptSpec, "constant": ConstantSpec}


#: performance models by name (features.plugins; entry-point group ``schedcast.performance``). The built-ins
#: (None here) are built below from typed specs; a plug-in is a PerformanceModel class or factory called
#: with the spec's parameters (``--performance NAME:key=value,...``).
PERFORMANCE: Registry = new_registry("performance", noun="performance model")
for _name in ("none", "asrpt", "constant"):
    PERFORMANCE.register(_name, None)


def parse_spec(spec: str, what: str = "--performance") -> tuple[str, dict[str, str]]:
    """'name:key=value,key=value' -> (name, {key: value as text}): the one grammar
    (features.plugins.parse_spec); one-line ValueError on malformed text."""
    return plugins.parse_spec(spec, what, raw=True)


def make_performance(spec: str | None, workload=None) -> PerformanceModel | None:
    """The performance model named by ``spec`` (``--performance``): None for 'none', A-SRPT's iteration
    model for 'asrpt[:...]', :class:`ConstantSpeed` for 'constant[:...]'. Parameters are typed and
    checked: a bad one is a one-line ValueError naming the field. With ``workload`` the model reads it
    at once (bad inputs surface before any replay). Models are assigned per group with seed 0, the
    same assignment sim.predictors.predict_kind uses for iterations derived from durations."""
    if spec is None or str(spec).strip() in ("", "none"):
        return None
    from pydantic import ValidationError

    name, raw = parse_spec(spec)
    models = _spec_models()
    if name not in models:
        factory = PERFORMANCE.lookup(name)
        given = plugins.parse_spec(spec, "--performance")[1]
        PERFORMANCE.check_params(name, given, factory)  # each number in its declared Domain (else finite)
        try:
            model = factory(**given)
        except TypeError as exc:
            raise ValueError(f"--performance {spec!r}: {exc}") from None
        if workload is not None and hasattr(model, "bind_workload"):
            model.bind_workload(workload)
        return model
    cls = models[name]
    try:
        params = cls(**raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err.get("loc", ())) or "?"
        valid = ", ".join(cls.model_fields)
        msg = "unknown parameter" if err.get("type") == "extra_forbidden" else err.get("msg", "invalid")
        raise ValueError(f"--performance {spec!r}: {field}: {msg} (parameters of {name}: {valid})") from None
    plugins.check_domains("performance model", name, cls, params.model_dump(exclude_unset=True))
    if name == "constant":
        return ConstantSpeed(**params.model_dump())
    from sim.asrpt.performance import IterationSpeed

    model = IterationSpeed(inter_gbit=params.inter_gbps, intra_gbyte=params.intra_gbyte, allreduce=params.allreduce,
                           gpus_per_server=params.gpus_per_server, assign=params.assign,
                           ref_gbit=params.ref_gbps, nic=params.nic)
    if workload is not None:
        model.bind_workload(workload)
    return model
