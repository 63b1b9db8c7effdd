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


def avoid_huge_page_stalls(thp: Path = THP) -> list[str]:
    """Where faults in huge-page regions stall: turn numpy's huge-page marking off, and make pyarrow allocate
    with the system allocator instead of mimalloc, for this process and the processes it starts (plot
    worker, Dask workers: through the environment), except where the user set ``NUMPY_MADVISE_HUGEPAGE`` or
    ``ARROW_DEFAULT_MEMORY_POOL``. Which of the two it changed.

    Measured on this project's VM (2 cores, ``defrag`` = madvise), pinned to one core: the 1.75 M-job
    `simulate` command took 3.20-3.39 s of system time with numpy's marking and 2.21-2.28 s without (three
    rounds each, ``--no-plots``); reading its trace (``load_trace``) took 1.17-1.25 s of system time with
    mimalloc (385 MB of it in huge pages) and 0.70-0.80 s with the system allocator."""
    if not huge_page_faults_stall(thp):
        return []
    changed = []
    if "NUMPY_MADVISE_HUGEPAGE" not in os.environ:
        os.environ["NUMPY_MADVISE_HUGEPAGE"] = "0"
        import numpy as np

        np._core.multiarray._set_madvise_hugepage(False)  # numpy >= 2 (pyproject); the variable is read at import
        changed.append("numpy")
    if "ARROW_DEFAULT_MEMORY_POOL" not in os.environ:
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"  # read when pyarrow first allocates
        if "pyarrow" in sys.modules:  # already imported (pandas' Arrow-backed text): set it now
            import pyarrow as pa

            pa.set_memory_pool(pa.system_memory_pool())
        changed.append("pyarrow")
    return changed


__all__ = ["avoid_huge_page_stalls", "huge_page_faults_stall"]
