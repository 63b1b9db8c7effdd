"""A specialised replay loop for event-driven Tiresias (discretised 2D-LAS) on plain workloads, proven equal to
the general loop by tests (tests/test_kernel_tiresias.py).

Why: Tiresias' decisions are cheap (its preemption searches are memoised and walk sorted rank lists, see
sim.policies.preemptive), but in the general loop each start, release, preemption and demotion passes
through the Context, the placement object, the engine's transition methods and the policy's hooks: on
Philly about three quarters of the replay's time was those layers, and Tiresias replayed about 4x slower
than SJF's kernel. This loop takes the same decisions, in the same order, with the same float operations,
on local lists: the engine's per-job lists, one heap of finishes and demotion timers ordered and numbered
as the engine's, the waiting queue and the running jobs' ranks as sorted lists of the policy's integer
ranks (``queue * 2**40 + job``: one int orders as the (rank, job) pair), and the partition's NodePool,
placed by the partition's own ``consolidate`` plug-in.

It runs, chosen by :func:`eligible`, when all of these hold (otherwise the general loop runs):
- every partition's policy is exactly ``sim.policies.preemptive.Tiresias`` (any thresholds, with or without
  backfill; not ``tiresias-rounds`` nor a subclass), fresh (nothing queued);
- every partition's placement is exactly the built-in strict ``consolidate`` on an untyped pool with no
  cordons, downed or offline nodes, shares or allocations;
- the workload is plain (every job one spreadable pod of whole GPUs of any model) with no load, save times;
- no failures, performance model, coordinator, invariant checks, event log or decision timing.

Under these conditions a job holding GPUs is always running (no loading or saving), its speed is 1, and
every memo of the policy (failed searches, misfit GPU counts, passes with unchanged inputs, demotion
timers that provably fire after the job's end) applies; the loop keeps each of them with the rule the
policy documents, so its decisions and event count are the policy's. Switch it off as the other kernel:
``fast_path=False`` or ``SCHEDCAST_FAST_PATH=0``.
"""
from __future__ import annotations

import heapq
from bisect import bisect_left, bisect_right, insort
from typing import Any

import numpy as np

from sim.placement import Consolidate
from sim.kernel import plain_replay
from sim.policies.preemptive import _JOB, _LEVEL, Tiresias, shortest  # the policy's own rank encoding
from sim.states import DONE, EV_ARRIVAL, EV_FINISH, EV_TIMER, INF, QUEUED, RUNNING

__all__ = ["eligible", "run_tiresias"]


def eligible(engine: Any) -> str | None:
    """None if :func:`run_tiresias` replays ``engine`` exactly; else the first reason it does not."""
    w = engine.workload
    reason = plain_replay(engine)
    if reason:
        return reason
    for policy in engine.policies:
        if type(policy) is not Tiresias:
            return f"policy {type(policy).__name__} is not Tiresias"
        if len(policy.queue) or policy.level_of or policy._keys or not policy.skip_unreached:
            return "policy not fresh"
    if not w.simple or w.column("load_time").any() or w.column("save_time").any() or any(w.gpu_milli):
        return "requests beyond a GPU count, or load or save times"
    for ctx in engine.contexts:
        pool, placement = ctx.pool, ctx.placement
        if type(placement) is not Consolidate or not placement.strict or not placement._inline:
            return f"placement {type(placement).__name__} (strict consolidate only)"
        if (pool.typed or pool.cordoned or pool.down or any(pool.offline) or pool.shares
                or pool.total_free != pool.total_capacity or pool.max_capacity <= 0):
            return "pool with GPU models, cordons, downed nodes or allocations"
    return None


def run_tiresias(engine: Any) -> int:
    """Replay ``engine``'s workload under its Tiresias policies, filling the engine's per-job lists, its
    allocation series and each policy's preemption count as the general loop would; returns the number of
    events. Only call when :func:`eligible` says None.

    Partitions share nothing here (no coordinator, no transfers, whole GPUs), so each is replayed on its
    own, one after the other, and their allocation series are merged: the general loop records the
    cluster's totals after each pass over the partitions with an event at that instant (several passes
    at one instant when a start pushes a finish at it), and the totals change only where a partition's
    own do, so the merged series is the sum of the partitions' latest figures at each (instant, pass)."""
    w = engine.workload
    n = len(w)
    level = [0] * n  # the policies' level_of (a job's queue; read only while it is queued or holds GPUs)
    if len(engine.policies) == 1:
        parts = [(range(n), w.submit)]
    else:
        part_of = np.asarray(engine.partition_of)
        order = np.argsort(part_of, kind="stable")  # each partition's jobs in submission order
        bounds = np.searchsorted(part_of[order], np.arange(len(engine.policies) + 1))
        submit = w.column("submit")
        parts = [(order[a:b].tolist(), submit[order[a:b]].tolist()) for a, b in zip(bounds[:-1], bounds[1:])]
    events = done = 0
    last = None  # the last instant of the replay (where the general loop leaves its clock)
    series = []
    for p, (jobs, sub) in enumerate(parts):
        if not len(jobs):
            continue
        e, d, part_series, engine._seq, now = _replay_partition(engine, p, jobs, sub, level, done)
        events += e
        done += d
        last = now if last is None or now > last else last
        series.append(np.fromiter(part_series, dtype=float, count=len(part_series)).reshape(-1, 4))
    _merge_series(engine, series)
    engine.now = engine.now if last is None else last
    engine.unfinished = n - done
    return events


def _merge_series(engine: Any, series: list[np.ndarray]) -> None:
    """The cluster's allocation series from the partitions' rows (instant, pass at that instant, GPUs in
    use, GPUs held): one row per (instant, pass) where a total differs from the row before it."""
    if not series:
        return
    if len(series) == 1:
        rows = series[0]
        times, used, held = rows[:, 0], rows[:, 2], rows[:, 3]
    else:
        deltas = []
        for rows in series:  # each partition's changes, from its figures
            d = rows.copy()
            d[1:, 2:] -= rows[:-1, 2:]
            deltas.append(d)
        rows = np.concatenate(deltas)
        rows = rows[np.lexsort((rows[:, 1], rows[:, 0]))]
        totals = np.cumsum(rows[:, 2:], axis=0)  # whole GPUs: integer sums, exact in any order
        last = np.ones(len(rows), dtype=bool)  # the last row of each (instant, pass)
        last[:-1] = (rows[1:, 0] != rows[:-1, 0]) | (rows[1:, 1] != rows[:-1, 1])
        times, totals = rows[last, 0], totals[last]
        changed = np.ones(len(times), dtype=bool)
        changed[1:] = (totals[1:] != totals[:-1]).any(axis=1)
        times, used, held = times[changed], totals[changed, 0], totals[changed, 1]
    engine.alloc_times.frombytes(np.ascontiguousarray(times).tobytes())
    engine.alloc_used.frombytes(np.ascontiguousarray(used).tobytes())
    engine.alloc_held.frombytes(np.ascontiguousarray(held).tobytes())
    engine.used_gpus, engine.held_gpus = float(used[-1]) if len(used) else 0, float(held[-1]) if len(held) else 0


def _replay_partition(engine: Any, p: int, jobs: Any, sub: list, level: list[int], done_before: int) -> tuple:
    """One partition's replay (see the module doc): returns its event count, finished jobs, flat series
    (instant, pass, GPUs in use, GPUs held, ...), the engine's sequence number after its pushes and the
    last instant it saw."""
    w = engine.workload
    n, m = len(w), len(jobs)
    gpus, duration, demand = w.gpus, w.duration, engine.demand
    policy = engine.policies[p]
    thresholds, cuts, backfill = policy.thresholds, policy._cuts, policy.backfill
    n_thresholds = len(thresholds)
    pool = engine.contexts[p].pool
    place = engine.contexts[p].placement.place
    free, buckets, maxc, holders = pool.free, pool.buckets, pool.max_capacity, pool.holders
    allocate, release = pool.allocate, pool.release
    state, since, seg_start, remaining = engine.state, engine.since, engine.seg_start, engine.remaining
    epoch, expected_end, first_start, end = engine.epoch, engine.expected_end, engine.first_start, engine.end
    wait, train, work_done, preemptions = engine.wait, engine.train, engine.work_done, engine.preemptions
    heap: list[tuple] = []  # finishes and demotion timers, ordered and numbered as the engine's heap
    heappush, heappop = heapq.heappush, heapq.heappop
    series: list[float] = []  # instant, pass, GPUs in use, GPUs held, ... (converted once at the end)
    progress, next_progress = engine.progress, done_before

    items: list[int] = []  # waiting jobs' ranks, ascending (the policy's SortedQueue)
    keys: list[int] = []  # ranks of the jobs holding GPUs, ascending (the policy's _keys)
    where: dict[int, list] = {}  # job -> its placement, while it holds GPUs
    seq = engine._seq
    used = held = 0
    last_used = last_held = -1
    version = arrivals = 0  # the policy's version and arrival count
    # The policy skips a pass whose inputs (pool version, its version, arrivals, queue length) equal those of
    # a pass that decided nothing. The three counters only grow and the queue's length changes only with
    # one of them, so their sum stands for the tuple: equal sums mean equal inputs.
    still = -1  # that sum after the last pass, if it decided nothing
    blocked: tuple | None = None  # (head, version) of the last failed search
    failed: list | None = None  # [head, its rank, (free per node, victims' GPUs per node, GPUs) or None]
    misfit_version, misfits = -1, set()  # GPU counts consolidate could not place at that pool version
    policy_preemptions = 0
    ai = done_count = events = 0
    now = last_now = -INF
    dirty = False  # an event at `now` since the last pass
    turn = 0  # passes so far at `now` (the general loop passes again when a start pushed a finish at `now`)

    def freed(placement: list) -> None:
        """Tiresias._freed: keep a failed search's memo only while each node of ``placement`` still
        lacks GPUs for its head."""
        nonlocal failed
        nodes = failed[2]
        if nodes is None or placement is None or len(placement[0]) != 2:
            failed = None
            return
        snapshot, added, g = nodes
        for node, count in placement:
            total = added[node] = added.get(node, 0) + count
            if snapshot[node] + total >= g:
                failed = None
                return

    def start(job: int) -> bool:
        """HeadPreemptive._start + Engine.start_job + Tiresias.started, fused."""
        nonlocal used, held, seq, version, misfit_version, misfits
        g = gpus[job]
        if g > pool.total_free:
            return False
        if misfit_version != pool.version:
            misfit_version, misfits = pool.version, set()
        elif g in misfits:
            return False
        if g <= maxc:  # consolidate's one-node rule (its inline path): the tightest node, the lowest first
            for f in range(g, maxc + 1):
                bucket = buckets[f]
                if bucket:
                    break
            else:
                misfits.add(g)
                return False
            node = min(bucket)
            placement = [(node, g)]
            # NodePool.allocate for one node, inlined
            pool.version += 1
            bucket.discard(node)
            free[node] = f - g
            buckets[f - g].add(node)
            pool.total_free -= g
            holders[node][job] = g
        else:
            # wider than a node: strict consolidate places it iff its ceil(g / node size) emptiest nodes hold
            # g GPUs (it takes the emptiest first and refuses more nodes); counted on the free-count buckets
            # before the plug-in sorts every node to place it
            need, k = g, -(-g // maxc)
            for f in range(maxc, 0, -1):
                c = len(buckets[f])
                if c:
                    c = c if c < k else k
                    need -= c * f
                    k -= c
                    if not k or need <= 0:
                        break
            placement = place(pool, g) if need <= 0 else None
            if placement is None:
                misfits.add(g)
                return False
            allocate(placement, job)
        held += g
        used += g
        wait[job] += now - since[job]
        if first_start[job] == INF:
            first_start[job] = now
        state[job] = RUNNING
        since[job] = now
        seg_start[job] = now
        r = remaining[job]  # >= 0: the general loop's max(0, r - 0 * speed) and r / speed are r itself
        finish = now + r
        expected_end[job] = finish
        seq += 1
        heappush(heap, (finish, EV_FINISH, seq, job, epoch[job]))
        where[job] = placement
        version += 1
        insort(keys, level[job] * _LEVEL + job)
        # the demotion timer (Tiresias._demotion_timer): attained service now, the next threshold above it
        a = (duration[job] - r) * demand[job]
        i = bisect_right(thresholds, a + 1e-6)
        if i < n_thresholds:
            at = now + 0.0 + (thresholds[i] - a) / (g * 1.0)
            if finish > at:  # a timer that fires after the job's end changes nothing here
                seq += 1
                heappush(heap, (at, EV_TIMER, seq, job, 0))
        return True

    def search(job: int, mine: int) -> list[int] | None:
        """Tiresias._search_nodes / _search_nodes_wide: the shortest worst-first prefix of the running jobs
        ranked below ``job`` whose GPUs let strict consolidate place it; sets ``failed``'s node counts."""
        g = gpus[job]
        low = bisect_right(keys, mine)
        if g > maxc:
            m = -(-g // maxc)
            victims = [keys[i] & _JOB for i in range(len(keys) - 1, low - 1, -1)]
            held_by = [where[v] for v in victims]

            def fits(k: int) -> bool:
                room = list(free)
                for placement in held_by[:k]:
                    for node, count in placement:
                        room[node] += count
                return sum(heapq.nlargest(m, room)) >= g

            if not victims or not fits(len(victims)):
                return None
            return victims[:shortest(len(victims), fits)]
        # (The policy's "fits already" case cannot arise here: a search follows a failed start at the same
        # pool version, so no node has g free GPUs.)
        added: dict[int, int] = {}
        victims = []
        for i in range(len(keys) - 1, low - 1, -1):
            victim = keys[i] & _JOB
            victims.append(victim)
            for node, count in where[victim]:
                total = added[node] = added.get(node, 0) + count
                if free[node] + total >= g:
                    return victims
        failed[2] = (list(free), added, g)
        return None

    def preempt(victims: list[int]) -> None:
        """Engine.preempt_job (no load or save time: checkpoint, release, requeue) + Tiresias.on_requeue."""
        nonlocal used, held, version, arrivals, policy_preemptions
        for v in victims:
            preemptions[v] += 1
            epoch[v] += 1
            expected_end[v] = INF
            elapsed = now - seg_start[v]
            done = min(remaining[v], elapsed * 1.0)
            remaining[v] -= done
            work_done[v] += done
            train[v] += elapsed
            seg_start[v] = now
            placement = where.pop(v)
            release(placement, v)
            used -= demand[v]
            held -= gpus[v]
            state[v] = QUEUED
            since[v] = now
            # (the policy's on_requeue also offers the GPUs to a failed search's memo; there is none here:
            # victims are chosen by a search that succeeded, which cleared it)
            del keys[bisect_left(keys, level[v] * _LEVEL + v)]
            version += 1
            lv = level[v] = bisect_right(cuts, (duration[v] - remaining[v]) * demand[v])
            arrivals += 1
            insort(items, lv * _LEVEL + v)
            policy_preemptions += 1

    while True:
        t_arr = sub[ai] if ai < m else INF
        t_heap = heap[0][0] if heap else INF
        now = t_arr if t_arr < t_heap else t_heap
        if now == INF:
            break
        if now == last_now:
            turn += 1
        else:
            last_now, turn = now, 0
        # 1. finishes at `now` (stale ones, of preempted segments, are skipped)
        while heap and heap[0][0] == now and heap[0][1] < EV_ARRIVAL:
            _, _, _, job, ep = heappop(heap)
            if ep != epoch[job]:
                continue
            events += 1
            train[job] += now - seg_start[job]
            work_done[job] += remaining[job]
            remaining[job] = 0.0
            state[job] = DONE
            end[job] = now
            expected_end[job] = INF
            epoch[job] += 1
            placement = where.pop(job)
            if len(placement) == 1:  # NodePool.release for one node, inlined
                node, count = placement[0]
                f = free[node]
                pool.version += 1
                buckets[f].discard(node)
                free[node] = f + count
                buckets[f + count].add(node)
                pool.total_free += count
                del holders[node][job]
            else:
                release(placement, job)
            used -= demand[job]
            held -= gpus[job]
            done_count += 1
            version += 1
            key = level[job] * _LEVEL + job
            if failed is not None and key < failed[1]:
                freed(placement)  # a better-ranked job freed its GPUs
            del keys[bisect_left(keys, key)]
            dirty = True
        # 2. arrivals at `now`, in submission order
        while ai < m and sub[ai] == now:
            job = jobs[ai]
            ai += 1
            events += 1
            state[job] = QUEUED
            since[job] = now
            lv = level[job] = bisect_right(cuts, (duration[job] - remaining[job]) * demand[job])
            arrivals += 1
            insort(items, lv * _LEVEL + job)
            dirty = True
        # 3. demotion timers at `now` (a timer of a job that no longer runs changes nothing)
        while heap and heap[0][0] == now and heap[0][1] == EV_TIMER:
            job = heappop(heap)[3]
            events += 1
            dirty = True
            if state[job] != RUNNING:
                continue
            r = remaining[job]
            a = (duration[job] - max(0.0, r - (now - seg_start[job]) * 1.0)) * demand[job]
            new = bisect_right(cuts, a)
            old = level[job]
            if new != old:
                key = old * _LEVEL + job
                if failed is not None and key < failed[1] < new * _LEVEL + job:
                    freed(where.get(job))  # it drops below the head: a victim now
                level[job] = new
                version += 1
                del keys[bisect_left(keys, key)]
                insort(keys, new * _LEVEL + job)
            i = bisect_right(thresholds, a + 1e-6)
            if i < n_thresholds:
                at = now + 0.0 + (thresholds[i] - a) / (gpus[job] * 1.0)
                if expected_end[job] > at:
                    seq += 1
                    heappush(heap, (at, EV_TIMER, seq, job, 0))
        # (The general loop passes again before scheduling when a handler above pushed a finish at `now`;
        # Tiresias' handlers start nothing, so none does.)
        # 4. the pass (Tiresias.schedule: skipped when its inputs equal a pass that decided nothing)
        if dirty:
            dirty = False
            before = pool.version + version + arrivals
            if before != still:
                while items:
                    head = items[0]
                    job = head & _JOB
                    if start(job):
                        del items[0]
                        continue
                    if blocked == (job, version):
                        break  # nothing changed since the last search for this job failed
                    if failed is not None and failed[0] == job:
                        blocked = (job, version)  # the remembered failed search fails again (its hooks
                        break  # keep it exact)
                    failed = [job, head, None]
                    victims = search(job, head)
                    if victims is None:
                        blocked = (job, version)
                        break
                    failed = None
                    preempt(victims)
                    if start(job):
                        del items[0]
                    else:
                        break
                if backfill and len(items) > 1 and pool.total_free:
                    shapes: set[int] = set()
                    keep = [items[0]]
                    for i in range(1, len(items)):
                        if not pool.total_free:
                            keep.extend(items[i:])
                            break
                        rank = items[i]
                        g = gpus[rank & _JOB]
                        if g in shapes:
                            keep.append(rank)
                        elif not start(rank & _JOB):
                            shapes.add(g)
                            keep.append(rank)
                    items = keep
                still = before if pool.version + version + arrivals == before else -1
        if used != last_used or held != last_held:
            last_used, last_held = used, held
            series += (now, turn, used, held)
        if progress is not None and done_before + done_count >= next_progress:
            progress(done_before + done_count, n)
            next_progress = done_before + done_count + max(1, n // 200)

    policy.preemptions = policy_preemptions
    return events, done_count, series, seq, last_now
