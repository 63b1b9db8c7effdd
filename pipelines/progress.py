"""A spinner for long steps that print nothing while they run (training a forecaster, loading a
registered model): in a terminal it shows what is running and the elapsed time, then one line with the
time it took; elsewhere (pipes, CI logs, tests) it prints nothing, so output stays stable."""
from __future__ import annotations

import contextlib
import os
import sys
import time
from typing import Iterator


def _interactive() -> bool:
    return sys.stderr.isatty() and os.environ.get("SCHEDCAST_NO_PROGRESS") != "1"


@contextlib.contextmanager
def step(what: str, enabled: bool = True) -> Iterator[None]:
    """Show ``what ...`` with a spinner on stderr while the block runs, then the seconds it took
    (``enabled=False``: a command's --no-progress)."""
    if not (enabled and _interactive()):
        yield
        return
    from rich.console import Console

    console = Console(stderr=True)
    t0 = time.monotonic()
    with console.status(f"{what} ...") as status:
        with contextlib.suppress(Exception):
            status.update(f"{what} ... (started {time.strftime('%H:%M:%S')})")
        yield
    console.print(f"{what}: {time.monotonic() - t0:.1f} s", highlight=False)


__all__ = ["step"]
