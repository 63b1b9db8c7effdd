"""Alibaba traces: PAI-2020 job table (+ group tags) and the GPU cluster v2023 pod list.

Sources: Weng et al., "MLaaS in the Wild", NSDI '22 (cluster-trace-gpu-v2020); Weng et al., "Beware of
Fragmentation: Scheduling GPU-Sharing Workloads with Fragmentation Gradient Descent", ATC '23
(cluster-trace-gpu-v2023). Both from https://github.com/alibaba/clusterdata.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from features.jobtable import JobTable, LoadReport, finalize, gpu_rejects
from features.traces._io import (drop_exact_duplicates, drop_repeated_ids, numeric, read_csv, reject_text,
                                 reject_where)

PAI_JOB_COLUMNS = ["job_name", "inst_id", "user", "status", "start_time", "end_time"]
PAI_GROUP_COLUMNS = ["inst_id", "user", "gpu_type_spec", "group", "workload"]
PAI_TASK_COLUMNS = ["job_name", "task_name", "inst_num", "status", "start_time", "end_time", "plan_cpu",
                    "plan_mem", "plan_gpu", "gpu_type"]

#: v2023 qos classes -> job_class. LS (latency-sensitive) and Guaranteed are high priority; BE
#: (best-effort) and Burstable can be preempted, i.e. spot.
QOS_TO_CLASS = {"LS": "hp", "Guaranteed": "hp", "BE": "spot", "Burstable": "spot"}


def _side_table(path: str | Path, names: list[str], report: LoadReport, what: str) -> pd.DataFrame:
    frame = read_csv(path, header=False, names=names)
    if frame.attrs.get("bad_rows"):
        report.notes.append(f"{what}: {frame.attrs['bad_rows']} row(s) with a number of fields other than "
                            f"{len(names)} ignored")
    return frame


def load_pai(path: str | Path, *, group_tag: str | Path | None = None, task_table: str | Path | None = None,
             default_gpus: int | None = None) -> JobTable:
    """Headerless ``pai_job_table.csv`` (job_name, inst_id, user, status, start_time, end_time).

    Every row must have exactly these six fields (an empty end_time still counts as a field); a row
    with more or fewer is rejected under "wrong number of fields", never shifted. PAI records no
    submit time: ``start_time`` (s, trace clock) is used as submission, which hides queueing in the
    original cluster. An empty start or end time means the job never started / was still running; a
    non-numeric one is rejected as "<column> not a number". The job table has no GPU count: with
    ``task_table`` the job's GPUs are the sum over tasks of plan_gpu x inst_num / 100, rounded up
    to whole GPUs (the fraction is kept as gpu_fraction); without it num_gpus stays null unless
    ``default_gpus`` is given (recorded in the report). ``group_tag`` adds group_id and workload.
    """
    report = LoadReport(source=str(path), format="pai")
    raw = read_csv(path, header=False, names=PAI_JOB_COLUMNS, report=report)
    raw = drop_exact_duplicates(raw, report)
    raw = reject_text(raw, "start_time", report)
    raw = reject_where(raw, numeric(raw, "start_time").isna(), "missing start_time (job never started)", report)
    raw = reject_text(raw, "end_time", report)
    raw = reject_where(raw, numeric(raw, "end_time").isna(), "missing end_time (job still running at trace end)",
                       report)
    start, end = numeric(raw, "start_time"), numeric(raw, "end_time")
    out = pd.DataFrame({
        "job_id": raw["job_name"].astype("string"),
        "submit_time": start,
        "submit_ts": pd.Series(pd.NaT, index=raw.index, dtype="datetime64[ns, UTC]"),
        "duration": end - start,
        "user": raw["user"].astype("string"),
        "status": raw["status"].astype("string"),
        "inst_id": raw["inst_id"].astype("string"),
    })
    out = drop_repeated_ids(out, report, "job_name")
    out["num_gpus"] = np.nan
    gpus_known = False
    if task_table is not None:
        tasks = _side_table(task_table, PAI_TASK_COLUMNS, report, "task table")
        gpus = (numeric(tasks, "plan_gpu").fillna(0) * numeric(tasks, "inst_num").fillna(1) / 100.0)
        per_job = gpus.groupby(tasks["job_name"].astype(str)).sum()
        requested = out["job_id"].astype(str).map(per_job)
        out["gpu_fraction"] = requested
        out["num_gpus"] = np.ceil(requested - 1e-9)  # a 0.5-GPU job holds one whole GPU here
        gpu_type = tasks.groupby(tasks["job_name"].astype(str))["gpu_type"].first()
        out["gpu_type"] = out["job_id"].astype(str).map(gpu_type).astype("string")
    elif default_gpus is not None:
        out["num_gpus"] = float(default_gpus)
        gpus_known = True
        report.notes.append(f"no task table: every job given num_gpus={default_gpus}")
    else:
        report.notes.append("no task table: num_gpus is null (the workload layer must fill it)")
    if group_tag is not None:
        tags = _side_table(group_tag, PAI_GROUP_COLUMNS, report, "group tag table")
        tags = tags.drop_duplicates("inst_id").set_index("inst_id")
        out["group_id"] = out["inst_id"].map(tags["group"]).astype("string")
        out["workload"] = out["inst_id"].map(tags["workload"]).astype("string")
        spec = out["inst_id"].map(tags["gpu_type_spec"]).astype("string")
        out["gpu_type"] = out["gpu_type"].fillna(spec) if "gpu_type" in out else spec
    report.notes.append("submit_time is the job's start_time (PAI has no submission time)")
    return finalize(out, report, path=path, gpus_required=gpus_known, require_jobs=True)


def load_alibaba_v2023(path: str | Path) -> JobTable:
    """GPU cluster v2023 pod list: one pod per job; creation = submit, deletion - scheduled = duration.

    ``num_gpus`` is whole GPUs requested; ``gpu_fraction`` (gpu_milli / 1000) records GPU sharing for
    placement plug-ins that can pack. qos maps to job_class via QOS_TO_CLASS. Pods never scheduled
    (Pending at trace end), CPU-only pods and invalid GPU counts are rejected and counted; a repeated
    pod name is dropped (first kept) and counted as a duplicate, like every other format.
    """
    report = LoadReport(source=str(path), format="alibaba-v2023")
    raw = read_csv(path, required=["name", "num_gpu", "gpu_milli", "qos", "pod_phase", "creation_time",
                                   "deletion_time", "scheduled_time"], report=report)
    raw = drop_exact_duplicates(raw, report)
    raw = raw[gpu_rejects(raw["num_gpu"], report)]
    for col in ("creation_time", "scheduled_time", "deletion_time"):
        raw = reject_text(raw, col, report)
    raw = reject_where(raw, numeric(raw, "scheduled_time").isna(), "never scheduled (no scheduled_time)", report)
    unknown_qos = ~raw["qos"].isin(list(QOS_TO_CLASS))
    raw = reject_where(raw, unknown_qos, "unknown qos class", report)
    created = numeric(raw, "creation_time")
    out = pd.DataFrame({
        "job_id": raw["name"].astype("string"),
        "submit_time": created,
        "submit_ts": pd.Series(pd.NaT, index=raw.index, dtype="datetime64[ns, UTC]"),
        "duration": numeric(raw, "deletion_time") - numeric(raw, "scheduled_time"),
        "num_gpus": raw["num_gpu"],
        "num_nodes": 1,
        "status": raw["pod_phase"].astype("string"),
        "job_class": raw["qos"].map(QOS_TO_CLASS).astype("string"),
        "gpu_type": raw["gpu_spec"].astype("string") if "gpu_spec" in raw else pd.NA,
        "qos": raw["qos"].astype("string"),
        "gpu_fraction": numeric(raw, "gpu_milli") / 1000.0,
        "queue_time": numeric(raw, "scheduled_time") - created,
    })
    out = drop_repeated_ids(out, report, "name")
    report.notes.append("times are seconds on the trace's own clock (no absolute date is published)")
    return finalize(out, report, path=path, require_jobs=True)
