"""Work started in a thread now and taken later: for work that runs without the GIL (pyarrow's reading and
encoding, hashlib over arrays) and so goes on beside the Python that follows, on a second core."""
from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def in_background(work: Callable[[], T], name: str) -> Callable[[], T]:
    """Start ``work()`` in a daemon thread named ``name``; the call returned waits for it and gives its value,
    or raises its error in the caller's thread (each time it is called)."""
    box: list[tuple[bool, object]] = []

    def run() -> None:
        try:
            box.append((True, work()))
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box.append((False, exc))

    thread = threading.Thread(target=run, name=name, daemon=True)
    thread.start()

    def result() -> T:
        thread.join()
        ok, value = box[0]
        if not ok:
            raise value  # type: ignore[misc]
        return value  # type: ignore[return-value]

    return result


__all__ = ["in_background"]
