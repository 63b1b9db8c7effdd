"""The replay's invariants, checked on every event when asked (tests, ``--check-invariants``).

Two readings of the same predicates: :func:`check_exact` walks the state job by job and node by node and
raises the first violation it meets, with its message; :func:`check` first runs a screen that evaluates the
same predicates over the whole state with C-level operations (gathers with ``itemgetter``, ``map`` over
the nodes, list and set comparisons). The screen only answers "every invariant holds" or "maybe not"; on
"maybe not" (or any error while reading a corrupted state) the exact walk runs and raises exactly what it
raised before, at the same event. So ``check`` raises iff ``check_exact`` raises, with the same violation:
the screen makes a checked replay several times cheaper (a GFS 7.5-day replay spent ~90 % of its time in
the walk), it does not make it check less. tests/test_invariants_screen.py injects every kind of violation
and compares both.
"""
from __future__ import annotations

from itertools import compress, repeat
from operator import contains, eq, itemgetter, le, sub
from typing import Any

from sim.errors import InvariantViolation
from sim.placement.pool import MILLI
from sim.states import DONE, LOADING, RUNNING, SAVING, STATE_NAMES

_ACTIVE = frozenset((LOADING, RUNNING, SAVING))
_first, _second = _placement_of, _jobs_of = itemgetter(0), itemgetter(1)
_owner_of = itemgetter(2)


def check(engine: Any) -> None:
    """Raise InvariantViolation (never an assert: ``python -O`` keeps these) if, now: a GPU holds
    more than its capacity (shares included), GPUs held by jobs differ from GPUs allocated, a job
    holds GPUs while not active, GPU totals are out of sync, or a finished job did not do exactly
    its work (GPU-seconds conserved). Same verdict and same violation as :func:`check_exact`."""
    # Nothing changed since the last check that passed (no pool mutation — every NodePool mutator bumps
    # its version —, no job started, released or finished, the same GPUs held): the state it would read
    # is the one already checked, so the check is skipped. Per-minute ticks of tick-driven policies
    # (Lucid, rounds) are most events and change nothing; a corruption made behind the pool's API is
    # still caught at the next real change, since each check reads the whole state.
    signature = (tuple(ctx.pool.version for ctx in engine.contexts),
                 tuple(len(ctx.running) for ctx in engine.contexts), engine.held_gpus)
    if not engine.finished_unchecked and signature == getattr(engine, "_checked_signature", None):
        return
    try:
        holds = _screen(engine)
    except Exception:  # a state corrupted enough to break the screen's reading: the walk says how
        holds = False
    if not holds:
        _walk(engine)  # raises the violation (a screen's false alarm, if any, passes here)
    engine.finished_unchecked.clear()
    engine._checked_signature = signature


def check_exact(engine: Any) -> None:
    """The reference reading of :func:`check`: every predicate walked in order, no skip, no screen."""
    _walk(engine)
    engine.finished_unchecked.clear()


# -- the screen: True only if every invariant holds ---------------------------------------------
def _screen(engine: Any) -> bool:
    total_held = 0
    # several partitions: most checks follow a change in one of them, the others equal what passed before
    passed = engine.__dict__.setdefault("_pools_passed", {}) if len(engine.contexts) > 1 else None
    for p, ctx in enumerate(engine.contexts):
        pool = ctx.pool
        seen = passed.get(p) if passed is not None else None
        if seen is not None and seen[0] == _view(pool):  # equal in every field read: the same verdict
            whole = seen[1]
        else:
            whole = _pool_holds(pool)
            if whole is not None and passed is not None:
                passed[p] = (_copy(pool), whole)
        if whole is None or not _jobs_hold_what_the_pool_says(engine, ctx, pool):
            return False
        recorded = whole + sum(map(len, pool.shares.values()))
        allocated = pool.total_capacity - pool.total_free
        if recorded != allocated:
            return False
        total_held += allocated
    if engine.held_gpus != total_held:
        return False
    return _finished_did_their_work(engine)


def _view(pool: Any) -> tuple:
    """Every field of ``pool`` that :func:`_pool_holds` reads, the cheap and the most changing first."""
    return (pool.total_free, pool.total_capacity, pool.free, pool.holders, pool.buckets, pool.capacity,
            pool.shares, pool.down, pool.cordoned, pool.type_buckets)


def _copy(pool: Any) -> tuple:
    """A copy of :func:`_view` that later changes of the pool do not reach (a pool of many partitions
    that did not change since it passed is not screened again: ~5 µs instead of ~30 for 64 nodes)."""
    return (pool.total_free, pool.total_capacity, list(pool.free), list(map(dict.copy, pool.holders)),
            list(map(set.copy, pool.buckets)), list(pool.capacity),
            {node: {g: dict(s) for g, s in gpus.items()} for node, gpus in pool.shares.items()}, dict(pool.down),
            set(pool.cordoned), {t: list(map(set.copy, bs)) for t, bs in pool.type_buckets.items()})


def _pool_holds(pool: Any) -> int | None:
    """NodePool.check's predicates over the whole pool: the whole GPUs its jobs hold if they all hold,
    else None."""
    free, capacity, holders, shares, down = pool.free, pool.capacity, pool.holders, pool.shares, pool.down
    n = len(free)
    if len(capacity) != n or len(holders) != n or (n and min(free) < 0) or not all(map(le, free, capacity)):
        return None
    for node, gpus in shares.items():
        if not 0 <= node < n or len(gpus) > capacity[node] - free[node]:
            return None
        for g, sharers in gpus.items():
            milli = sharers.values()
            if not 0 < sum(milli) <= MILLI or not 0 <= g < capacity[node] or min(milli) <= 0:
                return None
    held = list(map(sum, map(dict.values, holders)))
    whole = sum(held)
    used = list(map(sub, capacity, free))
    for node in shares:  # GPUs held by jobs, whole and shared, equal the GPUs allocated
        held[node] += len(shares[node])
    for node in down:  # a down node holds nothing and is exempt from the count
        if not 0 <= node < n or free[node] or holders[node] or node in shares:
            return None
        held[node] = used[node]
    if held != used:
        for node, (h, u) in enumerate(zip(held, used)):
            if h != u and holders[node]:  # (a node where no job holds whole GPUs is not compared)
                return None
    if pool.total_free != sum(free) or pool.total_capacity != sum(capacity) - sum(capacity[d] for d in down):
        return None
    cordoned = pool.cordoned
    for buckets in [pool.buckets, *pool.type_buckets.values()]:
        for f, bucket in enumerate(buckets):
            if bucket and (not all(map(eq, repeat(f), map(free.__getitem__, bucket)))
                           or not cordoned.isdisjoint(bucket)):
                return None
    if set().union(*pool.buckets) | cordoned != set(range(n)):
        return None
    return whole


def _jobs_hold_what_the_pool_says(engine: Any, ctx: Any, pool: Any) -> bool:
    """Every job of ``ctx.running`` is active and in its allocation; the pool records what each owner of an
    allocation holds."""
    jobs = tuple(ctx.running)
    if not jobs:
        return True
    state, alloc = engine.state, engine.alloc
    gather = _gather(jobs)
    records = gather(alloc)  # (a None record breaks the reading below: the walk then names it)
    if not _ACTIVE.issuperset(gather(state)) or not all(map(contains, map(_jobs_of, records), jobs)):
        return False
    holders, shares = pool.holders, pool.shares
    owners: tuple = tuple(map(_owner_of, records))
    if owners != jobs:  # packed jobs share their host's record: each owner once, with its own record
        owners = tuple(set(owners))
        records = _gather(owners)(alloc)
    placements = list(map(_placement_of, records))
    entries = list(map(_first, placements))
    n = len(owners)
    if list(map(len, placements)).count(1) != n or list(map(len, entries)).count(2) != n:
        # several entries or fractions: those one by one, the single whole-GPU entries all at once below
        simple = [len(placement) == 1 and len(entry) == 2 for placement, entry in zip(placements, entries)]
        for owner, placement, one in zip(owners, placements, simple):
            if not one and not _owner_holds(owner, placement, holders, shares):
                return False
        owners, entries = tuple(compress(owners, simple)), list(compress(entries, simple))
    if not entries:
        return True
    nodes, counts = zip(*entries)
    return list(map(dict.get, map(holders.__getitem__, nodes), owners)) == list(counts)


def _owner_holds(owner: int, placement: list, holders: list, shares: dict) -> bool:
    if len(placement[0]) == 3:
        for node, gpu, milli in placement:
            if shares.get(node, {}).get(gpu, {}).get(owner, 0) < milli:
                return False
        return True
    per_node: dict[int, int] = {}
    for node, count in placement:
        per_node[node] = per_node.get(node, 0) + count
    for node, count in per_node.items():
        if holders[node].get(owner) != count:
            return False
    return True


def _gather(jobs: tuple) -> Any:
    """``itemgetter(*jobs)``, always giving a tuple."""
    return itemgetter(*jobs) if len(jobs) != 1 else (lambda seq: (seq[jobs[0]],))


def _finished_did_their_work(engine: Any) -> bool:
    state, completions, work, duration = engine.state, engine.completions, engine.work_done, engine.workload.duration
    for j in engine.finished_unchecked:
        if state[j] != DONE or completions[j] != 1 or abs(work[j] - duration[j]) > 1e-6 * max(1.0, duration[j]):
            return False
    return True


# -- the walk: the first violation, with its message ---------------------------------------------
def _walk(engine: Any) -> None:
    now, w = engine.now, engine.workload
    total_held = 0
    for p, ctx in enumerate(engine.contexts):
        pool = ctx.pool
        try:
            pool.check()
        except InvariantViolation as exc:
            raise exc.at(now, p) from None
        owners = set()
        for j in ctx.running:
            if engine.state[j] not in (LOADING, RUNNING, SAVING):
                raise InvariantViolation("only active jobs hold GPUs", time=now, job=j, partition=p,
                                         detail=f"state {STATE_NAMES[engine.state[j]]}")
            record = engine.alloc[j]
            if record is None or j not in record[1]:
                raise InvariantViolation("a running job has an allocation", time=now, job=j, partition=p)
            owners.add(record[2])
        for j in owners:
            record = engine.alloc[j]
            if len(record[0][0]) == 3:
                for node, gpu, milli in record[0]:
                    if pool.shares.get(node, {}).get(gpu, {}).get(j, 0) < milli:
                        raise InvariantViolation("the pool records every share a job holds", time=now,
                                                 job=j, node=node, partition=p, detail=f"GPU {gpu}")
            else:
                per_node: dict[int, int] = {}
                for node, count in record[0]:
                    per_node[node] = per_node.get(node, 0) + count
                for node, count in per_node.items():
                    if pool.holders[node].get(j) != count:
                        raise InvariantViolation("the pool records the GPUs each job holds", time=now, job=j,
                                                 node=node, partition=p,
                                                 detail=f"{count} allocated, pool says {pool.holders[node].get(j)}")
        recorded = sum(sum(h.values()) for h in pool.holders) + sum(len(s) for s in pool.shares.values())
        allocated = pool.total_capacity - pool.total_free
        if recorded != allocated:
            raise InvariantViolation("GPUs held by jobs equal GPUs allocated", time=now, partition=p,
                                     detail=f"jobs hold {recorded}, pool has {allocated} allocated")
        total_held += allocated
    if engine.held_gpus != total_held:
        raise InvariantViolation("physical GPUs held in sync", time=now,
                                 detail=f"engine counts {engine.held_gpus}, pools {total_held}")
    for j in engine.finished_unchecked:  # jobs done since the last check: all of their work was done
        if engine.state[j] != DONE:
            raise InvariantViolation("a finished job stays done", time=now, job=j,
                                     detail=f"state {STATE_NAMES[engine.state[j]]}")
        if engine.completions[j] != 1:
            raise InvariantViolation("each job completes at most once", time=now, job=j,
                                     detail=f"{engine.completions[j]} completions")
        if abs(engine.work_done[j] - w.duration[j]) > 1e-6 * max(1.0, w.duration[j]):
            raise InvariantViolation("GPU-seconds conserved: a finished job did exactly its work", time=now,
                                     job=j, detail=f"work done {engine.work_done[j]}, duration {w.duration[j]}")
