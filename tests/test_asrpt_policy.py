"""A-SRPT policy: virtual SRPT order on a hand-worked trace, unseen groups, the delay rule, invariants."""
from __future__ import annotations

import pytest

from evaluation.metrics import check_identities, job_table
from sim.asrpt.performance import IterationSpeed
from sim.engine import Engine
from sim.placement.heavy_edge import HeavyEdge
from sim.policies.asrpt import ASrpt, ASrptPerfect
from sim.asrpt.profiles import PipelineConfig, Stage
from sim.cluster import Cluster, Partition
from sim.workload import build_workload
from tests.helpers import table, workload
from tests.test_engine_v2_requests import starts


def _run(w, factory, iterations=None, perf=None):
    preds = {"iterations": iterations} if iterations is not None else None
    return Engine(w, factory, placement=HeavyEdge(), predictions=preds, performance=perf,
                  check_invariants=True, record_events=True).run()


def test_virtual_srpt_order_by_hand():
    # One 4-GPU server, no stage profiles (alpha = 1). Sizes p = g/G * n:
    # j0 (t=0, 4 GPUs, n=10): p=10; j1 (t=1, 2 GPUs, n=2): p=1; j2 (t=1, 4 GPUs, n=0, unseen group): p=0.
    # Virtual SRPT: j2 completes at 1, j1 at 2, j0 at 11 (preempted for 1 s). Real cluster, strict order:
    # j2 runs 1-6, j1 6-9 (waits for GPUs), j0 enters the real queue at 11 and runs 11-31.
    w = workload([(0, 20, 4), (1, 3, 2), (1, 5, 4)], nodes=1, gpus=4)
    res = _run(w, ASrpt, iterations=[10.0, 2.0, 0.0])
    st = {j: t for t, kind, j, _ in res.event_log if kind == "start"}
    assert st == {2: 1.0, 1: 6.0, 0: pytest.approx(11.0)}
    assert res.end == pytest.approx([31.0, 9.0, 6.0])
    check_identities(job_table(res))


def test_strict_order_head_blocks():
    # j0 (3 GPUs, n=1 -> p=0.75) enters first; j1 (2 GPUs, n=2 -> p=1) is next but does not fit while j0
    # runs; j2 (1 GPU, n=4 -> p=1) would fit beside j0 but must wait behind j1 (non-preemptive, strict).
    w = workload([(0, 10, 3), (0, 5, 2), (0, 5, 1)], nodes=1, gpus=4)
    res = _run(w, ASrpt, iterations=[1.0, 2.0, 4.0])
    st = {j: t for t, kind, j, _ in res.event_log if kind == "start"}
    assert st[0] == pytest.approx(0.75) and st[1] == pytest.approx(10.75) and st[2] == pytest.approx(10.75)


class D4Catalog:
    """'d4': 2 stages x 2 replicas, 0.4 s each (0.2 s per replica), 3e7 B of activations, no parameters."""

    def config(self, model, gpus):
        if model == "d4" and gpus == 4:
            return PipelineConfig("d4", 4, (Stage(0, 0, 2, 0.4, 3e7, 0.0), Stage(1, 1, 2, 0.4, 0.0, 0.0)))
        return None


def _three_jobs(capacities, policy):
    """Three jobs on servers ``capacities`` (G = 8, g = 4, 1e9 B/s NICs, 1e11 B/s inside):
    j0 plain 4 GPUs, 30 s, predicted n = 0; j1 'd4', predicted n = 10, true n = 100; j2 plain 1 GPU, 5 s,
    predicted n = 16. Virtual SRPT sizes p = g/G n alpha~_min: j0 0 (released at 0), j1 4/8 * 10 *
    0.2006 = 1.003 (released at 1.003), j2 1/8 * 16 * 1 = 2 (released at 3.003)."""
    w = build_workload(table([(0, 30, 4), (0, 30, 4), (0, 5, 1)]),
                       Cluster("alg1", [Partition("default", list(capacities), ["x"] * len(capacities))]))
    w.model = [None, "d4", None]
    perf = IterationSpeed(D4Catalog(), inter_gbit=8.0, intra_gbyte=100.0, iterations=[1.0, 100.0, 1.0])
    res = _run(w, policy, iterations=[0.0, 10.0, 16.0], perf=perf)
    check_identities(job_table(res))
    st = {j: (t, sorted(n for n, _ in pl)) for t, kind, j, pl in res.event_log if kind == "start"}
    return res, st


def test_alg1_alphas_of_the_hand_case():
    # alpha~_min (one 4-GPU server) 0.2 + 6e7/1e11 = 0.2006; alpha_max (one replica per server, 1/4 of the
    # NIC = 2.5e8 B/s) 0.2 + 3e7/2.5e8 = 0.32: ratio 1.595 >= COMM_HEAVY, so 'd4' is communication-heavy.
    perf = IterationSpeed(D4Catalog(), inter_gbit=8.0, intra_gbyte=100.0, gpus_per_server=4)
    assert perf.alpha_min("d4", 4) == pytest.approx(0.2006)
    assert perf.alpha_max("d4", 4) == pytest.approx(0.32)
    # servers 2 + 2: Heavy-Edge puts one replica of each stage per server: 0.2 + 1.5e7/1e11 + 1.5e7/2.5e8
    assert perf.alpha_of("d4", 4, (2, 2)) == pytest.approx(0.26015)  # ratio 1.297 <= 1.5
    # servers 3 + 1: the lone stage-1 replica sends all its 3e7 B over 1/4 of the NIC: 0.32 (ratio 1.595)
    assert perf.alpha_of("d4", 4, (3, 1)) == pytest.approx(0.32)


def test_alg1_heavy_job_starts_at_once_when_the_ratio_is_at_most_comm_heavy():
    # Servers 2, 2, 4. Line 1: j0 (not heavy) takes the tightest server that holds it: server 2. Line 2:
    # at 1.003 j1 (heavy) gets the servers of most availability, 2 + 2: alpha / alpha~_min = 1.297 <= 1.5,
    # so it starts at once and runs 100 x 0.26015 s; j2 (3.003) waits for GPUs, strictly behind nobody,
    # and takes server 0 (tightest) when j1 ends.
    res, st = _three_jobs([2, 2, 4], ASrpt)
    assert st[0] == (0.0, [2]) and st[1] == (pytest.approx(1.003), [0, 1])
    assert res.end[1] == pytest.approx(1.003 + 26.015)
    assert st[2][0] == pytest.approx(27.018)
    # the first reading (start=min) waits whenever alpha > alpha~_min: j1 waits for server 2 (ratio 1)
    # and j2 waits behind it (strict head-of-line order)
    res, st = _three_jobs([2, 2, 4], lambda: ASrpt(start="min", tau=100))
    assert st[1] == (pytest.approx(30.0), [2]) and st[2][0] == pytest.approx(30.0)
    assert res.end[1] == pytest.approx(30 + 20.06)


@pytest.mark.parametrize("tau", [100.0, 1.0])
def test_alg1_window_kappa_and_expiry(tau):
    # Servers 3, 1, 4. j0 takes server 2. At 1.003 j1's most available servers are 3 + 1: ratio 1.595 >
    # 1.5, so it waits (line 3) up to tau * 1.003 s. j2 (released at 3.003) waits behind it although a
    # GPU is free (strict order).
    res, st = _three_jobs([3, 1, 4], lambda: ASrpt(tau=tau))
    if tau == 100.0:
        # lines 15-18: at 30 j0 ends; re-assessed, server 2 alone has ratio 1 < kappa: j1 starts there
        assert st[1] == (pytest.approx(30.0), [2])
        assert res.end[1] == pytest.approx(30 + 100 * 0.2006)
        assert st[2] == (pytest.approx(30.0), [1])  # then j2, on the tightest server (1 free GPU)
    else:
        # the window ends at 1.003 + 1.003: j1 takes the servers of most availability, 3 + 1, at alpha 0.32
        assert st[1] == (pytest.approx(2.006), [0, 1])
        assert res.end[1] == pytest.approx(2.006 + 100 * 0.32)
        assert st[2] == (pytest.approx(30.0), [2])  # no GPU free until j0 ends


def test_alg1_pop_at_line_7_lets_later_jobs_pass_a_delayed_head():
    # The window case of tau 100 read with delay="pop": j1 is popped (line 7) and waits out its window aside,
    # so j2, released at 3.003, starts at once on the tightest server (1 free GPU) instead of at 30.
    res, st = _three_jobs([3, 1, 4], lambda: ASrpt(tau=100.0, delay="pop"))
    assert st[2] == (pytest.approx(3.003), [1])
    assert st[1] == (pytest.approx(30.0), [2])  # at 30 server 2 alone gives ratio 1 < kappa
    with pytest.raises(ValueError, match="delay"):
        ASrpt(delay="skip")


def test_perfect_uses_true_iterations_and_no_predictions_needed():
    # Perfect: n = duration / alpha (alpha = 1 without a profile): sizes 5 and 1 -> j1 enters first.
    w = workload([(0, 20, 4), (0, 4, 4)], nodes=1, gpus=4)
    res = _run(w, ASrptPerfect)
    st = {j: t for t, kind, j, _ in res.event_log if kind == "start"}
    assert st[1] < st[0]
    with pytest.raises(ValueError):
        ASrpt(iterations="oracle")


# -- the work-conserving pass: shaped real queue vs the job-by-job scan -------------------------------------
class _ScanEveryJob(ASrpt):
    """A-SRPT whose work-conserving pass is the job-by-job reference scan (the code before the shaped queue)."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self._shaped, self.real = False, []


def _contended(policy, seed: int, order: str, eager: bool, counter: list | None = None, failures=None):
    """A runaway queue on 4 x 8 GPUs at 1 Gb/s (no single-GPU jobs): heavy jobs held by the start rule
    beside jobs that do not fit; ``failures`` (sim.failures) send running jobs back through on_requeue."""
    from sim.asrpt.pai_workload import PaiSpec, generate_pai
    from sim.performance import make_performance
    from sim.predictors import predict_kind
    from tests.helpers import cluster

    tab = generate_pai(PaiSpec(jobs=400, single_gpu_share=0.0, mean_interarrival=2.0,
                               multi_gpu_mix={2: 0.3, 4: 0.3, 8: 0.2, 16: 0.2},
                               models=("gnmt", "vgg16", "gpt-6.7b"), median_iterations=300), seed=seed)
    w = build_workload(tab, cluster(4, 8))
    perf = make_performance("asrpt:inter_gbps=1", w)

    def factory():
        p = policy(work_conserving=True, order=order, eager=eager)
        if counter is not None:
            inner = p._try

            def counted(job):
                counter.append(job)
                return inner(job)
            p._try = counted
        return p

    eng = Engine(w, factory, placement=HeavyEdge(), performance=perf, record_events=True, failures=failures,
                 predictions={"iterations": predict_kind("iterations", "oracle", w.frame),
                              "duration": list(w.duration)})
    res = eng.run()
    return res, eng.policies[0].stats()


@pytest.mark.parametrize("seed,order,eager", [(1, "virtual", False), (2, "virtual", True), (1, "size", False),
                                              (2, "size", True)])
def test_shaped_work_conserving_pass_decides_as_the_job_by_job_scan(seed, order, eager):
    """Every start (time, job, servers), finish time and counter of the shaped pass equal the reference
    scan's, on workloads where the start rule holds heavy jobs (delayed_heads > 0) while others misfit."""
    fast, fs = _contended(ASrpt, seed, order, eager)
    ref, rs = _contended(_ScanEveryJob, seed, order, eager)
    assert fs["delayed_heads"] > 0 and fs["max_waiting"] > 100
    assert fast.event_log == ref.event_log
    assert list(fast.end) == list(ref.end) and fs == rs


@pytest.mark.parametrize("order", ["virtual", "size"])
def test_shaped_pass_after_requeues_decides_as_the_job_by_job_scan(order):
    """Node failures requeue running jobs at the head of the real queue (virtual order: the latest first;
    size order: the shaped queue turns back into the list, whose bisect insertions it cannot key)."""
    from sim.failures import Failure

    fail = [Failure(t, node=n, repair=60.0) for t, n in ((300.0, 0), (900.0, 1), (905.0, 2), (2000.0, 3))]
    fast, fs = _contended(ASrpt, 3, order, False, failures=fail)
    ref, rs = _contended(_ScanEveryJob, 3, order, False, failures=list(fail))
    assert sum(kind == "fail" for _, kind, _, _ in fast.event_log) >= 5  # jobs went back through on_requeue
    assert fast.event_log == ref.event_log
    assert list(fast.end) == list(ref.end) and fs == rs


def test_shaped_work_conserving_pass_does_not_try_every_waiting_job():
    """The reference scan tries each waiting job at every event (O(queue)); the shaped pass tries the
    heads of the request shapes and the jobs behind a head held by the start rule."""
    fast, ref = [], []
    _contended(ASrpt, 1, "virtual", False, fast)
    _contended(_ScanEveryJob, 1, "virtual", False, ref)
    assert len(fast) * 5 < len(ref)


def _try_reference(self, job: int) -> bool:
    """ASrpt._try before its look was kept per (job, pool version): every call places and prices afresh."""
    from sim.placement.heavy_edge import place_ordered
    from sim.policies.asrpt import _EPS

    ctx = self.ctx
    jobs = ctx.jobs
    g = jobs.gpus[job]
    self._fit_failed = True
    if not ctx.may_fit(job):
        return False
    if not (jobs.spread[job] and jobs.gpu_type[job] is None) or ctx.pool.typed:
        return ctx.try_start(job)
    heavy = self.heavy.get(job, False)
    placement = place_ordered(ctx.pool, g, None, most_free=heavy)
    if placement is None:
        return False
    self._fit_failed = False
    if heavy and len(placement) > 1:
        amin, _ = self.alphas(job)
        perf = self._performance()
        counts = tuple(sorted((n for _, n in placement), reverse=True))
        a = perf.alpha_of(perf.model[job], g, counts)
        ratio = a / amin if a is not None and amin > 0 else 1.0
        deadline = self.window_end.get(job)
        if deadline is None:
            limit = self.heavy_ratio if self.start_rule == "paper" else 1.0
            if ratio > limit * (1 + 1e-9):
                deadline = ctx.now + self.tau * self.size.get(job, 0.0)
                if ctx.now < deadline - _EPS:
                    self.window_end[job] = deadline
                    self.delayed += 1
                    ctx.set_timer(deadline, ("asrpt-delay", job))
                    return False
                self.delay_expired += 1
            elif ratio > 1.0 + 1e-9:
                self.immediate_heavy += 1
        else:
            bound = self.kappa if self.start_rule == "paper" else 1.0
            ok = ratio < bound if self.start_rule == "paper" else ratio <= 1.0 + 1e-9
            if ok:
                self.window_starts += 1
            elif ctx.now < deadline - _EPS:
                return False
            else:
                self.delay_expired += 1
    self.window_end.pop(job, None)
    ctx.start(job, placement)
    return True


def test_kept_look_gives_the_same_schedules(monkeypatch):
    """The speed-up of _try (a head job re-assessed at an event that allocated nothing reuses its servers and
    their alpha ratio) changes no decision: every variant the ledger replays gives the same start and end of
    every job, and the same counters, as the reference that places afresh at every look. The workload is the
    ledger's 0 %-single-GPU set at 1 Gb/s, shrunk: heavy jobs wait out delay windows."""
    from pipelines.papers import asrpt as A

    case = A.make_case(75_000, seed=0, scale=1 / 60, single_share=0.0, servers=5)
    case.preds["rf"] = A.rf_predictions(case, trees=2, max_rows=1500)
    runs = {}
    for policy in ("a-srpt", "a-srpt:delay=pop", "a-srpt:order=size", "a-srpt:work_conserving=true",
                   "a-srpt:tau=100", "a-srpt:start=min"):
        for variant in ("kept", "reference"):
            with monkeypatch.context() as m:
                if variant == "reference":
                    m.setattr(ASrpt, "_try", _try_reference)
                r = A.replay(case, policy, A.QUICK, nic_gbit=1.0)
            runs[policy, variant] = {k: v for k, v in r.items() if k not in ("replay_s", "scored_s", "scored_cpu_s")}
        assert runs[policy, "kept"] == runs[policy, "reference"], policy
    assert runs["a-srpt", "kept"]["delayed_heads"] > 0 and runs["a-srpt", "kept"]["window_starts"] > 0
