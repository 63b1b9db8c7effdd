import pytest

from sim.placement import Consolidate, FirstFit, NodePool, make_placement


def pool_with(free, cap=8):
    pool = NodePool([cap] * len(free))
    for node, f in enumerate(free):
        if cap - f:
            pool.allocate([(node, cap - f)])
    return pool


def test_first_fit_lowest_node_then_spread():
    pool = pool_with([2, 6, 8])
    assert FirstFit().place(pool, 2) == [(0, 2)]
    assert FirstFit().place(pool, 5) == [(1, 5)]
    assert FirstFit().place(pool, 12) == [(0, 2), (1, 6), (2, 4)]
    assert FirstFit(spread=False).place(pool_with([4, 4]), 6) is None
    assert FirstFit().place(pool, 17) is None


def test_consolidate_best_fit_and_fewest_nodes():
    pool = pool_with([2, 6, 8, 8])
    assert Consolidate().place(pool, 2) == [(0, 2)]       # tightest node
    assert Consolidate().place(pool, 5) == [(1, 5)]
    assert Consolidate().place(pool, 16) == [(2, 8), (3, 8)]
    assert Consolidate().place(pool, 12) == [(2, 8), (1, 4)]  # remainder on the tightest node
    assert Consolidate().place(pool_with([4, 4, 8]), 8) == [(2, 8)]
    assert Consolidate(strict=True).place(pool_with([4, 4]), 6) is None   # Lucid: one node or wait
    assert Consolidate(strict=False).place(pool_with([4, 4]), 6) == [(0, 4), (1, 2)]
    assert Consolidate(strict=True).place(pool_with([8, 4, 4]), 16) is None  # would need 3 nodes


def test_pool_refuses_over_allocation_and_stays_consistent():
    pool = NodePool([4, 4])
    pool.allocate([(0, 3)])
    with pytest.raises(RuntimeError, match="over-allocation"):
        pool.allocate([(0, 2)])
    pool.release([(0, 3)])
    with pytest.raises(RuntimeError, match="exceeds its capacity"):
        pool.release([(1, 1)])
    pool.check()


def test_registry():
    assert make_placement("first-fit").name == "first-fit"
    with pytest.raises(ValueError, match="unknown placement"):
        make_placement("random")


def test_cordoned_node_takes_no_new_work_and_moves_only_when_idle():
    pool = pool_with([8, 6, 8])
    pool.cordon(0)
    pool.check()
    assert Consolidate().place(pool, 8) == [(2, 8)]
    assert FirstFit().place(pool, 10) == [(1, 6), (2, 4)]   # spreading skips the cordoned node too
    with pytest.raises(RuntimeError):
        pool.take_offline(1)                                 # busy: cannot leave
    assert pool.take_offline(0) == 8
    pool.check()
    assert (pool.total_capacity, pool.total_free, pool.idle_nodes()) == (16, 14, [2])
    assert pool.bring_online(8) == 0                         # the freed slot is reused
    assert pool.bring_online(4) == 3 and pool.total_capacity == 28
    pool.check()
    assert Consolidate().place(pool, 4) == [(3, 4)]
