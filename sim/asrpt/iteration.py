"""Per-iteration time of a pipelined, data-parallel job on a mapping (A-SRPT Eq. 4-7).

A job runs a :class:`~sim.asrpt.profiles.PipelineConfig`: stages s = 0..S-1 with k_s replicas. A
**mapping** ``x`` gives ``x[j][s]``, the replicas of stage s on server j (``sum_j x[j][s] == k_s``).
One iteration is one minibatch through the pipeline; each replica of stage s handles 1/k_s of it.
Servers have ``g`` GPUs (``Bandwidth.server_gpus``, 8 on pai-250) and one NIC of ``B_inter`` bytes/s.

**NIC share (the paper's reading, ``nic="share"``, the default).** Every GPU of a server reserves 1/g
of the server's NIC, in each direction, so jobs sharing a server never slow each other down: the x
replicas of stage s on server j own ``x/g * B_inter`` at j's outgoing NIC and ``x/g * B_inter`` at its
incoming NIC (Eq. 5-6). A fully spread job (one replica per server, alpha_max) therefore communicates
at ``1/g * B_inter``. The reading ``nic="whole"`` (schedcast's first implementation, kept as a named
variant for the ledger's one-rule-at-a-time causes) gives the replicas of a stage on a server the whole
NIC, as if the job were alone there; it under-penalises fragmented placements by up to g x.

For every (server j, stage s) with ``n = x[j][s] > 0``:

- Eq. 4, computation: ``comp_s / k_s``. The paper's comp term is the computation time of a stage
  replica for one iteration of the job's configuration; our stage profile (PipeDream) is the whole
  minibatch on one GPU, and a replica of a stage with k_s data-parallel replicas computes 1/k_s of the
  minibatch, so the paper's term, written with our data, is ``comp_s / k_s`` (``comp_s`` alone would
  make data parallelism pointless: adding replicas would never shorten an iteration).
- Eq. 5, inter-stage communication: the replicas of s on j send activations to stage s+1 and
  gradients to s-1, and receive activations from s-1 and gradients from s+1: ``act_s n / k_s`` bytes
  each way with s+1, ``act_{s-1} n / k_s`` each way with s-1 (factor 2: both directions of one link
  pair, forward and backward). Peers are spread uniformly over the neighbour stage's replicas, so the
  share ``x[j][s±1] / k_{s±1}`` stays on the server (over B_intra) and the rest crosses the NIC at the
  share above: outgoing bytes over ``n/g B_inter`` plus incoming bytes over ``n/g B_inter``
  (``nic="whole"``: over ``B_inter``).
- Eq. 6, AllReduce of the stage's parameters P_s among its k_s replicas:
  ``ring``: ``2 (k_s - 1) / k_s * P_s / B``, B = B_intra when every replica of s is on j, else the NIC
  share of s on j, ``n/g B_inter`` (``whole``: B_inter) — the ring enters and leaves server j once and
  that link runs at j's share; the max of Eq. 7 finds the server with the smallest share;
  ``tree`` (hierarchical, non-pipelined binary trees, reduce then broadcast): within the server
  ``2 ceil(log2 n) P_s / B_intra`` plus, when s spans m > 1 servers, ``2 ceil(log2 m) P_s`` over the
  NIC share. Heavy-Edge weighs a tree edge (k_s - 1)/k_s P_s, half a ring edge (sim/placement/heavy_edge.py).
- Eq. 7: ``alpha(x) = max_{j, s: x[j][s] > 0} (comp + comm + allreduce)`` — the slowest (server, stage)
  paces the pipeline.

``alpha_max``: fully spread, one GPU per server (every byte between GPUs crosses a NIC at 1/g B_inter).
``alpha_min`` (the paper's estimated alpha~_min): the fewest servers (full servers of
``gpus_per_server`` plus the remainder) mapped by Heavy-Edge (:func:`heavy_edge_map`, below).

Bandwidths are bytes/s. Defaults are the paper's: B_inter = 10 Gb/s, B_intra = 300 GB/s;
:meth:`Bandwidth.from_cluster` reads the cluster config's ``inter_node_bandwidth_gbps`` and
``intra_node_bandwidth_gbps`` (both GB/s there).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from sim.asrpt.profiles import PipelineConfig

Mapping = Sequence[Sequence[int]]  # x[server][stage] = replicas

B_INTER_DEFAULT = 10e9 / 8  # 10 Gb/s
B_INTRA_DEFAULT = 300e9  # 300 GB/s


@dataclass(frozen=True, slots=True)
class Bandwidth:
    """Inter-server (NIC) and intra-server bandwidth, bytes/s, the AllReduce algorithm, how the NIC is
    shared (``share``: x/g of it per stage on a server, the paper; ``whole``: all of it) and g, the GPUs
    per server."""

    inter: float = B_INTER_DEFAULT
    intra: float = B_INTRA_DEFAULT
    allreduce: str = "ring"
    nic: str = "share"
    server_gpus: int = 8

    def __post_init__(self) -> None:
        if self.inter <= 0 or self.intra <= 0:
            raise ValueError("bandwidths must be positive")
        if self.allreduce not in ("ring", "tree"):
            raise ValueError(f"allreduce must be 'ring' or 'tree', not {self.allreduce!r}")
        if self.nic not in ("share", "whole"):
            raise ValueError(f"nic must be 'share' or 'whole', not {self.nic!r}")
        if int(self.server_gpus) < 1:
            raise ValueError("server_gpus must be >= 1")

    def nic_rate(self, replicas: int) -> float:
        """Bytes/s that ``replicas`` replicas of one stage on one server get at each NIC direction."""
        if self.nic == "whole":
            return self.inter
        return self.inter * min(1.0, replicas / self.server_gpus)

    @classmethod
    def from_cluster(cls, cluster, inter_gbit: float | None = None, intra_gbyte: float | None = None,
                     allreduce: str = "ring", nic: str = "share", server_gpus: int | None = None) -> "Bandwidth":
        """From the cluster config (GB/s fields); ``inter_gbit`` (Gb/s) / ``intra_gbyte`` (GB/s) override;
        ``server_gpus`` defaults to the cluster's largest server."""
        inter = inter_gbit * 1e9 / 8 if inter_gbit is not None else cluster.inter_node_bandwidth_gbps * 1e9
        intra = intra_gbyte * 1e9 if intra_gbyte is not None else cluster.intra_node_bandwidth_gbps * 1e9
        if server_gpus is None:
            server_gpus = max(max(p.capacities) for p in cluster.partitions)
        return cls(inter, intra, allreduce, nic, int(server_gpus))


def check_mapping(config: PipelineConfig, x: Mapping) -> None:
    """Raise ValueError unless x places exactly k_s replicas of every stage."""
    S = config.num_stages
    for row in x:
        if len(row) != S or any(v < 0 for v in row):
            raise ValueError(f"mapping rows need {S} non-negative entries: {row}")
    for s, st in enumerate(config.stages):
        if sum(row[s] for row in x) != st.replicas:
            raise ValueError(f"stage {s} has {sum(row[s] for row in x)} replicas mapped, needs {st.replicas}")


def terms(config: PipelineConfig, x: Mapping, bw: Bandwidth = Bandwidth()) -> dict[tuple[int, int], float]:
    """Per-(server, stage) time of one iteration (Eq. 4-6) for every occupied pair."""
    check_mapping(config, x)
    stages = config.stages
    S = len(stages)
    spans = [sum(1 for row in x if row[s] > 0) for s in range(S)]
    out = {}
    for j, row in enumerate(x):
        for s, n in enumerate(row):
            if n <= 0:
                continue
            st = stages[s]
            k = st.replicas
            t = st.compute_s / k
            inter = intra = 0.0
            for nb, act in ((s + 1, st.activation_bytes), (s - 1, stages[s - 1].activation_bytes if s else 0.0)):
                if 0 <= nb < S and act > 0:
                    vol = 2.0 * act * n / k
                    local = row[nb] / stages[nb].replicas
                    intra += vol * local
                    inter += vol * (1.0 - local)
            nic = bw.nic_rate(n)
            t += inter / nic + intra / bw.intra
            P = st.parameter_bytes
            if k > 1 and P > 0:
                if bw.allreduce == "ring":
                    t += 2.0 * (k - 1) / k * P / (bw.intra if n == k else nic)
                else:
                    if n > 1:
                        t += 2.0 * math.ceil(math.log2(n)) * P / bw.intra
                    if spans[s] > 1:
                        t += 2.0 * math.ceil(math.log2(spans[s])) * P / nic
            out[(j, s)] = t
    return out


def alpha(config: PipelineConfig, x: Mapping, bw: Bandwidth = Bandwidth()) -> float:
    """Eq. 7: seconds per iteration on mapping x."""
    return max(terms(config, x, bw).values())


def spread_mapping(config: PipelineConfig) -> list[list[int]]:
    """One GPU per server (fully spread)."""
    S = config.num_stages
    x = []
    for s, st in enumerate(config.stages):
        for _ in range(st.replicas):
            row = [0] * S
            row[s] = 1
            x.append(row)
    return x


def alpha_max(config: PipelineConfig, bw: Bandwidth = Bandwidth()) -> float:
    """Per-iteration time fully spread (the worst placement)."""
    return alpha(config, spread_mapping(config), bw)


def fewest_servers(gpus: int, gpus_per_server: int = 8) -> list[int]:
    """GPUs per server on the fewest servers: full servers plus the remainder."""
    full, rest = divmod(int(gpus), int(gpus_per_server))
    return [gpus_per_server] * full + ([rest] if rest else [])


# -- Heavy-Edge: the stage-to-server mapping (A-SRPT §IV-B); sim.placement.heavy_edge places with it --
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


def alpha_min(config: PipelineConfig, bw: Bandwidth = Bandwidth(), gpus_per_server: int | None = None,
              refine: bool = False) -> float:
    """The estimated best per-iteration time: fewest servers (of ``gpus_per_server``, default
    ``bw.server_gpus``) mapped by Heavy-Edge (``refine``: the refined variant)."""
    per = bw.server_gpus if gpus_per_server is None else gpus_per_server
    return alpha(config, heavy_edge_map(config, fewest_servers(config.gpus, per), bw, refine=refine), bw)
