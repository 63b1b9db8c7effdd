"""MLflow for experiments: a parent run per invocation, one nested run per cell logged from one background
thread of the driver (the store's single writer), and the orphaned parent of a killed run marked FAILED."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.experiments.cells import Cell
from pipelines.experiments.spec import one_line

if TYPE_CHECKING:
    from pipelines.experiments.spec import ExperimentSpec


def fail_orphaned_parent(tracker, previous: dict[str, Any] | None, tracking_uri: str) -> None:
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
        print(f"warning: could not mark the interrupted parent run {run_id} FAILED ({one_line(exc)[:200]})",
              file=sys.stderr)


class TrackingThread:
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
            track_cell(tracker, parent, spec, cell, record, self.out, self.code)
        except Exception as exc:  # noqa: BLE001 - a store hiccup must not lose the sweep's results
            self.errors.append(f"{cell.id}: {type(exc).__name__}: {one_line(exc)[:200]}")
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


def track_cell(tracker, parent: str, spec: ExperimentSpec, cell: Cell, record: dict[str, Any], out: Path,
                code: str) -> None:
    """One nested run per cell: the replay's params / metrics / files and lineage, or its error."""
    from pipelines.tracking import model_id, replay_params

    meta = dict(record.get("meta") or {"trace_name": cell.workload, "seed": cell.seed, "predictor": cell.predictor})
    params, tags, models = replay_params(cell.policy, meta, code)
    params.update({"experiment": spec.name, "workload": cell.workload, "label": cell.label, "cell": cell.id,
                   "cell_key": cell.key(), "predictor": cell.predictor})
    tags.update({"schedcast.cell_status": record["status"]})
    if record["status"] != "ok":
        tags["schedcast.error"] = record.get("error", "")
    metrics = dict(record.get("metrics") or {})
    metrics.update({"cell_wall_s": record.get("wall_s", float("nan")), "cell_cpu_s": record.get("cpu_s", float("nan"))})
    ended = record.get("finished")  # the cell's own start and end: its run's duration is the replay's
    began = ended - record["wall_s"] if isinstance(ended, (int, float)) and isinstance(record.get("wall_s"), (int, float)) \
        else None
    run = tracker.start(cell.describe(), params=params, tags=tags, parent=parent,
                        metrics={k: v for k, v in metrics.items() if v == v}, started=began)
    folder = out / "cells" / cell.id
    if record["status"] == "ok" and folder.is_dir():
        tracker.artifacts(run, sorted(p for p in folder.iterdir() if p.suffix in (".csv", ".parquet", ".json", ".png")))
        tracker.link_models(run, [model_id(m, tracker.client) for m in models])
    tracker.end(run, "FINISHED" if record["status"] == "ok" else "FAILED", ended=ended if began is not None else None)
