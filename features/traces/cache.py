"""The trace cache: parsed JobTables kept on disk so that replaying the same trace again skips parsing.

Parsing a real trace costs more than replaying it for small runs (Philly's 74k-job CSV: ~0.4 s to parse,
~0.02 s to read back from the cache), and researchers replay the same file many times. An entry is keyed
by the file's resolved path, size and modification time, the format and loader options, and a digest of
the loader code (features/traces/*.py, features/jobtable.py), so an edited trace or loader is parsed
afresh. Entries are pickles written atomically; an unreadable entry is ignored and rewritten; a cache
that cannot be written (read-only home) is skipped silently. At most ``MAX_ENTRIES`` entries are kept
(oldest dropped).

The cache touches only its own files: entries live in the subfolder :data:`SUBDIR` of the cache folder
and are named ``<key>.pkl`` with a key of :data:`ENTRY_NAME`'s shape, so pointing $SCHEDCAST_TRACE_CACHE
at a folder that holds other pickles never loses one (store, pruning and ``data cache --clear`` alike).
Each entry starts with a header carrying the SHA-256 of its payload: an entry whose bytes changed on disk
(a flipped bit, a truncated copy) is discarded with a one-line note on stderr and computed afresh; the
checksum is verified before anything is unpickled.

The same folder keeps other values that are dear to compute and the same on every run
(:func:`get_value` / :func:`put_value`, keyed by :func:`value_key` with a digest of the code that made
them): SchedMate's per-group job texts and its Failure Handler's measured rates.

Location: $SCHEDCAST_TRACE_CACHE (a folder), else $XDG_CACHE_HOME/schedcast/traces, else
~/.cache/schedcast/traces. SCHEDCAST_TRACE_CACHE=0 (or off/false/no) disables it.
"""
from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import re
import sys
from pathlib import Path
from typing import Any

from features.jobtable import JobTable

MAX_ENTRIES = 32
_OFF = {"0", "off", "false", "no"}
#: The cache's own subfolder of the cache folder (nothing outside it is ever written or removed).
SUBDIR = "schedcast-cache-v2"
#: Names of the cache's entries: ``<sha1>.pkl`` (parsed traces) or ``<kind>-<sha1>.pkl`` (values).
ENTRY_NAME = re.compile(r"(?:[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*-)?[0-9a-f]{40}\.pkl")
#: Temporary files of an entry being written (``.<key>.<pid>.tmp``).
_TMP_NAME = re.compile(r"\.(?:[a-z][a-z0-9_]*(?:-[a-z0-9_]+)*-)?[0-9a-f]{40}\.\d+\.tmp")
#: First line of every entry; the payload's SHA-256 (hex) follows on the second.
MAGIC = b"SCHEDCAST-CACHE 2\n"
_NOTED: set[str] = set()


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


def entries_dir() -> Path | None:
    """The subfolder holding the cache's entries, or None when the cache is off."""
    folder = cache_dir()
    return None if folder is None else folder / SUBDIR


def entries() -> list[Path]:
    """The cache's own entries (files of :data:`ENTRY_NAME`'s shape in :data:`SUBDIR`), nothing else."""
    folder = entries_dir()
    if folder is None or not folder.is_dir():
        return []
    return [p for p in folder.iterdir() if ENTRY_NAME.fullmatch(p.name) and p.is_file()]


def has(key: str | None) -> bool:
    """Whether the cache holds an entry for ``key`` (it may still prove unreadable when read)."""
    entry = _entry(key) if key else None
    return entry is not None and entry.is_file()


def _entry(key: str) -> Path | None:
    folder = entries_dir()
    if folder is None or not ENTRY_NAME.fullmatch(f"{key}.pkl"):
        return None
    return folder / f"{key}.pkl"


def get(key: str) -> JobTable | None:
    table = get_value(key)
    if not isinstance(table, JobTable):
        return None
    try:
        os.utime(entries_dir() / f"{key}.pkl")  # recently used entries are kept when pruning
    except (OSError, TypeError):
        pass
    return table


def put(key: str, table: Any) -> None:
    path = _entry(key)
    if path is None:
        return
    tmp = path.with_name(f".{key}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL)
        with tmp.open("wb") as fh:
            fh.write(MAGIC + hashlib.sha256(payload).hexdigest().encode() + b"\n")
            fh.write(payload)
        os.replace(tmp, path)
        _prune(path.parent)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def _private(folder: Path) -> bool:
    """Whether ``folder`` is owned by this user and not writable by all. Entries are pickles:
    whoever can write one runs code in the next replay, so a shared or foreign cache folder is not read
    (said once; the cache is skipped for reads)."""
    try:
        st = folder.stat()
    except OSError:
        return True  # absent: nothing to read
    ok = st.st_uid == os.getuid() and not st.st_mode & 0o002
    if not ok and str(folder) not in _NOTED:
        _NOTED.add(str(folder))
        print(f"schedcast: note: trace cache {folder} is not private to you (another owner, or writable by "
              "all); its entries are not read", file=sys.stderr)
    return ok


def _discard(path: Path, why: str) -> None:
    """Remove a bad entry and say so once (it is computed afresh and stored again)."""
    if str(path) not in _NOTED:
        _NOTED.add(str(path))
        print(f"schedcast: note: cache entry {path.name} in {path.parent} is corrupt ({why}); discarded and "
              "computed afresh", file=sys.stderr)
    try:
        path.unlink(missing_ok=True)
    except OSError:
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
    """A value stored by :func:`put_value`, or None (absent, corrupt, unreadable, cache off). A corrupt
    entry (its checksum does not match its bytes) is removed with a one-line note on stderr."""
    path = _entry(key) if key is not None else None
    if path is None or not _private(path.parent):
        return None
    try:
        data = path.read_bytes()
    except OSError:  # absent (the common case) or unreadable: computed afresh, silently
        return None
    head, _, rest = data.partition(b"\n")
    digest, _, payload = rest.partition(b"\n")
    if head + b"\n" != MAGIC or len(digest) != 64:
        _discard(path, "no valid header")
        return None
    if hashlib.sha256(payload).hexdigest().encode() != digest:
        _discard(path, "checksum mismatch")
        return None
    try:
        return pickle.loads(payload)
    except Exception:  # intact but written by another version of a class: computed afresh
        return None


def put_value(key: str | None, value: Any) -> None:
    """Store ``value`` atomically (best effort: a cache that cannot be written is skipped)."""
    if key is None:
        return
    put(key, value)


def _prune(folder: Path) -> None:
    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:
            return 0.0

    for old in sorted(entries(), key=mtime, reverse=True)[MAX_ENTRIES:]:
        old.unlink(missing_ok=True)


def clear() -> int:
    """Remove every entry of the cache (and its own stale temporary files); returns how many entries were
    removed. Nothing else in the cache folder is touched."""
    folder = entries_dir()
    if folder is None or not folder.is_dir():
        return 0
    removed = 0
    for entry in entries():
        entry.unlink(missing_ok=True)
        removed += 1
    for tmp in folder.iterdir():
        if _TMP_NAME.fullmatch(tmp.name):
            tmp.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        folder.rmdir()  # only when empty
    return removed
