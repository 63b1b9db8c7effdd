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

from typing import TYPE_CHECKING

from sim.placement import Consolidate
from sim.placement.pool import NodePool, Placement_t

if TYPE_CHECKING:
    from sim.asrpt.iteration import Bandwidth
    from sim.asrpt.profiles import PipelineConfig


def job_edges(config: "PipelineConfig") -> list[tuple[float, str, int]]:
    """(weight bytes, kind, stage) for every edge, heaviest first (ties: AllReduce before pipeline, then
    lower stage)."""
    edges = []
    for s, st in enumerate(config.stages):
        if st.replicas > 1 and st.parameter_bytes > 0:
            edges.append((2.0 * (st.replicas - 1) / st.replicas * st.parameter_bytes, "allreduce", s))
        if s + 1 < config.num_stages and st.activation_bytes > 0:
            edges.append((2.0 * st.activation_bytes, "pipeline", s))
    edges.sort(key=lambda e: (-e[0], e[1] != "allreduce", e[2]))
    return edges


def replica_graph(config: "PipelineConfig", allreduce: str = "ring"):
    """(stage of each vertex, symmetric weight matrix) of the job graph (see the module docstring)."""
    import numpy as np

    stage_of = [s for s, st in enumerate(config.stages) for _ in range(st.replicas)]
    V = len(stage_of)
    W = np.zeros((V, V))
    first = [0]
    for st in config.stages:
        first.append(first[-1] + st.replicas)
    for s, st in enumerate(config.stages):
        a, b, k = first[s], first[s + 1], st.replicas
        if k > 1 and st.parameter_bytes > 0:
            w = (2.0 if allreduce == "ring" else 1.0) * (k - 1) / k * st.parameter_bytes
            W[a:b, a:b] = w
        if s + 1 < config.num_stages and st.activation_bytes > 0:
            c, d = b, first[s + 2]
            w = 2.0 * st.activation_bytes / (k * config.stages[s + 1].replicas)
            W[a:b, c:d] = w
            W[c:d, a:b] = w
    np.fill_diagonal(W, 0.0)
    return stage_of, W


def heavy_edge_map(config: "PipelineConfig", capacities: list[int],
                   bw: "Bandwidth | None" = None, refine: bool = False, seed: int = 0) -> list[list[int]]:
    """Map the stage replicas onto servers with ``capacities`` GPUs (sum >= the job's GPUs): the
    paper's Heavy-Edge (module docstring), or with ``refine`` the refined greedy variant. ``seed``
    fixes the random vertex drawn when no vertex left connects to ``node_set``."""
    if refine:
        return _refined_map(config, capacities, bw)
    import random

    import numpy as np

    S = config.num_stages
    stage_of, W = replica_graph(config, bw.allreduce if bw is not None else "ring")
    V = len(stage_of)
    if sum(capacities) < V:
        raise ValueError(f"{V} replicas do not fit servers {capacities}")
    m = len(capacities)
    x = [[0] * S for _ in range(m)]
    left = np.ones(V, dtype=bool)
    rng = random.Random(seed)
    for j in sorted(range(m), key=lambda j: (-capacities[j], j)):
        n_left = int(left.sum())
        c = int(capacities[j])
        if not n_left:
            break
        if c <= 0:
            continue
        idx = np.flatnonzero(left)
        if n_left <= c:  # the server holds every vertex left
            chosen = idx.tolist()
        elif c == 1:  # the vertex of minimum total edge weight to the vertices left
            sub = W[np.ix_(idx, idx)]
            chosen = [int(idx[int(np.argmin(sub.sum(axis=1)))])]
        else:
            sub = W[np.ix_(idx, idx)]
            flat = int(np.argmax(sub))
            u, v = divmod(flat, len(idx))
            if sub[u, v] > 0:
                chosen = [int(idx[u]), int(idx[v])]
            else:
                chosen = [int(idx[rng.randrange(len(idx))])]
            left[chosen] = False
            gain = W[:, chosen].sum(axis=1)
            masked = np.where(left, gain, -np.inf)
            while len(chosen) < c:
                vtx = int(np.argmax(masked))  # the first of ties: the lowest index
                if not masked[vtx] > 0:  # nothing left connects to node_set: a random vertex
                    cand = np.flatnonzero(left)
                    vtx = int(cand[rng.randrange(len(cand))])
                chosen.append(vtx)
                left[vtx] = False
                masked += W[:, vtx]
                masked[vtx] = -np.inf
            for vtx in chosen:
                x[j][stage_of[vtx]] += 1
            continue
        left[chosen] = False
        for vtx in chosen:
            x[j][stage_of[vtx]] += 1
    return x


def _refined_map(config: "PipelineConfig", capacities: list[int],
                 bw: "Bandwidth | None" = None, refine: int = 8) -> list[list[int]]:
    """``heavy-edge:refine=true``: the greedy stage-level pass on byte weights, then up to ``refine``
    swap steps (see :func:`_refine`) with the time model at bandwidths ``bw`` (default: the paper's)."""
    S = config.num_stages
    k = [st.replicas for st in config.stages]
    if sum(capacities) < sum(k):
        raise ValueError(f"{sum(k)} replicas do not fit servers {capacities}")
    m = len(capacities)
    x = [[0] * S for _ in range(m)]
    free = list(capacities)
    left = list(k)

    def neighbours_on(j: int, s: int) -> int:
        return sum(x[j][t] for t in (s - 1, s + 1) if 0 <= t < S)

    def put(j: int, s: int, n: int) -> None:
        x[j][s] += n
        free[j] -= n
        left[s] -= n

    def place_whole(stages: tuple[int, ...]) -> bool:
        need = sum(left[s] for s in stages)
        if need == 0:
            return True
        fits = [j for j in range(m) if free[j] >= need]
        if not fits:
            return False
        j = min(fits, key=lambda j: (-sum(neighbours_on(j, s) for s in stages), free[j], j))
        for s in stages:
            if left[s]:
                put(j, s, left[s])
        return True

    def order_for(stages: tuple[int, ...]) -> list[int]:
        return sorted(range(m), key=lambda j: (-sum(neighbours_on(j, s) for s in stages)
                                                - sum(x[j][s] for s in stages), -free[j], j))

    def spread_one(s: int) -> None:
        for j in order_for((s,)):
            if not left[s]:
                break
            n = min(free[j], left[s])
            if n:
                put(j, s, n)

    def spread_pair(a: int, b: int) -> None:
        for j in order_for((a, b)):
            r = free[j]
            if not r or not (left[a] or left[b]):
                continue
            tot = left[a] + left[b]
            na = min(left[a], int(round(r * left[a] / tot)))
            nb = min(left[b], r - na)
            na = min(left[a], r - nb)
            if na:
                put(j, a, na)
            if nb:
                put(j, b, nb)

    for _, kind, s in job_edges(config):
        if kind == "allreduce":
            if left[s] and not place_whole((s,)):
                spread_one(s)
        else:
            a, b = s, s + 1
            if (left[a] or left[b]) and not place_whole((a, b)):
                if left[a] and left[b]:
                    spread_pair(a, b)
                else:
                    spread_one(a if left[a] else b)
    for s in range(S):
        if left[s] and not place_whole((s,)):
            spread_one(s)
    # one GPU per server: every replica is alone, a swap changes nothing
    return _refine(config, x, bw, refine) if refine and m > 1 and max(capacities) > 1 else x


def _refine(config: "PipelineConfig", x: list[list[int]], bw: "Bandwidth | None", steps: int) -> list[list[int]]:
    """Local improvement (ours, not in the paper's text): while it lowers alpha, swap one replica of the
    bottleneck (server, stage) with one replica of another stage on another server; when no such swap
    helps, any replica on the bottleneck server may swap (e.g. a wide stage's replica makes room for a
    single-replica stage next to its pipeline neighbour). Greedy packing can fill a server with one wide
    stage and leave its pipeline neighbour elsewhere; one swap fixes that. At most ``steps`` swaps."""
    from sim.asrpt.iteration import Bandwidth, terms

    bw = bw or Bandwidth()
    S, m = config.num_stages, len(x)
    t = terms(config, x, bw)
    best = max(t.values())

    def search(j0: int, sources: list[int]):
        nonlocal best
        found = None
        for sa in sources:
            for j1 in range(m):
                if j1 == j0:
                    continue
                for s1 in range(S):
                    if s1 == sa or not x[j1][s1]:
                        continue
                    x[j0][sa] -= 1; x[j0][s1] += 1; x[j1][s1] -= 1; x[j1][sa] += 1  # noqa: E702
                    cand = terms(config, x, bw)
                    a = max(cand.values())
                    x[j0][sa] += 1; x[j0][s1] -= 1; x[j1][s1] += 1; x[j1][sa] -= 1  # noqa: E702
                    if a < best * (1 - 1e-12):
                        best, found = a, (sa, j1, s1, cand)
        return found

    for _ in range(steps):
        j0, s0 = max(t, key=lambda key: (t[key], -key[0], -key[1]))
        found = search(j0, [s0])
        if found is None:
            found = search(j0, [s for s in range(S) if s != s0 and x[j0][s]])
        if found is None:
            break
        sa, j1, s1, t = found
        x[j0][sa] -= 1; x[j0][s1] += 1; x[j1][s1] -= 1; x[j1][sa] += 1  # noqa: E702
    return x


class HeavyEdge(Consolidate):
    """The ``heavy-edge`` placement: fewest servers (see module docstring); stage mapping by
    :func:`heavy_edge_map` in the performance model. ``refine=True`` selects the refined mapping
    (the performance model reads it from here when the replay's placement is this one)."""

    name = "heavy-edge"

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
    types = pool.gpu_type if gpu_type is not None and pool.typed else None
    nodes = [n for n, f in enumerate(pool.free) if f and n not in pool.cordoned
             and (types is None or types[n] == gpu_type)]
    nodes.sort(key=(lambda n: (-pool.free[n], n)) if most_free else (lambda n: (pool.free[n], n)))
    out, need = [], gpus
    for n in nodes:
        take = min(pool.free[n], need)
        out.append((n, take))
        need -= take
        if not need:
            return out
    return None
