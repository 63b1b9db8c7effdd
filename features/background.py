"""Work started in a thread now and taken later: for work that runs without the GIL (pyarrow's reading and
encoding, hashlib over arrays) and so goes on beside the Python that follows, on a second core."""
from __future__ import annotations

import atexit
import threading
from typing import Callable, TypeVar

T = TypeVar("T")

#: Work still running, waited for at exit (_finish_at_exit).
_RUNNING: set[threading.Thread] = set()
#: The most seconds an exiting process waits for each piece of background work.
EXIT_WAIT_S = 30.0


def _finish_at_exit() -> None:
    """Let background work end before the interpreter shuts down. Why: a daemon thread is otherwise stopped
    wherever it next asks for the GIL, possibly inside a native library (pyarrow's reader, hashlib) that then
    never finishes what it started, and the process hangs in its exit (a command that failed on a bad flag
    while its trace was being read ahead did)."""
    for thread in list(_RUNNING):
        thread.join(EXIT_WAIT_S)


atexit.register(_finish_at_exit)


def in_background(work: Callable[[], T], name: str) -> Callable[[], T]:
    """Start ``work()`` in a daemon thread named ``name``; the call returned waits for it and gives its value,
    or raises its error in the caller's thread (each time it is called). A process that exits first waits
    for the work (at most EXIT_WAIT_S seconds) rather than cut it off."""
    box: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            box.append((True, work()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box.append((False, exc))
        finally:
            _RUNNING.discard(thread)

    thread = threading.Thread(target=run, name=name, daemon=True)
    _RUNNING.add(thread)
    thread.start()

    def result() -> T:
        thread.join()
        ok, value = box[0]
        if not ok:
            raise value  # type: ignore[misc]
        return value  # type: ignore[return-value]

    return result


__all__ = ["in_background"]
