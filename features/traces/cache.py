"""The trace cache: parsed JobTables kept on disk so that replaying the same trace again skips parsing.

Parsing a real trace costs more than replaying it for small runs (Philly's 74k-job CSV: ~0.4 s to parse,
~0.02 s to read back from the cache), and researchers replay the same file many times. An entry is keyed
by the file's resolved path, size and modification time, the format and loader options, and a digest of
the loader code (features/traces/*.py, features/jobtable.py), so an edited trace or loader is parsed
afresh. Entries are pickles written atomically; an unreadable entry is ignored and rewritten; a cache
that cannot be written (read-only home) is skipped silently. At most ``MAX_ENTRIES`` entries are kept
(oldest dropped).

The same folder keeps other values that are dear to compute and the same on every run
(:func:`get_value` / :func:`put_value`, keyed by :func:`value_key` with a digest of the code that made
them): SchedMate's per-group job texts and its Failure Handler's measured rates.

Location: $SCHEDCAST_TRACE_CACHE (a folder), else $XDG_CACHE_HOME/schedcast/traces, else
~/.cache/schedcast/traces. SCHEDCAST_TRACE_CACHE=0 (or off/false/no) disables it.
"""
from __future__ import annotations

import functools
import hashlib
import os
import pickle
from pathlib import Path
from typing import Any

from features.jobtable import JobTable

MAX_ENTRIES = 32
_OFF = {"0", "off", "false", "no"}


def cache_dir() -> Path | None:
    """The cache folder, or None when the cache is turned off."""
    value = os.environ.get("SCHEDCAST_TRACE_CACHE", "").strip()
    if value.lower() in _OFF:
        return None
    if value:
        return Path(value)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "schedcast" / "traces"


def _loader_code() -> str:
    """Digest of the loaders' source: a changed loader must not serve tables parsed by the old one."""
    return code_digest("features/traces", "features/jobtable.py")


def key_for(path: str | Path, fmt: str, options: dict[str, Any]) -> str | None:
    """The cache key of (file, format, options), or None when the cache is off or the file is not a
    plain file (a pipe or /dev/stdin cannot be keyed by size and time)."""
    if cache_dir() is None:
        return None
    try:
        real = Path(path).resolve()
        st = real.stat()
    except OSError:
        return None
    if not real.is_file():
        return None
    ident = repr((str(path), str(real), st.st_size, st.st_mtime_ns, fmt, sorted(options.items()), _loader_code()))
    return hashlib.sha1(ident.encode()).hexdigest()


def get(key: str) -> JobTable | None:
    table = get_value(key)
    if not isinstance(table, JobTable):
        return None
    try:
        os.utime(cache_dir() / f"{key}.pkl")  # recently used entries are kept when pruning
    except OSError:
        pass
    return table


def put(key: str, table: Any) -> None:
    folder = cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        with tmp.open("wb") as fh:
            pickle.dump(table, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, folder / f"{key}.pkl")
        _prune(folder)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)  # type: ignore[possibly-undefined]
        except (OSError, NameError):
            pass


@functools.lru_cache(maxsize=None)
def code_digest(*roots: str | Path) -> str:
    """Digest of the Python sources under ``roots`` (folders or files, relative to the repository):
    a value computed by changed code must not be served (read once per process)."""
    base = Path(__file__).resolve().parents[2]
    h = hashlib.sha1()
    for root in roots:
        path = base / root
        for src in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(str(src.relative_to(base)).encode())
            h.update(src.read_bytes())
    return h.hexdigest()


def value_key(kind: str, *parts: Any) -> str | None:
    """The cache key of a computed value (``parts`` must have a stable repr), None when the cache is off."""
    if cache_dir() is None:
        return None
    return f"{kind}-" + hashlib.sha1(repr(parts).encode()).hexdigest()


def get_value(key: str | None) -> Any:
    """A value stored by :func:`put_value`, or None (absent, unreadable, cache off)."""
    folder = cache_dir()
    if key is None or folder is None:
        return None
    try:
        with (folder / f"{key}.pkl").open("rb") as fh:
            return pickle.load(fh)
    except Exception:  # absent, truncated or written by another version: computed afresh
        return None


def put_value(key: str | None, value: Any) -> None:
    """Store ``value`` atomically (best effort: a cache that cannot be written is skipped)."""
    if key is None:
        return
    put(key, value)


def _prune(folder: Path) -> None:
    entries = sorted(folder.glob("*.pkl"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[MAX_ENTRIES:]:
        old.unlink(missing_ok=True)


def clear() -> int:
    """Remove every entry; returns how many were removed."""
    folder = cache_dir()
    if folder is None or not folder.exists():
        return 0
    removed = 0
    for entry in folder.glob("*.pkl"):
        entry.unlink(missing_ok=True)
        removed += 1
    return removed
