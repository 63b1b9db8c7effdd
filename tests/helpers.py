"""Small builders for tests: hand-written job tables and clusters."""
from __future__ import annotations

import pandas as pd

from features.jobtable import JobTable, LoadReport, finalize
from sim.cluster import Cluster, Partition
from sim.workload import Workload, build_workload


def table(rows: list[tuple], org: list[str] | None = None, **columns: list) -> JobTable:
    """rows: (submit_time, duration, num_gpus); ``columns``: optional job-table columns by name
    (num_pods, gpus_per_pod, gpu_fraction, gpu_type, job_class, checkpoint_interval, ...)."""
    frame = pd.DataFrame({
        "job_id": [f"j{i}" for i in range(len(rows))],
        "submit_time": [float(r[0]) for r in rows],
        "submit_ts": pd.NaT,
        "duration": [float(r[1]) for r in rows],
        "num_gpus": [int(r[2]) for r in rows],
    })
    if org is not None:
        frame["org"] = org
    for name, values in columns.items():
        frame[name] = values
    rep = LoadReport(source="test", format="test", rows_read=len(rows))
    return finalize(frame, rep, path="test", sort=False)


def cluster(nodes: int = 1, gpus: int = 4, partitions: dict[str, int] | None = None,
            types: list[str] | None = None) -> Cluster:
    """``types``: one GPU model per node (a heterogeneous single partition)."""
    if partitions:
        return Cluster("test", [Partition(n, [gpus] * k, ["x"] * k) for n, k in partitions.items()])
    return Cluster("test", [Partition("default", [gpus] * nodes, list(types) if types else ["x"] * nodes)])


def workload(rows, nodes=1, gpus=4, load=None, save=None, types=None, **columns) -> Workload:
    w = build_workload(table(rows, **columns), cluster(nodes, gpus, types=types))
    if load is not None:
        w.load_time = [float(x) for x in load]
    if save is not None:
        w.save_time = [float(x) for x in save]
    return w
