"""Table tests of the pure placement score functions (one file each under sim/placement/), and of
the FGD-style scored placement that combines them."""
import pytest

from sim.placement import NodePool, make_placement
from sim.placement import score_best_fit, score_class_affinity, score_least_allocated, score_shared_gpu
from sim.placement.scored import SCORES, ScoredPlacement, combine
from sim.placement.state import NodeState
from sim.workload import Request

N8 = NodeState(capacity=8, free=6)


@pytest.mark.parametrize("node, gpus, milli, expected", [
    (N8, 2, 0, 0.5),                                   # 4 of 8 GPUs free after: half full
    (N8, 6, 0, 1.0),                                   # fills the node
    (NodeState(8, 8), 1, 0, 1 / 8),
    (NodeState(4, 2, (500,)), 1, 400, 0.5),            # fits the shared GPU: no new GPU opened
    (NodeState(4, 2, (300,)), 1, 400, 0.75),           # opens a free GPU
    (NodeState(0, 0), 1, 0, 0.0),                      # no capacity (offline slot)
])
def test_best_fit(node, gpus, milli, expected):
    assert score_best_fit.score(node, gpus, milli) == pytest.approx(expected)


@pytest.mark.parametrize("node, gpus, milli, expected", [
    (N8, 2, 0, 0.5),
    (N8, 6, 0, 0.0),
    (NodeState(8, 8), 1, 0, 7 / 8),
    (NodeState(4, 2, (300,)), 1, 400, 0.25),
])
def test_least_allocated(node, gpus, milli, expected):
    assert score_least_allocated.score(node, gpus, milli) == pytest.approx(expected)


@pytest.mark.parametrize("classes, job_class, expected", [
    ({}, "spot", 1.0),                                 # empty node
    ({"spot": 2}, "spot", 1.0),
    ({"hp": 1, "spot": 3}, "spot", 0.75),
    ({"hp": 2}, "spot", 0.0),
    ({None: 1}, None, 1.0),                            # unlabelled jobs together
])
def test_class_affinity(classes, job_class, expected):
    assert score_class_affinity.score(NodeState(8, 4, classes=classes), 1, 0, job_class) == pytest.approx(expected)


@pytest.mark.parametrize("shared, milli, expected", [
    ((), 500, 0.0),                                    # must open a whole GPU
    ((500,), 500, 1.0),                                # fills a half-used GPU exactly
    ((800, 600), 500, 0.9),                            # best fitting shared GPU: 600 -> 100 left
    ((300,), 500, 0.0),
])
def test_shared_gpu(shared, milli, expected):
    assert score_shared_gpu.score(NodeState(4, 2, shared), 1, milli) == pytest.approx(expected)
    assert score_shared_gpu.score(NodeState(4, 2, shared), 2, 0) == 0.5  # whole pods: neutral


def test_scores_are_normalised_and_combine_with_weights():
    node = NodeState(8, 6, (), None, {"hp": 1})
    for fn in SCORES.values():
        assert 0.0 <= fn(node, 2, 0, "spot") <= 1.0
    assert combine(node, 2, 0, "spot", {"best_fit": 1, "class_affinity": 1}) == pytest.approx((0.5 + 0.0) / 2)
    assert combine(node, 2, 0, "spot", {"best_fit": 3, "class_affinity": 1}) == pytest.approx(0.375)


def test_scored_placement_picks_the_best_node_per_pod():
    pool = NodePool([8, 8, 8])
    pool.job_class = ["hp", "spot"]
    pool.allocate([(0, 6)], job=0)   # node 0: an hp job, 2 free
    pool.allocate([(1, 4)], job=1)   # node 1: a spot job, 4 free
    spot = Request(1, 2, job_class="spot", spread=False)
    assert ScoredPlacement({"best_fit": 1}).place(pool, spot) == [(0, 2)]           # tightest
    assert ScoredPlacement({"least_allocated": 1}).place(pool, spot) == [(2, 2)]    # emptiest
    assert ScoredPlacement({"best_fit": 1, "class_affinity": 2}).place(pool, spot) == [(1, 2)]
    gang = Request(3, 2, spread=False)
    assert ScoredPlacement({"best_fit": 1}).place(pool, gang) == [(0, 2), (1, 4)]   # pod by pod
    assert ScoredPlacement({"best_fit": 1}).place(pool, 14) == [(0, 2), (1, 4), (2, 8)]  # spread, score order
    frac = Request(2, 1, 500)
    assert ScoredPlacement().place(pool, frac) == [(0, 0, 500), (0, 0, 500)]
    assert ScoredPlacement().place(pool, Request(1, 9, spread=False)) is None


def test_scored_placement_from_the_registry():
    p = make_placement("scored:best_fit=1,class_affinity=0.5")
    assert isinstance(p, ScoredPlacement) and p.weights == {"best_fit": 1, "class_affinity": 0.5}
    with pytest.raises(ValueError, match="unknown score"):
        make_placement("scored:nope=1")
    with pytest.raises(ValueError, match="not a number"):
        make_placement("scored:best_fit=abc")
    with pytest.raises(ValueError, match="unknown placement"):
        make_placement("fgd-nope")  # ("fgd" is a placement now: sim/placement/fgd.py)


def test_gfs_and_fgd_scores_compose_in_the_scored_placement():
    # FGD alone: a fractional pod goes to the GPU already shared (no new fragmentation), not an idle one;
    # GFS packing alone prefers the fuller node for a whole-GPU pod.
    pool = NodePool([8, 8])
    pool.allocate_shares([(0, 0, 500)], job=0)  # node 0: half of one GPU used
    fgd = make_placement("scored:fgd=1")
    assert fgd.place(pool, Request(1, 1, 500)) == [(0, 0, 500)]
    pool.allocate([(1, 4)])
    assert make_placement("scored:gfs_packing=1").place(pool, Request(1, 2, spread=False)) == [(1, 2)]
    assert {"gfs_packing", "gfs_colocation", "gfs_eviction", "fgd"} <= set(SCORES)
