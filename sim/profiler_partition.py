"""A profiling partition added to or carved out of a cluster (Lucid's profiler): a plain workload
transform, kept outside the policies so that failure models can name the nodes that stay put."""
from __future__ import annotations

from dataclasses import replace
from typing import Any

PROFILER = "profiler"


def profiler_size(cluster: Any, nodes: int | str = "auto") -> int:
    """Profiler nodes: a number, or ``auto`` = 5 % of the cluster's nodes (at least 1)."""
    if nodes == "auto":
        return max(1, round(0.05 * sum(len(p.capacities) for p in cluster.partitions)))
    return int(nodes)


def with_profiler(workload: Any, nodes: int | str = 2, gpus_per_node: int | None = None, carve: bool = False):
    """The same workload with a profiling partition of ``nodes`` nodes (``auto``: 5 % of the cluster).

    ``carve=False`` adds the nodes to the cluster (Lucid's separate profiling cluster); ``carve=True``
    takes them from the cluster, one at a time from the partition with the most nodes (never below what
    that partition's largest job needs), so that Lucid and the baselines have the same GPUs."""
    from sim.cluster import Cluster, Partition

    c = workload.cluster
    nodes = profiler_size(c, nodes)
    caps = [list(p.capacities) for p in c.partitions]
    taken: list[int] = []
    if carve:
        need = [0] * len(caps)
        for p, g in zip(workload.partition, workload.gpus):
            need[p] = max(need[p], g)
        for _ in range(nodes):
            options = [(len(cap), -i) for i, cap in enumerate(caps) if sum(cap) - cap[-1] >= max(need[i], 1)]
            if not options:
                raise ValueError(f"cannot carve {nodes} profiler nodes out of cluster {c.name!r}: every "
                                 "partition needs its nodes for its largest job")
            i = -max(options)[1]
            taken.append(caps[i].pop())
    gpus = gpus_per_node or (taken[0] if taken else max(max(cap) for cap in caps))
    parts = [Partition(p.name, cap, list(p.gpu_types[: len(cap)])) for p, cap in zip(c.partitions, caps)]
    parts.append(Partition(PROFILER, taken or [gpus] * nodes, ["profiler"] * nodes))
    how = "carved" if carve else "added"
    cluster = Cluster(c.name + f"+profiler{nodes}({how})", parts, c.gpu_type, c.intra_node_bandwidth_gbps,
                      c.inter_node_bandwidth_gbps, c.unknown_org)
    return replace(workload, cluster=cluster, partition=list(workload.partition))
