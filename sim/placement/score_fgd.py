"""FGD (Weng et al., ATC '23): fragmentation of a node measured against the target workload, and the
fragmentation-gradient score (place where fragmentation grows least).

Fragmentation of node n for a task type m (GPU request d_m: whole GPUs k, or a fraction f < 1 of one GPU):
the free GPU capacity of n that m cannot use. If m cannot fit on n at all, all free capacity is fragment;
otherwise, for a fractional m, the free shares of GPUs that individually hold less than f; for a whole-GPU
m, the free shares of partly used GPUs (m needs whole GPUs). The node's fragmentation is the expectation
over the target workload's request distribution, F_n = sum_m p_m frag_n(m) (in GPUs; per GPU: divide by
the node's GPU count). FGD picks the node minimising F_n(after) - F_n(before); the score maps that gradient
to [0, 1] (1: no growth) so it composes with the other scores.

The request mix is the workload's own (:func:`distribution_of`, what FGD is meant to use): the placements
that use this score (``fgd``, sim/placement/fgd.py, and ``scored:fgd=...``) read it from the workload they
are bound to when a replay starts (:func:`request_mix`). ``V2023_MIX`` (alias ``DEFAULT_DISTRIBUTION``, the
default of the pure functions below) is a fixed mix of the v2023 pods (Weng et al. Fig. 2: mostly fractional
and 1-GPU pods), kept as the named value ``mix="v2023"`` and used by a placement that was never bound.
"""
from __future__ import annotations

from typing import Iterable, Sequence

from sim.placement.state import MILLI, NodeState

#: (whole GPUs, milli-GPUs, probability): milli > 0 means a fractional pod of one GPU.
DEFAULT_DISTRIBUTION: tuple[tuple[int, int, float], ...] = (
    (0, 250, 0.15), (0, 500, 0.25), (1, 0, 0.45), (2, 0, 0.07), (4, 0, 0.05), (8, 0, 0.03))
V2023_MIX = DEFAULT_DISTRIBUTION
#: The named request mixes: "workload" (the bound workload's own, the default) and the fixed ones.
MIXES = ("workload", "v2023")


def node_fragmentation(free_whole: int, shared_free: Sequence[int],
                       distribution: Iterable[tuple[int, int, float]] = DEFAULT_DISTRIBUTION) -> float:
    """Expected unusable free GPU capacity (in GPUs) of a node with ``free_whole`` idle GPUs and
    partly used GPUs with ``shared_free`` free milli-GPUs each."""
    partial = sum(shared_free) / MILLI
    total_free = free_whole + partial
    out = 0.0
    for gpus, milli, p in distribution:
        if milli:
            fits = free_whole >= 1 or any(left >= milli for left in shared_free)
            frag = sum(left for left in shared_free if left < milli) / MILLI if fits else total_free
        else:
            frag = partial if free_whole >= gpus else total_free
        out += p * frag
    return out


def gpu_fragmentation(free_milli: int, distribution: Iterable[tuple[int, int, float]] = DEFAULT_DISTRIBUTION) -> float:
    """Per-GPU view: the expected unusable share of one GPU with ``free_milli`` free."""
    out = 0.0
    for gpus, milli, p in distribution:
        usable = (milli and free_milli >= milli) or (not milli and gpus <= 1 and free_milli == MILLI)
        out += p * (0.0 if usable else free_milli / MILLI)
    return out


def gradient(node: NodeState, gpus: int, milli: int = 0,
             distribution: Iterable[tuple[int, int, float]] = DEFAULT_DISTRIBUTION) -> float:
    """F(after placing the pod) - F(before), in GPUs."""
    dist = tuple(distribution)
    before = node_fragmentation(node.free, node.shared_free, dist)
    if milli:
        fitting = [left for left in node.shared_free if left >= milli]
        if fitting:
            best = min(fitting)
            shared = list(node.shared_free)
            shared[shared.index(best)] = best - milli
            after = node_fragmentation(node.free, [s for s in shared if s > 0], dist)
        else:
            after = node_fragmentation(node.free - 1, list(node.shared_free) + [MILLI - milli], dist)
    else:
        after = node_fragmentation(node.free - gpus, node.shared_free, dist)
    return after - before


def score(node: NodeState, gpus: int, milli: int = 0, job_class: str | None = None,
          distribution: Iterable[tuple[int, int, float]] = DEFAULT_DISTRIBUTION) -> float:
    """1 - gradient / capacity, clipped to [0, 1]: the node where fragmentation grows least scores highest."""
    if node.capacity <= 0:
        return 0.0
    return max(0.0, min(1.0, 1.0 - gradient(node, gpus, milli, distribution) / node.capacity))


def distribution_of(gpus: Sequence[int], milli: Sequence[int], pods: Sequence[int] | None = None
                    ) -> tuple[tuple[int, int, float], ...]:
    """The per-pod request distribution of a workload (whole GPUs per pod or milli-GPUs per pod)."""
    counts: dict[tuple[int, int], int] = {}
    for i, (g, m) in enumerate(zip(gpus, milli)):
        p = pods[i] if pods is not None else 1
        key = (0, int(m)) if m else (max(1, int(g) // max(1, p)), 0)
        counts[key] = counts.get(key, 0) + 1
    n = sum(counts.values()) or 1
    return tuple((g, m, c / n) for (g, m), c in sorted(counts.items()))


def request_mix(mix: str = "workload", workload=None) -> tuple[tuple[int, int, float], ...]:
    """The request distribution named ``mix``: ``"workload"``, the per-pod mix of ``workload`` (the fixed
    v2023 mix when there is none: a placement used outside a replay), or ``"v2023"``."""
    if mix not in MIXES:
        raise ValueError(f"FGD request mix must be one of {', '.join(MIXES)}, got {mix!r}")
    if mix == "v2023" or workload is None:
        return V2023_MIX
    return distribution_of(workload.gpus, workload.gpu_milli, workload.pods)
