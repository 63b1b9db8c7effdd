"""Provenance of a trained model: fingerprints of the data it saw and the version of the code that
trained it (one ``code_version`` for model runs and replay runs alike; ``pipelines.tracking`` re-exports
it). Re-exported by :mod:`models.registry`."""
from __future__ import annotations

import hashlib
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd


def file_fingerprint(path: str | Path) -> str:
    """Full SHA-256 (64 hex digits) of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def frame_fingerprint(frame: pd.DataFrame) -> str:
    """Full SHA-256 of a frame's contents (values and column order; not the index)."""
    import pandas as pd

    return hashlib.sha256(pd.util.hash_pandas_object(frame, index=False).to_numpy().tobytes()).hexdigest()


def data_fingerprint(source: str | Path | None, frame: pd.DataFrame, time_col: str | None = None) -> dict[str, Any]:
    """File hash (when a file), row count, content hash and date range of the data a model saw."""
    import pandas as pd

    out: dict[str, Any] = {"data_rows": int(len(frame)), "data_hash": frame_fingerprint(frame)}
    if source is not None and Path(source).is_file():
        out["data_file"] = str(source)
        out["data_file_sha256"] = file_fingerprint(source)
    times = frame.index if time_col is None else frame[time_col]
    if len(frame) and (isinstance(times, pd.DatetimeIndex) or pd.api.types.is_datetime64_any_dtype(times)):
        out["data_start"], out["data_end"] = str(pd.Series(times).min()), str(pd.Series(times).max())
    return out


def code_version(root: str | Path | None = None) -> str:
    """Git commit, plus a short hash of the uncommitted changes to tracked files, so that two dirty trees
    with different edits never share a version: ``abc1234`` or ``abc1234-dirty.1f2e3d4c``; ``unknown``
    outside a git checkout. ``root``: the checkout (default: the one this package lives in).

    Why the fallbacks: a long run on a loaded machine once recorded ``unknown`` for a real checkout (a git
    call that failed or timed out); the commit is then read from ``.git`` directly, and a tree whose
    changes git could not list is ``abc1234-dirty.unknown`` rather than passed off as clean."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        sha = ""
    if not sha:
        sha = _head_from_files(root)
        if not sha:
            return "unknown"
    try:
        diff = subprocess.run(["git", "-C", str(root), "diff", "HEAD", "--no-color", "--no-ext-diff"],
                              capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return f"{sha}-dirty.unknown"
    if diff.returncode != 0:
        return f"{sha}-dirty.unknown"
    return sha + (f"-dirty.{hashlib.sha256(diff.stdout).hexdigest()[:8]}" if diff.stdout.strip() else "")


def _head_from_files(root: Path) -> str:
    """The short commit of ``root``'s HEAD read from ``.git`` without running git ('' when not a checkout)."""
    git = root / ".git"
    try:
        head = (git / "HEAD").read_text().strip()
        if head.startswith("ref: "):
            ref = head[5:].strip()
            path = git / ref
            if path.is_file():
                head = path.read_text().strip()
            else:
                packed = (git / "packed-refs").read_text().splitlines()
                head = next((line.split()[0] for line in packed if line.endswith(" " + ref)), "")
    except OSError:
        return ""
    return head[:7] if len(head) >= 40 and all(c in "0123456789abcdef" for c in head[:40]) else ""
