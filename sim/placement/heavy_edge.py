"""Heavy-Edge: communication-aware mapping of a pipelined job's stage replicas onto servers (A-SRPT
§IV-B, Fig. 2).

The job is a graph whose vertices are its stage replicas (one per GPU). Edges carry the bytes two
replicas exchange per iteration:

- **AllReduce edges** between every two replicas of a stage s with k_s > 1: ring AllReduce (RAR)
  ``2 (k_s - 1) / k_s * h_s``, tree AllReduce (TAR) ``(k_s - 1) / k_s * h_s`` — half of RAR's (h_s: the
  stage's parameter bytes; which one follows ``Bandwidth.allreduce``);
- **pipeline edges** between every replica of s and every replica of s+1: ``2 act_s / (k_s k_{s+1})``
  (activations forward, gradients back, spread uniformly over the peers).

:func:`heavy_edge_map` is the paper's procedure: the servers are visited in order of available GPUs
(most first; ties by index). A server whose available GPUs equal (or exceed) the number of vertices
left takes them all. A single-GPU server takes the vertex of minimum total edge weight to the vertices
left (the cheapest one to isolate). Otherwise a ``node_set`` grows from the two ends of the heaviest edge
among the vertices left, one replica at a time, adding the vertex with the largest total edge weight to
``node_set``; when no vertex left connects to it, a random one (a fixed-seed draw, so the mapping is a
deterministic function of the job and the servers and placement and speed agree); when ``node_set``
holds as many vertices as the server has GPUs, they go there. The result is ``x[server][stage]`` for
:mod:`sim.asrpt.iteration`.

``refine=True`` (``heavy-edge:refine=true``) is schedcast's first reading, kept as a named variant:
stage-level edges placed greedily (an AllReduce edge puts a stage on one server, a pipeline edge spreads
two stages proportionally) followed by up to 8 swaps with the time model out of the bottleneck
(server, stage) — a local search the paper does not have. Table II of the ledger measures both against
the exact ILP (sim/asrpt/ilp.py).

The placement plug-in ``heavy-edge`` chooses the servers: a job that fits one server goes to the
tightest such server; a larger one spans the fewest servers, emptiest first (``most_free=True``) — or,
with ``most_free=False``, the fullest servers that still have room (A-SRPT's rule for
communication-light jobs). The engine's placement is ``[(node, gpus)]``; the performance model
(sim.asrpt.performance) maps the stages onto those per-node counts with :func:`heavy_edge_map`, the
same deterministic function, so placement and speed agree.
"""
from __future__ import annotations

from sim.placement import Consolidate
from sim.placement.pool import NodePool, Placement_t
from sim.asrpt.iteration import heavy_edge_map, job_edges, replica_graph  # noqa: F401  (the mapping: A-SRPT's model)


class HeavyEdge(Consolidate):
    """The ``heavy-edge`` placement: fewest servers (see module docstring); stage mapping by
    :func:`heavy_edge_map` in the performance model. ``refine=True`` selects the refined mapping
    (the performance model reads it from here when the replay's placement is this one)."""

    name = "heavy-edge"
    #: A request that does not fit cannot fit after further starts (sim.policies.base.misfits_stay):
    #: Consolidate's fit, or g free GPUs on servers in order.
    misfits_stay = True

    def __init__(self, most_free: bool = True, refine: bool = False):
        super().__init__(strict=False)
        self.most_free = bool(most_free)
        self.refine = bool(refine)

    def place_gpus(self, pool: NodePool, gpus: int, gpu_type: str | None) -> Placement_t | None:
        if self.most_free:
            return super().place_gpus(pool, gpus, gpu_type)
        return place_ordered(pool, gpus, gpu_type, most_free=False)


def place_ordered(pool: NodePool, gpus: int, gpu_type: str | None = None, most_free: bool = True
                  ) -> Placement_t | None:
    """``gpus`` GPUs on the tightest single server that holds them, else over servers in order of
    free GPUs (most first with ``most_free``, else fewest first)."""
    if gpus > pool.total_free:
        return None
    if gpus <= pool.max_capacity_of(gpu_type):
        node = pool.tightest_node_with(gpus, gpu_type)
        if node is not None:
            return [(node, gpus)]
    out, need = [], gpus
    for n, f in pool.by_free(gpu_type, most_free):  # (-free, n) / (free, n) order, off the free-count buckets
        take = min(f, need)
        out.append((n, take))
        need -= take
        if not need:
            return out
    return None
