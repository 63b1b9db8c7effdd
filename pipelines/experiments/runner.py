"""run_experiment: every cell of a spec not already finished in the run folder, on an executor, with
status files, the report and MLflow tracking."""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.experiments.cells import Cell, expand
from pipelines.experiments.executors import make_executor
from pipelines.experiments.spec import check_resources
from pipelines.experiments.store import (RunLock, build_report, clean_stale, finished, previous_run, status_path,
                                         write_json, write_text)
from pipelines.experiments.tracking import TrackingThread, fail_orphaned_parent

if TYPE_CHECKING:
    from pipelines.experiments.spec import ExperimentSpec


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


def run_experiment(spec: ExperimentSpec, out: str | Path, *, executor: str | None = None, workers: int | None = None,
                   scheduler: str | None = None, ray_address: str | None = None, data_dir: str | None = None,
                   tracking_uri: str | None = None, rerun: bool = False, progress: bool = False,
                   spec_text: str | None = None, report: bool = True, trust_local: bool = False,
                   engine: str | None = None) -> RunOutcome:
    """Run every cell of ``spec`` not already finished in ``out`` on ``executor`` (serial, dask, ray;
    default dask; ``engine`` is its old name, still accepted); write status files, results.csv and the
    leaderboard; track in MLflow when ``tracking_uri`` is given.

    Before any cell runs: the spec's files are checked (:func:`check_resources`), and, when no other
    run holds the folder (``out/.run.lock``), what a killed run left is tidied: temporary ``.partial``
    result folders and ``.tmp`` files, and its MLflow parent run still RUNNING is marked FAILED."""
    from features.traces.synthetic import generator_names, registered_generators
    from pipelines.tracking import code_version

    if executor is not None and engine is not None and executor != engine:
        raise ValueError(f"executor={executor!r} and engine={engine!r} disagree (engine is its old name)")
    executor = executor or engine or "dask"
    t0, c0 = time.perf_counter(), time.process_time()
    out = Path(out)
    check_resources(spec, data_dir)
    from evaluation.outdir import claim_run_folder

    output_id = claim_run_folder(out, "experiment")  # a user's folder (results.csv, run.json, ...) is refused
    (out / "cells").mkdir(parents=True, exist_ok=True)
    lock = RunLock(out)
    previous = previous_run(out) if lock.sole else None
    if lock.sole:
        clean_stale(out)
    code = code_version()
    cells = expand(spec, data_dir)
    todo, reused = [], 0
    for cell in cells:
        if not rerun and finished(out, cell, code) is not None:
            reused += 1
        else:
            todo.append(cell)
    write_text(out / "spec.yaml", spec_text if spec_text is not None else json.dumps(spec.model_dump(), indent=1))
    run_info = {"spec": spec.name, "output_id": output_id, "code_version": code, "executor": executor, "cells": len(cells), "to_run": len(todo),
                "reused": reused, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "spec_hash": hashlib.sha256(json.dumps(spec.model_dump(), sort_keys=True, default=str).encode()).hexdigest()[:16]}
    tracker = parent = None
    if tracking_uri:
        from pipelines.tracking import SWEEP_EXPERIMENT, Tracker

        tracker = Tracker(tracking_uri, SWEEP_EXPERIMENT)  # sweeps apart from single simulations
        fail_orphaned_parent(tracker, previous, tracking_uri)
        parent = tracker.start(f"experiment {spec.name}", params={
            "spec": spec.name, "spec_hash": run_info["spec_hash"], "code_version": code, "executor": executor,
            "workers": workers or "", "cells": len(cells), "cells_to_run": len(todo), "cells_reused": reused,
            "seeds": spec.seeds, "rank_by": spec.rank_by, "out_dir": str(out.resolve())},
            tags={"schedcast.kind": "experiment", "schedcast.code_version": code})
        run_info["parent_run_id"] = parent
        run_info["tracking_uri"] = tracking_uri
    # written now too: a run killed before its end leaves "state: running", which the next run tidies up
    write_json(out / "run.json", {**run_info, "state": "running", "pid": os.getpid()})
    counts = {"ok": 0, "skipped": 0, "failed": 0}
    eng = None
    status = "FAILED"
    bar = _CellProgress(len(cells), reused, progress)
    try:
        if todo:
            t_start = time.perf_counter()
            eng = make_executor(executor, workers=workers, scheduler=scheduler, ray_address=ray_address)
            run_info.update(workers=eng.workers, engine_start_s=time.perf_counter() - t_start)
            kwargs = {"code": code, "tracking_uri": tracking_uri, "plots": spec.plots,
                      "check_invariants": spec.check_invariants, "trust_local": trust_local,
                      "generators": registered_generators(generator_names())}
            jobs = [(c, {"cell_dir": str((out / "cells" / c.id).resolve()), **kwargs}) for c in todo]
            t_cells = time.perf_counter()
            logger = TrackingThread(tracker, parent, spec, out, code) if tracker is not None else None
            try:
                for cell, record in eng.run(jobs):
                    write_json(status_path(out, cell), record)
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
        write_json(out / "run.json", run_info)
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
