"""SenseTime Helios / Lucid ``cluster_log.csv`` and Shanghai AI Lab Acme (Seren, Kalos) traces.

Sources: Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
Datacenters", SC '21 (HeliosData, CC-BY-4.0); Hu et al., "Characterization of Large Language Model
Development in the Datacenter", NSDI '24 (AcmeTrace).
"""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from features.jobtable import JobTable, LoadReport, finalize
from features.traces._io import drop_exact_duplicates, numeric, parse_datetimes, read_csv, reject_where

HELIOS_REQUIRED = ["job_id", "user", "vc", "gpu_num", "cpu_num", "node_num", "state", "submit_time",
                   "duration"]
ACME_REQUIRED = ["job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time",
                 "duration"]


def _common(raw: pd.DataFrame, report: LoadReport, path, tz: str, org_col: str | None) -> JobTable:
    report.rows_read = len(raw)
    raw = drop_exact_duplicates(raw, report)
    ts = parse_datetimes(raw, "submit_time", report, tz=tz, reason="submit_time")
    raw = raw.assign(_ts=ts)
    raw = reject_where(raw, raw["_ts"].isna(), "unparseable or missing submit_time", report)
    raw = reject_where(raw, numeric(raw, "gpu_num").fillna(0) < 1, "no GPU requested (CPU-only job)", report)
    out = pd.DataFrame({
        "job_id": raw["job_id"].astype(str),
        "submit_ts": raw["_ts"],
        "submit_time": (raw["_ts"] - raw["_ts"].min()).dt.total_seconds(),
        "duration": numeric(raw, "duration"),
        "num_gpus": numeric(raw, "gpu_num"),
        "num_nodes": numeric(raw, "node_num"),
        "user": raw["user"].astype("string"),
        "status": raw["state"].astype("string"),
        "cpu_num": numeric(raw, "cpu_num"),
    })
    if org_col and org_col in raw:
        out["org"] = raw[org_col].astype("string")
    if "jobname" in raw:
        out["job_name"] = raw["jobname"].astype("string")
    if "queue" in raw:
        out["queue_time"] = numeric(raw, "queue")
    dup_id = out["job_id"].duplicated(keep="first")
    if dup_id.any():
        report.duplicates_found += int(dup_id.sum())
        report.duplicates_action = "dropped (repeated job_id; first kept)"
        out = out[~dup_id]
    return finalize(out, report, path=path)


def load_helios(path: str | Path, *, tz: str = "Asia/Shanghai") -> JobTable:
    """Helios (Venus/Earth/Saturn/Uranus) or Lucid-format ``cluster_log.csv``; VC becomes ``org``.

    CPU-only jobs (gpu_num 0) are rejected and counted: the GPU simulator has nothing to place.
    """
    report = LoadReport(source=str(path), format="helios")
    raw = read_csv(path, required=HELIOS_REQUIRED)
    return _common(raw, report, path, tz, org_col="vc")


def load_acme(path: str | Path, *, tz: str = "Asia/Shanghai") -> JobTable:
    """Acme Seren / Kalos ``trace_*.csv``; ``type`` (e.g. pretrain, eval) is kept as ``workload_type``."""
    report = LoadReport(source=str(path), format="acme")
    raw = read_csv(path, required=ACME_REQUIRED)
    table = _common(raw, report, path, tz, org_col=None)
    types = raw.set_index(raw["job_id"].astype(str))["type"]
    types = types[~types.index.duplicated()]
    table.frame["workload_type"] = table.frame["job_id"].map(types).astype("string").to_numpy()
    return table
