"""A-SRPT per-iteration time (Eq. 4-7) on hand-computed two-server placements, Heavy-Edge mapping,
and the integer programme against brute force."""
from __future__ import annotations

import itertools
import random

import pytest

from sim.asrpt.ilp import optimal_mapping
from sim.asrpt.iteration import Bandwidth, alpha, alpha_max, alpha_min, fewest_servers, terms
from sim.asrpt.profiles import PipelineConfig, Stage
from sim.placement.heavy_edge import heavy_edge_map, job_edges, replica_graph

BW = Bandwidth(inter=1e9, intra=1e11, server_gpus=2)  # two-GPU servers: a lone replica owns half the NIC
WHOLE = Bandwidth(inter=1e9, intra=1e11, server_gpus=2, nic="whole")  # schedcast's first reading


def _cfg(comp, act, par, reps) -> PipelineConfig:
    stages = tuple(Stage(i, i, r, c, a, p) for i, (c, a, p, r) in enumerate(zip(comp, act, par, reps)))
    return PipelineConfig("hand", sum(reps), stages)


# Stage 0: 0.2 s compute, 1e8 B activations, 5e8 B parameters; stage 1: 0.4 s, no parameters.
ALLREDUCE_HEAVY = _cfg([0.2, 0.4], [1e8, 0.0], [5e8, 0.0], [2, 2])
# Equal stages, no parameters: only the pipeline edge carries bytes.
PIPELINE_HEAVY = _cfg([0.2, 0.2], [1e8, 0.0], [0.0, 0.0], [2, 2])
# Fig. 2-shaped (our numbers; the paper's figure was not available to us): three stages, k = 2, 1, 1,
# on servers with 3 and 1 available GPUs (4 GPUs each).
FIG2 = _cfg([0.2, 0.1, 0.1], [1e8, 1.5e8, 0.0], [4e8, 0.0, 0.0], [2, 1, 1])
BW4 = Bandwidth(inter=1e9, intra=1e11, server_gpus=4)


def test_eq4_7_stage_per_server_by_hand():
    # each stage whole on its own 2-GPU server: 2 replicas own 2/2 of the NIC, as the whole NIC
    t = terms(ALLREDUCE_HEAVY, [[2, 0], [0, 2]], BW)
    # (0,0): 0.2/2 + 2*1e8*2/2 / 1e9 (all remote) + 2*(1/2)*5e8 / 1e11 (ring inside the server)
    assert t[(0, 0)] == pytest.approx(0.1 + 0.2 + 0.005)
    assert t[(1, 1)] == pytest.approx(0.2 + 0.2)
    assert alpha(ALLREDUCE_HEAVY, [[2, 0], [0, 2]], BW) == pytest.approx(0.4)
    # on 4-GPU servers the two replicas own 2/4 of the NIC: the 2e8 B take twice as long
    bw4 = Bandwidth(inter=1e9, intra=1e11, server_gpus=4)
    t = terms(ALLREDUCE_HEAVY, [[2, 0], [0, 2]], bw4)
    assert t[(0, 0)] == pytest.approx(0.1 + 2e8 / 0.5e9 + 0.005)
    assert t[(1, 1)] == pytest.approx(0.2 + 2e8 / 0.5e9)
    # the whole-NIC reading gives them all of it
    assert terms(ALLREDUCE_HEAVY, [[2, 0], [0, 2]], Bandwidth(inter=1e9, intra=1e11, server_gpus=4,
                                                              nic="whole"))[(1, 1)] == pytest.approx(0.4)


def test_eq4_7_mixed_servers_by_hand_ring_and_tree():
    x = [[1, 1], [1, 1]]
    t = terms(ALLREDUCE_HEAVY, x, BW)
    # one replica per stage and server owns 1/2 of the NIC (5e8 B/s): half the activation traffic stays
    # local (5e7 B over 1e11), half crosses (5e7 B over 5e8); the ring crosses too: 5e8 B over 5e8
    assert t[(0, 0)] == pytest.approx(0.1 + 5e7 / 1e11 + 5e7 / 5e8 + 1.0)
    assert t[(1, 1)] == pytest.approx(0.2 + 5e7 / 1e11 + 5e7 / 5e8)
    assert alpha(ALLREDUCE_HEAVY, x, BW) == pytest.approx(1.2005)
    # whole NIC (the old reading): 5e7 / 1e9 and 5e8 / 1e9
    assert terms(ALLREDUCE_HEAVY, x, WHOLE)[(0, 0)] == pytest.approx(0.1 + 5e7 / 1e11 + 5e7 / 1e9 + 0.5)
    assert alpha(ALLREDUCE_HEAVY, x, WHOLE) == pytest.approx(0.6505)
    tree = Bandwidth(inter=1e9, intra=1e11, allreduce="tree", server_gpus=2)
    # tree: no intra-server step (one replica per server), 2*ceil(log2 2)*5e8 over the 5e8 B/s share
    assert terms(ALLREDUCE_HEAVY, x, tree)[(0, 0)] == pytest.approx(0.1 + 0.0005 + 0.1 + 2.0)


def test_alpha_max_uses_one_gth_of_the_nic():
    # fully spread: a stage-0 replica alone on a 2-GPU server owns 1/2 of the NIC:
    # 0.1 + 1e8 / 5e8 (activations) + 5e8 / 5e8 (ring)
    assert alpha_max(ALLREDUCE_HEAVY, BW) == pytest.approx(1.3)
    assert alpha_max(ALLREDUCE_HEAVY, WHOLE) == pytest.approx(0.7)  # the old reading: the whole NIC
    # 8-GPU servers: 1/8 of the NIC; the ratio alpha_max / alpha_min grows with g
    bw8 = Bandwidth(inter=1e9, intra=1e11, server_gpus=8)
    assert alpha_max(ALLREDUCE_HEAVY, bw8) == pytest.approx(0.1 + 1e8 / 1.25e8 + 5e8 / 1.25e8)
    assert alpha_min(ALLREDUCE_HEAVY, BW) == pytest.approx(0.4)  # fewest 2-GPU servers, Heavy-Edge
    # all four GPUs on one server: only the compute and local traffic
    assert alpha_min(ALLREDUCE_HEAVY, bw8) == pytest.approx(0.2 + 2e8 / 1e11)
    assert fewest_servers(20, 8) == [8, 8, 4]


def test_fig2_heavy_edge_by_hand_ring_and_tree():
    """Heavy-Edge (§IV-B) walked by hand. Vertices v0, v1 (stage 0), v2 (stage 1), v3 (stage 2). Edges:
    RAR v0-v1 2 (1/2) 4e8 = 4e8; pipeline v0-v2, v1-v2 2 1e8 / (2 1) = 1e8; v2-v3 2 1.5e8 = 3e8.
    Servers by available GPUs: 3 then 1. Server 0 (3 < 4 vertices left): node_set starts from the
    heaviest edge v0-v1, then adds v2 (weight 2e8 to node_set; v3 has 0): full. Server 1 takes v3."""
    stage_of, W = replica_graph(FIG2, "ring")
    assert stage_of == [0, 0, 1, 2]
    assert W[0, 1] == pytest.approx(4e8) and W[0, 2] == pytest.approx(1e8) and W[2, 3] == pytest.approx(3e8)
    x = heavy_edge_map(FIG2, [1, 3], BW4)  # server order follows availability, not position
    assert x == [[0, 0, 1], [2, 1, 0]]
    # alpha by hand (4-GPU servers: a lone replica owns 1/4 of the NIC, 2.5e8 B/s):
    # (1,1) stage 1 on server 1: 0.1 + 3e8 / 2.5e8 (to stage 2, remote) + 2e8 / 1e11 (stage 0, local)
    t = terms(FIG2, x, BW4)
    assert t[(1, 1)] == pytest.approx(0.1 + 1.2 + 0.002)
    assert t[(0, 2)] == pytest.approx(0.1 + 1.2)
    assert t[(1, 0)] == pytest.approx(0.1 + 0.002 + 4e8 / 1e11)
    assert alpha(FIG2, x, BW4) == pytest.approx(1.302)
    # TAR edges weigh half of RAR's: v0-v1 2e8 < v2-v3 3e8, so node_set starts from v2-v3 and adds v0
    # (1e8, the lowest index of a tie with v1); v1 goes to the single-GPU server
    _, Wt = replica_graph(FIG2, "tree")
    assert Wt[0, 1] == pytest.approx(2e8)
    tree = Bandwidth(inter=1e9, intra=1e11, server_gpus=4, allreduce="tree")
    y = heavy_edge_map(FIG2, [3, 1], tree)
    assert y == [[1, 1, 1], [1, 0, 0]]
    # (1,0): 0.1 + 1e8 / 2.5e8 (to stage 1, remote) + tree across 2 servers 2 * 1 * 4e8 / 2.5e8
    assert terms(FIG2, y, tree)[(1, 0)] == pytest.approx(0.1 + 0.4 + 3.2)


def test_single_gpu_server_gets_the_vertex_of_minimum_edge_weight():
    # four single-GPU servers; total edge weight to the vertices left: v0 5e8, v1 5e8, v2 5e8, v3 3e8 ->
    # v3 first; then v0 5e8, v1 5e8, v2 2e8 -> v2; then v0 4e8, v1 4e8 -> v0 (lowest index); then v1
    assert heavy_edge_map(FIG2, [1, 1, 1, 1], BW4) == [[0, 0, 1], [0, 1, 0], [1, 0, 0], [1, 0, 0]]


def test_heavy_edge_fills_a_whole_server_when_the_vertices_fit():
    assert heavy_edge_map(FIG2, [2, 4], BW4) == [[0, 0, 0], [2, 1, 1]]


def test_bad_mapping_refused():
    with pytest.raises(ValueError):
        alpha(ALLREDUCE_HEAVY, [[2, 0], [0, 1]], BW)
    with pytest.raises(ValueError):
        Bandwidth(allreduce="butterfly")
    with pytest.raises(ValueError):
        Bandwidth(nic="half")


def test_heavy_edge_two_server_example():
    """On two 2-GPU servers Heavy-Edge keeps the heavy AllReduce inside a server, but splits both stages
    over the servers when only the pipeline edges carry bytes; both choices are the optimum."""
    assert [e[1] for e in job_edges(ALLREDUCE_HEAVY)] == ["allreduce", "pipeline"]
    for refine in (False, True):
        x = heavy_edge_map(ALLREDUCE_HEAVY, [2, 2], BW, refine=refine)
        assert x == [[2, 0], [0, 2]]
        y = heavy_edge_map(PIPELINE_HEAVY, [2, 2], BW, refine=refine)
        assert y == [[1, 1], [1, 1]]
        assert alpha(PIPELINE_HEAVY, y, BW) == pytest.approx(0.1 + 5e7 / 1e11 + 5e7 / 5e8)
        assert alpha(PIPELINE_HEAVY, y, BW) < alpha(PIPELINE_HEAVY, [[2, 0], [0, 2]], BW)
        for cfg, got in ((ALLREDUCE_HEAVY, x), (PIPELINE_HEAVY, y)):
            assert alpha(cfg, got, BW) == pytest.approx(_brute(cfg, [2, 2], BW)[0])


def _brute(cfg: PipelineConfig, free: list[int], bw: Bandwidth):
    S, m = cfg.num_stages, len(free)
    per_stage = []
    for st in cfg.stages:
        per_stage.append([c for c in itertools.product(range(st.replicas + 1), repeat=m) if sum(c) == st.replicas])
    best, arg = float("inf"), None
    for combo in itertools.product(*per_stage):
        x = [[combo[s][j] for s in range(S)] for j in range(m)]
        if any(sum(x[j]) > free[j] for j in range(m)):
            continue
        a = alpha(cfg, x, bw)
        if a < best:
            best, arg = a, x
    return best, arg


def _random_cfg(rnd: random.Random) -> PipelineConfig:
    S = rnd.randint(1, 3)
    reps = [rnd.randint(1, 3) for _ in range(S)]
    return _cfg([rnd.uniform(0.05, 0.5) for _ in range(S)],
                [rnd.choice([0.0, 1e7, 1e8, 4e8]) if s < S - 1 else 0.0 for s in range(S)],
                [rnd.choice([0.0, 5e7, 5e8]) for _ in range(S)], reps)


@pytest.mark.parametrize("nic", ["share", "whole"])
@pytest.mark.parametrize("seed", range(12))
def test_ilp_is_optimal_and_heavy_edge_never_beats_it(seed, nic):
    BW = Bandwidth(inter=1e9, intra=1e11, server_gpus=4, nic=nic)
    rnd = random.Random(seed)
    cfg = _random_cfg(rnd)
    g = cfg.gpus
    while True:
        free = [rnd.randint(0, 4) for _ in range(rnd.randint(2, 3))]
        if sum(free) >= g:
            break
    best, _ = _brute(cfg, free, BW)
    res = optimal_mapping(cfg, free, BW)
    assert res.status == "optimal"
    assert res.alpha == pytest.approx(best, rel=1e-6)
    for refine in (False, True):
        he = heavy_edge_map(cfg, free, BW, refine=refine)
        assert all(sum(he[j]) <= free[j] for j in range(len(free)))
        assert alpha(cfg, he, BW) >= res.alpha * (1 - 1e-9)
