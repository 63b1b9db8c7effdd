"""A specialised replay loop for the commonest replays, proven equal to the general loop by tests.

Why: a static-key queue policy (FIFO, SJF, SPJF, SPWF; strict: the head of the queue blocks) on a plain
workload spends most of the general engine's time in layers it does not use — the Context, the
placement object, per-job accumulator updates, epochs, state changes nobody reads. This loop replays
exactly the same schedule (start and end of every job, the allocation series, event count) with one
heap of finishes, one sorted list of (key, job) per partition (the job-by-job order of
sim.policies.base.start_in_order; the policy's own queue object is not used) and the node pool, and
derives every per-job figure from the start times afterwards with the float operations of the general
loop.

It runs, chosen by :func:`eligible`, when all of these hold (otherwise the general loop runs):
- every partition's policy is a ``sim.policies.queueing.OrderedQueuePolicy`` that overrides nothing
  but ``key`` (and its ``__init__`` parameters), its key being a built-in one (FIFO, SJF, SPJF, SPWF:
  fixed per-job data) or its class declaring ``static_key = True``, and its queue is strict (a
  work-conserving queue takes the general loop: its shaped queue skips request shapes that cannot fit,
  where this loop would read every waiting job on every pass — 10x slower on a crowded PAI workload);
- the placement is exactly the built-in ``first-fit`` or ``consolidate`` (any ``strict``/``spread``)
  on pools without GPU models;
- the workload is plain (every job one spreadable pod of whole GPUs of any model) with no load time;
- no failures, performance model, coordinator, invariant checks, event log or decision timing.

With ``first-fit`` that may spread (its default) on such a pool a job fits exactly when its GPU count is
at most the free count, so the loop keeps only that count; otherwise it places on the partition's
NodePool with the placement plug-in itself. From sim.kernel_compiled.MIN_JOBS jobs, the count-only loop of
one pool under FIFO, SJF or SPJF runs compiled with numba (sim.kernel_compiled; the same replay exactly).
Switch it off with ``Engine(..., fast_path=False)``,
``simulate(..., fast_path=False)`` or the environment variable ``SCHEDCAST_FAST_PATH=0``.
"""
from __future__ import annotations

import bisect
import heapq
import os
from typing import Any

import numpy as np

from sim import kernel_compiled
from sim.placement import Consolidate, FirstFit
from sim.policies.queueing import Fifo, OrderedQueuePolicy, Sjf, Spjf, Spwf
from sim.states import DONE, INF, QUEUED

__all__ = ["eligible", "fast_path_default", "plain_replay", "run_fast"]

#: Policy hooks the kernel does not call: a policy overriding any of them takes the general loop.
_HOOKS = ("bind", "on_start", "on_arrival", "on_requeue", "on_transfer", "on_finish", "on_loaded", "on_timer",
          "on_failure", "schedule", "on_end", "stats", "waiting_count", "release")
_BASE = {name: getattr(OrderedQueuePolicy, name) for name in _HOOKS}
#: Keys that read only per-job data fixed for the whole replay.
_STATIC_KEYS = {Fifo.key, Sjf.key, Spjf.key, Spwf.key}


def fast_path_default() -> bool:
    """The kernel is on unless ``SCHEDCAST_FAST_PATH`` is ``0``, ``false``, ``no`` or ``off``."""
    return os.environ.get("SCHEDCAST_FAST_PATH", "1").strip().lower() not in ("0", "false", "no", "off")


def plain_replay(engine: Any) -> str | None:
    """None if ``engine`` replays with none of what the specialised loops leave to the general one (invariant
    checks, an event log, decision timing, a performance model, a coordinator, failures); else which."""
    if engine.check_invariants or engine.event_log is not None or engine.time_decisions:
        return "invariant checks, event log or decision timing asked"
    if engine.performance is not None or engine.coordinator is not None:
        return "performance model or coordinator"
    if engine._failures or engine._after or engine.overhead:
        return "failures"
    return None


def eligible(engine: Any) -> str | None:
    """None if :func:`run_fast` replays ``engine`` exactly; else the first reason it does not."""
    w = engine.workload
    reason = plain_replay(engine)
    if reason:
        return reason
    if not w.simple or w.column("load_time").any():  # the kept array: no pass over a list
        return "requests beyond a GPU count, or load times"
    for policy in engine.policies:
        cls = type(policy)
        if not isinstance(policy, OrderedQueuePolicy) or any(getattr(cls, h) is not f for h, f in _BASE.items()):
            return f"policy {cls.__name__} is not a plain ordered queue"
        if cls.key not in _STATIC_KEYS and not getattr(cls, "static_key", False):
            return f"policy {cls.__name__} has a key not known to be static"
        if policy.work_conserving:  # the general loop's shaped queue skips request shapes that cannot fit;
            return "work-conserving queue"  # this loop would read every waiting job on every pass
        if len(policy.queue):
            return "policy queue not empty"
    for ctx in engine.contexts:
        pool = ctx.pool
        if type(ctx.placement) not in (FirstFit, Consolidate):
            return f"placement {type(ctx.placement).__name__}"
        if pool.typed or pool.cordoned or pool.down or pool.shares or pool.total_free != pool.total_capacity:
            return "pool with GPU models, cordons or allocations"
    return None


def _count_only(ctx: Any) -> bool:
    """First-fit that may spread fits a GPU-count job exactly when the count is free (see module doc)."""
    return type(ctx.placement) is FirstFit and ctx.placement.spread


def _key_function(engine: Any, policy: OrderedQueuePolicy) -> Any:
    """``policy.key``, or the list lookup it amounts to for SJF and SPJF (no method call per job)."""
    key = type(policy).key
    if key is Sjf.key:
        return engine.workload.duration.__getitem__
    if key is Spjf.key:  # ctx.prediction(job) of kind "duration"
        return engine.predicted.__getitem__
    return policy.key


def _key_array(engine: Any, policy: OrderedQueuePolicy) -> np.ndarray | None:
    """The keys :func:`_key_function` gives, for every job at once as float64, for the keys the compiled loop
    orders (FIFO: 0, ties by submission order; SJF: the duration; SPJF: the predicted duration); None for
    another key or for values a float64 does not hold exactly (sim.kernel_compiled.exact_floats)."""
    key, n = type(policy).key, len(engine.workload)
    if key is Fifo.key:
        return np.zeros(n)
    if key is Sjf.key or (key is Spjf.key and "duration" not in engine.predictions):
        source = engine.workload.column("duration")  # the kept array: no list of durations is made
    elif key is Spjf.key:
        source = engine.predicted
    else:
        return None
    if len(source) != n:
        return None
    return kernel_compiled.exact_floats(np.asarray(source))


def run_fast(engine: Any) -> int:
    """Replay ``engine``'s workload, filling its per-job arrays as the general loop would; returns the
    number of events (finishes plus arrivals). Only call when :func:`eligible` says None."""
    if len(engine.contexts) == 1:
        return _run_one_strict(engine)
    w = engine.workload
    n = len(w)
    submit, gpus, part_of = w.submit, w.gpus, engine.partition_of
    contexts, policies = engine.contexts, engine.policies
    n_parts = len(contexts)
    queues: list[list[tuple[Any, int]]] = [[] for _ in policies]  # the kernel's own sorted queues
    keys = [_key_function(engine, p) for p in policies]
    marks = [type(p).key not in _STATIC_KEYS for p in policies]
    dur = w.duration
    counting = [_count_only(c) for c in contexts]
    pools = [c.pool for c in contexts]
    places = [c.placement.place for c in contexts]
    free = [pool.total_free for pool in pools]
    placed: list[Any] = [None] * n
    start = [INF] * n
    state, since = engine.state, engine.since
    heap: list[tuple[float, int]] = []
    push, pop, insort = heapq.heappush, heapq.heappop, bisect.insort
    series: list[float] = []  # time, GPUs in use, time, ... whenever the use changed
    record = series.append
    progress, next_progress = engine.progress, 0
    used, last = 0, -1
    dirty = [False] * n_parts
    dirty_list: list[int] = []
    ai = done = 0
    while True:
        t_arr = submit[ai] if ai < n else INF
        now = heap[0][0] if heap and heap[0][0] < t_arr else t_arr
        if now == INF:
            break
        engine.now = now
        while heap and heap[0][0] == now:  # finishes
            job = pop(heap)[1]
            p = part_of[job]
            g = gpus[job]
            if counting[p]:
                free[p] += g
            else:
                pools[p].release(placed[job], job)
                placed[job] = None
            used -= g
            done += 1
            if not dirty[p]:
                dirty[p] = True
                dirty_list.append(p)
        while ai < n and submit[ai] == now:  # arrivals, in submission order
            job = ai
            ai += 1
            p = part_of[job]
            if marks[p]:  # a declared static key may read state and since
                state[job] = QUEUED
                since[job] = now
            insort(queues[p], (keys[p](job), job))
            if not dirty[p]:
                dirty[p] = True
                dirty_list.append(p)
        for p in dirty_list:  # schedule, as sim.policies.base.start_in_order does
            dirty[p] = False
            items = queues[p]
            if not items:
                continue
            count = counting[p]
            pool = pools[p]
            place = places[p]
            started = 0
            f = free[p] if count else pool.total_free
            for _, job in items:
                g = gpus[job]
                if g > f:
                    break
                if count:
                    f -= g
                else:
                    pl = place(pool, g)
                    if pl is None:
                        break
                    pool.allocate(pl, job)
                    placed[job] = pl
                    f = pool.total_free
                start[job] = now
                used += g
                push(heap, (now + dur[job] / 1.0, job))
                started += 1
            if started:
                del items[:started]
                if count:
                    free[p] = f
        dirty_list.clear()
        if used != last:
            last = used
            record(now)
            record(used)
        if progress is not None and done >= next_progress:
            progress(done, n)
            next_progress = done + max(1, n // 200)
    _series(engine, series, used)
    _fill(engine, start, done)
    return done + ai


def _run_one_strict(engine: Any) -> int:
    """:func:`run_fast` for the commonest case, one partition and a strict queue (the head blocks), with
    the per-partition lookups hoisted out of the loop."""
    w = engine.workload
    n = len(w)
    policy, ctx = engine.policies[0], engine.contexts[0]
    mark = type(policy).key not in _STATIC_KEYS  # a declared static key may read state and since
    count = _count_only(ctx)
    if count and not mark and n >= kernel_compiled.MIN_JOBS and kernel_compiled.enabled():
        events = _run_compiled(engine, policy, ctx.pool.total_free)  # reads arrays only (no workload list)
        if events is not None:
            return events
    submit, gpus, dur = w.submit, w.gpus, w.duration
    items: list[tuple[Any, int]] = []  # the kernel's own sorted queue
    key = _key_function(engine, policy)
    pool, place = ctx.pool, ctx.placement.place
    allocate, release = pool.allocate, pool.release
    free = pool.total_free
    placed: list[Any] = [None] * n
    start = [INF] * n
    state, since = engine.state, engine.since
    heap: list[tuple[float, int]] = []
    push, pop, insort = heapq.heappush, heapq.heappop, bisect.insort
    series: list[float] = []
    record = series.append
    progress, next_progress = engine.progress, 0
    used, last = 0, -1
    ai = done = 0
    while True:
        t_arr = submit[ai] if ai < n else INF
        now = heap[0][0] if heap and heap[0][0] < t_arr else t_arr
        if now == INF:
            break
        if mark:
            engine.now = now
        while heap and heap[0][0] == now:  # finishes
            job = pop(heap)[1]
            g = gpus[job]
            if count:
                free += g
            else:
                release(placed[job], job)
            used -= g
            done += 1
        while ai < n and submit[ai] == now:  # arrivals, in submission order
            if mark:
                state[ai] = QUEUED
                since[ai] = now
            insort(items, (key(ai), ai))
            ai += 1
        if items and count:  # schedule, as sim.policies.base.start_in_order does for a strict queue
            started = 0
            for _, job in items:
                g = gpus[job]
                if g > free:
                    break
                free -= g
                start[job] = now
                used += g
                push(heap, (now + dur[job] / 1.0, job))
                started += 1
            if started:
                del items[:started]
        elif items:  # the same on the node pool, placed by the plug-in
            started = 0
            for _, job in items:
                g = gpus[job]
                if g > pool.total_free:
                    break
                pl = place(pool, g)
                if pl is None:
                    break
                allocate(pl, job)
                placed[job] = pl
                start[job] = now
                used += g
                push(heap, (now + dur[job] / 1.0, job))
                started += 1
            if started:
                del items[:started]
        if used != last:
            last = used
            record(now)
            record(used)
        if progress is not None and done >= next_progress:
            progress(done, n)
            next_progress = done + max(1, n // 200)
    _series(engine, series, used)
    _fill(engine, start, done)
    return done + ai


def _run_compiled(engine: Any, policy: OrderedQueuePolicy, free: int) -> int | None:
    """_run_one_strict's count-only loop compiled (sim.kernel_compiled), filling the engine as it does; the
    events (finishes plus arrivals), or None (nothing changed) where the compiled loop cannot run: numba
    missing, another key, or values a float64 does not hold exactly."""
    keys = _key_array(engine, policy)
    if keys is None or kernel_compiled.compiled() is None:
        return None
    arrays = kernel_compiled.inputs(engine)
    if arrays is None:
        return None
    start, series, used, done, arrived = kernel_compiled.run(engine, keys, free, arrays)
    engine.loop = "compiled-kernel"
    _series(engine, series, used)
    _fill(engine, start, done)  # engine.since: the list of these, made if read (sim.engine._ALL_DONE)
    return done + arrived


def _series(engine: Any, series: list[float] | np.ndarray, used: int) -> None:
    """The allocation series from the flat list (or float array) time, GPUs in use, time, ...: whole GPUs,
    never shared, so the GPUs held are the GPUs in use."""
    engine.used_gpus = engine.held_gpus = used
    if len(series):  # one conversion of the flat list, then byte copies (array.fromlist: 0.25 s per 3 M values)
        flat = series if isinstance(series, np.ndarray) else np.fromiter(series, dtype=float, count=len(series))
        counts = flat[1::2].tobytes()
        engine.alloc_times.frombytes(flat[0::2].tobytes())
        engine.alloc_used.frombytes(counts)
        engine.alloc_held.frombytes(counts)


def _fill(engine: Any, start: list[float] | np.ndarray, done: int) -> None:
    """Per-job accumulators from the start times (a list, or the compiled loop's float array), with the
    general loop's float operations: it adds ``start - submit`` to a zero wait, ends at ``start + duration /
    speed`` (speed 1.0) and adds ``end - start`` to a zero train and the duration to a zero work done."""
    w = engine.workload
    n = len(w)
    engine.unfinished = n - done
    if done != n:  # a job that never started: let the general end-of-run check name it
        for j, s in enumerate(start):
            if s < INF:
                engine.state[j] = DONE
        return
    s = np.asarray(start, dtype=float)  # the compiled loop's array itself (float64: no copy)
    d = np.asarray(w.column("duration"), dtype=float)  # the arrays build_workload kept (no list pass)
    end = s + d / 1.0
    wait = 0.0 + (s - np.asarray(w.column("submit"), dtype=float))
    train = 0.0 + (end - s)
    work = 0.0 + d
    if n:
        engine.now = float(end.max())  # the last instant, where the general loop leaves its clock
    # The accumulators the kernel computed stay arrays (the result gives them as lists when read:
    # SimResult turns an array field into a list on first access, element for element the general loop's);
    # the fields it never changes are the engine's zero lists, handed over as zero arrays too.
    engine.first_start, engine.end, engine.wait, engine.train, engine.work_done = s, end, wait, train, work
    zeros, none = np.zeros(n), np.zeros(n, dtype=np.int64)
    engine.load = engine.save = engine.futile = engine.lost = engine.lost_work = zeros
    engine.preemptions = engine.evictions = engine.failures = none
    # the engine's state as the general loop leaves it, every job done: its lists (since, state, ...) are
    # made from the start times at their first read (sim.engine._ALL_DONE)
    engine.all_done(start)
