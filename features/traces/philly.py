"""Microsoft Philly traces: the processed CSV (AdaptDL/Sia artefact) and the raw cluster_job_log JSON.

Source: Jeon et al., "Analysis of Large-Scale Multi-Tenant GPU Clusters for DNN Training Workloads",
USENIX ATC '19 (https://github.com/msr-fiddle/philly-traces, CC-BY-4.0).
"""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from features.jobtable import JobTable, LoadReport, TraceError, finalize
from features.traces._io import drop_exact_duplicates, numeric, parse_datetimes, read_csv, reject_where

#: The processed file's timestamps are "local time" of an unstated zone; we label them with this zone
#: (wall-clock kept as is) unless the caller passes another.
DEFAULT_TZ = "UTC"


def load_philly_csv(path: str | Path, *, tz: str = DEFAULT_TZ) -> JobTable:
    """Processed Philly CSV: timestamp (submit), duration (s), num_gpus, gpu_time, cluster (VC hash).

    The file is unsorted and holds exact duplicate rows: duplicates are dropped and counted, rows are
    sorted by submit time (stable, file order on ties). job_id is ``philly-<0-based data row>``.
    """
    report = LoadReport(source=str(path), format="philly")
    raw = read_csv(path, required=["timestamp", "duration", "num_gpus", "cluster"])
    report.rows_read = len(raw)
    raw["job_id"] = [f"philly-{i}" for i in range(len(raw))]
    deduped = drop_exact_duplicates(raw.drop(columns=["job_id"]), report)
    frame = raw.loc[deduped.index]
    ts = parse_datetimes(frame, "timestamp", report, tz=tz, reason="timestamp")
    frame = frame.assign(submit_ts=ts)
    frame = reject_where(frame, frame["submit_ts"].isna(), "unparseable or missing timestamp", report)
    out = pd.DataFrame({
        "job_id": frame["job_id"],
        "submit_ts": frame["submit_ts"],
        "submit_time": (frame["submit_ts"] - frame["submit_ts"].min()).dt.total_seconds(),
        "duration": numeric(frame, "duration"),
        "num_gpus": numeric(frame, "num_gpus"),
        "org": frame["cluster"].astype("string"),
    })
    report.notes.append(f"timestamps are local wall-clock of an unstated zone, labelled {tz}")
    return finalize(out, report, path=path)


def _parse_philly_time(value, path, row) -> pd.Timestamp | None:
    if value in (None, "", "None"):
        return None
    try:
        return pd.Timestamp(value)
    except (ValueError, TypeError):
        raise TraceError(path, f"unparseable time {value!r}", row=row) from None


def load_philly_json(path: str | Path, *, tz: str = "US/Pacific") -> JobTable:
    """Raw Philly ``cluster_job_log`` (JSON list of jobs with attempts).

    duration = sum over attempts of (end - start): the exclusive run time across retries.
    num_gpus = GPUs of the last attempt (sum over its hosts); num_nodes = hosts of the last attempt.
    Jobs with no finished attempt are rejected ("never ran"); status is kept as given.
    """
    path = Path(path)
    if not path.exists():
        raise TraceError(path, "file not found")
    try:
        with open(path) as fh:
            jobs = json.load(fh)
    except json.JSONDecodeError as exc:
        raise TraceError(path, f"not valid JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(jobs, list):
        raise TraceError(path, "expected a JSON list of job objects")
    report = LoadReport(source=str(path), format="philly-json", rows_read=len(jobs))
    rows, seen = [], set()
    for i, job in enumerate(jobs):
        if not isinstance(job, dict):
            raise TraceError(path, "entry is not a JSON object", row=i)
        for key in ("jobid", "submitted_time", "attempts"):
            if key not in job:
                raise TraceError(path, "missing key", row=i, column=key)
        if job["jobid"] in seen:
            report.duplicates_found += 1
            report.duplicates_action = "dropped (repeated jobid; first kept)"
            continue
        seen.add(job["jobid"])
        submitted = _parse_philly_time(job["submitted_time"], path, i)
        if submitted is None:
            report.reject("missing submit time", 1)
            continue
        duration, gpus, nodes = 0.0, None, None
        finished = 0
        for a, attempt in enumerate(job["attempts"] or []):
            start = _parse_philly_time(attempt.get("start_time"), path, i)
            end = _parse_philly_time(attempt.get("end_time"), path, i)
            if start is None or end is None:
                continue
            if end < start:
                raise TraceError(path, f"attempt {a} ends before it starts", row=i, column="attempts")
            duration += (end - start).total_seconds()
            finished += 1
            detail = attempt.get("detail") or []
            gpus = sum(len(d.get("gpus") or []) for d in detail)
            nodes = len(detail)
        if finished == 0:
            report.reject("never ran (no attempt with start and end)", 1)
            continue
        rows.append({
            "job_id": str(job["jobid"]),
            "submit_ts": submitted,
            "duration": duration,
            "num_gpus": gpus if gpus else None,
            "num_nodes": nodes,
            "user": job.get("user"),
            "org": job.get("vc"),
            "status": job.get("status"),
            "attempts": len(job["attempts"] or []),
        })
    out = pd.DataFrame(rows, columns=["job_id", "submit_ts", "duration", "num_gpus", "num_nodes", "user",
                                      "org", "status", "attempts"])
    if len(out):
        ts = pd.to_datetime(out["submit_ts"])
        ts = ts.dt.tz_localize(tz) if ts.dt.tz is None else ts
        out["submit_ts"] = ts.dt.tz_convert("UTC")
        out["submit_time"] = (out["submit_ts"] - out["submit_ts"].min()).dt.total_seconds()
    else:
        out["submit_time"] = pd.Series(dtype=float)
    missing_gpus = out["num_gpus"].isna()
    if missing_gpus.any():
        report.reject("no GPU in the last attempt", int(missing_gpus.sum()))
        out = out[~missing_gpus]
    return finalize(out, report, path=path)
