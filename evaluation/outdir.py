"""Output folders that schedcast owns: refuse what is not ours, write whole-or-nothing.

Every command that writes a result folder (``simulate``, ``demo``, ``corpus``, experiment cells) goes
through this module, so ``--force`` means the same everywhere:

* ``--out`` that is a file is refused (``--force`` never unlinks a user's file);
* a non-empty folder is refused without ``--force``; with ``--force`` it is replaced only when schedcast
  recognises it as its own output: it holds the marker file :data:`MARKER` written by an earlier run
  (or, for folders written before the marker existed, a ``meta.json`` that says it is a complete
  schedcast result). ``--out .``, the home folder or any folder holding the working directory is never
  replaced: a user's folder is not deleted because a flag was typed;
* the new content is written into a hidden sibling folder, marked, then swapped into place with two
  renames, so an interrupted run leaves the previous folder (or none), never a mix.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import Callable, TypeVar

#: The marker file a schedcast output folder carries (JSON: command kind, time written).
MARKER = ".schedcast-output"

T = TypeVar("T")


class OutputError(ValueError):
    """The output folder cannot be used (a file, not empty without --force, not ours, not writable)."""


def is_own_output(path: str | Path) -> bool:
    """Whether ``path`` is a folder schedcast wrote (its marker, or a complete legacy result's meta.json)."""
    folder = Path(path)
    if (folder / MARKER).is_file():
        return True
    try:  # folders written before the marker: simulate / demo / experiment cells
        meta = json.loads((folder / "meta.json").read_text())
    except (OSError, ValueError):
        return _legacy_corpus(folder)
    return isinstance(meta, dict) and (meta.get("complete") is True or meta.get("kind") == "demo")


def _legacy_corpus(folder: Path) -> bool:
    """A `schedcast corpus` folder written before the marker: index.json (seed, jobs) and job-NNNNN
    folders, nothing else."""
    try:
        index = json.loads((folder / "index.json").read_text())
        names = [p.name for p in folder.iterdir()]
    except (OSError, ValueError):
        return False
    if not (isinstance(index, dict) and "seed" in index and isinstance(index.get("jobs"), list)):
        return False
    return all(n == "index.json" or re.fullmatch(r"job-\d{5}", n) for n in names)


def _holds_cwd(out: Path) -> bool:
    """``out`` is the working folder, one above it, the home folder or the file-system root."""
    target = out.resolve()
    cwd = Path.cwd().resolve()
    return target == cwd or target in cwd.parents or target == Path.home().resolve() or target == Path(target.anchor)


def check_output(out_dir: str | Path, force: bool = False, flag: str = "--out") -> Path:
    """Fail before any work is done if results could not be written to ``out_dir`` (see the module doc)."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{flag} {out} is a file, not a folder (--force replaces only a result folder "
                          "schedcast wrote, never a file)")
    if out.is_dir() and any(out.iterdir()):
        if not force:
            raise OutputError(f"{flag} {out} exists and is not empty; give --force to replace it whole, or "
                              "another folder")
        if _holds_cwd(out):
            raise OutputError(f"{flag} {out} is the working folder, one of its parents or the home folder: "
                              "--force never replaces it; give a new folder")
        if not is_own_output(out):
            raise OutputError(f"{flag} {out} is not empty and is not a folder schedcast wrote (no {MARKER} "
                              "marker): --force replaces only schedcast's own output; give a new folder")
    parent = out.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{flag} {out}: cannot create {parent}: {exc.strerror or exc}") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {out}: {parent} is not writable")
    return out


def write_marker(folder: str | Path, kind: str) -> None:
    """Mark ``folder`` as schedcast's output of command ``kind``."""
    (Path(folder) / MARKER).write_text(json.dumps({"kind": kind, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                                   "note": "written by schedcast; --force may replace this folder"})
                                       + "\n")


def replace_folder(out_dir: str | Path, fill: Callable[[Path], T], *, kind: str, force: bool = False,
                   flag: str = "--out") -> T:
    """Write ``out_dir`` whole or not at all: ``fill(tmp)`` writes into a hidden sibling folder, which is
    marked (:data:`MARKER`) and renamed into place; an existing folder is replaced only under the rules
    of :func:`check_output` (checked again just before the swap). Returns what ``fill`` returned."""
    out = check_output(out_dir, force, flag)
    parent = out.absolute().parent
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    try:
        value = fill(tmp)
        write_marker(tmp, kind)
        if out.exists():
            check_output(out, force, flag)  # filled by someone else meanwhile, or replaced by a file
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=parent))
            os.rename(out, old / "previous")
            try:
                os.rename(tmp, out)
            except BaseException:
                os.rename(old / "previous", out)  # put the previous folder back
                raise
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.rename(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return value
