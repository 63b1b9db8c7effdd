"""Cells: one replay each, (workload, policy, parameters, predictor, seed); their hash is the resume key.

:func:`expand` turns a spec into cells; :func:`run_cell` replays one in a worker through the one replay path
(pipelines.replay.run_replay), writes its result folder and returns its status record. Workloads and
predictors are kept per worker process, so the cells of one workload build it once."""
from __future__ import annotations

import hashlib
import json
import os
import time
import traceback
from collections import OrderedDict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from pipelines.experiments.spec import expand_entry, one_line, policy_entry, spec_models, uses_predictions

if TYPE_CHECKING:
    from pipelines.experiments.spec import ExperimentSpec, PolicyEntry


#: Exceptions that mean "this policy cannot run on this workload" (a recorded skip, not a crash).


_SKIP_ERRORS: tuple[type[BaseException], ...] = (ValueError, NotImplementedError, KeyError, LookupError)


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
    #: The content hash of every file the cell's workload reads (:func:`input_digest`): a trace edited in
    #: place, another --data-dir or a changed cluster CSV gives another key, so the cell runs again.
    inputs: str = ""

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
    explicit = {(policy_entry(e)).name for e in spec.policies if not (isinstance(e, str) and e == "all")}
    for e in spec.policies:
        if isinstance(e, str) and e == "all":
            entries += [spec_models()["PolicyEntry"](name=n) for n in POLICIES if n not in spec.exclude and n not in explicit]
        else:
            entries.append(policy_entry(e))
    cells: dict[str, Cell] = {}
    for w in spec.workloads:
        source = w.source(data_dir)
        inputs = input_digest(source)
        for entry in entries:
            if entry.workloads and w.name not in entry.workloads:
                continue
            for policy, label in expand_entry(entry):
                predict = entry.predict if entry.predict is not None else (
                    w.predict if w.predict is not None else spec.predict)
                # a policy that reads no duration prediction here runs once per seed, not once per predictor
                predictors = ((entry.predictors or spec.predictors) if uses_predictions(policy, predict)
                              else ["unused"])
                for predictor in predictors:
                    for seed in (w.seeds or spec.seeds):
                        cell = Cell(workload=w.name, policy=policy, label=label, seed=int(seed),
                                    predictor=predictor, source=source,
                                    placement=entry.placement or w.placement or spec.placement,
                                    failures=entry.failures or w.failures or spec.failures,
                                    performance=entry.performance or w.performance or spec.performance,
                                    predict=tuple(sorted(predict.items())), window=w.window, inputs=inputs)
                        cells.setdefault(cell.key(), cell)
    return list(cells.values())


def input_files(source: dict[str, Any]) -> list[tuple[str, Path]]:
    """(role, path) of every file a workload source reads: the trace, the cluster config and the CSV it
    names, the measured profiles of a cost catalog (those that exist)."""
    from features.paths import resolve_data_path

    data_dir = source.get("data_dir")
    files: list[tuple[str, Path]] = []
    trace = source.get("trace")
    if trace and not source.get("synthetic"):
        path = Path(trace) if Path(trace).exists() else resolve_data_path(trace, data_dir)
        files.append(("trace", path))
    if source.get("cluster"):
        from sim.cluster import cluster_input_files

        try:
            files += [("cluster", p) for p in cluster_input_files(source["cluster"], data_dir)]
        except ValueError:
            pass  # a bad cluster is the cell's own error (skipped, with the reason)
    if source.get("costs", "none") != "none":
        from sim.profiles import ProfileCatalog

        files += [("profile", p) for p in ProfileCatalog.input_files(data_dir) if p.is_file()]
    return files


_DIGESTS: dict[tuple, str] = {}


def file_digest(path: Path) -> str:
    """sha256 of a file's content (cached per process by path, size, mtime and inode); 'missing' when
    it cannot be read."""
    try:
        st = path.stat()
    except OSError:
        return "missing"
    key = (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ino)
    if key not in _DIGESTS:
        h = hashlib.sha256()
        try:
            with open(path, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            return "missing"
        _DIGESTS[key] = h.hexdigest()
    return _DIGESTS[key]


def input_digest(source: dict[str, Any]) -> str:
    """One hash of the content of every input file of a workload source (:func:`input_files`); '' when it
    reads none (a synthetic preset with a built-in cluster)."""
    files = input_files(source)
    if not files:
        return ""
    h = hashlib.sha256()
    for role, path in files:
        h.update(f"{role}\0{file_digest(path)}\0".encode())
    return h.hexdigest()[:16]


_WORKLOADS: "OrderedDict[str, tuple[Any, Any]]" = OrderedDict()


_PREDICTORS: dict[tuple, Any] = {}


_CACHE_SIZE = int(os.environ.get("SCHEDCAST_EXPERIMENT_CACHE", "4"))


def seed_matters(source: dict[str, Any]) -> bool:
    """A trace replayed without a cost catalog is the same workload for every seed (the seed only
    reaches the policies); a synthetic trace or a catalog assignment depends on it."""
    return bool(source.get("synthetic") or source.get("generator")) or source.get("costs", "none") != "none"


def cached_workload(source: dict[str, Any], seed: int) -> tuple[Any, Any, bool]:
    """(JobTable, Workload, was cached): built once per worker process and kept (LRU, a few)."""
    from pipelines.replay import build_source

    wseed = seed if seed_matters(source) else 0
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


def _predictor(spec: str, seed: int, tracking_uri: str | None):
    """Predictors are kept per worker, so a registry model is loaded once and its answers for a cached
    workload's frame are reused (sim.predictors caches by frame)."""
    from sim.predictors import make_predictor

    key = (spec, seed if spec.startswith("noisy") else 0, tracking_uri)
    if key not in _PREDICTORS:
        _PREDICTORS[key] = make_predictor(spec, seed=seed, tracking_uri=tracking_uri)
    return _PREDICTORS[key]


def _json_safe(summary: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for k, v in summary.items():
        if hasattr(v, "item"):
            v = v.item()
        out[k] = v if isinstance(v, (int, float, str, bool)) or v is None else str(v)
    return out


def replay_spec(cell: Cell, tracking_uri: str | None = None, check_invariants: bool = False):
    """The cell as a pipelines.replay.ReplaySpec (the one replay path simulate uses too)."""
    from pipelines.replay import ReplaySpec, WorkloadSource

    return ReplaySpec(workload=WorkloadSource(**cell.source), policy=cell.policy, label=cell.label,
                      placement=cell.placement, predictor=cell.predictor, predict=cell.predict,
                      failures=cell.failures, performance=cell.performance, seed=cell.seed, window=cell.window,
                      check_invariants=check_invariants, tracking_uri=tracking_uri)


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
        from evaluation.report import JobsParquet, write_results
        from pipelines.replay import ordered_meta, prepare_replay, run_replay
        from pipelines.tracking import summary_metrics

        table, workload, cached = cached_workload(cell.source, cell.seed)
        t_load = time.perf_counter() - t0
        stage = "setup"
        spec = replay_spec(cell, tracking_uri, check_invariants)
        predictor = None if cell.predictor == "unused" else _predictor(cell.predictor, cell.seed, tracking_uri)
        prepared = prepare_replay(spec, built=(table, workload), predictor=predictor)
        stage = "replay"
        t1 = time.perf_counter()
        encoded: dict[str, JobsParquet] = {}  # the job file, encoded beside the scoring (as simulate does)
        replayed = run_replay(spec, prepared,
                              on_jobs=lambda jobs: encoded.__setitem__(cell.label, JobsParquet(jobs, spec.window)))
        ev = replayed.evaluation
        t_replay = time.perf_counter() - t1
        stage = "write"
        t2 = time.perf_counter()
        meta = ordered_meta({**replayed.meta, "kind": "experiment-cell", "cell": asdict(cell), "cell_key": cell.key(),
                             "code_version": code, "trace_name": cell.workload, "policies": [cell.label],
                             "measured_jobs": int(len(ev["jobs"]) if cell.window is None else ev["summary"]["jobs"])})
        write_results(cell_dir, {cell.label: ev}, meta, force=True, plots=plots, encoded=encoded)
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
                      stage=stage, error=f"{type(exc).__name__}: {one_line(exc)[:500]}",
                      traceback=traceback.format_exc(limit=20))
    record.update(wall_s=time.perf_counter() - t0, cpu_s=time.process_time() - c0, finished=time.time())
    return record
