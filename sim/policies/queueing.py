"""Non-preemptive queue policies: FIFO, SJF, the prediction-ordered ones and the work-conserving family."""
from __future__ import annotations

from typing import Annotated, Any

from features.plugins import SECONDS

from sim.policies.base import Policy, ShapedQueue, SortedQueue, request_shape, start_in_order


class OrderedQueuePolicy(Policy):
    """Start waiting jobs in the order of ``key``; strict (head blocks) unless work-conserving.

    The queue is a :class:`sim.policies.base.ShapedQueue`: a work-conserving pass looks at the head of
    each request shape, not at every waiting job (with thousands waiting and a few GPUs free, the
    job-by-job scan was most of a replay's time); the decisions are those of the job-by-job pass."""

    work_conserving = False

    def __init__(self, work_conserving: bool | None = None):
        if work_conserving is not None:
            self.work_conserving = bool(work_conserving)
        self.queue = ShapedQueue()

    def key(self, job: int) -> Any:
        raise NotImplementedError

    def on_arrival(self, job: int) -> None:
        self.queue.add(self.key(job), job, request_shape(self.ctx, job))

    def schedule(self) -> None:
        start_in_order(self.ctx, self.queue, work_conserving=self.work_conserving)


class Fifo(OrderedQueuePolicy):
    name = "fifo"
    summary = "strict first-in first-out; the head job blocks the queue (Lucid-compatible mode with consolidate)"
    citation = "baseline in Tiresias (NSDI'19), Helios (SC'21), Lucid (ASPLOS'23)"

    def key(self, job: int) -> Any:
        return 0  # ties break by job index = submission order


class Sjf(OrderedQueuePolicy):
    name = "sjf"
    summary = "shortest job first by true duration, non-preemptive, strict order"
    citation = "classic SJF; oracle baseline in Helios (SC'21) and Lazer (DAC'26)"

    def key(self, job: int) -> Any:
        return self.ctx.jobs.duration[job]


class Spjf(OrderedQueuePolicy):
    name = "spjf"
    summary = "shortest predicted job first (predicted duration), non-preemptive"
    citation = "SPJF baseline of Lucid (ASPLOS'23) and Helios QSSF (SC'21)"
    uses_predictions = True

    def key(self, job: int) -> Any:
        return self.ctx.prediction(job)


class Spwf(OrderedQueuePolicy):
    name = "spwf"
    summary = "smallest predicted work first (predicted duration x GPUs), non-preemptive"
    citation = "SPWF baseline of Lucid (ASPLOS'23)"
    uses_predictions = True

    def key(self, job: int) -> Any:
        return self.ctx.prediction(job) * self.ctx.jobs.gpus[job]


class WcsDuration(Spjf):
    name = "wcs-duration"
    summary = "work-conserving: start any job that fits, by predicted duration"
    citation = "work-conserving variants as in Lucid (ASPLOS'23) §5"
    work_conserving = True


class WcsWorkload(Spwf):
    name = "wcs-workload"
    summary = "work-conserving: start any job that fits, by predicted duration x GPUs"
    citation = "work-conserving variants as in Lucid (ASPLOS'23) §5"
    work_conserving = True


class WcsSubTime(Fifo):
    name = "wcs-subtime"
    summary = "work-conserving: start any job that fits, by submission time (greedy backfill)"
    citation = "work-conserving variants as in Lucid (ASPLOS'23) §5"
    work_conserving = True


class Qssf(OrderedQueuePolicy):
    """Helios' Quasi-Shortest-Service-First: priority = GPUs x duration predicted from history.

    The built-in predictor learns online from jobs that have finished before the decision (no
    future information): mean duration of the same user and GPU count, then user, then org and GPU
    count, then org, then all jobs; ``prior`` s before any job finished. A model-backed predictor
    from the registry can replace it (``uses_predictions`` with ``history=False``).
    """

    name = "qssf"
    summary = "quasi-shortest-service-first: GPUs x duration predicted from past jobs, non-preemptive"
    citation = "Hu et al., Helios, SC'21 §5"

    def __init__(self, work_conserving: bool | None = None, history: bool = True,
                 prior: Annotated[float, SECONDS] = 3600.0):
        super().__init__(work_conserving)
        self.history, self.prior = bool(history), float(prior)
        self.uses_predictions = not self.history
        self._sums: dict[tuple, list[float]] = {}

    def bind(self, ctx) -> None:
        super().bind(ctx)
        frame = ctx.jobs.frame
        users = frame["user"].astype(object).where(frame["user"].notna(), None).tolist()
        orgs = frame["org"].astype(object).where(frame["org"].notna(), None).tolist()
        self._users, self._orgs = users, orgs

    def _keys(self, job: int) -> list[tuple]:
        g, u, o = self.ctx.jobs.gpus[job], self._users[job], self._orgs[job]
        keys = []
        if u is not None:
            keys += [("ug", u, g), ("u", u)]
        if o is not None:
            keys += [("og", o, g), ("o", o)]
        return keys + [("all",)]

    def predict(self, job: int) -> float:
        for k in self._keys(job):
            s = self._sums.get(k)
            if s:
                return s[0] / s[1]
        return self.prior

    def key(self, job: int) -> Any:
        pred = self.predict(job) if self.history else self.ctx.prediction(job)
        return pred * self.ctx.jobs.gpus[job]

    def on_finish(self, job: int) -> None:
        d = self.ctx.jobs.duration[job]
        for k in self._keys(job):
            s = self._sums.setdefault(k, [0.0, 0])
            s[0] += d
            s[1] += 1


class FifoBackfill(Policy):
    """FIFO with EASY backfilling: the head job gets a reservation at the earliest time enough GPUs
    free up (from running jobs' predicted ends); later jobs may start now if they fit and either end
    before that time or use only GPUs the head will not need. Reservations count GPUs of the
    partition, not nodes (documented approximation; the head still needs a placement to start)."""

    name = "fifo-backfill"
    summary = "FIFO with EASY backfilling (reservation for the head from predicted run times)"
    citation = "Lifka, 'The ANL/IBM SP scheduling system', JSSPP'95; Mu'alem & Feitelson TPDS'01"
    uses_predictions = True

    def __init__(self) -> None:
        self.queue = SortedQueue()
        self._pred_end: dict[int, float] = {}

    def on_arrival(self, job: int) -> None:
        self.queue.add(0, job)

    def on_finish(self, job: int) -> None:
        self._pred_end.pop(job, None)

    def _start(self, job: int) -> bool:
        ctx = self.ctx
        if ctx.try_start(job):
            w = ctx.jobs
            self._pred_end[job] = ctx.now + w.load_time[job] + max(ctx.prediction(job), 0.0)
            return True
        return False

    def schedule(self) -> None:
        ctx, items, gpus = self.ctx, self.queue.items, self.ctx.jobs.gpus
        while items and self._start(items[0][1]):
            items.pop(0)
        if not items or ctx.free_gpus == 0:
            return
        head = items[0][1]
        need = gpus[head]
        now = ctx.now
        # Shadow time: when enough GPUs will be free for the head, from predicted ends.
        ends = sorted((max(self._pred_end.get(j, now), now), gpus[j]) for j in ctx.running)
        avail, shadow = ctx.free_gpus, float("inf")
        for t, g in ends:
            avail += g
            if avail >= need:
                shadow = t
                break
        extra = avail - need if shadow < float("inf") else 0
        keep = [items[0]]
        for entry in items[1:]:
            job = entry[1]
            g = gpus[job]
            if g > ctx.free_gpus:
                keep.append(entry)
                continue
            ends_before = now + ctx.jobs.load_time[job] + ctx.prediction(job) <= shadow
            if (ends_before or g <= extra) and self._start(job):
                if not ends_before:
                    extra -= g
                continue
            keep.append(entry)
        self.queue.items = keep
