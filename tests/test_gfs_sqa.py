"""GFS Spot Quota Allocator: Eq. 9-11 on hand-computed numbers, estimators, the coordinator in a replay."""
import math
from statistics import NormalDist

import numpy as np
import pytest

from sim import simulate
from sim.policies.gfs.sqa import (Persistence, PreviousWeekPeak, SeasonalGaussian, inventory, quota, update_eta,
                                  z_value)
from tests.helpers import workload

Z1 = NormalDist().cdf(1.0)  # p with Phi^-1(p) = 1
#: the defaults before the Table 4 alignment, each a named parameter value
OLD = ("H=4,p=0.99,estimator=persistence,summed=false,eq10=held-idle,wait=current,eta_min=0.05,eta_max=4,"
       "window_hours=1,spread_hours=0,inventory_floor=false")


def test_inventory_eq9_with_the_typo_fixed():
    mu = np.array([[10.0, 20.0], [30.0, 25.0]])
    sigma = np.array([[1.0, 2.0], [0.0, 5.0]])
    # per org, the peak over the horizon of mu + sigma: org 0 max(11, 22) = 22, org 1 max(30, 30) = 30.
    assert inventory(100, mu, sigma, Z1) == pytest.approx(100 - 52)
    # summed Gaussian per step: max(40 + 1, 45 + sqrt(29)).
    assert inventory(100, mu, sigma, Z1, summed=True) == pytest.approx(100 - 45 - math.sqrt(29))
    assert inventory(50, mu, sigma, Z1) == 0.0  # never negative
    assert inventory(64, mu, None, 0.99) == pytest.approx(64 - 50)  # point forecasts: every quantile = mu
    assert z_value(0.99) == pytest.approx(2.326348, abs=1e-6)


def test_quota_eq10():
    assert quota(48, 0.5, spot_held=10, idle=5) == 15  # capped by what spot could hold now
    assert quota(48, 0.5, spot_held=10, idle=50) == 24
    assert quota(0, 2.0, 10, 10) == 0


def test_eta_feedback_eq11():
    # p = 0.99: eps = 0.01. Too many evictions: eta * eps / e.
    assert update_eta(0.9, e=0.03, p=0.99, max_wait=0) == pytest.approx(0.3)
    # Few evictions and spot tasks waiting longer than theta: eta * (1.5 - e / eps).
    assert update_eta(0.5, e=0.001, p=0.99, max_wait=4000) == pytest.approx(0.5 * 1.4)
    assert update_eta(0.5, e=0.001, p=0.99, max_wait=100) == 0.5  # nobody waits long: unchanged
    assert update_eta(0.5, e=0.012, p=0.99, max_wait=4000) == 0.5  # inside the band: unchanged
    assert update_eta(3.9, e=0.0, p=0.99, max_wait=1e5, eta_max=4.0) == 4.0  # clamped
    assert update_eta(0.06, e=1.0, p=0.99, max_wait=0, eta_min=0.05) == 0.05


def test_estimators():
    hist = np.array([[10.0, 0.0], [12.0, 0.0], [11.0, 4.0], [13.0, 4.0]])
    est = Persistence(min_sigma=0.0)
    est.fit(hist)
    mu, sigma = est.predict(hist, 4, 2)
    assert mu.tolist() == [[13, 13], [4, 4]]
    # 1-hour changes of org 0: 2, -1, 2 -> rms sqrt(3); 2-hour changes: 1, 1 -> 1.
    assert sigma[0].tolist() == pytest.approx([math.sqrt(3), 1.0])
    peak_mu, peak_sigma = PreviousWeekPeak().predict(hist, 4, 3)
    assert peak_sigma is None and peak_mu.tolist() == [[13, 13, 13], [4, 4, 4]]
    day = np.tile(np.arange(24.0)[:, None], (3, 1))  # a clean daily cycle, 3 days, one org
    s = SeasonalGaussian(min_sigma=0.0)
    s.fit(day)
    mu, sigma = s.predict(day, 72, 3)
    assert mu[0].tolist() == [0.0, 1.0, 2.0] and sigma.max() == pytest.approx(0.0)


def test_quota_blocks_spot_admission_and_never_evicts():
    # One 8-GPU node. HP of org "a" holds 6 GPUs from t=0 to 10 h; spot tasks of 4 and 2 GPUs arrive at 2 h.
    w = workload([(0, 36000, 6), (7200, 3600, 4), (7200, 3600, 2)], nodes=1, gpus=8, org=["a", "b", "b"],
                 job_class=["hp", "spot", "spot"], checkpoint_interval=[None, 3600.0, 3600.0])
    # p = 0.5 (z = 0), eta fixed at 1: forecast 6 (persistence) -> f = 2 -> the 2-GPU task starts at once, the
    # 4-GPU one waits until the first hour without HP demand has closed (hour 10 ends at 39,600 s).
    r = simulate(w, "gfs:p=0.5,adapt_eta=false", check_invariants=True)
    assert r.first_start[2] == pytest.approx(7200.0)
    assert r.first_start[1] == pytest.approx(39600.0)
    assert sum(r.evictions) == 0
    at = [row for row in r.policy_stats["sqa_quota_log"] if row[1] == 7200.0][0]
    assert at[3] == pytest.approx(2.0) and at[2] == pytest.approx(2.0)  # f and quota
    # The old defaults (named): p = 0.99: f = 8 - (6 + 2.326 x 0.5 GPU sigma floor) = 0.837 < 2. Both spot
    # tasks wait; once the longest spot wait exceeds theta (3,600 s, from 11,100 s) Eq. 11 raises eta x1.5
    # every 300 s: 1.5, 2.25, 3.375 -> quota 2.82 >= 2 at 11,700 s: the 2-GPU task starts then.
    r = simulate(w, "gfs:" + OLD, check_invariants=True)
    assert r.first_start[2] == pytest.approx(11700.0)
    assert sum(r.evictions) == 0
    # Table 4 defaults: p = 0.9: f = 8 - (6 + 1.2816 x 0.5) = 1.359 (one organisation: summed or not, the
    # same; OrgLinear has too little history and persistence answers). Eq. 11 as printed (eta_max=inf): at
    # 11,100 s the wait is 3,900 s > theta: eta 1.5 -> Q = 1.359 x 1.5 + S_a (0) = 2.04 >= 2: the 2-GPU task
    # starts at 11,100 s.
    r = simulate(w, "gfs:eta_max=inf,inventory_floor=false", check_invariants=True)
    assert r.first_start[2] == pytest.approx(11100.0)
    # eta_max = 1 with the exact quantile: eta stays 1, Q = 1.359 < 2 until the HP task ends (its hour closes
    # at 39,600 s).
    r = simulate(w, "gfs:inventory_floor=false", check_invariants=True)
    assert r.first_start[2] == pytest.approx(39600.0)
    # The default (the released simulator's floor of the quantile): f = 8 - floor(6.64) = 2: starts at once.
    r = simulate(w, "gfs", check_invariants=True)
    assert r.first_start[2] == pytest.approx(7200.0)
    assert r.policy_stats["sqa_estimator"] == "orglinear" and r.policy_stats["sqa_model_forecasts"] == 0
    assert sum(r.evictions) == 0
    # Without the quota the spot tasks start when they fit (the 2-GPU one at once).
    assert simulate(w, "gfs:quota=false").first_start[2] == pytest.approx(7200.0)


def test_coverage_and_quota_are_recorded():
    w = workload([(0, 20000, 4), (3600, 100, 2)], nodes=1, gpus=8, org=["a", "b"], job_class=["hp", "spot"])
    r = simulate(w, "gfs")
    cov = r.policy_stats["sqa_coverage"]
    assert cov and all(len(row) == 4 for row in cov)
    assert all(row[0] == "0:*" for row in r.policy_stats["sqa_quota_log"])


def test_registry_estimator_reads_the_demand_serving_output():
    # The registered demand model's serving contract (models/registry.py demand_pyfunc_predict): long rows in
    # (time, org, demand), out one row per org and step with mean, q0.9, q0.95. A stand-in model that
    # forecasts "last value + step" with q0.95 = mean + 1.645 GPUs; two model steps per hour.
    import pandas as pd

    from sim.policies.gfs.sqa import ModelEstimator

    class TwoStepsPerHour:
        def predict(self, frame):
            wide = frame.pivot_table(index="time", columns="org", values="demand")
            rows = []
            for org in wide.columns:
                last = float(wide[org].iloc[-1])
                for k in range(4):
                    m = last + k
                    rows.append({"org": org, "time": k, "mean": m, "q0.9": m + 1.2816, "q0.95": m + 1.6449})
            return pd.DataFrame(rows)

    est = ModelEstimator.__new__(ModelEstimator)
    est.spec, est.orgs, est.horizon, est.seed, est.name = "models:/demand@test", ["a", "b"], 2, 0, "models:/demand@test"
    est.fallback, est.model, est.pyfunc, est.lookback = Persistence(), None, TwoStepsPerHour(), 3
    hist = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, 6.0]])
    mu, sigma = est.predict(hist, 3, 2)
    # hour 0 = steps 0-1 (max mean at step 1), hour 1 = steps 2-3 (step 3)
    assert mu.tolist() == [[4.0, 6.0], [7.0, 9.0]]
    assert sigma == pytest.approx(np.full((2, 2), 1.0), abs=1e-3)
    est.pyfunc = None  # too little history for a model: the persistence fallback answers
    mu, _ = est.predict(hist, 3, 2)
    assert mu.tolist() == [[3.0, 3.0], [6.0, 6.0]]


def test_sqa_terms_as_printed():
    from sim.policies.gfs.sqa import PoolState, SpotQuotaAllocator, quota_additive, quota_printed

    # Eq. 10, our additive reading (the default): Q = f eta + S_a (S_a: spot GPUs already guaranteed >= H h).
    assert quota_additive(10.0, 0.5, matured=4.0) == pytest.approx(9.0)
    assert quota_additive(0.0, 3.0, matured=0.0) == 0.0
    # Eq. 10 as printed (gfs.txt:208): min(f eta, S_0 + S_a), S_0 the idle GPUs.
    assert quota_printed(10.0, 0.5, idle=1.0, matured=2.0) == pytest.approx(3.0)
    assert quota_printed(10.0, 0.5, idle=8.0, matured=2.0) == pytest.approx(5.0)
    # Eq. 11 without a clamp (as printed): p = 0.9, eps = 0.1; e = 0, l > theta -> x1.5 past the old ceiling 4.
    assert update_eta(3.9, e=0.0, p=0.9, max_wait=4000) == pytest.approx(5.85)
    assert update_eta(0.04, e=0.4, p=0.9, max_wait=0) == pytest.approx(0.01)  # below the old floor 0.05
    # e over the past H hours and l the longest wait over the past H hours (H = 2 here).
    sqa = SpotQuotaAllocator()
    sqa.configure(H=2, e_runs="starts")  # the old denominator: spot starts in the window
    st = PoolState((0, "*"), 8, ["a"])
    for t in (0.0, 1000.0, 5000.0, 7000.0):
        st.starts.append(t)
    st.evictions.append(1000.0)
    st.evictions.append(6000.0)
    # at 8,000 s the window is [800, 8000]: starts 1000, 5000, 7000; evictions 1000, 6000 -> 2 / 3.
    assert sqa.eviction_rate(st, 8000.0) == pytest.approx(2 / 3)
    sqa.note_spot_start((0, "*"), 0.0)  # no such pool registered: ignored
    st.waits.append((1000.0, 5000.0))  # a task that waited 5,000 s started at 1,000 s
    assert sqa.longest_wait(st, 7000.0, current=100.0) == 5000.0  # within 2 h
    assert sqa.longest_wait(st, 9000.0, current=100.0) == 100.0  # 1,000 s is more than 2 h ago
    sqa.configure(wait_mode="current")
    st.waits.append((8990.0, 9999.0))
    assert sqa.longest_wait(st, 9000.0, current=100.0) == 100.0  # the old reading: the queue head now
    # The old 1 h window (window_hours=1): only the start at 7,000 and the eviction at 6,000 ... at 7,500 s.
    sqa.configure(window_s=3600.0)
    assert sqa.eviction_rate(st, 7500.0) == pytest.approx(1 / 2)


def test_eviction_rate_over_the_runs_alive_in_the_window():
    """Eq. 11's e with e_runs="live" (the default): evictions in the past H hours / the spot runs alive in them
    (gfs.txt:387 defines e as evictions / runs; gfs.txt:212 takes it over the past H hours)."""
    from sim.policies.gfs.sqa import PoolState, SpotQuotaAllocator

    sqa = SpotQuotaAllocator()
    assert sqa.e_runs == "live"
    sqa.configure(H=2)
    key = (0, "*")
    st = sqa.pools[key] = PoolState(key, 8, ["a"])
    sqa.note_spot_start(key, 100.0)  # run E: 100-500, ended before the window [800, 8000]
    sqa.note_spot_end(key, 500.0)
    sqa.note_spot_start(key, 600.0)  # run A: evicted at 1,000
    sqa.note_spot_start(key, 700.0)  # run B: finishes at 6,000
    sqa.note_eviction(key, 1000.0)
    sqa.note_spot_start(key, 5000.0)  # run C: evicted at 6,500
    sqa.note_spot_end(key, 6000.0)
    sqa.note_eviction(key, 6500.0)
    sqa.note_spot_start(key, 7000.0)  # run D: still running
    assert st.running == 1
    # at 8,000 s: evictions 1,000 and 6,500; runs alive in [800, 8000]: A, B, C, D (not E) -> 2 / 4
    assert sqa.eviction_rate(st, 8000.0) == pytest.approx(2 / 4)
    # at 9,000 s ([1800, 9000]): eviction 6,500; runs B, C, D -> 1 / 3. Over starts (5,000 and 7,000) it would
    # be 1 / 2: the run evicted is counted, the start that made it is not, and fewer starts (after a cut)
    # raise e with no new eviction.
    assert sqa.eviction_rate(st, 9000.0) == pytest.approx(1 / 3)
    sqa.configure(e_runs="starts")
    assert sqa.eviction_rate(st, 9000.0) == pytest.approx(1 / 2)


def test_a_cluster_without_hp_demand_admits_spot_tasks():
    # 4 nodes x 8 GPUs. 8 organisations alternated 2 / 0 HP GPUs hour by hour for 2 days (an hourly-change
    # spread of 2 GPUs each), then stopped. Spot tasks of 4 GPUs arrive at 50 h, when no HP GPU is held.
    # Table 4 defaults (summed Gaussian, p 0.9, H 1): f = 32 - 1.2816 x sqrt(8 x 2^2) = 24.7 -> they start at
    # once. The old defaults (per-organisation quantiles added up, p 0.99, spread over the whole history):
    # 8 x 2.326 x 2 = 37.2 > 32 GPUs reserved for an HP demand of 0 -> quota 0, whatever eta; the spot tasks
    # wait until the spread has decayed enough over the zero hours.
    rows, orgs, cls = [], [], []
    for h in range(0, 48, 2):
        for o in range(8):
            rows.append((h * 3600.0 + 10.0 + o, 1800.0, 2))
            orgs.append(f"o{o}")
            cls.append("hp")
    for k in range(3):
        rows.append((50 * 3600.0 + k, 7200.0, 4))
        orgs.append("s")
        cls.append("spot")
    w = workload(rows, nodes=4, gpus=8, org=orgs, job_class=cls, checkpoint_interval=[None] * 192 + [3600.0] * 3)
    r = simulate(w, "gfs", check_invariants=True)
    spot = [192, 193, 194]
    assert max(r.first_start[j] for j in spot) <= 50 * 3600.0 + 300.0
    old = simulate(w, "gfs:" + OLD, check_invariants=True)
    assert min(old.first_start[j] for j in spot) >= 50 * 3600.0 + 6 * 3600.0


class _Prov:
    """A pool seen by the SQA: 30 HP GPUs of organisation a, ``idle`` idle GPUs, 2 spot GPUs held (none
    guaranteed H hours yet), the queue head waiting 5,000 s (> theta)."""

    def __init__(self, hp: float = 30.0, idle: float = 0.0):
        self.hp, self.idle = hp, idle

    def hp_by_org(self, key):
        return {"a": self.hp}

    def spot_gpus(self, key):
        return 2.0

    def idle_gpus(self, key):
        return self.idle

    def spot_matured_gpus(self, key, now, horizon_s):
        return 0.0

    def max_spot_wait(self, key, now):
        return 5000.0


class _Ctx:
    seed, unfinished, now = 0, 1, 0.0

    def reschedule(self, partition):
        pass


def _sqa_after_an_hour(eta_raise: str, prov: _Prov, eta_max: float = math.inf) -> float:
    from sim.policies.gfs.sqa import SpotQuotaAllocator

    sqa = SpotQuotaAllocator()
    sqa.cctx = _Ctx()
    sqa.configure(estimator_spec="persistence", eta_raise=eta_raise, eta_max=eta_max)
    sqa.register_pool((0, "*"), 32, ["a"], prov)
    st = sqa.pools[(0, "*")]
    for k in range(12):  # 12 quota updates, 300 s apart; one spot start, no eviction: e = 0 < eps / 2
        st.starts.append(k * 300.0)
        sqa.update(k * 300.0)
    return st.eta


def test_eq11_raise_as_printed_winds_up_and_binding_stops_it():
    # 32 GPUs, HP forecast 30 (the hour's demand so far, no spread) -> f = 2; S_0 = 2 spot GPUs held.
    # As printed (always): e = 0 and l = 5,000 s > theta -> eta x1.5 per update: 1.5^12 = 129.75 after an hour,
    # though with no idle GPU a larger quota admits nothing (f eta = 2 already covers the 2 GPUs held).
    assert _sqa_after_an_hour("always", _Prov(idle=0.0)) == pytest.approx(1.5 ** 12)
    # binding: f eta + S_a = 2 is not below S_0 + idle = 2 -> the quota does not hold spot back: no raise.
    assert _sqa_after_an_hour("binding", _Prov(idle=0.0)) == pytest.approx(1.0)
    # With 4 idle GPUs the quota does bind (2 < 6): raised while f eta < 6, i.e. 1 -> 1.5 -> 2.25 -> 3.375
    # (f eta = 6.75 >= 6: stops).
    assert _sqa_after_an_hour("binding", _Prov(idle=4.0)) == pytest.approx(3.375)
    # f = 0 (HP forecast 32 = capacity): no eta admits anything -> no raise (as printed: 129.75 again).
    assert _sqa_after_an_hour("binding", _Prov(hp=32.0, idle=4.0)) == pytest.approx(1.0)
    assert _sqa_after_an_hour("always", _Prov(hp=32.0, idle=4.0)) == pytest.approx(1.5 ** 12)
    # The default ceiling eta_max = 1 (the released simulator's behaviour: eta only cut): no windup at all.
    assert _sqa_after_an_hour("always", _Prov(hp=32.0, idle=4.0), eta_max=1.0) == pytest.approx(1.0)


def test_eta_is_only_cut_by_default_and_recovers_to_one():
    """The default reading (eta_max=1): a cut by eps / e, then the raise of Eq. 11 back up to 1, never above."""
    from sim.policies.gfs import Gfs
    from sim.policies.gfs.sqa import SpotQuotaAllocator

    assert Gfs().eta_max == 1.0 and SpotQuotaAllocator().eta_max == 1.0
    assert Gfs(eta_max=math.inf).eta_max == math.inf  # Eq. 11 as printed: a named variant
    eta = update_eta(1.0, e=0.3, p=0.9, max_wait=0.0, eta_max=1.0)
    assert eta == pytest.approx(1 / 3)  # cut: eta eps / e
    eta = update_eta(eta, e=0.0, p=0.9, max_wait=4000.0, eta_max=1.0)
    assert eta == pytest.approx(0.5)  # raised x1.5
    assert update_eta(eta * 1.5, e=0.0, p=0.9, max_wait=4000.0, eta_max=1.0) == 1.0  # never above 1


def test_gfs_queue_order_and_eta_raise_are_named_parameters():
    from sim.policies.gfs import Gfs

    assert Gfs().order == "gfs" and Gfs(queue_order="fifo").order == "fifo"
    assert Gfs(queue_order="large-first").order == "large-first"
    assert Gfs().eta_raise == "always"  # Eq. 11 as printed stays the default
    with pytest.raises(ValueError):
        Gfs(eta_raise="never")
    with pytest.raises(ValueError):
        Gfs(queue_order="lifo")


def test_pool_history_is_the_restacked_list_as_hours_close():
    """PoolState.history() (a buffer grown per closed hour) equals np.vstack(hourly) at every length, as a
    fresh array a caller may write to."""
    from sim.policies.gfs.sqa import PoolState

    st, rng = PoolState((0, "a100"), 64, ["a", "b", "c"]), np.random.default_rng(0)
    for _ in range(70):
        st.hourly.append(rng.integers(0, 9, 3).astype(float))
        got = st.history()
        assert got.dtype == np.float64 and np.array_equal(got, np.vstack(st.hourly))
        got[:] = -1.0  # the caller's copy: the buffer is untouched
    st.hourly = st.hourly[:5]  # a replaced list starts the buffer over
    assert np.array_equal(st.history(), np.vstack(st.hourly))


def test_gfs_replay_is_the_same_with_the_restacked_history(monkeypatch):
    """A GFS replay (3 days of the GFS generator: HP and spot tasks of 4 organisations, ~84 forecast hours,
    so the buffer grows several times) is quota for quota and job for job the one the old path gives
    (np.vstack of the whole list, and of the hour in progress, for every new forecast hour)."""
    from evaluation.metrics import job_table
    from features.traces.gfs import GfsSpec, generate
    from sim.cluster import load_cluster
    from sim.policies.gfs.sqa import PoolState
    from sim.workload import build_workload

    table = generate(GfsSpec(cluster_gpus=432, days=3, warmup_hours=12, spot_multiplier=2, max_orgs=4), seed=0)
    w = build_workload(table, load_cluster("gfs-a100-small"))
    fast = simulate(w, "gfs-d:estimator=persistence")
    monkeypatch.setattr(PoolState, "history", lambda self: np.vstack(self.hourly + [self.current])[:-1])
    slow = simulate(w, "gfs-d:estimator=persistence")
    assert job_table(fast).equals(job_table(slow)) and fast.events == slow.events
    assert len(fast.policy_stats["sqa_quota_log"]) > 1000
    timing = [k for k in fast.policy_stats if "second" in k]
    assert repr({k: v for k, v in fast.policy_stats.items() if k not in timing}) == \
        repr({k: v for k, v in slow.policy_stats.items() if k not in timing})


def test_released_quota_arithmetic_is_a_named_variant():
    """``quota_count=gang-as-pod``, ``hp_count=gang-as-pod`` and ``eq10=released``: GFS's released simulator's
    quota arithmetic (Sjtucitlab/Spot policy/spot.py:105-107, 158; policy/policy.py:118, 130-134)."""
    from sim.policies.gfs import Gfs

    def w(hp_pods: int = 1):
        # Two 8-GPU nodes. HP org a holds 8 GPUs for 10 h; at 2 h a spot gang of 2 pods x 2 GPUs, then a 2-GPU
        # spot task. eta fixed at 0.5: f = 16 - floor(8 + 1.28 x 0.5) = 8, quota 4.
        return workload([(0, 36000, 8), (7200, 7200, 4), (7300, 3600, 2)], nodes=2, gpus=8, org=["a", "b", "b"],
                        job_class=["hp", "spot", "spot"], checkpoint_interval=[None, 3600.0, 3600.0],
                        num_pods=[hp_pods, 2, 1], gpus_per_pod=[8 // hp_pods, 2, 2])

    base = "gfs:eta0=0.5,adapt_eta=false"
    # Every pod counts (default): the gang holds 4 of the 4 GPUs of quota, the 2-GPU task waits until the gang
    # has had its H = 1 guaranteed hour (S_a = 4: quota 8 at the update at 10,800 s).
    r = simulate(w(), base, check_invariants=True)
    at = [row for row in r.policy_stats["sqa_quota_log"] if row[1] == 7200.0][0]
    assert at[2:4] == (4.0, 8.0)  # quota, f
    assert r.first_start[1:] == [7200.0, 10800.0]
    # The gang counted as one pod (2 GPUs): 2 + 2 <= 4, the task starts when it arrives.
    assert simulate(w(), base + ",quota_count=gang-as-pod", check_invariants=True).first_start[2] == 7300.0
    # Q = f eta (no S_a): the task waits for the gang to end (14,400 s); with the gang as one pod, at once.
    assert simulate(w(), base + ",eq10=released", check_invariants=True).first_start[2] == 14400.0
    assert simulate(w(), base + ",eq10=released,quota_count=gang-as-pod").first_start[2] == 7300.0
    # An HP gang of 2 pods x 4 GPUs counted as one pod in the HP demand: f = 16 - floor(4.64) = 12, quota 6.
    r = simulate(w(2), base + ",hp_count=gang-as-pod", check_invariants=True)
    at = [row for row in r.policy_stats["sqa_quota_log"] if row[1] == 7200.0][0]
    assert at[2:4] == (6.0, 12.0) and r.first_start[2] == 7300.0
    assert simulate(w(2), base, check_invariants=True).first_start[2] == 10800.0
    assert all(sum(simulate(w(), base + s).evictions) == 0 for s in ("", ",quota_count=gang-as-pod"))
    assert Gfs().quota_count == "pods" and Gfs().hp_count == "pods" and Gfs().eq10 == "additive"  # defaults
    for bad in ({"quota_count": "gang"}, {"hp_count": "jobs"}, {"eq10": "release"}):
        with pytest.raises(ValueError):
            Gfs(**bad)
