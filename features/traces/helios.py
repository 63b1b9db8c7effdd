"""SenseTime Helios / Lucid ``cluster_log.csv`` and Shanghai AI Lab Acme (Seren, Kalos) traces.

Sources: Hu et al., "Characterization and Prediction of Deep Learning Workloads in Large-Scale GPU
Datacenters", SC '21 (HeliosData, CC-BY-4.0); Hu et al., "Characterization of Large Language Model
Development in the Datacenter", NSDI '24 (AcmeTrace).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from features.jobtable import (REASONS, JobTable, LoadReport, as_object_text, as_text, finalize, gpu_rejects,
                               to_numeric)
from features.traces._io import (drop_exact_duplicates, drop_repeated_ids, parse_datetimes, read_csv,
                                 reject_where)

#: Columns a Helios ``cluster_log.csv`` must have. ``node_num``, ``cpu_num`` and ``state`` are optional:
#: Lucid's simulator input (``cluster_full_log.csv``: job_id, user, vc, jobname, gpu_num, cpu_num, state,
#: submit_time, duration, + dataset, model, batchsize, amp, speed, gpu_util, gmem_util, gmem) has no
#: ``node_num``; it is then derived as ceil(gpu_num / GPUS_PER_NODE) and noted in the load report.
HELIOS_REQUIRED = ["job_id", "user", "vc", "gpu_num", "submit_time", "duration"]
ACME_REQUIRED = ["job_id", "user", "node_num", "gpu_num", "cpu_num", "type", "state", "submit_time",
                 "duration"]
#: Helios and Lucid clusters are built from 8-GPU nodes.
GPUS_PER_NODE = 8
#: Lucid's per-job profile columns, kept as extra columns when present (``model`` is canonical).
LUCID_PROFILE_COLUMNS = ["dataset", "batchsize", "amp", "speed", "gpu_util", "gmem_util", "gmem"]


def _optional(raw: pd.DataFrame, column: str) -> pd.Series:
    return raw[column] if column in raw else pd.Series(pd.NA, index=raw.index, dtype="string")


def _common(raw: pd.DataFrame, report: LoadReport, path, tz: str, org_col: str | None) -> JobTable:
    raw = drop_exact_duplicates(raw, report)
    ts, out_of_range = parse_datetimes(raw["submit_time"], report, tz=tz, column="submit_time")
    raw = raw.copy(deep=False)  # a new column on a frame sharing raw's (assign would copy every column)
    raw["_ts"] = ts
    raw = reject_where(raw, out_of_range, REASONS["submit_range"], report)
    raw = reject_where(raw, raw["_ts"].isna(), "unparseable or missing submit_time", report)
    gpus_ok = gpu_rejects(raw["gpu_num"], report)
    if not gpus_ok.all():
        raw = raw[gpus_ok]
    if "node_num" in raw:
        nodes = raw["node_num"]
    else:
        nodes = np.ceil(to_numeric(raw["gpu_num"]) / GPUS_PER_NODE)
        report.notes.append(f"no node_num column (Lucid format): num_nodes derived as ceil(gpu_num / "
                            f"{GPUS_PER_NODE})")
    out = pd.DataFrame({
        "job_id": as_text(raw["job_id"]),
        "submit_ts": raw["_ts"],
        "submit_time": np.nan,  # from submit_ts in finalize
        "duration": raw["duration"],
        "num_gpus": raw["gpu_num"],
        "num_nodes": nodes,
        "user": as_text(raw["user"]),
        "status": as_text(_optional(raw, "state")),
        "cpu_num": to_numeric(_optional(raw, "cpu_num")),
    }, copy=False)  # the columns above are fresh or raw's own (finalize replaces, never writes into, them)
    if org_col and org_col in raw:
        out["org"] = as_text(raw[org_col])
    if "jobname" in raw:
        out["job_name"] = as_text(raw["jobname"])
    if "model" in raw:
        out["model"] = as_text(raw["model"])
    for col in LUCID_PROFILE_COLUMNS:
        if col in raw:
            out[col] = as_object_text(raw[col]) if col == "dataset" else to_numeric(raw[col])
    if "queue" in raw:
        out["queue_time"] = to_numeric(raw["queue"])
    out = drop_repeated_ids(out, report, "job_id")
    return finalize(out, report, path=path, require_jobs=True)


def load_helios(path: str | Path, *, tz: str = "Asia/Shanghai") -> JobTable:
    """Helios (Venus/Earth/Saturn/Uranus) or Lucid-format ``cluster_log.csv``; VC becomes ``org``.

    CPU-only jobs (gpu_num 0) are rejected and counted: the GPU simulator has nothing to place.
    Without ``node_num`` (Lucid's ``cluster_full_log.csv``) nodes are ceil(gpu_num / 8).
    """
    report = LoadReport(source=str(path), format="helios")
    raw = read_csv(path, required=HELIOS_REQUIRED, report=report, fast=True)
    return _common(raw, report, path, tz, org_col="vc")


def load_acme(path: str | Path, *, tz: str = "Asia/Shanghai") -> JobTable:
    """Acme Seren / Kalos ``trace_*.csv``; ``type`` (e.g. pretrain, eval) is kept as ``workload_type``."""
    report = LoadReport(source=str(path), format="acme")
    raw = read_csv(path, required=ACME_REQUIRED, report=report, fast=True)
    table = _common(raw, report, path, tz, org_col=None)
    types = as_object_text(raw["type"]).set_axis(as_object_text(raw["job_id"]).astype(str))
    types = types[~types.index.duplicated()]
    table.frame["workload_type"] = table.frame["job_id"].map(types).astype("string").to_numpy()
    return table
