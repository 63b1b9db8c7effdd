"""Lucid's Affine-jobpair Binder (§3.3) as pure rules: each takes plain numbers and says yes or no.

A waiting job (the guest) may be packed on a running job (the host) if every rule holds. On the guest
alone: it was never found unstable, fits one node, was profiled, its sharing score is within G_SS and
it has at least ``min_remaining`` s of work left. On the host alone: it runs alone on one node, was
profiled, was never found unstable and has enough work left. On the pair: same GPU demand (the host
list is built per demand), their GPU memory fits one GPU, the summed sharing scores (0 tiny, 1 medium,
2 jumbo) are within G_SS and the guest's estimate is at most ``pair_ratio`` times the host's. Among
allowed hosts the lowest (summed score, summed memory) wins: a pair's speed is unknown before it runs.
``binder=False`` is Lucid's naive-packing ablation: only the memory rule. Horus packs when predicted
GPU utilisations sum to at most 100 %.
"""
from __future__ import annotations


def stable(job_never_pack: bool) -> bool:
    """A job whose pair was found unstable is never packed again."""
    return not job_never_pack


def fits_one_node(gpus: int, largest_node: int) -> bool:
    return gpus <= largest_node


def profiled(was_profiled: bool) -> bool:
    return was_profiled


def score_within(score: float, g_ss: int) -> bool:
    """A job's (or a pair's summed) sharing score does not exceed G_SS."""
    return score <= g_ss


def enough_work(estimate: float, min_remaining: float) -> bool:
    """Packing a job about to end gains little and slows its partner: both need ``min_remaining`` s."""
    return estimate >= min_remaining


def memory_fits(gmem_guest: float, gmem_host: float, gpu_memory: float) -> bool:
    """A hard limit, even for naive packing: the pair must fit in one GPU's memory."""
    return gmem_guest + gmem_host <= gpu_memory


def ratio_ok(est_guest: float, est_host: float, pair_ratio: float) -> bool:
    """A long guest would slow a short host for most of the guest's life (Lucid's simulator uses 2)."""
    return est_guest <= pair_ratio * est_host


def host_solo(members: int, running: bool) -> bool:
    """The host runs (not loading or saving) and is alone on its GPUs."""
    return running and members == 1


def guest_ok(*, never_pack: bool, gpus: int, largest_node: int, binder: bool, was_profiled: bool,
             score: float, g_ss: int) -> bool:
    """Binder rules on the guest alone, except :func:`enough_work` (checked last by the caller: the
    estimate is the dearest input). ``binder=False``: only stability and size."""
    if not (stable(never_pack) and fits_one_node(gpus, largest_node)):
        return False
    if not binder:
        return True
    return profiled(was_profiled) and score_within(score, g_ss)


def host_ok(*, members: int, running: bool, never_pack: bool, binder: bool, was_profiled: bool,
            estimate: float, min_remaining: float) -> bool:
    """Binder rules on the host alone (``binder=False``: solo, running, stable)."""
    if not (host_solo(members, running) and stable(never_pack)):
        return False
    return not binder or (profiled(was_profiled) and enough_work(estimate, min_remaining))


def pair_rank(*, binder: bool, score_guest: float, score_host: float, g_ss: int, gmem_guest: float,
              gmem_host: float, gpu_memory: float, est_guest: float, est_host: float,
              pair_ratio: float) -> tuple | None:
    """The host's rank for this guest (lower is better), or None if the pair is not allowed."""
    if not memory_fits(gmem_guest, gmem_host, gpu_memory):
        return None
    if not binder:
        return (0, 0)
    score = score_guest + score_host
    if not score_within(score, g_ss) or not ratio_ok(est_guest, est_host, pair_ratio):
        return None
    return (score, gmem_guest + gmem_host)


def horus_rank(*, util_guest: float, util_host: float, gmem_guest: float, gmem_host: float,
               gpu_memory: float, host: int) -> tuple | None:
    """Horus: packable when predicted GPU utilisations sum to at most 100 % and memory fits; the host
    with the lowest summed utilisation wins."""
    total = util_guest + util_host
    if total > 100.0 or not memory_fits(gmem_guest, gmem_host, gpu_memory):
        return None
    return (total, host)
