"""One replay path: ``ReplaySpec -> run_replay -> ReplayResult``.

Every replay schedcast scores goes through here: `schedcast simulate` (one per policy), experiment cells
(one per cell), the paper runners of `schedcast reproduce` and the benchmarks. Before this module the
simulate CLI and the experiment cells each built the extras (failures, performance model, per-kind
predictions), replayed, evaluated and filled their meta dict, and they drifted (the HP / spot metrics
existed only in `simulate`). Now the steps are written once:

1. :func:`build_source` builds the (JobTable, Workload) from a :class:`WorkloadSource` (a trace file, a
   synthetic preset, a registered generator; cluster, offered-load sizing, costs);
2. :func:`prepare_replay` adds what a replay needs beside the workload (failure events and restart
   rule, performance model, per-kind predictions, the duration predictor), once for any number of
   policies;
3. :func:`run_replay` replays one policy and scores it: the evaluation (summary, per-job table,
   breakdowns), the identities checked, the HP / spot metrics where the workload has spot jobs, and
   the meta fields every caller records.

Callers keep only what is theirs: the CLI parses flags and prints, the experiment runner caches
workloads per worker and writes status records, the paper runners reduce results to claims.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

#: The units line of every meta.json (the written columns carry their unit, evaluation.catalog).
UNITS = "times in seconds (columns *_s); gpu_utilisation_frac is a share in [0, 1]"


@dataclass(frozen=True)
class WorkloadSource:
    """Where a replay's jobs and cluster come from: exactly one of ``trace`` (a file, read with
    ``format`` or the format its name implies), ``synthetic`` (a preset of configs/workloads/) or
    ``generator`` (a registered workload generator, called with ``params``); the cluster (a preset
    has its own), an optional offered load the cluster is resized for, a cost catalog (``none``,
    ``lazer``, ``lucid``), a GPU count for jobs without one, and the data directory."""

    trace: str | None = None
    synthetic: str | None = None
    generator: str | None = None
    params: dict[str, Any] = field(default_factory=dict, hash=False)
    format: str | None = None
    jobs: int | None = None
    cluster: str | None = None
    offered_load: float | None = None
    costs: str = "none"
    default_gpus: int | None = None
    data_dir: str | None = None

    def kwargs(self) -> dict[str, Any]:
        """The keyword arguments of :func:`build_source` (without the seed)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def build(self, seed: int = 0):
        """(JobTable, Workload), as :func:`build_source` builds them."""
        return build_source(**self.kwargs(), seed=seed)


@dataclass(frozen=True)
class ReplaySpec:
    """Everything that determines one replay's numbers.

    - ``workload``: a :class:`WorkloadSource` (ignored when :func:`prepare_replay` gets a workload the
      caller built itself, as the paper runners do);
    - ``policy``: a registry name, optionally ``name:key=value,...``; ``label``: its name in tables
      (default: the policy spec);
    - ``placement``: a registry name or ``scored:...`` (None: the policy's own, else consolidate);
    - ``predictor``: the duration predictor of prediction-based policies (``oracle``, ``noisy:SIGMA``,
      ``models:/NAME@ALIAS``, a URL; ``unused`` for a policy that reads none);
    - ``predict``: per-kind estimates ``((kind, spec), ...)`` (sim.predictors.predict_kind);
    - ``failures``: ``none``, ``trace``, a parametric spec; None: ``trace`` when the workload carries
      failed attempts of its own, else ``none``;
    - ``performance``: a performance model spec (None / ``none``: speed 1);
    - ``seed``: synthetic traces, profiles, noisy predictors and the policies' own draws;
    - ``window``: measure only jobs submitted in [start, end) (the replay itself is unchanged);
    - ``check_invariants``: check the simulator's invariants after every event (slow);
    - ``time_decisions``: time each policy decision (``decision_p50_ms`` / ``decision_p99_ms``; benchmarks);
    - ``tracking_uri``: the MLflow store models:/ predictors are resolved in.
    """

    workload: WorkloadSource = field(default_factory=WorkloadSource)
    policy: str = "fifo"
    label: str | None = None
    placement: str | None = None
    predictor: str = "oracle"
    predict: tuple[tuple[str, str], ...] = ()
    failures: str | None = None
    performance: str | None = None
    seed: int = 0
    window: tuple[float, float] | None = None
    check_invariants: bool = False
    time_decisions: bool = False
    tracking_uri: str | None = None

    def with_policy(self, policy: str, label: str | None = None) -> "ReplaySpec":
        """The same replay under another policy."""
        return dataclasses.replace(self, policy=policy, label=label)


@dataclass
class PreparedReplay:
    """What :func:`prepare_replay` built for a spec, shared by every policy replayed on it."""

    table: Any
    workload: Any
    extras: dict[str, Any]
    predictor: Any
    failures: str
    has_spot: bool
    #: the workload's fingerprint, being computed beside the replay (:func:`fingerprint_in_background`)
    fingerprint: Callable[[], str] | None = None


def fingerprint_in_background(workload) -> Callable[[], str]:
    """A call that returns ``workload.fingerprint``, computed from now on in a thread when the fingerprint
    is all array work (``workload.simple``: hashing a few float arrays, which hashlib and numpy do without
    holding the GIL) so that it runs beside the replay on a second core (1.75 M jobs: 0.15 s of sha256
    off the command's path); otherwise computed when called. The workload's lists are never written
    into after the build (sim.workload.Workload.column), so the value is the one asked for later."""
    if not getattr(workload, "simple", False):
        return lambda: workload.fingerprint
    from features.background import in_background

    return in_background(lambda: workload.fingerprint, "workload-fingerprint")


@dataclass
class ReplayResult:
    """One replay, scored: ``result`` (sim.engine.SimResult), ``evaluation`` (evaluation.metrics.evaluate:
    ``summary`` with the HP / spot metrics merged in where the workload has spot jobs, ``jobs``,
    breakdowns), the prepared inputs and ``meta`` (the fields every result folder records)."""

    spec: ReplaySpec
    result: Any
    evaluation: dict[str, Any]
    prepared: PreparedReplay
    meta: dict[str, Any]

    @property
    def summary(self) -> dict[str, Any]:
        """The metrics row (evaluation.catalog names, unit-less keys)."""
        return self.evaluation["summary"]

    @property
    def policy_stats(self) -> dict[str, Any]:
        """What the policy counted during the replay (``Policy.stats()``, summed over partitions)."""
        return self.result.policy_stats


# -- the workload -------------------------------------------------------------------------------------
def trace_path(path: str) -> Path:
    """``path`` as a readable regular trace file, else FileNotFoundError / a one-line ValueError (a FIFO
    blocks for ever, /dev/zero fills the memory)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"trace file {path} not found")
    if p.is_dir():
        raise ValueError(f"trace {path} is a folder; give a trace file")
    if not p.is_file():
        raise ValueError(f"trace {path} is not a regular file (a FIFO, device or socket); give a trace file")
    return p


def build_source(*, synthetic: str | None = None, trace: str | None = None, format: str | None = None,
                 generator: str | None = None, params: dict[str, Any] | None = None,
                 jobs: int | None = None, cluster: str | None = None, offered_load: float | None = None,
                 costs: str = "none", default_gpus: int | None = None, data_dir: str | None = None,
                 seed: int = 0):
    """The (JobTable, Workload) that `schedcast simulate` replays, from the same choices as its flags:
    a trace file, a synthetic preset (any ``generator:`` preset too) or a registered generator named
    directly (called with ``params``, as a preset's is), a cluster (the preset's by default), optional
    offered-load sizing and a cost catalog. Experiments build their cells with it."""
    from features.traces import load_trace
    from features.traces.synthetic import build_preset, call_generator
    from sim.cluster import load_cluster
    from sim.profiles import CostModel, ProfileCatalog
    from sim.workload import build_workload

    if generator:
        table = call_generator(generator, dict(params or {}), seed, jobs)
        cluster_name = cluster
        limit = None
    elif synthetic:
        # A preset sized for its own cluster (cluster_gpus) is sized for the one chosen instead.
        chosen_gpus = load_cluster(cluster, data_dir).gpus if cluster else None
        table, preset_cluster = build_preset(synthetic, seed=seed, jobs=jobs, cluster_gpus=chosen_gpus)
        cluster_name = cluster or preset_cluster
        limit = None
    elif trace:
        table = load_trace(trace_path(trace), format)
        cluster_name = cluster
        limit = jobs
    else:
        raise ValueError("give --trace FILE or --synthetic PRESET")
    if not cluster_name:
        raise ValueError("give --cluster (see `schedcast clusters`)")
    built = load_cluster(cluster_name, data_dir)
    sizing = None
    if offered_load:
        from sim.sizing import offered_load as load_of, sized_for_load

        frame = table.frame.iloc[:limit] if limit else table.frame
        before = (built.nodes, load_of(frame, built.gpus))
        built = sized_for_load(frame, built, offered_load)
        sizing = {"target": offered_load, "nodes_before": before[0], "load_before": before[1],
                  "nodes_after": built.nodes}
    catalog = cost_model = None
    strength = 1.0
    if costs != "none":
        # CATALOG (larger jobs lean to larger models) or CATALOG:uniform (each job's model drawn uniformly,
        # as Lazer assigns its seven models, lazer.txt:78)
        name, _, how = str(costs).partition(":")
        if how not in ("", "uniform"):
            raise ValueError(f"costs {costs!r}: give a catalog name, optionally with ':uniform' (e.g. lazer:uniform)")
        catalog = ProfileCatalog.build(name, data_dir)
        cost_model = CostModel()
        strength = 0.0 if how == "uniform" else 1.0
    workload = build_workload(table, built, costs=cost_model, catalog=catalog, seed=seed,
                              default_gpus=default_gpus, limit=limit, assignment_strength=strength)
    workload.report["sizing"] = sizing
    return table, workload


def carries_failures(workload) -> bool:
    """Does the workload record failed attempts of its own (``fail_time`` set on a job that failed)?"""
    frame = workload.frame
    return "fail_time" in frame and bool(frame["fail_time"].notna().any())


def has_spot_jobs(workload) -> bool:
    """Does the workload have spot (preemptible) jobs, so that the HP / spot metrics apply?"""
    from sim.workload import is_spot

    labels = workload.job_class
    if isinstance(labels, list) and labels.count(None) == len(labels):  # no class at all (most traces): no hashing
        return False
    return any(is_spot(c) for c in set(labels))  # each label once (1.75 M jobs: a few labels)


# -- the duration predictor ---------------------------------------------------------------------------
def is_predictor_spec(spec: str) -> bool:
    """Whether a duration source is a predictor (``oracle``/``perfect``, ``noisy[:SIGMA]``, ``models:/...``,
    ``runs:/...``, an http(s) serving URL) rather than a per-kind estimate (``group-median``,
    ``group-mean``)."""
    spec = spec.strip()
    return spec in ("oracle", "perfect", "noisy") or spec.startswith(("noisy:", "models:/", "runs:/", "http://",
                                                                      "https://"))


def duration_source(predictor: str | None, predict: "tuple[tuple[str, str], ...] | list[tuple[str, str]]" = ()
                    ) -> tuple[str, tuple[tuple[str, str], ...]]:
    """One code path for ``--predictor SPEC`` and ``--predict duration=SPEC``: (the duration predictor,
    the other per-kind estimates).

    ``--predictor SPEC`` is the shorthand of ``--predict duration=SPEC``: a duration source that is a
    predictor (:func:`is_predictor_spec`) becomes the replay's duration predictor, whichever flag named
    it, so both give the same numbers (the predictor's own seeded draws, and only the policies that use
    predictions read it). ``--predict duration=group-median`` (an estimate, not a predictor) stays a
    per-kind estimate. Two flags naming different predictors are a one-line ValueError."""
    rest: list[tuple[str, str]] = []
    chosen: str | None = None
    for kind, spec in predict:
        if kind.strip() == "duration" and is_predictor_spec(spec):
            spec = "oracle" if spec.strip() == "perfect" else spec.strip()
            if chosen is not None and chosen != spec:
                raise ValueError(f"--predict duration={chosen} and --predict duration={spec}: give one")
            chosen = spec
        else:
            rest.append((kind, spec))
    if chosen is not None and predictor is not None and predictor != chosen:
        raise ValueError(f"--predictor {predictor} and --predict duration={chosen} disagree (--predictor SPEC is "
                         "the shorthand of --predict duration=SPEC): give one")
    return chosen or predictor or "oracle", tuple(rest)


# -- the extras ---------------------------------------------------------------------------------------
def make_predictor(spec: str, seed: int = 0, tracking_uri: str | None = None):
    """The duration predictor of ``spec`` (None for ``unused``): sim.predictors.make_predictor."""
    if spec == "unused":
        return None
    from sim.predictors import make_predictor as make

    return make(spec, seed=seed, tracking_uri=tracking_uri)


def replay_extras(spec: ReplaySpec, workload, failures: str,
                  announce: Callable[[str], None] | None = None) -> dict[str, Any]:
    """What ``failures``, ``performance`` and ``predict`` add to a replay (built once, shared by the
    policies): failure events and restart rule, a performance model, per-job predictions by kind.
    ``announce`` receives one line per extra (the simulate CLI prints them)."""
    say = announce or (lambda line: None)
    extras: dict[str, Any] = {}
    if failures != "none":
        from sim.failures import failures_from_spec

        events, restart = failures_from_spec(failures, workload, spec.seed)
        extras["failures"] = events
        if restart is not None:
            extras["restart"] = restart
        off = "; --failures none turns them off" if failures == "trace" else ""
        say(f"failures:   {len(events):,} failure events injected ({failures}{off})")
    if spec.performance and spec.performance != "none":
        from sim.performance import make_performance

        extras["performance"] = make_performance(spec.performance, workload)
        say(f"speed:      performance model {spec.performance}")
    if spec.predict:
        from sim.predictors import predict_kind

        extras["predictions"] = {kind: predict_kind(kind, source, workload.frame, spec.seed, spec.tracking_uri)
                                 for kind, source in spec.predict}
        say("predictions: " + ", ".join(f"{k} from {v}" for k, v in spec.predict))
    return extras


def prepare_replay(spec: ReplaySpec, *, built: tuple[Any, Any] | None = None, predictor: Any = None,
                   announce: Callable[[str], None] | None = None,
                   extras: dict[str, Any] | None = None) -> PreparedReplay:
    """Build what ``spec`` replays on: the workload (``built`` = (table, workload) a caller already has,
    e.g. from a per-worker cache or a paper's own generator; else :meth:`WorkloadSource.build`), the
    extras and the duration predictor (``predictor``: an object the caller already resolved, else
    built from ``spec.predictor``). ``extras``: extras the caller built itself, over those of the spec
    (``performance``: a model object shared by several replays, ``predictions``: per-kind arrays, as
    :func:`sim.simulate` takes them). Share the result between policies with ``run_replay(spec,
    prepared)``."""
    table, workload = built if built is not None else spec.workload.build(spec.seed)
    if not len(workload):
        raise ValueError("no job is left to simulate")
    failures = spec.failures
    if failures is None:  # default: a workload that carries failures (the failure presets) replays them
        failures = "trace" if carries_failures(workload) else "none"
    extras = {**replay_extras(spec, workload, failures, announce), **(extras or {})}
    if predictor is None:
        predictor = make_predictor(spec.predictor, spec.seed, spec.tracking_uri)
    return PreparedReplay(table=table, workload=workload, extras=extras, predictor=predictor, failures=failures,
                          has_spot=has_spot_jobs(workload), fingerprint=fingerprint_in_background(workload))


# -- one replay ---------------------------------------------------------------------------------------
def run_replay(spec: ReplaySpec, prepared: PreparedReplay | None = None, *,
               progress: Callable[[int, int], None] | None = None,
               on_jobs: Callable[[Any], None] | None = None) -> ReplayResult:
    """Replay ``spec.policy`` and score it.

    ``prepared`` (from :func:`prepare_replay`) is reused when given, so that several policies share one
    workload and its extras; without it the workload is built from ``spec.workload``. ``progress(done,
    total)`` is called as jobs finish; ``on_jobs(jobs)`` with the job table as soon as it is made (see
    evaluation.metrics.evaluate: a writer starts encoding it there). The evaluation's identities (JCT = wait + load + train +
    pause-save, ...) are checked; where the workload has spot jobs the summary also holds the HP /
    spot metrics (evaluation.gfs_metrics, over the measured tasks). Raises the simulator's own errors
    (SimulationError, ValueError for a policy that cannot run on this workload)."""
    from evaluation.metrics import check_identities, evaluate
    from sim import simulate

    if prepared is None:
        prepared = prepare_replay(spec)
    result = simulate(prepared.workload, spec.policy, placement=spec.placement, predictor=prepared.predictor,
                      seed=spec.seed, check_invariants=spec.check_invariants, time_decisions=spec.time_decisions,
                      progress=progress,
                      tracking_uri=spec.tracking_uri, **prepared.extras)
    ev = evaluate(result, spec.window, on_jobs=on_jobs)
    check_identities(ev["jobs"])
    if prepared.has_spot:  # HP / spot metrics (GFS's), over measured tasks: after a generator's HP-only warm-up
        from evaluation.gfs_metrics import gfs_jobs, pool_summary

        ev["summary"].update(pool_summary(gfs_jobs(result, spec.window)))
    meta = replay_meta(spec, prepared)
    meta["load_reached"] = ev["summary"].get("load_reached")
    return ReplayResult(spec=spec, result=result, evaluation=ev, prepared=prepared, meta=meta)


#: The order of meta.json's keys (simulate's and an experiment cell's; a key not listed goes last).
META_ORDER = ("kind", "command", "cell", "cell_key", "code_version", "trace", "trace_name", "workload", "cluster",
              "cluster_name", "cluster_gpus", "offered_load", "load_reached", "load_meaning", "policies", "placement", "predictor",
              "predictor_resolved", "failures", "performance", "predict", "seed", "window", "measured_jobs", "jobs",
              "workload_fingerprint", "units")


def ordered_meta(meta: dict[str, Any]) -> dict[str, Any]:
    """``meta`` with its keys in :data:`META_ORDER` (stable meta.json files whoever filled them)."""
    rank = {k: i for i, k in enumerate(META_ORDER)}
    return dict(sorted(meta.items(), key=lambda kv: rank.get(kv[0], len(rank))))


def replay_meta(spec: ReplaySpec, prepared: PreparedReplay) -> dict[str, Any]:
    """The fields of meta.json every replay records (callers add theirs: kind, command, cell, ...)."""
    from evaluation.catalog import LOAD_MEANING
    from sim.predictors import describe_predictor
    from sim.sizing import offered_load

    workload = prepared.workload
    return {"trace": prepared.table.report.as_dict() if prepared.table is not None else None,
            "workload": workload.report, "cluster": workload.cluster.describe(),
            "cluster_name": workload.cluster.name, "cluster_gpus": workload.cluster.gpus,
            "offered_load": offered_load(workload, workload.cluster.gpus), "load_meaning": LOAD_MEANING,
            "placement": spec.placement or "policy default", "predictor": spec.predictor,
            "predictor_resolved": (describe_predictor(prepared.predictor) if prepared.predictor is not None
                                   else {"kind": "unused"}),
            "failures": prepared.failures, "performance": spec.performance, "predict": dict(spec.predict),
            "seed": spec.seed, "window": list(spec.window) if spec.window else None, "jobs": len(workload),
            "workload_fingerprint": prepared.fingerprint() if prepared.fingerprint else workload.fingerprint,
            "units": UNITS}


__all__ = ["META_ORDER", "PreparedReplay", "duration_source", "is_predictor_spec", "ordered_meta", "ReplayResult", "ReplaySpec", "UNITS", "WorkloadSource", "build_source",
           "carries_failures", "has_spot_jobs", "make_predictor", "prepare_replay", "replay_extras", "replay_meta",
           "run_replay", "trace_path"]
