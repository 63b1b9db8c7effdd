"""NodePool.by_free (free-count buckets) gives the node orders the placements used to sort for: Consolidate's
multi-node path and Heavy-Edge's place_ordered place exactly as the full scans did (kept here as references)."""
from __future__ import annotations

import random

import pytest

from sim.placement import Consolidate
from sim.placement.heavy_edge import place_ordered
from sim.placement.pool import NodePool


def _consolidate_reference(pool, gpus, gpu_type, strict):
    if gpus > pool.total_free:
        return None
    biggest = pool.max_capacity_of(gpu_type)
    if gpus <= biggest:
        node = pool.tightest_node_with(gpus, gpu_type)
        if node is not None:
            return [(node, gpus)]
        if strict:
            return None
    if not biggest:
        return None
    minimum = -(-gpus // biggest)
    types = pool.gpu_type if gpu_type is not None and pool.typed else None
    order = sorted((n for n, f in enumerate(pool.free) if f and n not in pool.cordoned
                    and (types is None or types[n] == gpu_type)), key=lambda n: (-pool.free[n], n))
    out, need = [], gpus
    for node in order:
        f = pool.free[node]
        if f >= need:
            used = {n for n, _ in out}
            tight = min((n for n in order if n not in used and pool.free[n] >= need), key=lambda n: (pool.free[n], n))
            out.append((tight, need))
            need = 0
            break
        out.append((node, f))
        need -= f
    if need or (strict and len(out) > minimum):
        return None
    return out


def _ordered_reference(pool, gpus, gpu_type, most_free):
    if gpus > pool.total_free:
        return None
    if gpus <= pool.max_capacity_of(gpu_type):
        node = pool.tightest_node_with(gpus, gpu_type)
        if node is not None:
            return [(node, gpus)]
    types = pool.gpu_type if gpu_type is not None and pool.typed else None
    nodes = [n for n, f in enumerate(pool.free) if f and n not in pool.cordoned and (types is None or types[n] == gpu_type)]
    nodes.sort(key=(lambda n: (-pool.free[n], n)) if most_free else (lambda n: (pool.free[n], n)))
    out, need = [], gpus
    for n in nodes:
        take = min(pool.free[n], need)
        out.append((n, take))
        need -= take
        if not need:
            return out
    return None


@pytest.mark.parametrize("typed", [False, True])
def test_by_free_orders_and_placements_match_the_full_scans(typed):
    rng = random.Random(7)
    for trial in range(150):
        n = rng.randint(1, 30)
        caps = [rng.choice([4, 8, 8, 16]) for _ in range(n)]
        types = [rng.choice(["A100", "V100"]) for _ in range(n)] if typed else None
        pool = NodePool(caps, types)
        for node in range(n):  # random fill, a few cordoned nodes
            used = rng.randint(0, caps[node])
            if used:
                pool.allocate([(node, used)], 1000 + node)
            if rng.random() < 0.1:
                pool.cordon(node)
        for gpu_type in ([None, "A100", "V100", "H100"] if typed else [None]):
            want = [n for n, f in sorted(enumerate(pool.free), key=lambda nf: (-nf[1], nf[0]))
                    if f and n not in pool.cordoned and (not pool.typed or gpu_type is None or pool.gpu_type[n] == gpu_type)]
            assert [node for node, _ in pool.by_free(gpu_type)] == want
            assert [node for node, _ in pool.by_free(gpu_type, most_free=False)] == sorted(
                want, key=lambda k: (pool.free[k], k))
            for gpus in range(1, 70, 3):
                for strict in (False, True):
                    assert Consolidate(strict=strict).place_gpus(pool, gpus, gpu_type) == \
                        _consolidate_reference(pool, gpus, gpu_type, strict), (trial, gpus, gpu_type, strict)
                for most_free in (False, True):
                    assert place_ordered(pool, gpus, gpu_type, most_free) == \
                        _ordered_reference(pool, gpus, gpu_type, most_free), (trial, gpus, gpu_type, most_free)
