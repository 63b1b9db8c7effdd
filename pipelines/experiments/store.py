"""The run folder: one result folder and one status file per cell (``cells/ID/``, ``cells/ID.json``), the
run's lock and run.json, written whole or not at all; what a killed run left is tidied; the report
(results.csv and the leaderboard) is built from the status files."""
from __future__ import annotations

import json
import os
import re
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.experiments.cells import Cell, expand
from pipelines.experiments.spec import DEFAULT_METRICS, one_line, parse_spec

if TYPE_CHECKING:
    from pipelines.experiments.spec import ExperimentSpec



def status_path(out: Path, cell: Cell) -> Path:
    return out / "cells" / f"{cell.id}.json"


def finished(out: Path, cell: Cell, code: str) -> dict[str, Any] | None:
    """The record of a cell already finished (status ok) with the same hash and code version whose
    result folder is complete; None when it must run."""
    try:
        record = json.loads(status_path(out, cell).read_text())
        meta = json.loads((out / "cells" / cell.id / "meta.json").read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or not isinstance(meta, dict):  # malformed: the cell runs again
        return None
    if (record.get("status") == "ok" and record.get("key") == cell.key() and record.get("code_version") == code
            and meta.get("complete") and meta.get("cell_key") == cell.key()):
        return record
    return None


def write_json(path: Path, data: Any) -> None:
    write_text(path, json.dumps(data, indent=1, default=str))


def write_text(path: Path, text: str) -> None:
    """Whole or not at all: a temporary file beside ``path``, renamed over it (a full disk leaves the
    old file, never an empty one)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_text(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


class RunLock:
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


def previous_run(out: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((out / "run.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def clean_stale(out: Path) -> None:
    """Remove the temporary folders and files of runs that were killed (``cells/.ID.*.partial``,
    ``.NAME.PID.tmp``): only names this module and evaluation.outdir create."""
    for folder in (out, out / "cells"):
        for p in folder.glob(".*.partial"):
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p, ignore_errors=True)
        for p in folder.glob(".*.tmp"):
            if p.is_file() and re.fullmatch(r"\..+\.\d+\.tmp", p.name):
                p.unlink(missing_ok=True)


def collect(out: str | Path, spec: ExperimentSpec | None = None) -> list[dict[str, Any]]:
    """The status records of a run folder: the spec's cells when given (in spec order; cells never run
    are 'missing'), else every cells/*.json."""
    out = Path(out)
    if spec is None:
        return [rec for rec in (read_status(p) for p in sorted((out / "cells").glob("*.json"))) if rec is not None]
    records = []
    for cell in expand(spec):
        rec = read_status(status_path(out, cell))
        records.append(rec if rec is not None else
                       {"id": cell.id, "key": cell.key(), "cell": asdict(cell), "status": "missing"})
    return records


_STATUSES = ("ok", "skipped", "failed", "missing")


def read_status(path: Path) -> dict[str, Any] | None:
    """A cell's status record; None when there is none. A file that is there but is not a status
    record (not JSON, not a mapping, no known status, or a cell that is not a mapping) is a one-line
    ValueError naming it (exit 2): a report built on it would be wrong or crash."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: cannot read the cell status file ({one_line(exc)})") from None
    try:
        rec = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"{path}: malformed cell status file (not JSON: {one_line(exc)}); delete it to run "
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
