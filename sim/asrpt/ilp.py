"""The exact best mapping of a job's stage replicas onto free GPUs: an integer programme solved with
``scipy.optimize.milp`` (HiGHS), minimising the per-iteration time alpha of sim.asrpt.iteration (ring
AllReduce).

Given free GPUs ``c_j`` per server, choose ``x[j][s]`` (replicas of stage s on server j) with
``sum_j x[j][s] = k_s`` and ``sum_s x[j][s] <= c_j``. alpha is a max of per-(server, stage) terms that
count only where ``x[j][s] > 0`` and contain the products ``x[j][s] * x[j][s+1]`` (the activation
traffic that stays on the server). Exact linearisation:

- one-hot ``b[j,s,t]`` (t = 0..min(c_j, k_s)) with ``x[j][s] = sum_t t b[j,s,t]``; ``b[j,s,0]`` says
  "stage s not on j" and ``b[j,s,k_s]`` "all of stage s on j" (ring AllReduce inside the server);
- ``w[j,s,t] = b[j,s,t] * x[j][s+1]`` by the four standard inequalities (exact for a binary times a
  bounded integer), so ``x[j][s] x[j][s+1] = sum_t t w[j,s,t]``;
- ``alpha >= term[j,s] - M b[j,s,0]`` for every (j, s), M an upper bound of every term.

With the NIC share (``Bandwidth.nic == "share"``) the NIC term of (j, s) is
``2 act / k_s * g / B_inter * (1 - x[j][nb] / k_nb)`` (the replica count cancels against its x/g share:
linear) and the ring term ``sum_t b[j,s,t] * ring / rate(t)`` (exact through the one-hot).

The heuristic's mapping is feasible here, so Heavy-Edge can never beat this optimum (tested).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sim.asrpt.iteration import Bandwidth, alpha
from sim.asrpt.profiles import PipelineConfig


@dataclass
class IlpResult:
    x: list[list[int]]
    alpha: float
    seconds: float
    status: str


def optimal_mapping(config: PipelineConfig, free: list[int], bw: Bandwidth = Bandwidth(),
                    time_limit: float = 30.0) -> IlpResult:
    """The mapping minimising alpha over servers with ``free`` GPUs (ring AllReduce only)."""
    import time

    from scipy.optimize import Bounds, LinearConstraint, milp

    if bw.allreduce != "ring":
        raise ValueError("the integer programme models ring AllReduce only")
    t0 = time.perf_counter()
    st = config.stages
    S, m = len(st), len(free)
    k = [s.replicas for s in st]
    if sum(free) < sum(k):
        raise ValueError(f"{sum(k)} GPUs needed, {sum(free)} free")
    U = [[min(free[j], k[s]) for s in range(S)] for j in range(m)]
    idx: dict[tuple, int] = {}
    integrality: list[int] = []
    ub: list[float] = []

    def var(key, upper, integer=1):
        idx[key] = len(ub)
        ub.append(float(upper))
        integrality.append(integer)

    var("alpha", np.inf, 0)
    for j in range(m):
        for s in range(S):
            for t in range(U[j][s] + 1):
                var(("b", j, s, t), 1)
    for j in range(m):
        for s in range(S - 1):
            for t in range(U[j][s] + 1):
                var(("w", j, s, t), U[j][s + 1], 0)
    n = len(ub)
    rows, lo, hi = [], [], []

    def add(coefs: dict[int, float], low: float, high: float) -> None:
        row = np.zeros(n)
        for i, v in coefs.items():
            row[i] += v
        rows.append(row)
        lo.append(low)
        hi.append(high)

    def xcoef(j, s, scale=1.0) -> dict[int, float]:
        return {idx[("b", j, s, t)]: scale * t for t in range(1, U[j][s] + 1)}

    for j in range(m):
        for s in range(S):
            add({idx[("b", j, s, t)]: 1.0 for t in range(U[j][s] + 1)}, 1, 1)
        cap: dict[int, float] = {}
        for s in range(S):
            for i, v in xcoef(j, s).items():
                cap[i] = cap.get(i, 0) + v
        add(cap, -np.inf, free[j])
    for s in range(S):
        tot: dict[int, float] = {}
        for j in range(m):
            for i, v in xcoef(j, s).items():
                tot[i] = tot.get(i, 0) + v
        add(tot, k[s], k[s])
    for j in range(m):  # w = b * x_next
        for s in range(S - 1):
            Un = U[j][s + 1]
            for t in range(U[j][s] + 1):
                w, b = idx[("w", j, s, t)], idx[("b", j, s, t)]
                add({w: 1.0, b: -Un}, -np.inf, 0)  # w <= Un b
                add({w: 1.0, **{i: -v for i, v in xcoef(j, s + 1).items()}}, -np.inf, 0)  # w <= x
                c = {w: 1.0, b: -Un, **{i: -v for i, v in xcoef(j, s + 1).items()}}
                add(c, -Un, np.inf)  # w >= x - Un (1 - b)

    inv_e, inv_a = 1.0 / bw.inter, 1.0 / bw.intra
    share = bw.nic == "share"
    g = float(bw.server_gpus)
    big = 0.0
    term_rows = []
    for j in range(m):
        for s in range(S):
            coef: dict[int, float] = {}
            const = st[s].compute_s / k[s]
            hi_est = const

            def acc(i, v):
                coef[i] = coef.get(i, 0.0) + v

            for nb, act in ((s + 1, st[s].activation_bytes), (s - 1, st[s - 1].activation_bytes if s else 0.0)):
                if not (0 <= nb < S) or act <= 0:
                    continue
                per = 2.0 * act / k[s]
                lower = min(s, nb)  # product x[j][s] x[j][nb] via w of the lower stage
                if share:
                    # n per (1 - x_nb / k_nb) / (n / g B) + n per x_nb / k_nb / B_intra, n = x[j][s] > 0
                    const += per * g * inv_e
                    hi_est += per * g * inv_e
                    for i, v in xcoef(j, nb, -per * g * inv_e / k[nb]).items():
                        acc(i, v)
                    for t in range(U[j][lower] + 1):
                        acc(idx[("w", j, lower, t)], per / k[nb] * t * inv_a)
                else:
                    for i, v in xcoef(j, s, per * inv_e).items():
                        acc(i, v)
                    hi_est += per * U[j][s] * inv_e
                    for t in range(U[j][lower] + 1):
                        acc(idx[("w", j, lower, t)], per / k[nb] * t * (inv_a - inv_e))
            P = st[s].parameter_bytes
            if k[s] > 1 and P > 0:
                ring = 2.0 * (k[s] - 1) / k[s] * P
                if share:  # sum_t b[j,s,t] ring / rate(t): exact through the one-hot
                    for t in range(1, U[j][s] + 1):
                        acc(idx[("b", j, s, t)], ring * (inv_a if t == k[s] else g * inv_e / min(t, g)))
                    hi_est += ring * g * inv_e
                else:
                    const += ring * inv_e
                    hi_est += ring * inv_e
                    if U[j][s] == k[s]:
                        acc(idx[("b", j, s, k[s])], ring * (inv_a - inv_e))
            big = max(big, hi_est)
            term_rows.append((j, s, coef, const))
    M = 2.0 * big + 1.0
    for j, s, coef, const in term_rows:
        c = {i: -v for i, v in coef.items()}
        c[idx["alpha"]] = 1.0
        c[idx[("b", j, s, 0)]] = c.get(idx[("b", j, s, 0)], 0.0) + M
        add(c, const, np.inf)  # alpha - term + M b0 >= const
    cost = np.zeros(n)
    cost[idx["alpha"]] = 1.0
    res = milp(cost, constraints=LinearConstraint(np.array(rows), lo, hi),
               integrality=np.array(integrality), bounds=Bounds(np.zeros(n), np.array(ub)),
               options={"time_limit": time_limit})
    if res.x is None:
        raise RuntimeError(f"integer programme failed: {res.message}")
    x = [[0] * S for _ in range(m)]
    for j in range(m):
        for s in range(S):
            x[j][s] = int(round(sum(t * res.x[idx[("b", j, s, t)]] for t in range(U[j][s] + 1))))
    status = "optimal" if res.status == 0 else str(res.message)
    # Report alpha evaluated by the time model itself (drops solver tolerances); servers left empty stay.
    return IlpResult(x, alpha(config, x, bw), time.perf_counter() - t0, status)
