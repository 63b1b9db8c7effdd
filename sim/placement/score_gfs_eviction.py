"""GFS Score3, eviction awareness (Eq. 15-16), criterion 3 for HP pods, and the spot circuit breaker.

Paper reading (``mode="paper"``, the default; Table 4: gamma = 0.8, m = 3). A node's blended eviction count
    e_bar = gamma * e_1h + (1 - gamma) * e_24h
(e_1h, e_24h: spot evictions on the node in the last hour / the last 24 hours; the day includes the hour), and
    Score3_spot = max(0, 1 - 0.01 * m ** e_bar)
so a node without evictions scores 0.99 and each eviction multiplies the penalty by m. The **circuit
breaker** is the point where the penalty drives Score3 to 0 (0.01 m^e_bar >= 1, i.e. e_bar >= log_m 100:
4.19 blended evictions for m = 3): such a node takes no spot pods until its counts fall. **Criterion 3 for
HP pods** is the other side of the same signal: an HP pod goes to the node with the *highest* past
eviction count (e_bar), where HP demand has been growing and spot tasks are already being avoided, which
keeps spot tasks elsewhere safe.

Old reading (``mode="inverse"``, kept as a named value): e_bar = gamma e_1h + (1 - gamma) e_24h / 24,
Score3 = 1 / (1 + e_bar) for spot pods, a constant for HP pods, and the breaker at e_1h >= m.

The node snapshot must carry ``evictions_1h`` / ``evictions_24h`` (score_gfs_colocation.GpuClassState);
plain snapshots have no history (e_bar = 0).
"""
from __future__ import annotations

import math

from sim.placement.state import NodeState

GAMMA = 0.8
BREAKER_M = 3
MODES = ("paper", "inverse")


def pressure(e_1h: float, e_24h: float, gamma: float = GAMMA, mode: str = "paper") -> float:
    """e_bar: the node's blended eviction count (paper) or the old hourly-average blend (inverse)."""
    if mode == "inverse":
        return gamma * e_1h + (1.0 - gamma) * e_24h / 24.0
    return gamma * e_1h + (1.0 - gamma) * e_24h


def spot_score(e_bar: float, m: float = BREAKER_M, mode: str = "paper") -> float:
    """Score3 of a spot pod on a node with blended count ``e_bar``."""
    if mode == "inverse":
        return 1.0 / (1.0 + e_bar)
    if e_bar > 0 and m > 1 and e_bar * math.log(m) > math.log(1e6):  # m^e_bar overflows long before
        return 0.0
    return max(0.0, 1.0 - 0.01 * float(m) ** e_bar)


def breaker_open(e_1h: float, e_24h: float, gamma: float = GAMMA, m: float = BREAKER_M,
                 mode: str = "paper") -> bool:
    """True when the node is closed to spot pods (paper: Score3 driven to 0; inverse: e_1h >= m)."""
    if mode == "inverse":
        return e_1h >= m
    return spot_score(pressure(e_1h, e_24h, gamma, mode), m, mode) <= 0.0


def tripped(node: NodeState, m: int = BREAKER_M, gamma: float = GAMMA, mode: str = "paper") -> bool:
    """The spot circuit breaker on a node snapshot."""
    return breaker_open(getattr(node, "evictions_1h", 0), getattr(node, "evictions_24h", 0), gamma, m, mode)


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None,
          gamma: float = GAMMA, m: float = BREAKER_M, mode: str = "paper") -> float:
    """Score3 (higher is better): spot pods avoid evicting nodes; HP pods (paper) seek them."""
    e_bar = pressure(getattr(node, "evictions_1h", 0), getattr(node, "evictions_24h", 0), gamma, mode)
    if job_class != "spot":
        return e_bar if mode == "paper" else 1.0
    return spot_score(e_bar, m, mode)
