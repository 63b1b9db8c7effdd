"""numba code of :mod:`sim.kernel_compiled` (imported only there: importing this module imports numba).

Two binary heaps over parallel arrays ordered by (key, job) as Python orders its (key, job) tuples: the
running jobs by end time, the waiting jobs by queue key. The loop is sim.kernel._run_one_strict's, line for
line, over arrays; ``state`` carries it across chunks (one chunk per progress report)."""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def _push(keys, jobs, size, key, job):  # pragma: no cover - compiled
    i = size
    keys[i] = key
    jobs[i] = job
    while i > 0:
        parent = (i - 1) >> 1
        if keys[parent] < keys[i] or (keys[parent] == keys[i] and jobs[parent] < jobs[i]):
            break
        keys[parent], keys[i] = keys[i], keys[parent]
        jobs[parent], jobs[i] = jobs[i], jobs[parent]
        i = parent
    return size + 1


@njit(cache=True, nogil=True)
def _pop(keys, jobs, size):  # pragma: no cover - compiled
    size -= 1
    keys[0] = keys[size]
    jobs[0] = jobs[size]
    i = 0
    while True:
        child = 2 * i + 1
        if child >= size:
            break
        right = child + 1
        if right < size and (keys[right] < keys[child] or (keys[right] == keys[child] and jobs[right] < jobs[child])):
            child = right
        if keys[i] < keys[child] or (keys[i] == keys[child] and jobs[i] < jobs[child]):
            break
        keys[child], keys[i] = keys[i], keys[child]
        jobs[child], jobs[i] = jobs[i], jobs[child]
        i = child
    return size


@njit(cache=True, nogil=True)
def run_chunk(submit, duration, gpus, queue_key, start, series, run_end, run_job, wait_key, wait_job, state,
              target):  # pragma: no cover - compiled
    """Iterate until the replay ends (True) or an iteration ends with ``target`` or more jobs finished
    (False: report progress, then call again)."""
    n = submit.shape[0]
    ai, free, used, last, done, m, running, waiting = (state[0], state[1], state[2], state[3], state[4], state[5],
                                                       state[6], state[7])
    finished = False
    while True:
        t_arr = submit[ai] if ai < n else np.inf
        now = run_end[0] if running > 0 and run_end[0] < t_arr else t_arr
        if now == np.inf:
            finished = True
            break
        while running > 0 and run_end[0] == now:  # finishes
            job = run_job[0]
            running = _pop(run_end, run_job, running)
            free += gpus[job]
            used -= gpus[job]
            done += 1
        while ai < n and submit[ai] == now:  # arrivals, in submission order
            waiting = _push(wait_key, wait_job, waiting, queue_key[ai], ai)
            ai += 1
        while waiting > 0 and gpus[wait_job[0]] <= free:  # strict: stop at the first head that does not fit
            job = wait_job[0]
            waiting = _pop(wait_key, wait_job, waiting)
            free -= gpus[job]
            start[job] = now
            used += gpus[job]
            running = _push(run_end, run_job, running, now + duration[job] / 1.0, job)
        if used != last:
            last = used
            series[m] = now
            series[m + 1] = used
            m += 2
        if done >= target:
            break
    state[0], state[1], state[2], state[3], state[4], state[5], state[6], state[7] = (ai, free, used, last, done, m,
                                                                                      running, waiting)
    return finished
