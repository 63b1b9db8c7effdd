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
    # Default p = 0.99: f = 8 - (6 + 2.326 x 0.5 GPU sigma floor) = 0.837 < 2. Both spot tasks wait; once the
    # longest spot wait exceeds theta (3,600 s, from 11,100 s) Eq. 11 raises eta x1.5 every 300 s:
    # 1.5, 2.25, 3.375 -> quota 2.82 >= 2 at 11,700 s: the 2-GPU task starts then.
    r = simulate(w, "gfs", check_invariants=True)
    assert r.first_start[2] == pytest.approx(11700.0)
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
