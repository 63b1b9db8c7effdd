"""GFS Spot Quota Allocator (SQA, §4.2): demand estimators, Eq. 9-11 as pure functions, and the coordinator
that samples HP demand, forecasts it and sets a spot quota per pool every 300 s.

Eq. 9 (printed with max and min swapped, gfs.txt:204; fixed): inventory over the next H hours at confidence p,
    f(p, H) = max(0, C - sum_o max_{h <= H} y_o[h]),  y_o[h] = mu_o[h] + sigma_o[h] * Phi^-1(p)
(``summed=True``: the per-step variant of the summed Gaussian, f = max(0, C - max_h [sum_o mu_o[h] +
Phi^-1(p) sqrt(sum_o sigma_o[h]^2)]), the default: the organisations' Gaussians summed per step, as GFS's
released simulator does).

Eq. 10 is printed as Q_H = min(f(p, H) eta, S_0 + S_a) with S_0 the idle GPUs now and S_a the spot GPUs
already guaranteed >= H h (gfs.txt:208-210). Three readings, each a value of ``eq10``; the room for new spot
tasks is always Q_H - (spot GPUs held):
- ``additive`` (default): Q_H = f eta + S_a. NOT the printed form: the min is read as "f eta, plus the spot
  GPUs that no longer need the promise" (see :func:`quota_additive`). Kept as the default because it is the
  reading every measured figure of this project was made with.
- ``printed``: Q_H = min(f eta, S_0 + S_a) literally (:func:`quota_printed`).
- ``held-idle`` (the first reading): Q_H = min(f eta, spot GPUs held + idle GPUs) (:func:`quota`).
- ``released``: Q_H = f eta (:func:`quota_released`). GFS's released simulator (Sjtucitlab/Spot,
  policy/policy.py:118, update_spot_quota) caps the spot GPUs held at f eta alone, which is ``additive`` with
  S_a = 0; it counts a running spot gang as one pod's GPUs against it (the policy's ``quota_count=gang-as-pod``).

Eq. 11 (gfs.txt:214; eps = 1 - p, e the eviction rate over the past H hours, l the longest spot wait over the
past H hours): e > 1.5 eps -> eta * eps / e; e < 0.5 eps and l > theta (3,600 s) -> eta * (1.5 - e /
eps). The default caps eta at 1 (``eta_max=1``): eta is cut by evidence and may recover up to its start value,
never above. This is the reading the paper's runs had: in GFS's released simulator (Sjtucitlab/Spot,
policy/policy.py around lines 103-113) the cut is as printed, but the raise is written eta * (1.5 - eps / e),
which is negative for e < eps / 2 and divides by zero at e = 0, so it can never have raised eta in a run.
In fact neither branch runs there: VC.get_eviction_rate (cluster.py) builds its frame with the columns time /
node / count, dropping ``succeed``, so both counts are 0 and eta stays 1 (measured by
benchmarks/bench_gfs_differential.py: 42 spot evictions in a one-day window, eta 1.0 at all 288 updates);
``adapt_eta=false`` is that behaviour, docs/gfs_differential.md compares the two.
The cut is applied at an update that saw a new eviction since the previous one (``eta_cut=new-evidence``, the
default): e is a rate over the past H hours and the quota updates every 300 s, so applying the cut at every
update (``eta_cut=each-update``) cuts eta up to 12 times per hour for the same eviction; measured on contended
traces (tests/test_gfs_contended.py, benchmarks/bench_gfs_contended.py) that drives eta to 1e-7-1e-15 and
leaves GPUs idle for hours while spot tasks wait (the raise back is x1.5 per 300 s at most).
e is the paper's eviction rate, evictions / runs (gfs.txt:387), taken over the past H hours (gfs.txt:212): the
evictions in the window over the spot runs alive in it, i.e. running now or ended in it by an eviction, a finish
or a failure (``e_runs=live``, the default). The old reading (``e_runs=starts``) divided the window's evictions
by the spot starts in the window. The runs an eviction ends mostly started before the window (spot runs last
hours, the window is H = 1 h), so over starts e was about 3x the rate over the runs in the same window
(differential traces, seeds 0 and 2: mean 0.29-0.40 against 0.10-0.13 at updates with an eviction in the
window). It also rose with no new eviction as the starts before an eviction left the window, and a cut, by
holding starts back, raised it further. Measured on the six differential traces of
benchmarks/bench_gfs_differential.py (seeds 0-5, five replay seeds each; docs/gfs_differential.md): spot JCT
3.10 h against 3.17 h, evictions 7.3 % against 7.1 % of runs.
``eta_max=inf`` is Eq. 11 as printed (no bound): measured, eta winds up to 1e35-1e112 while f = 0 or the
GPUs are all taken, and the windup is reported as ``sqa_eta_max`` by the GFS ledger.
"""
from __future__ import annotations

import math
from collections import deque
from typing import Any

import numpy as np

from sim.coordinator import Coordinator
from sim.policies.gfs.estimators import (FIT_CACHE, DemandEstimator, ModelEstimator, Persistence,  # noqa: F401 (re-exported)
                                         PreviousWeekPeak, SeasonalGaussian, _calendar_of_hours, make_estimator,
                                         z_value)

HOUR = 3600.0


# --- Eq. 9-11 -------------------------------------------------------------------------------------------------
def inventory(capacity: float, mu: np.ndarray, sigma: np.ndarray | None, p: float, summed: bool = False,
              floor: bool = False) -> float:
    """Eq. 9 with its typo fixed. ``mu``/``sigma``: (orgs, H) demand forecasts of the pool's organisations.
    ``floor``: the demand quantile rounded down to whole GPUs before it is taken from C, as GFS's released
    simulator does (Sjtucitlab/Spot policy/policy.py, update_spot_quota: np.floor of the quantile). Why it is
    the policy's default: with eta never above 1, an exact quantile of an idle pool (a forecast spread of
    0.5 GPU) leaves f just below C, and a spot task asking for the whole pool could never start (the replay
    of tests/test_gfs_engine.py::test_big_spot_task_restart_costs_60_s never ended)."""
    mu = np.asarray(mu, dtype=float)
    if mu.size == 0:
        return max(0.0, float(capacity))
    z = z_value(p)
    sig = np.zeros_like(mu) if sigma is None else np.asarray(sigma, dtype=float)
    if summed:
        peak = float(np.max(mu.sum(axis=0) + z * np.sqrt((sig ** 2).sum(axis=0))))
    else:
        peak = float(np.sum(np.max(mu + z * sig, axis=1)))
    if floor:
        peak = math.floor(peak + 1e-9)
    return max(0.0, float(capacity) - peak)


def quota(f: float, eta: float, spot_held: float, idle: float) -> float:
    """Eq. 10, the first reading (``eq10=held-idle``): min(f eta, spot GPUs held now + idle GPUs now)."""
    return max(0.0, min(f * eta, spot_held + idle))


def quota_printed(f: float, eta: float, idle: float, matured: float) -> float:
    """Eq. 10 as printed (``eq10=printed``, gfs.txt:208): Q_H = min(f(p, H) eta, S_0 + S_a), S_0 the idle GPUs
    now, S_a the spot GPUs guaranteed >= H h; compared with the spot GPUs held, as every reading is."""
    return max(0.0, min(f * eta, idle + matured))


def quota_additive(f: float, eta: float, matured: float) -> float:
    """Eq. 10, our additive reading (``eq10=additive``, the default; not the printed form, which is
    :func:`quota_printed`): the spot GPUs that may be held, Q_H = f(p, H) eta + S_a, with S_a
    the GPUs of spot tasks already guaranteed for >= H h (their current run has lasted H hours). Why + S_a:
    the quota is a promise of H eviction-free hours to the tasks it admits; tasks that have had their H hours
    no longer need the promise, so their GPUs do not use up the inventory f. The room for new spot tasks is
    Q_H - S_0 (S_0: the spot GPUs held now)."""
    return max(0.0, f * eta + matured)


def quota_released(f: float, eta: float) -> float:
    """Eq. 10 as GFS's released simulator computes it (``eq10=released``): Q = f eta, nothing added for the
    spot GPUs past their guarantee (Sjtucitlab/Spot policy/policy.py:118, new_spot_quota[h] = min(free[:h]) x
    eta, with free = C - floor(quantile) at :99-100, our ``inventory_floor``); ``additive`` with S_a = 0."""
    return max(0.0, f * eta)


def update_eta(eta: float, e: float, p: float, max_wait: float, theta: float = HOUR,
               eta_min: float = 0.0, eta_max: float = math.inf) -> float:
    """Eq. 11: the eviction-rate feedback on eta, clamped to [eta_min, eta_max]. As printed it has no clamp
    (this function's defaults); the policy's default is eta_max = 1 (see the module docstring)."""
    eps = 1.0 - p
    if e > 1.5 * eps:
        eta = eta * eps / e
    elif e < 0.5 * eps and max_wait > theta:
        eta = eta * (1.5 - e / eps)
    return min(eta_max, max(eta_min, eta))


# --- the coordinator ------------------------------------------------------------------------------------------
class PoolState:
    """What the SQA keeps per pool (partition x GPU model): samples, hourly maxima, eta, quota, history."""

    def __init__(self, key: tuple[int, str], capacity: int, orgs: list[str]):
        self.key, self.capacity, self.orgs = key, capacity, orgs
        self.org_index = {o: i for i, o in enumerate(orgs)}
        self.hourly: list[np.ndarray] = []  # complete hours: max per org
        self.current = np.zeros(len(orgs))  # running max of the hour in progress
        self.hour = 0
        self.eta = 1.0
        self.quota = math.inf
        self.f = math.inf
        self.estimator: Any = None
        self.forecast: tuple[int, np.ndarray, np.ndarray | None] | None = None  # (hour0, mu, sigma)
        self.quota_log: list[tuple[float, float, float, float]] = []  # (t, quota, f, eta)
        self.room_log: list[float] = []  # quota - spot GPUs held, at each update (what new spot tasks may take)
        self.coverage: list[tuple[int, float, float]] = []  # (hour, predicted quantile sum, observed sum)
        self.evictions: deque[float] = deque()
        self.new_evictions = 0  # evictions since the last quota update (eta_cut="new-evidence")
        self.starts: deque[float] = deque()
        self.ends: deque[float] = deque()  # spot runs that ended without an eviction (finish, failure)
        self.running = 0  # spot runs in progress (e_runs="live")
        self.waits: deque[tuple[float, float]] = deque()  # (t, a spot wait seen at t): Eq. 11's l over H hours
        self._stacked = np.empty((0, len(orgs)))  # the first _rows of hourly, stacked (see history)
        self._rows = 0

    def history(self) -> np.ndarray:
        """``np.vstack(self.hourly)`` as a fresh array, from a buffer that grows as hours close: restacking the
        whole list for every new forecast hour was quadratic (2.4 of 3.3 s CPU of a 1,000-job Philly replay
        with the persistence estimator). Rows of closed hours never change, so the buffer stays exact."""
        n = len(self.hourly)
        if n < self._rows:  # the list was replaced: start over
            self._stacked, self._rows = np.empty((0, len(self.orgs))), 0
        if n > self._rows:
            new = np.vstack(self.hourly[self._rows:])
            if n > len(self._stacked):  # grow by doubling: amortised O(1) per closed hour
                grown = np.empty((max(n, 2 * len(self._stacked)), new.shape[1]), dtype=np.result_type(
                    self._stacked, new))
                grown[:self._rows] = self._stacked[:self._rows]
                self._stacked = grown
            self._stacked[self._rows:n] = new
            self._rows = n
        return self._stacked[:n].copy()


class SpotQuotaAllocator(Coordinator):
    """Samples each pool's HP GPUs per organisation every ``sample_s`` (60 s), keeps hourly maxima, asks the
    demand estimator for the next H hours and sets the spot quota every ``period_s`` (300 s); retrains the
    estimator every ``retrain_s`` (daily). Policies register their pools and report evictions and starts;
    they read ``quota(partition, pool)``. Parameters come from the first policy (``configure``)."""

    def __init__(self) -> None:
        self.pools: dict[tuple[int, str], PoolState] = {}
        self.providers: dict[tuple[int, str], Any] = {}
        # Table 4 defaults (the policy passes its own through ``configure``).
        self.p, self.H, self.summed, self.adapt_eta = 0.9, 1, True, True
        self.estimator_spec = "orglinear"
        self.sample_s, self.period_s, self.retrain_s = 60.0, 300.0, 86400.0
        self.window_s: float | None = None  # e's trailing window; None: the past H hours (as printed)
        self.wait_mode = "window"  # l: the longest spot wait seen over the past H hours ("current": now)
        self.eq10 = "additive"  # Q_H = f eta + S_a ("printed": min(f eta, S_0 + S_a); "held-idle")
        self.theta, self.eta_min, self.eta_max, self.eta0 = HOUR, 0.0, 1.0, 1.0
        self.eta_raise = "always"  # Eq. 11's raise as printed; "binding": only while the quota holds spot back
        self.inventory_floor = True  # f from the quantile rounded down to whole GPUs (the released simulator)
        self.eta_cut = "new-evidence"  # cut only when an eviction arrived since the last update ("each-update")
        self.e_runs = "live"  # e's denominator: spot runs alive in the window ("starts": spot starts in it)
        self.estimator_params: dict[str, Any] = {}
        self.enabled = True
        self.forecast_seconds = 0.0
        self.fit_seconds = 0.0
        self.fit_cpu_seconds = 0.0  # CPU time of the retraining (process_time: what a loaded machine does not inflate)
        self.fits = 0
        self._started = False

    def configure(self, **params: Any) -> None:
        for k, v in params.items():
            if not hasattr(self, k):
                raise ValueError(f"unknown SQA parameter {k!r}")
            setattr(self, k, v)

    def register_pool(self, key: tuple[int, str], capacity: int, orgs: list[str], provider: Any) -> None:
        if key in self.pools:
            return
        st = PoolState(key, capacity, orgs)
        st.eta = self.eta0
        st.estimator = make_estimator(self.estimator_spec, orgs, self.H, self.cctx.seed, **self.estimator_params)
        self.pools[key] = st
        self.providers[key] = provider

    def on_start(self) -> None:
        if not self.enabled:
            return
        self.cctx.set_timer(0.0, "sample")
        self.cctx.set_timer(0.0, "quota")
        self.cctx.set_timer(self.retrain_s, "retrain")

    def _more(self) -> bool:
        return self.cctx.unfinished > 0

    def on_timer(self, payload: Any) -> None:
        now = self.cctx.now
        if payload == "sample":
            self.sample(now)
            if self._more():
                self.cctx.set_timer(now + self.sample_s, "sample")
        elif payload == "quota":
            self.update(now)
            if self._more():
                self.cctx.set_timer(now + self.period_s, "quota")
        elif payload == "retrain":
            self.retrain(now)
            if self._more():
                self.cctx.set_timer(now + self.retrain_s, "retrain")

    # -- sampling and forecasts ----------------------------------------------------------------------------
    def sample(self, now: float) -> None:
        hour = int(now // HOUR)
        for key, st in self.pools.items():
            while st.hour < hour:  # close the hours that ended
                st.hourly.append(st.current.copy())
                self._score_coverage(st, st.hour, st.current)
                st.current = np.zeros(len(st.orgs))
                st.hour += 1
            for org, gpus in self.providers[key].hp_by_org(key).items():
                i = st.org_index.get(org)
                if i is not None and gpus > st.current[i]:
                    st.current[i] = gpus

    def _score_coverage(self, st: PoolState, hour: int, observed: np.ndarray) -> None:
        """Quota fidelity: did the hour's HP demand stay below the forecast quantile made for it?"""
        if st.forecast is None:
            return
        hour0, mu, sigma = st.forecast
        h = hour - hour0
        if 0 <= h < mu.shape[1]:
            z = z_value(self.p)
            q = mu[:, h] + (0.0 if sigma is None else z * sigma[:, h])
            st.coverage.append((hour, float(q.sum()), float(observed.sum())))

    def _forecast(self, st: PoolState, now: float) -> tuple[np.ndarray, np.ndarray | None]:
        import time

        hour0 = int(now // HOUR)
        if st.forecast is not None and st.forecast[0] == hour0:
            return st.forecast[1], st.forecast[2]
        if not st.hourly:
            cur = np.maximum(st.current, 0.0)
            mu, sigma = np.repeat(cur[:, None], self.H, axis=1), None
        else:
            t0 = time.perf_counter()
            # the complete hours (st.hourly is not empty here; the hour in progress bounds mu from below next)
            mu, sigma = st.estimator.predict(st.history(), hour0, self.H)
            mu = np.maximum(mu, st.current[:, None])  # never below what is already held this hour
            self.forecast_seconds += time.perf_counter() - t0
        st.forecast = (hour0, mu, sigma)
        return mu, sigma

    def retrain(self, now: float) -> None:
        import time

        for st in self.pools.values():
            if len(st.hourly) < 2:
                continue
            t0, c0 = time.perf_counter(), time.process_time()
            st.estimator.fit(np.vstack(st.hourly))
            self.fit_seconds += time.perf_counter() - t0
            self.fit_cpu_seconds += time.process_time() - c0
            self.fits += 1
            st.forecast = None

    # -- the quota -----------------------------------------------------------------------------------------
    @property
    def window(self) -> float:
        """e's trailing window in seconds: the past H hours unless set (``window_hours``)."""
        return self.window_s if self.window_s is not None else self.H * HOUR

    def _trim(self, q: deque, now: float) -> None:
        while q and q[0] < now - self.window:
            q.popleft()

    def eviction_rate(self, st: PoolState, now: float) -> float:
        """Eq. 11's e: spot evictions / spot starts of the pool over the past H hours (0 without a start);
        ``e_runs="live"``: evictions / the spot runs alive at some time in the window (running now, or ended
        in it by an eviction, a finish or a failure)."""
        self._trim(st.evictions, now)
        self._trim(st.starts, now)
        self._trim(st.ends, now)
        if self.e_runs == "live":
            runs = st.running + len(st.evictions) + len(st.ends)
            return len(st.evictions) / runs if runs else 0.0
        return len(st.evictions) / len(st.starts) if st.starts else 0.0

    def longest_wait(self, st: PoolState, now: float, current: float) -> float:
        """Eq. 11's l: the longest spot wait seen over the past H hours (waits of tasks that started in the
        window and the queue head's wait at each update), or the current one (``wait_mode="current"``)."""
        if self.wait_mode == "current":
            return current
        st.waits.append((now, current))
        while st.waits and st.waits[0][0] < now - self.H * HOUR:
            st.waits.popleft()
        return max(w for _, w in st.waits)

    def update(self, now: float) -> None:
        self.sample(now)
        for key, st in self.pools.items():
            prov = self.providers[key]
            mu, sigma = self._forecast(st, now)
            st.f = inventory(st.capacity, mu, sigma, self.p, self.summed, self.inventory_floor)
            if self.adapt_eta:
                e, l = self.eviction_rate(st, now), self.longest_wait(st, now, prov.max_spot_wait(key, now))
                if self.eta_raise == "binding" and e < 0.5 * (1.0 - self.p) and not self._binds(st, key, now):
                    l = 0.0  # the quota is not what holds spot back: no raise (anti-windup)
                if self.eta_cut == "new-evidence" and st.new_evictions == 0 and e > 1.5 * (1.0 - self.p):
                    pass  # the window's evictions have cut eta already: the same evidence does not cut again
                else:
                    st.eta = update_eta(st.eta, e, self.p, l, self.theta, self.eta_min, self.eta_max)
                st.new_evictions = 0
            if self.eq10 == "additive":
                st.quota = quota_additive(st.f, st.eta, prov.spot_matured_gpus(key, now, self.H * HOUR))
            elif self.eq10 == "released":
                st.quota = quota_released(st.f, st.eta)
            elif self.eq10 == "printed":
                st.quota = quota_printed(st.f, st.eta, prov.idle_gpus(key), prov.spot_matured_gpus(key, now, self.H * HOUR))
            else:
                st.quota = quota(st.f, st.eta, prov.spot_gpus(key), prov.idle_gpus(key))
            st.quota_log.append((now, st.quota, st.f, st.eta))
            st.room_log.append(st.quota - prov.spot_gpus(key))
            self.cctx.reschedule(key[0])

    def _binds(self, st: PoolState, key: tuple[int, str], now: float) -> bool:
        """Does the quota hold spot tasks back, i.e. is f eta + S_a below the spot GPUs held plus the idle ones
        (``eta_raise="binding"``)? Why: Eq. 11 raises eta by up to 1.5x every 300 s while e < eps / 2 and a
        spot task waited > theta, with no bound; when the wait comes from the lack of GPUs (or f = 0), the
        raise changes no admission but accumulates (eta reached 9e64 at Medium), and once f is positive the
        quota f eta admits every spot task: the windup behind GFS's 13.8 % evictions vs 0.74 % for GFS-d."""
        if st.f <= 0:  # no inventory: no eta admits anything
            return False
        prov = self.providers[key]
        return st.f * st.eta + prov.spot_matured_gpus(key, now, self.H * HOUR) < prov.spot_gpus(key) + prov.idle_gpus(key)

    def quota_of(self, key: tuple[int, str]) -> float:
        st = self.pools.get(key)
        return math.inf if st is None else st.quota

    def note_eviction(self, key: tuple[int, str], now: float) -> None:
        st = self.pools.get(key)
        if st is not None:
            st.evictions.append(now)
            st.new_evictions += 1
            st.running = max(0, st.running - 1)

    def note_spot_end(self, key: tuple[int, str], now: float) -> None:
        """A spot run ended without an eviction (finished, or failed): e_runs="live" counts it in the window."""
        st = self.pools.get(key)
        if st is not None:
            st.ends.append(now)
            st.running = max(0, st.running - 1)

    def note_spot_start(self, key: tuple[int, str], now: float, wait: float = 0.0) -> None:
        st = self.pools.get(key)
        if st is not None:
            st.starts.append(now)
            st.running += 1
            if wait > 0:
                st.waits.append((now, wait))

    def stats(self) -> dict[str, Any]:
        versions = sorted({v for st in self.pools.values() if (v := getattr(st.estimator, "model_version", None))})
        out: dict[str, Any] = {"sqa_forecast_seconds": self.forecast_seconds, "sqa_fit_seconds": self.fit_seconds,
                               "sqa_fit_cpu_seconds": self.fit_cpu_seconds,
                               "sqa_fits": self.fits, "sqa_estimator": self.estimator_spec,
                               "sqa_model_version": ",".join(versions) if versions else None,
                               "sqa_model_fits": sum(getattr(st.estimator, "fits", 0) for st in self.pools.values()),
                               "sqa_fit_cache_hits": sum(getattr(st.estimator, "cache_hits", 0)
                                                         for st in self.pools.values()),
                               "sqa_model_forecasts": sum(getattr(st.estimator, "model_forecasts", 0)
                                                          for st in self.pools.values())}
        out["sqa_quota_log"] = [(f"{k[0]}:{k[1]}",) + row for k, st in self.pools.items() for row in st.quota_log]
        out["sqa_room_log"] = [room for st in self.pools.values() for room in st.room_log]
        out["sqa_coverage"] = [(f"{k[0]}:{k[1]}",) + row for k, st in self.pools.items() for row in st.coverage]
        return out
