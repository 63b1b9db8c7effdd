"""GFS Score3, eviction awareness (Eq. 15-16; our reading) and the spot circuit breaker.

A node's eviction pressure blends its evictions in the last hour and its hourly average over the last
24 hours, ``E = gamma * e_1h + (1 - gamma) * e_24h / 24`` (gamma = 0.8: the recent hour dominates), and
Score3 = 1 / (1 + E): nodes where HP tasks recently evicted spot tasks are likely to again (their HP
organisations are growing), so spot pods avoid them. The **circuit breaker**: a node with at least
``m`` = 3 evictions in the last hour takes no spot pods at all until its hour window drops below m.
HP pods score 1 everywhere (they are never evicted; only spot placement is steered). The node snapshot
must carry ``evictions_1h`` / ``evictions_24h`` (score_gfs_colocation.GpuClassState); plain snapshots
have no history and score 1.
"""
from __future__ import annotations

from sim.placement.state import NodeState

GAMMA = 0.8
BREAKER_M = 3


def pressure(e_1h: float, e_24h: float, gamma: float = GAMMA) -> float:
    """Eq. 15 (our reading): recent-hour evictions blended with the 24 h hourly average."""
    return gamma * e_1h + (1.0 - gamma) * e_24h / 24.0


def tripped(node: NodeState, m: int = BREAKER_M) -> bool:
    """The spot circuit breaker: at least ``m`` evictions on this node in the last hour."""
    return getattr(node, "evictions_1h", 0) >= m


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None,
          gamma: float = GAMMA) -> float:
    if job_class != "spot":
        return 1.0
    return 1.0 / (1.0 + pressure(getattr(node, "evictions_1h", 0), getattr(node, "evictions_24h", 0), gamma))
