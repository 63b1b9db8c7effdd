"""The job lifecycle of the engine: start, pack, speed changes, release, preemption, eviction, failures,
and the side-effect-free what-if questions. A mixin of :class:`sim.engine.Engine` (the loop lives
there); the Context calls only its public names (``start_job``, ``what_if``, ``preempt_job``, ...)."""
from __future__ import annotations

import heapq
import math
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from sim.context import Context
from sim.errors import SimulationError
from sim.placement import Consolidate, Placement_t
from sim.states import (
    EV_FAILURE, EV_FINISH, EV_LOADED, EV_REPAIR, EV_RESTART, EV_SAVED, FAILED, INF, LOADING, QUEUED, RESTARTING,
    RUNNING, SAVING, STATE_NAMES,
)

if TYPE_CHECKING:
    from sim.failures import Failure


class Transitions:
    """Job transitions on the engine's per-job arrays (see sim.engine for the semantics)."""

    # -- transitions ---------------------------------------------------------------------------
    def log(self, kind: str, job: int, extra: Any = None) -> None:
        if self.event_log is not None:
            self.event_log.append((self.now, kind, job, extra))

    def validate_placement(self, ctx: Context, job: int, placement: Placement_t) -> None:
        """An explicit placement must match the job's request (gang, pods, fractions, GPU model)."""
        w, pool = self.workload, ctx.pool
        milli = self.milli[job]
        nodes = [e[0] for e in placement]
        if any(not 0 <= nd < len(pool.capacity) for nd in nodes):
            raise SimulationError(f"job {job}: placement {placement} names a node the partition lacks")
        if milli:
            if len(placement) != w.pods[job] or any(len(e) != 3 or e[2] != milli for e in placement):
                raise SimulationError(f"job {job} needs {w.pods[job]} pods of {milli} milli-GPUs, placement "
                                      f"{placement} differs")
        else:
            if any(len(e) != 2 for e in placement) or sum(c for _, c in placement) != w.gpus[job]:
                raise SimulationError(f"job {job} needs {w.gpus[job]} GPUs, placement "
                                      f"{placement} gives a different number")
            gpp = w.gpus_per_pod[job]
            if not w.spread[job] and any(c % gpp for _, c in placement):
                raise SimulationError(f"job {job}: each pod needs {gpp} GPUs on one node; placement {placement} "
                                      "splits a pod")
        if pool.typed:
            kinds = {pool.gpu_type[nd] for nd in nodes}
            want = w.gpu_type[job]
            if len(kinds) > 1 or (want is not None and kinds != {want}):
                raise SimulationError(f"job {job} must run on one GPU model ({want or 'any'}); placement "
                                      f"{placement} uses {sorted(map(str, kinds))}")

    def start_job(self, ctx: Context, job: int, placement: Placement_t) -> None:
        if self.state[job] != QUEUED:
            raise SimulationError(f"t={self.now}: job {job} cannot start from state "
                                  f"{STATE_NAMES[self.state[job]]}")
        pool = ctx.pool
        if self.milli[job]:
            before = pool.total_free
            pool.allocate_shares(placement, job)
            self.held_gpus += before - pool.total_free
            self.used_gpus += self.demand[job]
        else:
            pool.allocate(placement, job)
            g = self.workload.gpus[job]
            self.held_gpus += g
            self.used_gpus += g
        self.alloc[job] = [placement, {job}, job]
        ctx.running.add(job)
        now = self.now
        self.wait[job] += now - self.since[job]
        if self.first_start[job] == INF:
            self.first_start[job] = now
        self.log("start", job, placement)
        if self.performance is not None:
            self._respeed_start(ctx, job)
        self._load_or_train(job, now, self.remaining[job])

    # -- placement-dependent speed ----------------------------------------------------------------
    def _sharers(self, ctx: Context, job: int) -> list[int]:
        """Jobs sharing at least one GPU with ``job`` (fractional pods on the same GPUs, packed partners)."""
        record = self.alloc[job]
        out = set(record[1])
        if len(record[0][0]) == 3:
            shares = ctx.pool.shares
            for node, gpu, _ in record[0]:
                out.update(shares.get(node, {}).get(gpu, ()))
        out.discard(job)
        return sorted(out)

    def _model_speed(self, ctx: Context, job: int) -> float:
        speed = self.performance.speed(job, self.alloc[job][0], self._sharers(ctx, job))
        if not speed > 0:
            raise SimulationError(f"performance model gave job {job} speed {speed}; speeds must be positive")
        return speed

    def _respeed_start(self, ctx: Context, job: int) -> None:
        self.speed[job] = self._model_speed(ctx, job)
        for other in self._sharers(ctx, job):
            if len(self.alloc[other][1]) == 1:  # packed pairs keep the speeds their policy gave
                self._set_speed(other, self._model_speed(ctx, other))

    def _push(self, at: float, kind: int, job: int) -> None:
        self._seq += 1
        heapq.heappush(self.heap, (at, kind, self._seq, job, self.epoch[job]))

    def _load_or_train(self, job: int, now: float, train_s: float) -> None:
        """A started (or packed) job loads for its load time plus any restart overhead, then trains;
        ``train_s`` is its expected training time from now (for ``expected_end``)."""
        lt = self.workload.load_time[job]
        extra = self.overhead.pop(job, 0.0) if self.overhead else 0.0
        if extra:
            lt += extra
            self.load_extra[job] = extra
        elif self.load_extra:
            self.load_extra.pop(job, None)
        if lt > 0:
            self.state[job] = LOADING
            self.since[job] = now
            self.expected_end[job] = now + lt + train_s
            self._push(now + lt, EV_LOADED, job)
        else:
            self._begin_training(job)

    def load_end(self, job: int) -> float:
        """When a loading job's load ends: its load time plus the restart overhead its start added."""
        return self.since[job] + self.workload.load_time[job] + self.load_extra.get(job, 0.0)

    def _begin_training(self, job: int) -> None:
        now = self.now
        self.state[job] = RUNNING
        self.since[job] = now
        self.seg_start[job] = now
        if self._track_attempts:
            self.attempt_start[job] = now
            self.attempt_work[job] = self.work_done[job]
        end = now + self.remaining[job] / self.speed[job]
        self.expected_end[job] = end
        self._push(end, EV_FINISH, job)
        if self._after:
            self._arm_after(job)

    def _arm_after(self, job: int) -> None:
        """Schedule the job's next relative failure in this running segment (if it comes before the end)."""
        pending = self._after.get(job)
        if not pending:
            return
        left = max(0.0, pending[0].after - self.work_done[job])
        if left >= self.remaining[job]:
            return  # it finishes first
        self._seq += 1
        heapq.heappush(self.heap, (self.now + left / self.speed[job], EV_FAILURE, self._seq, job, self.epoch[job]))

    def _checkpoint(self, job: int) -> None:
        """Fold the running segment into the accumulators (progress kept)."""
        now = self.now
        elapsed = now - self.seg_start[job]
        done = min(self.remaining[job], elapsed * self.speed[job])
        self.remaining[job] -= done
        self.work_done[job] += done
        self.train[job] += elapsed
        self.seg_start[job] = now

    def _release(self, ctx: Context, job: int) -> None:
        record = self.alloc[job]
        self.alloc[job] = None
        members = record[1]
        members.discard(job)
        ctx.running.discard(job)
        if members:
            ctx.pool.version += 1
            self.used_gpus -= self.demand[job]
            # A packed partner keeps the GPUs and runs solo again.
            if record[2] == job:  # the pool's holder record passes to a partner
                heir = min(members)
                record[2] = heir
                if len(record[0][0]) == 3:  # shares
                    for node, gpu, _ in record[0]:
                        h = ctx.pool.shares[node][gpu]
                        if job in h:
                            h[heir] = h.pop(job)
                else:
                    for node, _ in record[0]:
                        h = ctx.pool.holders[node]
                        if job in h:
                            h[heir] = h.pop(job)
            perf = self.performance
            for other in members:
                self._set_speed(other, 1.0 if perf is None else self._model_speed(ctx, other))
        elif len(record[0][0]) == 3:  # the last holder of fractional shares
            self.used_gpus -= self.demand[job]
            self._milli_owner_release(ctx, record, job)
        else:
            ctx.pool.release(record[0], record[2])
            self.used_gpus -= self.demand[job]
            self.held_gpus -= self.workload.gpus[record[2]]

    def _milli_owner_release(self, ctx: Context, record: list, job: int) -> None:
        pool = ctx.pool
        before = pool.total_free
        sharers = self._sharers_of(ctx, record[0], record[2]) if self.performance is not None else ()
        pool.release_shares(record[0], record[2])
        self.held_gpus -= pool.total_free - before
        for other in sharers:
            if self.alloc[other] is not None and len(self.alloc[other][1]) == 1:
                self._set_speed(other, self._model_speed(self.contexts[self.partition_of[other]], other))

    def _sharers_of(self, ctx: Context, placement: Placement_t, job: int) -> list[int]:
        out: set[int] = set()
        for node, gpu, _ in placement:
            out.update(ctx.pool.shares.get(node, {}).get(gpu, ()))
        out.discard(job)
        return sorted(out)

    def what_if(self, ctx: Context, job: int, freed: Iterable[int]) -> Placement_t | None:
        """Would ``job`` fit if the records all of whose members are in ``freed`` were released?

        Whole-GPU case (the common one): answered on a scratch copy of the pool kept while the pool
        does not change, so that preemptive policies asking with a growing victim list pay only for
        the new victims; a GPU count check comes first and avoids placing at all. Otherwise: release
        on the pool itself, place, and restore it exactly. Either way nothing visible changes."""
        pool, alloc, gpus, part_of, p = ctx.pool, self.alloc, self.workload.gpus, self.partition_of, ctx.partition
        if not isinstance(freed, (set, frozenset)):
            freed = set(freed)
        if not self.milli[job] and not pool.shares:
            cached = self._what_if.get(p)
            if cached is not None and cached[0] == pool.version and cached[1] <= freed:
                _, jobs, scratch, gained, pending = cached
                new = freed - jobs
            else:
                jobs, scratch, gained, pending, new = frozenset(), None, 0, [], freed
            simple = True
            added = []
            for j in new:
                record = alloc[j]
                if record is None or part_of[j] != p:
                    raise SimulationError(f"t={self.now}: job {j} holds no GPUs in partition {p}")
                if len(record[1]) > 1:
                    simple = False  # packed GPUs free only with all their jobs: the general path
                    break
                added.append(record)
                gained += gpus[j]
            if simple:
                pending = pending + added
                if gpus[job] > pool.total_free + gained:
                    self._what_if[p] = (pool.version, jobs | new, scratch, gained, pending)
                    return None
                if scratch is None:
                    scratch = pool.scratch()
                for record in pending:
                    scratch.release(record[0])
                self._what_if[p] = (pool.version, jobs | new, scratch, gained, [])
                return ctx.placement.place(scratch, self.requests[job])
        records, seen = [], set()
        for j in freed:
            record = alloc[j]
            if record is None or part_of[j] != p:
                raise SimulationError(f"t={self.now}: job {j} holds no GPUs in partition {p}")
            key = id(record)
            if key in seen:
                continue
            seen.add(key)
            if len(record[1]) > 1 and not record[1] <= freed:
                continue
            records.append(record)
        done = []
        try:
            for record in records:
                if len(record[0][0]) == 3:
                    pool.release_shares(record[0], record[2])
                else:
                    pool.release(record[0], record[2])
                done.append(record)
            return ctx.placement.place(pool, self.requests[job])
        finally:
            for record in reversed(done):
                if len(record[0][0]) == 3:
                    pool.allocate_shares(record[0], record[2])
                else:
                    pool.allocate(record[0], record[2])

    def monotone(self, ctx: Context, job: int) -> bool:
        return type(ctx.placement) is Consolidate and type(self.requests[job]) is int and not ctx.pool.typed

    def fitting_prefix(self, ctx: Context, job: int, victims: Sequence[int], misfits: int) -> int:
        """See Context.fitting_prefix. Prefixes are asked in growing order (the what-if scratch pool
        then only releases the new victim) and only once the freed GPUs could cover the job. When a fit
        can never turn into a misfit by freeing more (``_monotone``), the whole list is asked first:
        if even that does not fit, no prefix does and the per-prefix placements are skipped (most
        failing preemption searches of Tiresias on Philly end so)."""
        if misfits >= len(victims):
            return 0
        if self.monotone(ctx, job) and self.what_if(ctx, job, set(victims)) is None:
            return 0
        gpus, milli = self.workload.gpus, self.milli
        need = gpus[job] if not milli[job] else 0
        room = ctx.pool.total_free
        freed: set[int] = set()
        for k, v in enumerate(victims, 1):
            freed.add(v)
            room = room + gpus[v] if not milli[v] else INF
            if k > misfits and room >= need and self.what_if(ctx, job, freed) is not None:
                return k
        return 0

    def _set_speed(self, job: int, speed: float) -> None:
        if speed <= 0:
            raise SimulationError(f"job {job}: speed must be positive, got {speed}")
        if self.state[job] == RUNNING:
            self._checkpoint(job)
            self.speed[job] = speed
            self.epoch[job] += 1
            end = self.now + self.remaining[job] / speed
            self.expected_end[job] = end
            self._push(end, EV_FINISH, job)
            if self._after:
                self._arm_after(job)
        else:
            self.speed[job] = speed
            if self.state[job] == LOADING:
                self.expected_end[job] = self.load_end(job) + self.remaining[job] / speed

    def _stop(self, job: int, verb: str, ctx: Context | None = None) -> int:
        """Common bookkeeping of a preemption or eviction; returns the state the job was in."""
        st = self.state[job]
        if st not in (LOADING, RUNNING):
            raise SimulationError(f"t={self.now}: job {job} cannot be {verb} while {STATE_NAMES[st]}")
        if ctx is not None and self.partition_of[job] != ctx.partition:
            raise SimulationError(f"t={self.now}: job {job} runs in partition {self.partition_of[job]}; "
                                  f"partition {ctx.partition} cannot have it {verb}")
        self.preemptions[job] += 1
        self.epoch[job] += 1
        self.expected_end[job] = INF
        if st == LOADING:  # its load so far is wasted: futile preemption (Lazer's definition)
            spent = self.now - self.since[job]
            self.load[job] += spent
            self.futile[job] += spent
        return st

    def _requeue(self, ctx: Context, job: int) -> None:
        """Free the job's GPUs now and hand it back to its policy as waiting."""
        self._release(ctx, job)
        self.state[job] = QUEUED
        self.since[job] = self.now
        self.policies[ctx.partition].on_requeue(job)

    def preempt_job(self, ctx: Context, job: int) -> None:
        st = self._stop(job, "preempted", ctx)
        if st == LOADING:
            self.log("preempt-loading", job)
            self._requeue(ctx, job)
            return
        self._checkpoint(job)
        self.log("preempt", job)
        save = self.workload.save_time[job]
        if save > 0:  # holds its GPUs while writing the checkpoint
            self.state[job] = SAVING
            self.since[job] = self.now
            self._push(self.now + save, EV_SAVED, job)
        else:
            self._requeue(ctx, job)

    def evict_job(self, ctx: Context, job: int) -> None:
        st = self._stop(job, "evicted", ctx)
        self.evictions[job] += 1
        if st == RUNNING and self.workload.checkpoint[job] < INF:
            self._lose_since_checkpoint(job)
        elif st == RUNNING:  # progress since the last start is lost and will be redone
            elapsed = self.now - self.seg_start[job]
            self.train[job] += elapsed
            self.lost[job] += elapsed
        self.log("evict", job)
        self._requeue(ctx, job)

    def pack_job(self, ctx: Context, job: int, host: int, speed_job: float, speed_host: float) -> None:
        if self.state[job] != QUEUED or self.state[host] not in (LOADING, RUNNING):
            raise SimulationError(f"t={self.now}: cannot pack job {job} ({STATE_NAMES[self.state[job]]}) "
                                  f"onto job {host} ({STATE_NAMES[self.state[host]]})")
        if self.workload.gpus[job] != self.workload.gpus[host] or len(self.alloc[host][1]) != 1:
            raise SimulationError(f"job {job} can share only the GPUs of a solo host with the same GPU count")
        record = self.alloc[host]
        record[1].add(job)
        self.alloc[job] = record
        ctx.pool.version += 1
        self.used_gpus += self.demand[job]
        ctx.running.add(job)
        now = self.now
        self.wait[job] += now - self.since[job]
        if self.first_start[job] == INF:
            self.first_start[job] = now
        self.log("pack", job, host)
        self.speed[job] = speed_job
        self._set_speed(host, speed_host)
        self._load_or_train(job, now, self.remaining[job] / speed_job)

    # -- failures ----------------------------------------------------------------------------------
    def _fail_job(self, job: int, cause: str, delay: float | None = None) -> None:
        """A failure hits ``job``: stop it, lose the work since its last checkpoint, apply the restart
        rule. Jobs not holding GPUs are not affected; a saving job keeps its checkpoint."""
        st = self.state[job]
        if st not in (LOADING, RUNNING, SAVING):
            return
        ctx = self.contexts[self.partition_of[job]]
        now = self.now
        self.epoch[job] += 1
        self.expected_end[job] = INF
        if st == SAVING:  # the checkpoint is written remotely: the save counts as done
            self.save[job] += now - self.since[job]
            self.log("saved", job, cause)
            self._requeue(ctx, job)
            self.mark_dirty(ctx.partition)
            return
        self.failures[job] += 1
        if st == LOADING:
            self.load[job] += now - self.since[job]
        else:
            self._lose_since_checkpoint(job)
        self._release(ctx, job)
        self.log("fail", job, cause)
        self.fail_cause[job] = cause
        on_failure = getattr(self.policies[ctx.partition], "on_failure", None)
        if self.restart.restart(self.failures[job]):
            self.state[job] = RESTARTING
            self.since[job] = now
            if on_failure is not None:
                asked = on_failure(job)  # a policy may choose the restart delay (seconds)
                if isinstance(asked, (int, float)) and not isinstance(asked, bool):
                    if not (math.isfinite(asked) and asked >= 0):
                        raise SimulationError(f"t={now}: on_failure({job}) returned restart delay {asked}; "
                                              "need a finite number >= 0")
                    delay = float(asked)
            self._push(now + (self.restart.delay if delay is None else delay), EV_RESTART, job)
        else:
            self.state[job] = FAILED
            self.end[job] = now
            self.unfinished -= 1
            self.failed_count += 1
            self.log("failed", job)
            if on_failure is not None:
                on_failure(job)
        self.mark_dirty(ctx.partition)

    def _lose_since_checkpoint(self, job: int) -> None:
        """A running job stops without saving: fold its segment, then give back the work done since
        its last checkpoint (every ``checkpoint`` s of training since the attempt began; none: the
        whole attempt). The lost wall time stays in ``train`` and is counted in ``lost``."""
        self._checkpoint(job)
        attempt = self.now - self.attempt_start[job]
        work = self.work_done[job] - self.attempt_work[job]
        interval = self.workload.checkpoint[job]
        kept_wall = math.floor(attempt / interval) * interval if interval < INF else 0.0
        kept = work * (kept_wall / attempt) if attempt > 0 else 0.0
        lost_work = work - kept
        self.work_done[job] -= lost_work
        self.remaining[job] += lost_work
        self.lost_work[job] += lost_work
        self.lost[job] += attempt - kept_wall

    def _node_failure(self, failure: "Failure") -> None:
        p = self.partition_index(failure.partition)
        ctx = self.contexts[p]
        pool, node = ctx.pool, failure.node
        if not 0 <= node < len(pool.capacity):
            raise SimulationError(f"t={self.now}: failure names node {node}; partition {p} has "
                                  f"{len(pool.capacity)} node slots")
        if not pool.capacity[node] or node in pool.down:
            return  # moved away, or already down
        for job in sorted(set(pool.jobs_on(node)) | self._guests_on(ctx, node)):
            self._fail_job(job, failure.cause or f"node {node} of partition {p}", failure.restart_delay)
        pool.set_down(node)
        self.log("node-down", -1, (p, node))
        self._seq += 1
        heapq.heappush(self.heap, (self.now + failure.repair, EV_REPAIR, self._seq, -1, (p, node)))
        self.mark_dirty(p)

    def _guests_on(self, ctx: Context, node: int) -> set[int]:
        """Packed guests sharing a host's GPUs on ``node`` (the pool records only the holder)."""
        out = set()
        for job in ctx.pool.jobs_on(node):
            record = self.alloc[job]
            if record is not None:
                out.update(record[1])
        return out
