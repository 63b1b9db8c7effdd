"""The node pool of one partition: what is free, what is where, and of which GPU model.

Whole GPUs are counted per node (``free[node]``) and nodes are bucketed by free count, so that the
common lookups ("a node with at least g free GPUs", tightest or lowest-numbered) cost O(max GPUs per
node), as before. On top of the counts the pool records:

- ``gpu_type[node]``: the GPU model; a pool with several models keeps one bucket set per model too
  (a job with a GPU model looks only at its model's nodes);
- ``holders[node]``: job -> whole GPUs it holds there (so a placement sees the jobs, and their class,
  already on a node, and an eviction knows what it frees);
- ``shares[node][gpu]``: job -> milli-GPUs, for GPUs shared by fractional pods. A shared GPU is not
  free (it left ``free[node]`` when its first share arrived) and returns when its last share leaves.
  Shared GPUs are numbered per node from 0; whole GPUs are counted, not numbered.
- ``cordoned`` nodes take no new work (being drained, or down); ``down`` nodes failed and wait for
  repair (their GPUs leave the totals meanwhile).
"""
from __future__ import annotations

from typing import Iterable, Iterator

MILLI = 1000

Placement_t = list[tuple]  # [(node, gpus)] for whole GPUs, [(node, gpu, milli)] for fractional pods


class NodePool:
    """Free GPUs per node of one partition, bucketed by free count for O(max GPUs per node) lookups."""

    __slots__ = ("capacity", "free", "total_capacity", "total_free", "max_capacity", "buckets", "offline",
                 "cordoned", "gpu_type", "typed", "types", "type_buckets", "type_max", "holders", "shares",
                 "down", "job_class", "version")

    def __init__(self, capacities: list[int], types: list[str | None] | None = None):
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
        self.cordoned: set[int] = set()  # nodes that take no new placements (being drained, or down)
        self.down: dict[int, bool] = {}  # failed nodes -> whether they were cordoned before
        self.gpu_type: list[str | None] = list(types) if types is not None else [None] * len(capacities)
        if len(self.gpu_type) != len(self.capacity):
            raise ValueError("one GPU type per node is needed")
        self.types: list[str | None] = sorted(set(self.gpu_type), key=str)
        self.typed = len(self.types) > 1
        self.type_buckets: dict[str | None, list[set[int]]] = {}
        self.type_max: dict[str | None, int] = {}
        if self.typed:
            for t in self.types:
                self.type_max[t] = max(c for c, k in zip(self.capacity, self.gpu_type) if k == t)
                self.type_buckets[t] = [set() for _ in range(self.max_capacity + 1)]
            for node, cap in enumerate(capacities):
                self.type_buckets[self.gpu_type[node]][cap].add(node)
        self.holders: list[dict[int, int]] = [{} for _ in capacities]
        self.shares: dict[int, dict[int, dict[int, int]]] = {}
        self.job_class: list[str | None] | None = None  # the workload's classes (set by the engine)
        self.version = 0  # bumped by every change of what is allocated where (what-if caches key on it)

    def scratch(self) -> "NodePool":
        """A copy for what-if placement: own free counts and buckets; holders, shares, types and the
        cordoned set are shared read-only (release on it with job=-1 only)."""
        c = object.__new__(NodePool)
        for name in NodePool.__slots__:
            setattr(c, name, getattr(self, name))
        c.free = list(self.free)
        c.buckets = [set(b) for b in self.buckets]
        c.type_buckets = {t: [set(b) for b in bs] for t, bs in self.type_buckets.items()}
        return c

    # -- bucket bookkeeping ----------------------------------------------------------------------
    def _move(self, node: int, old: int, new: int) -> None:
        """Move ``node`` from the bucket of ``old`` free GPUs to ``new`` (unless cordoned)."""
        self.buckets[old].discard(node)
        if node not in self.cordoned:
            self.buckets[new].add(node)
        if self.typed:
            tb = self.type_buckets[self.gpu_type[node]]
            tb[old].discard(node)
            if node not in self.cordoned:
                tb[new].add(node)

    def max_capacity_of(self, gpu_type: str | None) -> int:
        return self.type_max.get(gpu_type, 0) if gpu_type is not None and self.typed else self.max_capacity

    # -- nodes coming and going --------------------------------------------------------------------
    def cordon(self, node: int) -> None:
        """Stop placing new work on ``node`` (its running jobs stay); used to drain a node before it
        moves to another partition."""
        self.version += 1
        self.cordoned.add(node)
        self.buckets[self.free[node]].discard(node)
        if self.typed:
            self.type_buckets[self.gpu_type[node]][self.free[node]].discard(node)

    def uncordon(self, node: int) -> None:
        """Let ``node`` take new work again (the reverse of :meth:`cordon`). A node that failed meanwhile
        comes back when repaired (``set_up``); one that moved away (capacity 0) is left alone."""
        if node in self.down:
            self.down[node] = False
            return
        if node not in self.cordoned or not self.capacity[node]:
            return
        self.version += 1
        self.cordoned.discard(node)
        self.buckets[self.free[node]].add(node)
        if self.typed:
            self.type_buckets[self.gpu_type[node]][self.free[node]].add(node)

    def take_offline(self, node: int) -> int:
        """Remove an idle node (it moves to another partition); returns its GPU count. Its slot stays,
        with capacity 0, so that node numbers and placements of running jobs do not change."""
        self.version += 1
        cap = self.capacity[node]
        if cap == 0 or self.free[node] != cap or node in self.down:
            raise RuntimeError(f"node {node} is not idle ({self.free[node]} of {cap} GPUs free)")
        self._move(node, cap, 0)
        self.cordoned.discard(node)
        self.buckets[0].add(node)
        if self.typed:
            self.type_buckets[self.gpu_type[node]][0].add(node)
        self.capacity[node] = self.free[node] = 0
        self.total_capacity -= cap
        self.total_free -= cap
        self.offline.append(node)
        return cap

    def bring_online(self, gpus: int, gpu_type: str | None = None) -> int:
        """Add an idle node of ``gpus`` GPUs (reusing an offline slot first); returns its number."""
        self.version += 1
        if gpus < 1:
            raise ValueError("a node needs at least one GPU")
        if self.typed and gpu_type not in self.type_buckets:
            gpu_type = self.types[0] if gpu_type is None else gpu_type
        if self.offline:
            node = self.offline.pop()
            self.buckets[0].discard(node)
            if self.typed:
                self.type_buckets[self.gpu_type[node]][0].discard(node)
            self.capacity[node] = self.free[node] = gpus
            if gpu_type is not None or not self.typed:
                self.gpu_type[node] = gpu_type if gpu_type is not None else self.gpu_type[node]
        else:
            node = len(self.capacity)
            self.capacity.append(gpus)
            self.free.append(gpus)
            self.gpu_type.append(gpu_type if gpu_type is not None else self.types[0])
            self.holders.append({})
        if gpus > self.max_capacity:
            self.buckets.extend(set() for _ in range(gpus - self.max_capacity))
            for tb in self.type_buckets.values():
                tb.extend(set() for _ in range(gpus - self.max_capacity))
            self.max_capacity = gpus
        if self.typed:
            t = self.gpu_type[node]
            if t not in self.type_buckets:  # a new model joins the pool
                self.type_buckets[t] = [set() for _ in range(self.max_capacity + 1)]
                self.types = sorted(set(self.types) | {t}, key=str)
            self.type_max[t] = max(self.type_max.get(t, 0), gpus)
            self.type_buckets[t][gpus].add(node)
        self.buckets[gpus].add(node)
        self.total_capacity += gpus
        self.total_free += gpus
        return node

    def set_down(self, node: int) -> int:
        """A node failed: it takes no work until :meth:`set_up`; its GPUs leave the totals. The engine
        fails its jobs first, so it is idle here. Returns its GPU count."""
        cap = self.capacity[node]
        if node in self.down or cap == 0:
            return 0
        if self.free[node] != cap:
            raise RuntimeError(f"node {node} still has jobs ({self.free[node]} of {cap} GPUs free)")
        self.down[node] = node in self.cordoned
        self.cordon(node)
        self.free[node] = 0
        self.total_free -= cap
        self.total_capacity -= cap
        return cap

    def set_up(self, node: int) -> None:
        """A repaired node takes work again (unless it was being drained before it failed)."""
        self.version += 1
        if node not in self.down:
            return
        was_cordoned = self.down.pop(node)
        cap = self.capacity[node]
        self.free[node] = cap
        self.total_free += cap
        self.total_capacity += cap
        if not was_cordoned:
            self.cordoned.discard(node)
            self.buckets[cap].add(node)
            if self.typed:
                self.type_buckets[self.gpu_type[node]][cap].add(node)

    def idle_nodes(self) -> list[int]:
        """Nodes with every GPU free (candidates to lend)."""
        return [n for n, (f, c) in enumerate(zip(self.free, self.capacity)) if c and f == c]

    # -- allocation --------------------------------------------------------------------------------
    def allocate(self, placement: Placement_t, job: int = -1) -> None:
        """Take whole GPUs: ``placement`` = [(node, gpus)], each node once; ``job`` >= 0 is recorded as
        their holder."""
        self.version += 1
        free, buckets, cordoned = self.free, self.buckets, self.cordoned
        if self.typed:
            self._allocate_typed(placement, job)
            return
        holders = self.holders
        for node, count in placement:
            f = free[node]
            if count < 1 or count > f:
                raise RuntimeError(f"over-allocation: node {node} has {f} free GPUs, asked for {count}")
            buckets[f].discard(node)
            free[node] = f - count
            if node not in cordoned:
                buckets[f - count].add(node)
            self.total_free -= count
            if job >= 0:
                holders[node][job] = count

    def _allocate_typed(self, placement: Placement_t, job: int) -> None:
        free, cordoned = self.free, self.cordoned
        for node, count in placement:
            f = free[node]
            if count < 1 or count > f:
                raise RuntimeError(f"over-allocation: node {node} has {f} free GPUs, asked for {count}")
            free[node] = f - count
            self._move(node, f, f - count)
            self.total_free -= count
            if job >= 0:
                self.holders[node][job] = count

    def release(self, placement: Placement_t, job: int = -1) -> None:
        self.version += 1
        free, buckets, cap, cordoned = self.free, self.buckets, self.capacity, self.cordoned
        typed, holders = self.typed, self.holders
        for node, count in placement:
            f = free[node]
            if f + count > cap[node]:
                raise RuntimeError(f"release of {count} GPUs on node {node} exceeds its capacity {cap[node]}")
            free[node] = f + count
            if typed:
                self._move(node, f, f + count)
            else:
                buckets[f].discard(node)
                if node not in cordoned:
                    buckets[f + count].add(node)
            self.total_free += count
            if job >= 0:
                holders[node].pop(job, None)

    def allocate_shares(self, placement: Placement_t, job: int) -> None:
        """Take fractions of GPUs: [(node, gpu, milli)]. A GPU number not shared yet opens a free GPU."""
        self.version += 1
        for node, gpu, milli in placement:
            if not 0 < milli <= MILLI:
                raise RuntimeError(f"a share must be 1..{MILLI} milli-GPUs, got {milli}")
            shared = self.shares.setdefault(node, {})
            holders = shared.get(gpu)
            if holders is None:
                if not 0 <= gpu < self.capacity[node]:
                    raise RuntimeError(f"node {node} has no GPU {gpu}")
                self.allocate([(node, 1)])  # raises if no GPU is free there
                holders = shared[gpu] = {}
            used = sum(holders.values())
            if used + milli > MILLI:
                raise RuntimeError(f"over-allocation: GPU {gpu} of node {node} has {MILLI - used} milli-GPUs "
                                   f"free, asked for {milli}")
            holders[job] = holders.get(job, 0) + milli

    def release_shares(self, placement: Placement_t, job: int) -> None:
        self.version += 1
        for node, gpu, milli in placement:
            shared = self.shares.get(node, {})
            holders = shared.get(gpu)
            if holders is None or holders.get(job, 0) < milli:
                raise RuntimeError(f"job {job} holds no {milli} milli-GPUs on GPU {gpu} of node {node}")
            left = holders[job] - milli
            if left:
                holders[job] = left
            else:
                del holders[job]
            if not holders:  # the GPU's last share left: it is a free GPU again
                del shared[gpu]
                if not shared:
                    del self.shares[node]
                self.release([(node, 1)])

    # -- what is where -------------------------------------------------------------------------------
    def shared_free(self, node: int) -> dict[int, int]:
        """Free milli-GPUs of each shared GPU of ``node``."""
        return {g: MILLI - sum(h.values()) for g, h in self.shares.get(node, {}).items()}

    def jobs_on(self, node: int) -> dict[int, float]:
        """Jobs holding GPUs on ``node`` -> GPUs held (fractions for shares)."""
        out: dict[int, float] = dict(self.holders[node]) if node < len(self.holders) else {}
        for holders in self.shares.get(node, {}).values():
            for job, milli in holders.items():
                out[job] = out.get(job, 0) + milli / MILLI
        return out

    def classes_on(self, node: int) -> dict[str | None, int]:
        """How many jobs of each class hold GPUs on ``node`` (needs the engine's workload classes)."""
        out: dict[str | None, int] = {}
        classes = self.job_class
        for job in self.jobs_on(node):
            c = classes[job] if classes is not None else None
            out[c] = out.get(c, 0) + 1
        return out

    def nodes_of(self, gpu_type: str | None) -> Iterable[int]:
        if gpu_type is None or not self.typed:
            return range(len(self.capacity))
        return (n for n, t in enumerate(self.gpu_type) if t == gpu_type)

    # -- lookups ---------------------------------------------------------------------------------------
    def first_node_with(self, gpus: int, gpu_type: str | None = None) -> int | None:
        """Lowest-numbered node with at least ``gpus`` free (of ``gpu_type`` if given)."""
        buckets = self.type_buckets.get(gpu_type, self.buckets) if gpu_type is not None else self.buckets
        best = None
        for f in range(gpus, self.max_capacity + 1):
            bucket = buckets[f]
            if bucket:
                m = min(bucket)
                if best is None or m < best:
                    best = m
        return best

    def by_free(self, gpu_type: str | None = None, most_free: bool = True) -> Iterator[tuple[int, int]]:
        """(node, free GPUs) of every uncordoned node with free GPUs (of ``gpu_type`` in a typed pool), most
        free first (``most_free``; else fewest), ties by node number: the order of sorting those nodes by
        (-free, node) / (free, node), read off the free-count buckets, so a busy cluster's full nodes are never
        looked at and a caller that stops early sorts only the buckets it reached."""
        if gpu_type is not None and self.typed:
            buckets = self.type_buckets.get(gpu_type)
            if buckets is None:
                return
        else:
            buckets = self.buckets
        for f in (range(len(buckets) - 1, 0, -1) if most_free else range(1, len(buckets))):
            bucket = buckets[f]
            if bucket:
                for node in sorted(bucket):
                    yield node, f

    def tightest_node_with(self, gpus: int, gpu_type: str | None = None) -> int | None:
        """Node with the fewest free GPUs that still holds ``gpus`` (lowest number on ties)."""
        buckets = self.type_buckets.get(gpu_type, self.buckets) if gpu_type is not None else self.buckets
        for f in range(gpus, self.max_capacity + 1):
            bucket = buckets[f]
            if bucket:
                return min(bucket)
        return None

    def check(self) -> None:
        """Invariants (tests run them on every event): no GPU over its capacity (shares included),
        totals, buckets and holders agree. Raises sim.errors.InvariantViolation."""
        from sim.errors import InvariantViolation

        def fail(invariant: str, node: int | None, detail: str) -> None:
            raise InvariantViolation(invariant, node=node, detail=detail)

        for n, (f, c) in enumerate(zip(self.free, self.capacity)):
            if not 0 <= f <= c:
                fail("no node over-allocated", n, f"{f} free of {c} GPUs")
            shared = self.shares.get(n, {})
            for g, holders in shared.items():
                used = sum(holders.values())
                if not 0 < used <= MILLI or not 0 <= g < c or any(m <= 0 for m in holders.values()):
                    fail("no GPU over its capacity", n, f"GPU {g} holds {used} milli-GPUs {holders}")
            if n in self.down:
                if f or self.holders[n] or shared:
                    fail("a down node holds nothing", n, f"{f} free, holders {self.holders[n]}")
                continue
            held = sum(self.holders[n].values()) if n < len(self.holders) else 0
            if self.holders[n] and held + len(shared) != c - f:
                fail("GPUs held by jobs equal GPUs allocated", n,
                     f"jobs hold {held} whole + {len(shared)} shared GPUs, {c - f} allocated")
            if len(shared) > c - f:
                fail("shared GPUs are allocated GPUs", n, f"{len(shared)} shared, {c - f} allocated")
        if self.total_free != sum(self.free):
            fail("free GPU total in sync", None, f"{self.total_free} != {sum(self.free)}")
        if self.total_capacity != sum(c for n, c in enumerate(self.capacity) if n not in self.down):
            fail("GPU capacity total in sync", None, f"{self.total_capacity}")
        bucket_sets = [self.buckets] + list(self.type_buckets.values())
        for buckets in bucket_sets:
            for f, bucket in enumerate(buckets):
                if any(self.free[n] != f for n in bucket):
                    fail("buckets in sync", None, f"bucket {f}: {sorted(bucket)}")
                if bucket & self.cordoned:
                    fail("a cordoned node is offered for placement", min(bucket & self.cordoned), "")
        listed = set().union(*self.buckets) | self.cordoned
        if listed != set(range(len(self.free))):
            fail("every node is in the buckets", min(set(range(len(self.free))) ^ listed), "")
