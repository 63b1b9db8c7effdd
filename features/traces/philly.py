"""Microsoft Philly traces: the processed CSV (AdaptDL/Sia artefact) and the raw cluster_job_log JSON.

Source: Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads",
USENIX ATC '19 (https://github.com/msr-fiddle/philly-traces, CC-BY-4.0).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from features.jobtable import REASONS, JobTable, LoadReport, TraceError, finalize
from features.traces._io import (decode_utf8, drop_exact_duplicates, parse_datetimes, read_bytes, read_csv,
                                 reject_where)

#: The processed file's timestamps are "local time" of an unstated zone; we label them with this zone
#: (wall-clock kept as is) unless the caller passes another.
DEFAULT_TZ = "UTC"


def load_philly_csv(path: str | Path, *, tz: str = DEFAULT_TZ) -> JobTable:
    """Processed Philly CSV: timestamp (submit), duration (s), num_gpus, gpu_time, cluster (VC hash).

    The file is unsorted and holds exact duplicate rows: duplicates are dropped and counted, rows are
    sorted by submit time (stable, file order on ties). job_id is ``philly-<0-based data row>``.
    """
    report = LoadReport(source=str(path), format="philly")
    raw = read_csv(path, required=["timestamp", "duration", "num_gpus", "cluster"], report=report, fast=True)
    raw["job_id"] = ("philly-" + raw.index.astype(str)).to_numpy(dtype=object)
    deduped = drop_exact_duplicates(raw.drop(columns=["job_id"]), report)
    frame = raw.loc[deduped.index]
    ts, out_of_range = parse_datetimes(frame["timestamp"], report, tz=tz, column="timestamp")
    frame = frame.assign(submit_ts=ts)
    frame = reject_where(frame, out_of_range, REASONS["submit_range"], report)
    frame = reject_where(frame, frame["submit_ts"].isna(), "unparseable or missing timestamp", report)
    out = pd.DataFrame({
        "job_id": frame["job_id"],
        "submit_ts": frame["submit_ts"],
        "submit_time": np.nan,  # from submit_ts in finalize
        "duration": frame["duration"],
        "num_gpus": frame["num_gpus"],
        "org": frame["cluster"].astype("string"),
    })
    report.notes.append(f"timestamps are local wall-clock of an unstated zone, labelled {tz}")
    return finalize(out, report, path=path, require_jobs=True)


def _expect(value: Any, types: tuple[type, ...], path, row: int, field: str, what: str) -> Any:
    """The value if it has one of ``types`` (or is null), else a TraceError naming row and field."""
    if value is None or (isinstance(value, types) and not isinstance(value, bool)):
        return value
    raise TraceError(path, f"expected {what}, got {type(value).__name__} {str(value)[:40]!r}", row=row,
                     column=field)


def _time_text(value: Any, path, row: int, field: str) -> str | None:
    value = _expect(value, (str,), path, row, field, "a time string or null")
    return None if value is None or value.strip() in ("", "None") else value


def load_philly_json(path: str | Path, *, tz: str = "US/Pacific") -> JobTable:
    """Raw Philly ``cluster_job_log`` (JSON list of jobs with attempts), optionally compressed.

    duration = sum over attempts of (end - start): the exclusive run time across retries, measured on
    the absolute clock (times are US/Pacific wall-clock: an attempt across a daylight-saving change
    lasts its real length). num_gpus = GPUs of the last finished attempt (sum over its hosts);
    num_nodes = hosts of that attempt. Jobs with no finished attempt are rejected ("never ran");
    status is kept as given.

    Daylight-saving changes: a time in the repeated hour (e.g. 2017-11-05 01:30, inside the Philly
    period) is read as its first occurrence (PDT), unless it is an attempt's end that would then precede
    the start, which is read as the second (PST); a time in the skipped hour moves forward to the first
    valid instant. All are counted in the report's notes. Values of the wrong JSON type stop the load
    with an error naming the row and field; unparseable or out-of-bounds times reject the job (counted).
    """
    path = Path(path)
    try:
        jobs = json.loads(decode_utf8(path, read_bytes(path)))
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"not valid JSON: {exc.msg} (line {exc.lineno})") from None
    except RecursionError:
        raise TraceError(path, "not valid JSON: nested too deeply") from None
    if not isinstance(jobs, list):
        raise TraceError(path, f"expected a JSON list of job objects, got {type(jobs).__name__}")
    report = LoadReport(source=str(path), format="philly-json", rows_read=len(jobs))
    rows: list[dict] = []
    attempts: list[tuple[int, int, str | None, str | None, int, int]] = []
    seen: set = set()
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise TraceError(path, f"entry is not a JSON object (got {type(job).__name__})", row=i)
        for key in ("jobid", "submitted_time", "attempts"):
            if key not in job:
                raise TraceError(path, "missing key", row=i, column=key)
        jobid = _expect(job["jobid"], (str, int), path, i, "jobid", "a string")
        for key in ("user", "vc", "status"):
            _expect(job.get(key), (str,), path, i, key, "a string or null")
        submitted = _time_text(job["submitted_time"], path, i, "submitted_time")
        job_attempts = _expect(job["attempts"], (list,), path, i, "attempts", "a list") or []
        jobid = str(jobid)
        if jobid in seen:
            report.duplicates_found += 1
            report.duplicates_action = "dropped (repeated jobid; first kept)"
            continue
        seen.add(jobid)
        for a, attempt in enumerate(job_attempts):
            field = f"attempts[{a}]"
            if not isinstance(attempt, dict):
                raise TraceError(path, f"expected an object, got {type(attempt).__name__}", row=i, column=field)
            start = _time_text(attempt.get("start_time"), path, i, f"{field}.start_time")
            end = _time_text(attempt.get("end_time"), path, i, f"{field}.end_time")
            detail = _expect(attempt.get("detail"), (list,), path, i, f"{field}.detail", "a list") or []
            gpus = 0
            for d, host in enumerate(detail):
                if not isinstance(host, dict):
                    raise TraceError(path, f"expected an object, got {type(host).__name__}", row=i,
                                     column=f"{field}.detail[{d}]")
                gpus += len(_expect(host.get("gpus"), (list,), path, i, f"{field}.detail[{d}].gpus",
                                    "a list") or [])
            attempts.append((len(rows), a, start, end, gpus, len(detail)))
        rows.append({"job_id": str(jobid), "submitted": submitted, "user": job.get("user"),
                     "org": job.get("vc"), "status": job.get("status"), "attempts": len(job_attempts)})
    jobs_frame = pd.DataFrame(rows, columns=["job_id", "submitted", "user", "org", "status", "attempts"])
    att = pd.DataFrame(attempts, columns=["job", "attempt", "start", "end", "gpus", "nodes"])

    keep = pd.Series(True, index=jobs_frame.index)

    def reject(mask: pd.Series, reason: str) -> None:
        hit = mask.reindex(jobs_frame.index, fill_value=False).astype(bool) & keep
        report.reject(reason, int(hit.sum()))
        keep[hit] = False

    sub_ts, sub_far = parse_datetimes(jobs_frame["submitted"], report, tz=tz, column="submitted_time")
    reject(jobs_frame["submitted"].isna(), REASONS["missing_submit"])
    reject(sub_far, REASONS["submit_range"])
    reject(sub_ts.isna(), "unparseable submit time")

    start, start_far = parse_datetimes(att["start"], report, tz=tz, column="attempt start_time")
    end, end_far = _attempt_ends(att["end"], start, report, tz)
    far = start_far | end_far
    bad = (att["start"].notna() & start.isna() & ~start_far) | (att["end"].notna() & end.isna() & ~end_far)
    reject(pd.Series(True, index=att.loc[far, "job"].unique()), "attempt time outside 2000-01-01..2100-01-01")
    reject(pd.Series(True, index=att.loc[bad, "job"].unique()), "unparseable attempt time")
    finished = start.notna() & end.notna()
    backwards = finished & (end < start) & keep.reindex(att["job"]).to_numpy()
    if backwards.any():
        first = int(np.flatnonzero(backwards.to_numpy())[0])
        raise TraceError(path, f"attempt {att['attempt'].iloc[first]} ends before it starts",
                         row=int(att["job"].iloc[first]), column="attempts")
    done = att[finished].assign(seconds=(end - start)[finished].dt.total_seconds())
    per_job = done.groupby("job")
    duration = per_job["seconds"].sum()
    last = per_job.tail(1).set_index("job")
    reject(pd.Series(~jobs_frame.index.isin(duration.index), index=jobs_frame.index),
           "never ran (no attempt with start and end)")
    reject(pd.Series(jobs_frame.index.map(last["gpus"]), index=jobs_frame.index).fillna(0) < 1,
           "no GPU in the last attempt")

    out = jobs_frame[keep].drop(columns=["submitted"])
    out["submit_ts"] = sub_ts[keep]
    out["submit_time"] = np.nan  # from submit_ts in finalize
    out["duration"] = out.index.map(duration).astype(float)
    out["num_gpus"] = out.index.map(last["gpus"]).astype(float)
    out["num_nodes"] = out.index.map(last["nodes"]).astype(float)
    return finalize(out, report, path=path, require_jobs=True)


def _attempt_ends(values: pd.Series, start: pd.Series, report: LoadReport, tz: str) -> tuple[pd.Series, pd.Series]:
    """Attempt end times; an end in the repeated DST hour that would precede its start is the second
    occurrence (standard time)."""
    scratch = LoadReport("", "")
    end, far = parse_datetimes(values, scratch, tz=tz, column="attempt end_time")
    report.notes.extend(scratch.notes)
    early = end.notna() & start.notna() & (end < start)
    if early.any() and tz.upper() not in ("UTC", "GMT"):
        naive = pd.to_datetime(values[early], errors="coerce", format="ISO8601")
        second = naive.dt.tz_localize(tz, ambiguous=np.zeros(len(naive), dtype=bool),
                                      nonexistent="shift_forward").dt.tz_convert("UTC")
        moved = second.notna() & (second != end[early]) & (second >= start[early])
        if moved.any():
            end[moved[moved].index] = second[moved]
            report.notes.append(f"{int(moved.sum())} attempt end time(s) in the repeated DST hour read as the "
                                "second occurrence (they would otherwise precede the attempt's start)")
    return end, far
