"""The canonical job table every trace loader returns, and the load report that goes with it.

One row per job, seconds and SI units, missing values as nulls (never sentinels). Loaders never drop a
row silently: every row that does not make it into the table is counted under a reason in the report.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Columns every JobTable has, in this order, with their pandas dtypes.
REQUIRED_COLUMNS: dict[str, str] = {
    "job_id": "string",
    "submit_time": "float64",  # seconds from trace start (first submission = 0)
    "submit_ts": "datetime64[ns, UTC]",  # absolute, tz-aware (null where the trace has no clock)
    "duration": "float64",  # seconds of exclusive run
    "num_gpus": "Int64",
}
#: Optional canonical columns; loaders add the ones their trace has (nulls elsewhere).
OPTIONAL_COLUMNS: dict[str, str] = {
    "num_nodes": "Int64",
    "user": "string",
    "org": "string",  # virtual cluster / tenant / organisation
    "job_name": "string",
    "group_id": "string",
    "status": "string",
    "gpu_type": "string",
    "job_class": "string",  # e.g. hp / spot
    "model": "string",
}


class TraceError(ValueError):
    """A trace that cannot be read: the message names the file, the row and the field."""

    def __init__(self, path: str | Path, message: str, row: int | None = None, column: str | None = None):
        where = f"{path}"
        if row is not None:
            where += f", row {row}"
        if column is not None:
            where += f", field '{column}'"
        super().__init__(f"{where}: {message}")
        self.path, self.row, self.column = str(path), row, column


@dataclass
class LoadReport:
    """What happened to every row of a trace: read, kept, rejected by reason, duplicates."""

    source: str
    format: str
    rows_read: int = 0
    rows_kept: int = 0
    rejected: dict[str, int] = field(default_factory=dict)
    duplicates_found: int = 0
    duplicates_action: str = "none found"
    notes: list[str] = field(default_factory=list)
    synthetic: bool = False

    def reject(self, reason: str, count: int) -> None:
        if count:
            self.rejected[reason] = self.rejected.get(reason, 0) + int(count)

    @property
    def rows_rejected(self) -> int:
        return sum(self.rejected.values())

    def check_balance(self) -> None:
        """Every row read is either kept, rejected or a removed duplicate."""
        removed = self.duplicates_found if self.duplicates_action.startswith("dropped") else 0
        if self.rows_read != self.rows_kept + self.rows_rejected + removed:
            raise AssertionError(
                f"load report does not balance: read {self.rows_read} != kept {self.rows_kept} + "
                f"rejected {self.rows_rejected} + duplicates removed {removed}"
            )

    def as_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "synthetic": self.synthetic,
            "rows_read": self.rows_read,
            "rows_kept": self.rows_kept,
            "rows_rejected": self.rows_rejected,
            "rejected_by_reason": dict(self.rejected),
            "duplicates_found": self.duplicates_found,
            "duplicates_action": self.duplicates_action,
            "notes": list(self.notes),
        }

    def render(self) -> str:
        lines = [
            f"source:     {self.source}" + ("  (SYNTHETIC: generated, not a real trace)" if self.synthetic else ""),
            f"format:     {self.format}",
            f"rows read:  {self.rows_read}",
            f"rows kept:  {self.rows_kept}",
            f"rejected:   {self.rows_rejected}",
        ]
        for reason, n in sorted(self.rejected.items(), key=lambda kv: -kv[1]):
            lines.append(f"  - {reason}: {n}")
        lines.append(f"duplicates: {self.duplicates_found} ({self.duplicates_action})")
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)


@dataclass
class JobTable:
    """A validated canonical job table plus its load report."""

    frame: pd.DataFrame
    report: LoadReport

    def __len__(self) -> int:
        return len(self.frame)

    @property
    def synthetic(self) -> bool:
        return self.report.synthetic


def finalize(frame: pd.DataFrame, report: LoadReport, *, path: str | Path, sort: bool = True) -> JobTable:
    """Coerce to canonical dtypes, reject invalid rows (counted), rebase time zero, sort, validate.

    Rows with a missing or negative duration, a missing submit time or a GPU count below 1 are
    rejected under a named reason. Time zero is the earliest kept submission; ties keep file order.
    """
    frame = frame.copy()
    for col in REQUIRED_COLUMNS:
        if col not in frame:
            raise TraceError(path, f"loader produced no '{col}' column (internal error)")
    bad_submit = frame["submit_time"].isna()
    report.reject("missing submit time", int(bad_submit.sum()))
    frame = frame[~bad_submit]
    dur = pd.to_numeric(frame["duration"], errors="coerce")
    bad_dur = dur.isna() | ~np.isfinite(dur.fillna(0.0)) | (dur < 0)
    report.reject("missing or negative duration", int(bad_dur.sum()))
    frame = frame[~bad_dur]
    gpus = pd.to_numeric(frame["num_gpus"], errors="coerce")
    no_gpu = gpus.notna() & (gpus < 1)
    report.reject("no GPU requested (CPU-only job)", int(no_gpu.sum()))
    frame = frame[~no_gpu]

    for col, dtype in REQUIRED_COLUMNS.items():
        if dtype == "Int64":
            frame[col] = pd.to_numeric(frame[col], errors="coerce").round().astype("Int64")
        elif dtype.startswith("datetime"):
            frame[col] = pd.to_datetime(frame[col], utc=True)
        else:
            frame[col] = frame[col].astype(dtype)
    for col, dtype in OPTIONAL_COLUMNS.items():
        if col not in frame:
            frame[col] = pd.Series(pd.NA, index=frame.index, dtype=dtype)
        elif dtype == "Int64":
            frame[col] = pd.to_numeric(frame[col], errors="coerce").round().astype("Int64")
        else:
            frame[col] = frame[col].astype(dtype)
    if sort:
        frame = frame.sort_values("submit_time", kind="stable")
    if len(frame):
        frame["submit_time"] = frame["submit_time"] - frame["submit_time"].iloc[0 if sort else frame["submit_time"].argmin()]
    frame = frame.reset_index(drop=True)
    extras = [c for c in frame.columns if c not in REQUIRED_COLUMNS and c not in OPTIONAL_COLUMNS]
    frame = frame[list(REQUIRED_COLUMNS) + list(OPTIONAL_COLUMNS) + extras]
    report.rows_kept = len(frame)
    report.check_balance()
    validate(frame, path=path)
    return JobTable(frame, report)


def validate(frame: pd.DataFrame, *, path: str | Path = "<table>") -> None:
    """Raise TraceError naming the first offending row if the frame breaks the canonical contract."""
    for col in REQUIRED_COLUMNS:
        if col not in frame:
            raise TraceError(path, f"missing required column '{col}'")
    if frame["job_id"].isna().any():
        row = int(np.flatnonzero(frame["job_id"].isna().to_numpy())[0])
        raise TraceError(path, "job_id is null", row=row, column="job_id")
    dup = frame["job_id"].duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise TraceError(path, f"job_id {frame['job_id'].iloc[row]!r} is not unique", row=row, column="job_id")
    for col in ("submit_time", "duration"):
        values = frame[col].to_numpy(dtype=float)
        bad = ~np.isfinite(values) | (values < 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise TraceError(path, f"{col} must be a finite number >= 0, got {values[row]!r}", row=row, column=col)
