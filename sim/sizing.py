"""Offered load, and clusters sized for a target offered load.

Offered load = GPU-seconds of work submitted / (submission span x the cluster's GPUs): the utilisation
the cluster would need just to keep up. Around 0.1 every policy ties (nothing waits); from about 0.7
queues form and policies differ. Synthetic presets scaled down with ``--jobs`` keep their arrival rate,
so their offered load on the preset's cluster does not change with the job count: contention comes
from sizing the cluster (``--offered-load``), not from dropping jobs.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from sim.cluster import Cluster, Partition, check_nodes


def offered_load(frame: Any, gpus: int) -> float:
    """GPU-seconds of work / (submission span x ``gpus``) for a job table (``duration``, ``num_gpus``,
    ``submit_time`` columns) or a Workload (``duration``, ``gpus``, ``submit``)."""
    duration, demand, submit = _arrays(frame)
    if not len(duration) or gpus <= 0:
        return 0.0
    work = float(np.sum(duration * demand))
    span = float(submit.max() - submit.min()) or 1.0
    return work / (span * gpus)


def _arrays(jobs: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if hasattr(jobs, "columns"):  # a job-table frame
        return (jobs["duration"].to_numpy(dtype=float), jobs["num_gpus"].to_numpy(dtype=float),
                jobs["submit_time"].to_numpy(dtype=float))
    column = getattr(jobs, "column", None) or (lambda name: getattr(jobs, name))  # a Workload's arrays, built once
    return (np.asarray(column("duration"), dtype=float), np.asarray(column("gpus"), dtype=float),
            np.asarray(column("submit"), dtype=float))


def _resized(part: Partition, nodes: int) -> Partition:
    """The partition with ``nodes`` nodes, repeating its node pattern (GPUs and type per node)."""
    caps = [part.capacities[i % len(part.capacities)] for i in range(nodes)]
    types = [part.gpu_types[i % len(part.gpu_types)] for i in range(nodes)]
    return Partition(part.name, caps, types)


#: Smallest offered load a cluster is sized for (smaller ones ask for absurd node counts).
MIN_OFFERED_LOAD = 1e-3


def sized_for_load(frame: Any, cluster: Cluster, target: float) -> Cluster:
    """``cluster`` with as many nodes as give offered load ``target`` for the jobs of ``frame`` (a job
    table), and never fewer than the largest job needs.

    One pool: its node count is set. Partitions (VCs): each partition whose name appears in the jobs'
    ``org`` is sized for its own jobs; when no job names a partition (e.g. synthetic VC names on a real
    cluster) every partition is scaled by the same factor. Node GPUs and types repeat the partition's
    pattern.
    """
    if not (target > 0 and math.isfinite(target)):
        raise ValueError(f"offered load must be a positive number, got {target!r}")
    if target < MIN_OFFERED_LOAD:  # 1e-300 would ask for ~1e300 nodes
        raise ValueError(f"offered load {target:g} is below {MIN_OFFERED_LOAD:g}: the cluster would need "
                         "an unbounded number of nodes")
    duration, demand, submit = _arrays(frame)
    span = float(submit.max() - submit.min()) if len(submit) else 0.0
    span = span or 1.0
    orgs = frame["org"].astype(object).to_numpy() if hasattr(frame, "columns") and "org" in frame else None
    names = {p.name for p in cluster.partitions}
    by_org = cluster.partitioned and orgs is not None and bool(set(orgs) & names)
    factor = offered_load(frame, cluster.gpus) / target
    parts = []
    for part in cluster.partitions:
        per_node = max(float(np.mean(part.capacities)), 1.0)
        if by_org:
            mask = orgs == part.name
            work, largest = float(np.sum(duration[mask] * demand[mask])), float(demand[mask].max(initial=0))
            nodes = math.ceil(work / (span * target * per_node))
        elif not cluster.partitioned:
            work, largest = float(np.sum(duration * demand)), float(demand.max(initial=0))
            nodes = math.ceil(work / (span * target * per_node))
        else:
            largest = float(demand.max(initial=0))
            nodes = math.ceil(len(part.capacities) * factor)
        need = math.ceil(largest / max(part.capacities)) if largest > 0 else 1
        parts.append(_resized(part, check_nodes(max(nodes, need, 1), f"offered load {target:g}")))
    return Cluster(f"{cluster.name}@load{target:g}", parts, cluster.gpu_type,
                   intra_node_bandwidth_gbps=cluster.intra_node_bandwidth_gbps,
                   inter_node_bandwidth_gbps=cluster.inter_node_bandwidth_gbps, unknown_org=cluster.unknown_org)
