"""JobTable + cluster -> Workload: the simulator's per-job arrays, with what traces lack filled in.

Everything filled (GPU counts, models, load and save times) is seeded and recorded in the workload's
report, and jobs that can never run on the modelled cluster are rejected and counted here, before the
simulation starts, instead of waiting in a queue forever.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from features.jobtable import JobTable
from sim.cluster import Cluster
from sim.profiles import CostModel, ProfileCatalog


@dataclass
class Workload:
    """Simulator jobs, indexed 0..n-1 in submission order. Hot-path arrays are Python lists."""

    job_id: list[str]
    submit: list[float]
    duration: list[float]
    gpus: list[int]
    partition: list[int]
    load_time: list[float]
    save_time: list[float]
    model: list[str | None]
    frame: pd.DataFrame  # the kept rows of the JobTable (same order), for predictors and metrics
    cluster: Cluster
    report: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.submit)

    @property
    def fingerprint(self) -> str:
        h = hashlib.sha256()
        for arr in (self.submit, self.duration, self.gpus, self.partition, self.load_time, self.save_time):
            h.update(np.asarray(arr, dtype=float).tobytes())
        return h.hexdigest()[:16]


def _partition_of(frame: pd.DataFrame, cluster: Cluster, report: dict) -> np.ndarray:
    if not cluster.partitioned:
        return np.zeros(len(frame), dtype=int)
    orgs = frame["org"].astype("string").fillna("<none>")
    part = orgs.map(cluster.index)
    unknown = part.isna()
    if unknown.any():
        policy = cluster.unknown_org
        counts = orgs[unknown].value_counts().to_dict()
        if policy == "reject":
            report["rejected"]["org names no partition of the cluster"] = int(unknown.sum())
            report["unknown_orgs"] = {str(k): int(v) for k, v in counts.items()}
        else:
            target = (max(range(len(cluster.partitions)), key=lambda i: cluster.partitions[i].gpus)
                      if policy == "largest" else cluster.index.get(policy))
            if target is None:
                raise ValueError(f"unknown_org names partition {policy!r}, which the cluster lacks")
            part = part.fillna(target)
            report["notes"].append(f"{int(unknown.sum())} jobs of unknown orgs sent to partition "
                                   f"{cluster.partitions[target].name}")
    return part.fillna(-1).astype(int).to_numpy()


def build_workload(table: JobTable | pd.DataFrame, cluster: Cluster, *, costs: CostModel | None = None,
                   catalog: ProfileCatalog | None = None, seed: int = 0, default_gpus: int | None = None,
                   assignment_strength: float = 1.0, limit: int | None = None) -> Workload:
    """Map jobs to partitions, fill missing fields, reject jobs that can never fit, and build arrays.

    - ``default_gpus``: GPU count for jobs whose trace has none (else they are rejected).
    - ``catalog`` + ``costs``: draw a model per job (larger GPU-time -> larger models, see
      ProfileCatalog.assign) and derive load / save times; without ``costs`` both are 0.
    - ``limit``: keep only the first ``limit`` jobs by submission (quick runs).
    """
    frame = table.frame if isinstance(table, JobTable) else table
    if limit is not None:
        frame = frame.iloc[:limit]
    report: dict[str, Any] = {"jobs_in": int(len(frame)), "rejected": {}, "notes": []}
    gpus = frame["num_gpus"].astype("Float64")
    if gpus.isna().any():
        if default_gpus is None:
            report["rejected"]["no GPU count (pass default_gpus to fill)"] = int(gpus.isna().sum())
        else:
            report["notes"].append(f"{int(gpus.isna().sum())} jobs without a GPU count given {default_gpus}")
            gpus = gpus.fillna(default_gpus)
    part = _partition_of(frame, cluster, report)
    gpus_np = gpus.fillna(0).to_numpy(dtype=float).astype(int)
    cap = np.array([p.gpus for p in cluster.partitions] + [0])[part]
    too_big = (gpus_np > cap) & (part >= 0) & (gpus_np > 0)
    if too_big.any():
        report["rejected"]["needs more GPUs than its partition has"] = int(too_big.sum())
        report["too_big_examples"] = frame.loc[too_big, ["job_id", "num_gpus"]].head(5).astype(str).values.tolist()
    keep = (part >= 0) & (gpus_np > 0) & ~too_big
    kept = frame[keep].reset_index(drop=True)
    part, gpus_np = part[keep], gpus_np[keep]
    n = len(kept)
    duration = kept["duration"].to_numpy(dtype=float)

    model: list[str | None] = [None] * n
    load = np.zeros(n)
    save = np.zeros(n)
    if catalog is not None:
        idx = catalog.assign(duration * gpus_np, seed=seed, strength=assignment_strength)
        names = np.array([p.name for p in catalog.profiles], dtype=object)
        model = names[idx].tolist()
        if costs is not None:
            pbytes = np.array([p.param_bytes for p in catalog.profiles])[idx]
            load, save = costs.load_time(pbytes), costs.save_time(pbytes)
            report["costs"] = costs.model_dump()
        report["catalog"] = {"name": catalog.name, "seed": seed, "assignment_strength": assignment_strength,
                             "models": {p.name: p.param_source for p in catalog.profiles}}
    kept = kept.assign(model=pd.array(model, dtype="string"), sim_gpus=gpus_np,
                       partition=[cluster.partitions[i].name for i in part], load_time=load, save_time=save)
    report["jobs_kept"] = n
    report["jobs_rejected"] = int(sum(report["rejected"].values()))
    return Workload(
        job_id=kept["job_id"].astype(str).tolist(),
        submit=kept["submit_time"].to_numpy(dtype=float).tolist(),
        duration=duration.tolist(),
        gpus=gpus_np.tolist(),
        partition=part.tolist(),
        load_time=np.asarray(load, dtype=float).tolist(),
        save_time=np.asarray(save, dtype=float).tolist(),
        model=model,
        frame=kept,
        cluster=cluster,
        report=report,
    )
