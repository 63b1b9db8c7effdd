"""Placement plug-ins: which nodes a job's GPUs come from.

A placement is a list of ``(node, gpus)`` pairs. Every plug-in answers ``place(pool, gpus)`` with a
placement or None (does not fit now) and never changes the pool: the engine allocates. Smarter
plug-ins (Heavy-Edge, GFS scoring, FGD) subclass :class:`Placement` and register themselves.
"""
from __future__ import annotations

from typing import Callable

Placement_t = list[tuple[int, int]]


class NodePool:
    """Free GPUs per node of one partition, bucketed by free count for O(max GPUs per node) lookups."""

    __slots__ = ("capacity", "free", "total_capacity", "total_free", "max_capacity", "buckets", "offline",
                 "cordoned")

    def __init__(self, capacities: list[int]):
        if not capacities or min(capacities) < 1:
            raise ValueError("a node pool needs at least one node, each with at least one GPU")
        self.capacity = list(capacities)
        self.free = list(capacities)
        self.total_capacity = sum(capacities)
        self.total_free = self.total_capacity
        self.max_capacity = max(capacities)
        self.buckets: list[set[int]] = [set() for _ in range(self.max_capacity + 1)]
        for node, cap in enumerate(capacities):
            self.buckets[cap].add(node)
        self.offline: list[int] = []  # slots of nodes moved to another partition (capacity 0 here)
        self.cordoned: set[int] = set()  # nodes that take no new placements (being drained)

    def cordon(self, node: int) -> None:
        """Stop placing new work on ``node`` (its running jobs stay); used to drain a node before it
        moves to another partition."""
        self.cordoned.add(node)
        self.buckets[self.free[node]].discard(node)

    def take_offline(self, node: int) -> int:
        """Remove an idle node (it moves to another partition); returns its GPU count. Its slot stays,
        with capacity 0, so that node numbers and placements of running jobs do not change."""
        cap = self.capacity[node]
        if cap == 0 or self.free[node] != cap:
            raise RuntimeError(f"node {node} is not idle ({self.free[node]} of {cap} GPUs free)")
        self.buckets[cap].discard(node)
        self.cordoned.discard(node)
        self.buckets[0].add(node)
        self.capacity[node] = self.free[node] = 0
        self.total_capacity -= cap
        self.total_free -= cap
        self.offline.append(node)
        return cap

    def bring_online(self, gpus: int) -> int:
        """Add an idle node of ``gpus`` GPUs (reusing an offline slot first); returns its number."""
        if gpus < 1:
            raise ValueError("a node needs at least one GPU")
        if self.offline:
            node = self.offline.pop()
            self.buckets[0].discard(node)
            self.capacity[node] = self.free[node] = gpus
        else:
            node = len(self.capacity)
            self.capacity.append(gpus)
            self.free.append(gpus)
        if gpus > self.max_capacity:
            self.buckets.extend(set() for _ in range(gpus - self.max_capacity))
            self.max_capacity = gpus
        self.buckets[gpus].add(node)
        self.total_capacity += gpus
        self.total_free += gpus
        return node

    def idle_nodes(self) -> list[int]:
        """Nodes with every GPU free (candidates to lend)."""
        return [n for n, (f, c) in enumerate(zip(self.free, self.capacity)) if c and f == c]

    def allocate(self, placement: Placement_t) -> None:
        free, buckets = self.free, self.buckets
        for node, count in placement:
            f = free[node]
            if count < 1 or count > f:
                raise RuntimeError(f"over-allocation: node {node} has {f} free GPUs, asked for {count}")
            buckets[f].discard(node)
            free[node] = f - count
            if node not in self.cordoned:
                buckets[f - count].add(node)
            self.total_free -= count

    def release(self, placement: Placement_t) -> None:
        free, buckets, cap = self.free, self.buckets, self.capacity
        for node, count in placement:
            f = free[node]
            if f + count > cap[node]:
                raise RuntimeError(f"release of {count} GPUs on node {node} exceeds its capacity {cap[node]}")
            buckets[f].discard(node)
            free[node] = f + count
            if node not in self.cordoned:
                buckets[f + count].add(node)
            self.total_free += count

    def first_node_with(self, gpus: int) -> int | None:
        """Lowest-numbered node with at least ``gpus`` free."""
        best = None
        for f in range(gpus, self.max_capacity + 1):
            bucket = self.buckets[f]
            if bucket:
                m = min(bucket)
                if best is None or m < best:
                    best = m
        return best

    def tightest_node_with(self, gpus: int) -> int | None:
        """Node with the fewest free GPUs that still holds ``gpus`` (lowest number on ties)."""
        for f in range(gpus, self.max_capacity + 1):
            bucket = self.buckets[f]
            if bucket:
                return min(bucket)
        return None

    def check(self) -> None:
        """Invariant: no node over-allocated and the totals agree (used by tests on every event)."""
        assert all(0 <= f <= c for f, c in zip(self.free, self.capacity)), "node over-allocated"
        assert self.total_free == sum(self.free), "free GPU total out of sync"
        for f, bucket in enumerate(self.buckets):
            assert all(self.free[n] == f for n in bucket), "bucket out of sync"
            assert not bucket & self.cordoned, "a cordoned node is offered for placement"
        listed = set().union(*self.buckets) | self.cordoned
        assert listed == set(range(len(self.free))), "a node is missing from the buckets"


class Placement:
    """Base class: decide the nodes for a job of ``gpus`` GPUs, or None if it cannot start now."""

    name = "base"

    def place(self, pool: NodePool, gpus: int) -> Placement_t | None:  # pragma: no cover - interface
        raise NotImplementedError


class FirstFit(Placement):
    """Lowest-numbered node that holds the whole job; otherwise spread over nodes in order."""

    name = "first-fit"

    def __init__(self, spread: bool = True):
        self.spread = spread

    def place(self, pool: NodePool, gpus: int) -> Placement_t | None:
        if gpus > pool.total_free:
            return None
        if gpus <= pool.max_capacity:
            node = pool.first_node_with(gpus)
            if node is not None:
                return [(node, gpus)]
            if not self.spread:
                return None
        out, need, cordoned = [], gpus, pool.cordoned
        for node, f in enumerate(pool.free):
            if f and node not in cordoned:
                take = min(f, need)
                out.append((node, take))
                need -= take
                if not need:
                    return out
        return None


class Consolidate(Placement):
    """Best fit on the fewest nodes: a job that fits one node goes to the tightest such node; a larger
    job takes the emptiest nodes so it spans ceil(gpus / node size) nodes. ``strict`` (Lucid's rule)
    refuses placements on more nodes than that minimum instead of spreading."""

    name = "consolidate"

    def __init__(self, strict: bool = True):
        self.strict = strict

    def place(self, pool: NodePool, gpus: int) -> Placement_t | None:
        if gpus > pool.total_free:
            return None
        if gpus <= pool.max_capacity:
            node = pool.tightest_node_with(gpus)
            if node is not None:
                return [(node, gpus)]
            if self.strict:
                return None
        minimum = -(-gpus // pool.max_capacity)
        order = sorted((n for n, f in enumerate(pool.free) if f and n not in pool.cordoned),
                       key=lambda n: (-pool.free[n], n))
        out, need = [], gpus
        for node in order:
            f = pool.free[node]
            if f >= need:
                # Last chunk: the tightest node that holds the remainder, among those not yet used.
                used = {n for n, _ in out}
                tight = min((n for n in order if n not in used and pool.free[n] >= need),
                            key=lambda n: (pool.free[n], n))
                out.append((tight, need))
                need = 0
                break
            out.append((node, f))
            need -= f
        if need or (self.strict and len(out) > minimum):
            return None
        return out


#: name -> factory. The CLI, configs and tests read this registry.
PLACEMENTS: dict[str, Callable[..., Placement]] = {
    "first-fit": FirstFit,
    "consolidate": Consolidate,
    "best-fit": lambda: Consolidate(strict=False),
}


def make_placement(name: str | Placement) -> Placement:
    if isinstance(name, Placement):
        return name
    if name not in PLACEMENTS:
        raise ValueError(f"unknown placement {name!r}; known: {', '.join(PLACEMENTS)}")
    return PLACEMENTS[name]()
