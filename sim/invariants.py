"""The replay's invariants, checked on every event when asked (tests, ``--check-invariants``)."""
from __future__ import annotations

from typing import Any

from sim.errors import InvariantViolation
from sim.states import DONE, LOADING, RUNNING, SAVING, STATE_NAMES


def check(engine: Any) -> None:
    """Raise InvariantViolation (never an assert: ``python -O`` keeps these) if, now: a GPU holds
    more than its capacity (shares included), GPUs held by jobs differ from GPUs allocated, a job
    holds GPUs while not active, GPU totals are out of sync, or a finished job did not do exactly
    its work (GPU-seconds conserved)."""
    now, w = engine.now, engine.workload
    # Nothing changed since the last check that passed (no pool mutation — every NodePool mutator bumps
    # its version —, no job started, released or finished, the same GPUs held): the state it would read
    # is the one already checked, so the check is skipped. Per-minute ticks of tick-driven policies
    # (Lucid, rounds) are most events and change nothing; a corruption made behind the pool's API is
    # still caught at the next real change, since each check reads the whole state.
    signature = (tuple(ctx.pool.version for ctx in engine.contexts),
                 tuple(len(ctx.running) for ctx in engine.contexts), engine.held_gpus)
    if not engine.finished_unchecked and signature == getattr(engine, "_checked_signature", None):
        return
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
    engine.finished_unchecked.clear()
    engine._checked_signature = signature

# -- the loop --------------------------------------------------------------------------------
