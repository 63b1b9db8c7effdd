"""Whether the `schedcast` process asks the kernel for huge pages for its large arrays.

numpy marks every array of 4 MB or more MADV_HUGEPAGE, and pyarrow's default allocator (mimalloc) backs
its segments with transparent huge pages. Where the kernel's transparent huge pages are on and its
``defrag`` setting is ``always``, ``madvise`` or ``defer+madvise`` (``madvise`` is the usual
default), a fault in such a region that finds no free huge page stalls on a synchronous compaction instead
of taking small pages (numpy/numpy#31590 describes it). A 1.75 M-job replay faults in about 2 GB, and on a
machine such as this project's VM the stalls cost a second or more of system time (measured in
:func:`avoid_huge_page_stalls`). The command therefore asks for small pages where huge ones stall, unless
the user chose with the libraries' own variables. Library use (``import sim``) is left as the libraries
set it.

A batch command that exits when it is done (`simulate`, `demo`) also keeps the memory it frees for its
next allocations (:func:`keep_freed_memory`): each fresh page costs a fault, and on this project's VM the
faults of a 1.75 M-job replay are a quarter of its time.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

#: The kernel's transparent-huge-page settings.
THP = Path("/sys/kernel/mm/transparent_hugepage")
#: ``defrag`` choices under which a fault in a MADV_HUGEPAGE region compacts memory synchronously.
STALLING_DEFRAG = frozenset({"always", "madvise", "defer+madvise"})


def _choice(path: Path) -> str | None:
    """The bracketed choice of a sysfs setting ("always [madvise] never" -> "madvise"), or None."""
    try:
        text = path.read_text()
    except OSError:
        return None
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else None


def huge_page_faults_stall(thp: Path = THP) -> bool:
    """Whether a fault in a region marked MADV_HUGEPAGE may stall on compaction here (Linux only)."""
    enabled, defrag = _choice(thp / "enabled"), _choice(thp / "defrag")
    return enabled in ("always", "madvise") and defrag in STALLING_DEFRAG


def small_page_pool() -> str:
    """The pyarrow allocator that does not ask for huge pages: jemalloc where pyarrow was built with it
    (its default leaves pages alone, and it reuses what it freed), else the system allocator."""
    import pyarrow as pa

    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:  # a pyarrow built without jemalloc
        return "system"
    return "jemalloc"


def avoid_huge_page_stalls(thp: Path = THP, arrow: bool = True) -> list[str]:
    """Where faults in huge-page regions stall: turn numpy's huge-page marking off, and make pyarrow allocate
    with an allocator that takes small pages instead of mimalloc (:func:`small_page_pool`), for this
    process and the processes it starts (plot worker, Dask workers: through the environment), except where
    the user set ``NUMPY_MADVISE_HUGEPAGE`` or ``ARROW_DEFAULT_MEMORY_POOL``. Which of the two it changed.

    Measured on this project's VM (2 cores, ``defrag`` = madvise), pinned to one core: the 1.75 M-job
    `simulate` command took 3.20-3.39 s of system time with numpy's marking and 2.21-2.28 s without (three
    rounds each, ``--no-plots``); reading its trace (``load_trace``) took 1.17-1.25 s of system time with
    mimalloc (385 MB of it in huge pages) and 0.70-0.80 s with the system allocator. jemalloc against the
    system allocator, the whole command, 6 interleaved rounds each (2026-11-26, a newer VM of the same
    kind): 4.26-4.64 s (mean 4.46) against 4.53-4.96 s (mean 4.77).

    Neither library is imported for numpy's part (the variable is read when numpy is imported). Choosing
    pyarrow's pool imports pyarrow (is jemalloc built in?): ``arrow=False`` skips it unless pyarrow is
    imported already, for a command that never touches Arrow memory (the SchedMate text tools, whose whole
    start is ~0.3 s and pyarrow's import 0.1 s of it)."""
    if not huge_page_faults_stall(thp):
        return []
    changed = []
    if "NUMPY_MADVISE_HUGEPAGE" not in os.environ:
        os.environ["NUMPY_MADVISE_HUGEPAGE"] = "0"  # read when numpy is imported
        if "numpy" in sys.modules:  # imported already: switched directly (numpy >= 2, pyproject)
            sys.modules["numpy"]._core.multiarray._set_madvise_hugepage(False)
        changed.append("numpy")
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ and (arrow or "pyarrow" in sys.modules):
        pool = small_page_pool()
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = pool  # read when pyarrow first allocates
        import pyarrow as pa

        pa.set_memory_pool(pa.jemalloc_memory_pool() if pool == "jemalloc" else pa.system_memory_pool())
        changed.append("pyarrow")
    return changed


#: glibc's mallopt parameters (malloc.h) and the values a batch command sets: blocks up to 32 MiB (a
#: column of 4 M float64, glibc's largest threshold) come from the heap instead of mmap, and the heap is
#: not given back before 2 GiB lie free at its top (mallopt takes a C int).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD, TRIM_THRESHOLD = 32 << 20, (1 << 31) - 1


def keep_freed_memory() -> bool:
    """Make glibc's malloc keep the memory this process frees for its next allocations instead of handing
    it back to the kernel; whether it could (glibc only). Why: a 1.75 M-job replay allocates and frees
    column after column of 14 MB; by default glibc hands large freed blocks and the heap's free top back
    to the kernel, so the next column faults fresh pages in again (about 2.5 us each on this project's VM). For a process that exits when its
    command is done (`simulate`, `demo`): a long-lived one would keep its peak. Measured, the whole 1.75
    M-job command pinned to one core, 5 interleaved rounds each (2026-11-26, pyarrow on jemalloc): 4.33-4.52
    s (645 k faults) against 4.45-4.73 s (713 k faults)."""
    import ctypes
    import platform

    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))


__all__ = ["avoid_huge_page_stalls", "huge_page_faults_stall", "keep_freed_memory", "small_page_pool"]
