"""A-SRPT (INFOCOM '25, Alg. 1; our reading): a virtual single machine running preemptive SRPT guides a
non-preemptive, strictly ordered real cluster with communication-aware placement.

- **Sizes.** Job i asks for g_i GPUs; its predicted iterations ñ_i come from ``ctx.prediction(job,
  "iterations")`` (the registered ``iterations`` task: a random forest on group and user ids; unseen
  groups predict 0). With ``iterations="perfect"`` (A-SRPT-Perfect) the true count is used:
  of the performance model (the trace's ``iterations`` column, else ``duration_i / alpha~_min_i``: see
  sim.asrpt.jobs). Without any
  iteration predictions the duration prediction stands in (``duration / alpha~_min``).
  alpha~_min_i / alpha_max_i come from sim.asrpt.iteration (Heavy-Edge on the fewest servers / fully
  spread); a job without a stage profile has alpha = 1 (an "iteration" is a second) and is never
  communication-heavy.
- **Virtual machine.** One machine of speed 1 runs preemptive SRPT on sizes
  ``p_i = (g_i / G) ñ_i alpha~_min_i`` (G: the partition's GPUs). A job enters the real queue when it
  completes there (ties: arrival order; a size-0 job at once). Virtual completions are engine timers,
  so the policy is event-driven: arrivals, virtual completions, real completions and delay expiries.
- **Real cluster (Alg. 1).** Jobs start strictly in real-queue order and are never preempted: the head
  blocks. A job is communication-heavy when ``alpha_max / alpha~_min >= COMM_HEAVY`` (``heavy_ratio``,
  1.5). Lines of Alg. 1 as implemented (``start="paper"``, the default):

  1. the head job j of the real queue; if it is not communication-heavy it starts on the servers with
     the fewest free GPUs (the tightest fit) as soon as they hold it;
  2. a heavy job is placed on the servers of most availability (x = most free GPUs first; Heavy-Edge
     maps its stages there); if ``alpha(x) / alpha~_min <= COMM_HEAVY`` it starts at once;
  3. otherwise it waits, up to ``tau (g_j / G) ñ_j alpha~_min_j`` seconds from this first assessment
     (a timer marks the end of the window), re-assessing x at every event;
  4. (lines 15-18) during the window it takes the first allocation whose ``alpha(x) / alpha~_min`` is
     below ``kappa`` (default 1.5, = COMM_HEAVY; the ratio form is our reading of "alpha below kappa");
  5. when the window is over it takes the servers of most availability whatever their alpha.

  Whether a heavy head job in its window holds the queue is a reading: Alg. 1 pops the job at line 7
  (asrpt.txt:156) before its delay loop (lines 15-20), which leaves open whether the loop blocks the
  outer one. ``delay="block"`` (the default, as before) keeps it at the head and nothing behind it
  starts; ``delay="pop"`` moves it aside: it is tried first at every later event (taking the first
  allocation below kappa, or the most available servers once its window is over and it fits) while the
  jobs behind it go on in order.

  ``start="min"`` is schedcast's first reading (kept for the ledger's causes): a heavy job waits
  whenever ``alpha(x) > alpha~_min`` and starts only on an allocation as fast as alpha~_min (or at the
  end of the window). ``tau`` defaults to 1.0 (the paper leaves it open; the ledger sweeps it).
- **Work-conserving variant** (``work_conserving=True``, ours, not the paper's): when the head cannot
  start, later jobs of the real queue that fit start (in real-queue order); a communication-heavy job's
  delay then runs from when it was first tried. The benchmark uses it to measure how much of the gap to
  the work-conserving (WCS) baselines is the strict order. Its real queue is a
  :class:`sim.policies.base.ShapedQueue` keyed by real-queue position: a pass looks at the head of each
  request shape and drops a shape for the pass once a job of it does not *fit* (starts only take GPUs
  away), but goes on to the next job of a shape whose job was refused by the start rule (a heavy job in
  its window), so the jobs tried, their order and every decision are those of the job-by-job scan
  (``_wc_pass_reference``, kept for the test that compares both); with a runaway queue (Fig. 7's 0 %
  single-GPU set at 1 Gb/s) that scan made each event O(queue).
- **Eager variant** (``eager=True``, ours): a job waits on the virtual machine until it completes there,
  even while real GPUs sit idle (on an empty cluster a job still waits its own virtual time, and a burst
  is released at the virtual machine's pace). With ``eager`` idle GPUs take jobs still on the virtual
  machine in virtual SRPT order (least remaining virtual work first) whenever the real queue is empty
  (strict) or after it (work-conserving). The benchmark measures what the wait on the virtual machine
  costs with it.
- **Size-ordered real queue** (``order="size"``, ours): the paper's real queue keeps virtual completion
  order, which is first-come-first-served among released jobs; when the real cluster falls behind the
  virtual machine (non-preemptive, long jobs, fragments) the real queue grows and a short job released
  late waits behind long ones released earlier. ``size`` keeps the released jobs sorted by virtual size
  p_i instead (the virtual machine still decides when a job may start).
- **Speed.** At its first decision the policy installs :class:`sim.asrpt.performance.IterationSpeed`
  (Eq. 4-7 with the cluster's bandwidths, ``inter_gbit`` / ``allreduce`` override them) unless the
  replay already has a performance model, so a job's run time is n_i x alpha_i(x).
"""
from __future__ import annotations

import bisect
import heapq
from typing import Any

from features.plugins import POSITIVE, Domain
from sim.policies.base import Policy, ShapedQueue, misfits_stay, request_shape

_EPS = 1e-9


class ASrpt(Policy):
    name = "a-srpt"
    EAGER_SCAN = 512
    summary = "A-SRPT: virtual single-machine SRPT on predicted iterations, communication-aware placement"
    citation = "Luo et al., Prediction-Assisted Online Distributed DL Workload Scheduling (INFOCOM'25)"
    uses_predictions = True
    default_placement = "heavy-edge"
    #: each numeric parameter's domain (features.plugins.Domain)
    param_domains = {"tau": Domain(ge=0.0, le=1e6), "heavy_ratio": Domain(ge=1.0), "kappa": Domain(ge=1.0),
                     "inter_gbit": POSITIVE}
    param_docs = {
        "tau": "delay factor: a communication-heavy head job waits up to tau x its virtual size for a faster placement",
        "heavy_ratio": "COMM_HEAVY: alpha_max / alpha_min at or above which a job is communication-heavy, and alpha(x) / alpha_min up to which a heavy job starts at once",
        "kappa": "during the delay window a heavy job takes the first allocation with alpha(x) / alpha_min below kappa",
        "start": "paper (Alg. 1 lines 12-18) or min (ours, the first reading: wait whenever alpha(x) > alpha_min)",
        "iterations": "predicted (ctx.prediction 'iterations') or perfect (true iterations)",
        "inter_gbit": "NIC bandwidth in Gb/s (default: the cluster's)",
        "allreduce": "ring or tree",
        "work_conserving": "ours, not the paper's: when the head cannot start, later jobs of the real queue may",
        "eager": "ours, not the paper's: idle GPUs take jobs still on the virtual machine, in virtual SRPT order",
        "order": "real queue order: virtual (completion on the virtual machine, the paper) or size (ours: smallest virtual size first)",
        "delay": "block (default: a heavy head job in its delay window holds the real queue) or pop (Alg. 1 line 7 pops it first: it waits aside and later jobs go on)",
    }

    def __init__(self, tau: float = 1.0, heavy_ratio: float = 1.5, iterations: str = "predicted",
                 inter_gbit: float | None = None, allreduce: str = "ring", work_conserving: bool = False,
                 eager: bool = False, order: str = "virtual", kappa: float = 1.5, start: str = "paper",
                 nic: str = "share", delay: str = "block"):
        if delay not in ("block", "pop"):
            raise ValueError("delay must be 'block' or 'pop'")
        self.delay_mode = delay
        self.aside: list[int] = []  # delay="pop": heavy jobs popped from the real queue, waiting in their window
        if order not in ("virtual", "size"):
            raise ValueError("order must be 'virtual' or 'size'")
        if start not in ("paper", "min"):
            raise ValueError("start must be 'paper' or 'min'")
        if kappa < 1:
            raise ValueError("kappa must be >= 1")
        if nic not in ("share", "whole"):
            raise ValueError("nic must be 'share' or 'whole'")
        self.order, self.kappa, self.start_rule, self.nic = order, float(kappa), start, nic
        self.immediate_heavy = 0  # heavy jobs started at once (alpha(x) / alpha_min <= COMM_HEAVY)
        self.window_starts = 0  # heavy jobs started inside their window (ratio below kappa)
        if tau < 0 or heavy_ratio < 1:
            raise ValueError("tau must be >= 0 and heavy_ratio >= 1")
        if iterations not in ("predicted", "perfect"):
            raise ValueError("iterations must be 'predicted' or 'perfect'")
        self.tau, self.heavy_ratio, self.mode = float(tau), float(heavy_ratio), iterations
        self.inter_gbit, self.allreduce = inter_gbit, allreduce
        self.work_conserving, self.eager = bool(work_conserving), bool(eager)
        self.eager_starts = 0
        self.virtual: list[tuple[float, int]] = []  # (remaining virtual work, job): a heap
        self.vnow = 0.0
        self.real: list[int] | ShapedQueue = []  # real queue in virtual completion order (work-conserving: shaped)
        self._shaped = self.work_conserving  # the real queue is a ShapedQueue (until a requeue in size order)
        if self._shaped:
            self.real = ShapedQueue()
        self._seq = 0  # real-queue position keys of the shaped queue
        self._fit_failed = False  # why the last _try returned False: the job did not fit (else: the start rule)
        self.size: dict[int, float] = {}
        self.heavy: dict[int, bool] = {}
        self.amin: dict[int, float] = {}  # alpha~_min of each arrived job (fixed: its model and GPU count)
        # _try's last look (job, pool, pool.version) -> (placement, alpha ratio): a head job re-assessed at an
        # event that changed no allocation (an arrival, a virtual completion, a timer) gets the same servers
        self._look: tuple = (None, None, -1)
        self._look_val: tuple = (None, None)
        self.window_end: dict[int, float] = {}
        self._timer_at = -1.0
        self.perf = None
        self.delayed = 0
        self.delay_expired = 0
        self.virtual_done = 0
        self.max_waiting = 0
        self.arrived: dict[int, float] = {}
        self._blocked_since = (0.0, 0)  # (time, free GPUs) after the last pass, when the real queue was not empty
        self.blocked_gpu_s = 0.0  # GPU-seconds free while jobs sat in the real queue (head-of-line blocking)
        self.virtual_delay = 0.0  # sum over jobs of (virtual completion - arrival), s

    # -- set-up ----------------------------------------------------------------------------------
    def _performance(self):
        if self.perf is None:
            from sim.asrpt.performance import IterationSpeed

            current = self.ctx.performance
            if isinstance(current, IterationSpeed):
                self.perf = current
            else:
                self.perf = IterationSpeed(inter_gbit=self.inter_gbit, allreduce=self.allreduce, nic=self.nic)
                if current is None:
                    self.ctx.use_performance(self.perf)
                else:  # another model decides speeds; we still need alphas for decisions
                    self.ctx.prepare_performance(self.perf)
        return self.perf

    def alphas(self, job: int) -> tuple[float, float]:
        """(alpha~_min, alpha_max) of a job; (1, 1) without a stage profile."""
        perf = self._performance()
        model, g = perf.model[job], self.ctx.jobs.gpus[job]
        amin = perf.alpha_min(model, g) if model is not None else None
        if amin is None:
            return 1.0, 1.0
        amax = perf.alpha_max(model, g)
        return amin, amax if amax is not None else amin

    def predicted_iterations(self, job: int, amin: float) -> float:
        ctx = self.ctx
        if self.mode == "perfect":
            return float(self._performance().true_iterations[job])
        if ctx.has_prediction("iterations"):
            return max(0.0, float(ctx.prediction(job, "iterations")))
        return max(0.0, ctx.prediction(job)) / amin

    # -- virtual single machine --------------------------------------------------------------------
    def _advance(self) -> None:
        now = self.ctx.now
        dt = now - self.vnow
        self.vnow = now
        heap = self.virtual
        while heap:
            rem, job = heap[0]
            if rem <= dt + _EPS:
                heapq.heappop(heap)
                dt -= rem
                self._virtual_complete(job, now - max(0.0, dt))
            else:
                if dt > 0:
                    heapq.heapreplace(heap, (rem - dt, job))
                break
        if heap:
            at = now + heap[0][0]
            if at != self._timer_at:
                self._timer_at = at
                self.ctx.set_timer(at, ("asrpt-virtual", at))

    def _virtual_complete(self, job: int, at: float) -> None:
        self.virtual_done += 1
        self.virtual_delay += max(0.0, at - self.arrived.pop(job, at))
        if self._shaped:
            self._seq += 1
            key = (1, self.size[job], self._seq) if self.order == "size" else (1, self._seq)
            self.real.add(key, job, self._shape(job))
        elif self.order == "size":  # ours: smallest virtual size first (ties: virtual completion order)
            size = self.size
            bisect.insort_right(self.real, job, key=lambda j: size[j])
        else:
            self.real.append(job)

    def _shape(self, job: int) -> Any:
        """The shaped real queue's bucket of ``job``: jobs of one shape fit or not together, and a misfit
        stays one for the rest of a pass. Heavy-Edge's own path (``_try``: one spread pod of whole GPUs, untyped
        pool) fits iff ``g`` GPUs are free on uncordoned servers; a request the partition places (``try_start``)
        shares a shape only under :func:`sim.policies.base.misfits_stay`; None: a bucket of its own."""
        ctx = self.ctx
        jobs = ctx.jobs
        if jobs.spread[job] and jobs.gpu_type[job] is None and not ctx.pool.typed:
            shape = request_shape(ctx, job)
            return None if shape is None else ("own", shape)
        return request_shape(ctx, job) if misfits_stay(ctx) else None

    # -- events --------------------------------------------------------------------------------------
    def on_arrival(self, job: int) -> None:
        self._advance()
        amin, amax = self.alphas(job)
        n = self.predicted_iterations(job, amin)
        g = self.ctx.jobs.gpus[job]
        p = g / max(1, self.ctx.capacity) * n * amin
        self.size[job] = p
        self.amin[job] = amin
        self.arrived[job] = self.ctx.now
        self.heavy[job] = amax / amin >= self.heavy_ratio
        heapq.heappush(self.virtual, (p, job))
        self._advance()
        waiting = len(self.virtual) + len(self.real)
        if waiting > self.max_waiting:
            self.max_waiting = waiting

    def on_requeue(self, job: int) -> None:
        if self._shaped and self.order == "size":
            # bisect.insort on a list whose head broke the size order has no key form: the list from now on
            self.real = [j for _, j in self.real.items]
            self._shaped = False
        if self._shaped:
            self._seq += 1
            self.real.add((0, -self._seq), job, self._shape(job))  # the latest requeued job is the head
            return
        self.real.insert(0, job)  # restarted after a failure: back at the head

    def on_transfer(self, job: int) -> None:
        self.on_arrival(job)

    def on_timer(self, payload: Any) -> None:
        self._advance()

    def schedule(self) -> None:
        self._advance()
        t0, free0 = self._blocked_since
        self.blocked_gpu_s += free0 * (self.ctx.now - t0)
        self._schedule()
        self._blocked_since = (self.ctx.now, self.ctx.pool.total_free if self.real else 0)

    def _schedule(self) -> None:
        real = self.real
        if self.aside:  # delay="pop": jobs popped at line 7 go first (they left the queue before the rest)
            self.aside = [job for job in self.aside if not self._try(job)]
        if real:
            if not self.work_conserving:
                started = 0
                popped = []
                for job in real:
                    if not self._try(job):
                        if self.delay_mode == "pop" and not self._fit_failed and job in self.window_end:
                            popped.append(job)  # line 7: popped, it waits out its window off the queue
                            started += 1
                            continue
                        break
                    started += 1
                if started:
                    del real[:started]
                    self.aside.extend(popped)
                if self.real and not self.eager:
                    return
            elif self._shaped:
                self._wc_pass_shaped()
            else:
                self._wc_pass_reference()
        if self.eager and self.virtual and (not self.real or self.work_conserving):
            self._start_virtual()

    def _wc_pass_shaped(self) -> None:
        """The work-conserving pass over the shaped real queue: the heads of the shapes merged in real-queue
        order; a shape whose job did not fit is done for the pass (every later job of it would not fit either:
        same request, fewer free GPUs), one whose job started or was held by the start rule offers its next
        job. The jobs tried and their order are those of :meth:`_wc_pass_reference` minus misfits, which
        change nothing there (``_try`` returns before any side effect)."""
        queue, pool = self.real, self.ctx.pool
        if pool.total_free <= 0:
            return
        shapes = queue.shapes
        heads = [(bucket[0], 0, shape) for shape, bucket in shapes.items()]
        heapq.heapify(heads)
        started = []
        pop, push = heapq.heappop, heapq.heappush
        while heads and pool.total_free > 0:
            (_, job), i, shape = pop(heads)
            if self._try(job):
                started.append(job)
            elif self._fit_failed:
                continue
            bucket = shapes[shape]
            if i + 1 < len(bucket):
                push(heads, (bucket[i + 1], i + 1, shape))
        for job in started:
            queue.remove(job)

    def _wc_pass_reference(self) -> None:
        """The job-by-job work-conserving pass over a list real queue (every waiting job tried in order):
        the definition :meth:`_wc_pass_shaped` must match (tests/test_asrpt_policy.py replays both), and
        the pass after a requeue in ``order="size"``."""
        real, pool = self.real, self.ctx.pool
        keep = []
        for i, job in enumerate(real):
            if pool.total_free <= 0:
                keep.extend(real[i:])
                break
            if not self._try(job):
                keep.append(job)
        if len(keep) != len(real):
            self.real = keep

    def _start_virtual(self) -> None:
        """``eager`` (ours): GPUs left idle take jobs still on the virtual machine, in virtual SRPT order
        (least remaining virtual work first); strict mode stops at the first that cannot start, the
        work-conserving one skips it; at most ``EAGER_SCAN`` are looked at per pass. A job started this
        way leaves the virtual machine."""
        pool, now = self.ctx.pool, self.ctx.now
        if pool.total_free <= 0:
            return
        gpus = self.ctx.jobs.gpus
        started = set()
        heap = list(self.virtual)  # popped lazily: only the entries looked at are ordered
        for _ in range(min(len(heap), self.EAGER_SCAN)):
            _, job = heapq.heappop(heap)
            free = pool.total_free
            if free <= 0:
                break
            if gpus[job] > free:
                if self.work_conserving:
                    continue
                break
            if self._try(job):
                started.add(job)
                self.virtual_delay += max(0.0, now - self.arrived.pop(job, now))
                self.eager_starts += 1
            elif not self.work_conserving:
                break
        if started:
            self.virtual = [e for e in self.virtual if e[1] not in started]
            heapq.heapify(self.virtual)
            if self.virtual:
                at = now + self.virtual[0][0]
                if at != self._timer_at:
                    self._timer_at = at
                    self.ctx.set_timer(at, ("asrpt-virtual", at))

    def _try(self, job: int) -> bool:
        ctx = self.ctx
        jobs = ctx.jobs
        g = jobs.gpus[job]
        self._fit_failed = True  # until the job fits: a False from here on is the start rule's
        if not ctx.may_fit(job):
            return False
        if not (jobs.spread[job] and jobs.gpu_type[job] is None) or ctx.pool.typed:
            return ctx.try_start(job)  # gangs, fractions, GPU models: the partition's placement
        pool = ctx.pool
        look = (job, pool, pool.version)
        if look == self._look:  # nothing was allocated or released since this job's last look
            placement, ratio = self._look_val
        else:
            from sim.placement.heavy_edge import place_ordered

            heavy = self.heavy.get(job, False)
            placement = place_ordered(pool, g, None, most_free=heavy)  # lines 1-2: tightest / most available
            ratio = None
            if placement is not None and heavy and len(placement) > 1:
                amin = self.amin.get(job)
                if amin is None:
                    amin, _ = self.alphas(job)
                perf = self._performance()
                counts = tuple(sorted((n for _, n in placement), reverse=True))
                a = perf.alpha_of(perf.model[job], g, counts)
                ratio = a / amin if a is not None and amin > 0 else 1.0
            self._look, self._look_val = look, (placement, ratio)
        if placement is None:
            return False
        self._fit_failed = False
        if ratio is not None:
            deadline = self.window_end.get(job)
            if deadline is None:  # first assessment (line 12): start at once when ratio <= COMM_HEAVY
                limit = self.heavy_ratio if self.start_rule == "paper" else 1.0
                if ratio > limit * (1 + 1e-9):
                    deadline = ctx.now + self.tau * self.size.get(job, 0.0)  # line 13: the window
                    if ctx.now < deadline - _EPS:
                        self.window_end[job] = deadline
                        self.delayed += 1
                        ctx.set_timer(deadline, ("asrpt-delay", job))
                        return False
                    self.delay_expired += 1  # a window of zero length
                elif ratio > 1.0 + 1e-9:
                    self.immediate_heavy += 1
            else:  # inside the window (lines 15-18): the first allocation below kappa, else wait
                bound = self.kappa if self.start_rule == "paper" else 1.0
                ok = ratio < bound if self.start_rule == "paper" else ratio <= 1.0 + 1e-9
                if ok:
                    self.window_starts += 1
                elif ctx.now < deadline - _EPS:
                    return False
                else:
                    self.delay_expired += 1  # the window is over: take the servers of most availability
        self.window_end.pop(job, None)
        ctx.start(job, placement)
        return True

    # -- coordinator protocol and stats ------------------------------------------------------------------
    def waiting_count(self) -> int:
        return len(self.virtual) + len(self.real) + len(self.aside)

    def release(self, job: int) -> bool:
        if job in self.aside:
            self.aside.remove(job)
            return True
        if self._shaped:
            if self.real.remove(job):
                return True
        elif job in self.real:
            self.real.remove(job)
            return True
        for i, (_, j) in enumerate(self.virtual):
            if j == job:
                self.virtual.pop(i)
                heapq.heapify(self.virtual)
                return True
        return False

    def stats(self) -> dict[str, Any]:
        return {"virtual_completions": self.virtual_done, "delayed_heads": self.delayed,
                "delay_expiries": self.delay_expired, "max_waiting": self.max_waiting,
                "virtual_delay_h": self.virtual_delay / 3600, "eager_starts": self.eager_starts,
                "heavy_started_at_once": self.immediate_heavy, "window_starts": self.window_starts,
                "real_queue_idle_gpu_h": self.blocked_gpu_s / 3600}


class ASrptPerfect(ASrpt):
    name = "a-srpt-perfect"
    summary = "A-SRPT with the true iteration counts (the paper's A-SRPT-Perfect)"

    def __init__(self, tau: float = 1.0, heavy_ratio: float = 1.5, iterations: str = "perfect",
                 inter_gbit: float | None = None, allreduce: str = "ring", work_conserving: bool = False,
                 eager: bool = False, order: str = "virtual", kappa: float = 1.5, start: str = "paper",
                 nic: str = "share", delay: str = "block"):
        super().__init__(tau, heavy_ratio, iterations, inter_gbit, allreduce, work_conserving, eager, order,
                         kappa, start, nic, delay)
