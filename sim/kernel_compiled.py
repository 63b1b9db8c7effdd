"""The strict single-pool kernel compiled with numba, for the largest plain replays.

:func:`sim.kernel._run_one_strict` replays a strict ordered queue (FIFO, SJF, SPJF) on one pool whose
placement fits a job exactly when its GPU count is free (first-fit that may spread) in a Python loop: about
1 us per job, as fast as a minimal heap loop in Python. This module is the same loop over arrays, compiled:
the same event order (finishes, then arrivals in submission order, then starts while the head fits), the
same float operations (``end = now + duration / 1.0``), the same ties (by job index) and the same
allocation series, so every start time and every series row is the Python kernel's (tests/
test_kernel_compiled.py compares them). 0.36-0.42 s for 1.75 M jobs against 1.6 s.

It is used only where it pays (:data:`MIN_JOBS`): importing numba and loading the compiled code from its
cache costs 0.38-0.39 s, 0.24-0.25 s without numba's SciPy-BLAS probe (:func:`skip_blas_probe`, which the
`schedcast` command asks for); the first run on a machine compiles: about 1 s more; numba caches the code
beside this module, or under ``NUMBA_CACHE_DIR``. Without numba, or
with ``SCHEDCAST_COMPILED_KERNEL=0``, the Python kernel runs.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import numpy as np

#: Fewest jobs for which the compiled loop is used (its fixed cost, ~0.4 s, is what the Python loop takes
#: for ~0.5 M jobs).
MIN_JOBS = 500_000

_COMPILED: list[Any] = []  # the compiled chunk function, once imported
#: Whether numba's first load in this process skips its SciPy-BLAS probe (see :func:`skip_blas_probe`).
_SKIP_BLAS_PROBE = [False]
#: The module numba's probe imports (numba.np.arraymath, at its import, for its inner-product helper).
BLAS_PROBE_MODULE = "scipy.linalg.cython_blas"


def skip_blas_probe() -> None:
    """Load numba in this process without its probe for SciPy's BLAS.

    Why: when numba loads its array functions (on the first call of any compiled function, cached or not),
    ``numba.np.arraymath`` imports ``scipy.linalg.cython_blas`` to learn whether BLAS is there, and that
    imports ``scipy.linalg`` and SciPy's array-API layer (numpy.f2py among it): 0.14 s of the 0.38-0.39 s
    numba costs, for a loop that uses no linear algebra. With the probe answered "absent", numba's only
    use of the answer (``_HAVE_BLAS``: np.convolve's and np.correlate's inner product) takes its plain
    loop; ``np.dot`` and ``np.linalg`` in numba code ask for SciPy again when compiled, and get it.

    The answer is given by a ``None`` entry in ``sys.modules`` for the duration of that one import, which
    another thread importing SciPy's BLAS at that moment would also see: so only a process that runs one
    replay at a time asks for it (the console script's `simulate` and `demo`, pipelines.cli), never a
    library caller or a Dask worker's threads."""
    _SKIP_BLAS_PROBE[0] = True


def _import_arraymath_without_blas_probe() -> None:
    """Import numba.np.arraymath with :data:`BLAS_PROBE_MODULE` unimportable, then importable again
    (nothing to do where either is imported already)."""
    import sys

    if "numba.np.arraymath" in sys.modules or BLAS_PROBE_MODULE in sys.modules:
        return
    sys.modules[BLAS_PROBE_MODULE] = None  # type: ignore[assignment]  # import raises ModuleNotFoundError
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        if BLAS_PROBE_MODULE in sys.modules and sys.modules[BLAS_PROBE_MODULE] is None:
            del sys.modules[BLAS_PROBE_MODULE]


def enabled() -> bool:
    """Off when ``SCHEDCAST_COMPILED_KERNEL`` is ``0``, ``false``, ``no`` or ``off``."""
    return os.environ.get("SCHEDCAST_COMPILED_KERNEL", "1").strip().lower() not in ("0", "false", "no", "off")


def compiled() -> Callable[..., Any] | None:
    """The compiled chunk function, or None where numba cannot be imported or cannot cache its code (no
    writable place for it: numba then refuses the module); the Python kernel runs instead."""
    if not _COMPILED:
        try:
            from sim._kernel_numba import run_chunk

            if _SKIP_BLAS_PROBE[0]:
                _import_arraymath_without_blas_probe()
        except Exception:  # noqa: BLE001 - numba missing (it is in the `ml` extra), or its cache refused
            _COMPILED.append(None)
        else:
            _COMPILED.append(run_chunk)
    return _COMPILED[0]


def exact_floats(values: np.ndarray) -> np.ndarray | None:
    """``values`` (queue keys, times) as float64 when each value converts exactly and compares as Python
    compares the original (finite, magnitude at most 2**53), else None."""
    if values.dtype.kind not in "iuf":
        return None
    if len(values) and not (np.isfinite(values).all() and np.abs(values).max() <= 2 ** 53):
        return None
    return values.astype(np.float64, copy=False)


def inputs(engine: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(submit, duration, gpus) of the engine's workload as the compiled loop reads them, or None where a
    value would not convert exactly."""
    w = engine.workload
    submit, duration = exact_floats(w.column("submit")), exact_floats(w.column("duration"))
    gpus = w.column("gpus")
    if submit is None or duration is None or gpus.dtype.kind not in "iu":
        return None
    return submit, duration, gpus.astype(np.int64, copy=False)


def run(engine: Any, keys: np.ndarray, free: int, arrays: tuple[np.ndarray, np.ndarray, np.ndarray]
        ) -> tuple[np.ndarray, np.ndarray, int, int, int]:
    """Replay the engine's workload on ``free`` GPUs in the compiled loop: (start times, the flat series
    time, GPUs in use, ..., GPUs in use at the end, jobs finished, jobs arrived). ``arrays``: from
    :func:`inputs`. Progress is reported between chunks, as often as the Python kernel reports it."""
    run_chunk = compiled()
    submit, duration, gpus = arrays
    n = len(submit)
    start = np.full(n, np.inf)
    series = np.empty(4 * n + 2)  # an iteration handles at least one event (2n) and records two values
    heaps = (np.empty(n), np.empty(n, dtype=np.int64), np.empty(n), np.empty(n, dtype=np.int64))
    # ai, free, used, last, done, series length, running heap size, waiting heap size
    state = np.array([0, free, 0, -1, 0, 0, 0, 0], dtype=np.int64)
    progress = engine.progress
    step = max(1, n // 200)
    target = 0 if progress is not None else np.iinfo(np.int64).max
    while True:
        finished = run_chunk(submit, duration, gpus, keys, start, series, *heaps, state, target)
        if finished:
            break
        progress(int(state[4]), n)
        target = int(state[4]) + step
    return start, series[:state[5]], int(state[2]), int(state[4]), int(state[0])


__all__ = ["BLAS_PROBE_MODULE", "MIN_JOBS", "compiled", "enabled", "exact_floats", "inputs", "run", "skip_blas_probe"]
