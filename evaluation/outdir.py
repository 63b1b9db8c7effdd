"""Output folders that schedcast owns: refuse what is not ours, write whole-or-nothing.

Every command that writes a result folder (``simulate``, ``demo``, ``corpus``, experiment cells) goes
through this module, so ``--force`` means the same everywhere:

* ``--out`` that is a file is refused (``--force`` never unlinks a user's file);
* a non-empty folder is refused without ``--force``; with ``--force`` it is replaced only when schedcast
  recognises it as its own output: it holds the marker file :data:`MARKER` (a regular file) that an
  earlier run wrote, with a random id (also recorded as ``output_id`` in the folder's ``meta.json`` /
  ``run.json`` where it has one: the two must agree) and the list of every file it wrote. A
  ``meta.json`` that merely looks like ours (``{"complete": true}``) is not enough. A file in the folder
  that the marker does not list (a user's ``notes.txt`` added inside a result folder) is never deleted:
  ``--force`` is refused, naming it. ``--out .``, the home folder or any folder holding the working
  directory is never replaced: a user's folder is not deleted because a flag was typed;
* the new content is written into a hidden sibling folder (``.NAME.XXXX.partial``, carrying the pid of
  the run that writes it), marked, then swapped into place with two renames, so an interrupted run
  leaves the previous folder (or none), never a mix. A run killed with -9 leaves its hidden folder; the
  next run into the same place removes those of dead runs (only folders of that shape that carry
  schedcast's pid file).
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
from pathlib import Path
from typing import Callable, TypeVar

#: The marker file a schedcast output folder carries (JSON: command kind, time written, random id, files).
MARKER = ".schedcast-output"
#: The file in a hidden temporary folder naming the process that writes it (JSON: pid, host).
PARTIAL = ".schedcast-partial"
#: The files that record a folder's output id beside the marker (the first JSON mapping found).
ID_FILES = ("meta.json", "run.json")
#: The most files a --force refusal names.
_NAMED = 6

T = TypeVar("T")


class OutputError(ValueError):
    """The output folder cannot be used (a file, not empty without --force, not ours, not writable)."""


def new_output_id() -> str:
    """A random, secret-free id for a new output folder."""
    return secrets.token_hex(8)


def read_marker(folder: str | Path) -> dict | None:
    """The folder's marker when it is one schedcast wrote: a regular file (not a link), a JSON mapping with a
    hex ``id``; else None."""
    path = Path(folder) / MARKER
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > 64 * 1024 * 1024:
            return None
        data = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not re.fullmatch(r"[0-9a-f]{16,64}",
                                                                                             data["id"]):
        return None
    return data


def recorded_id(folder: str | Path) -> str | None:
    """The ``output_id`` recorded in the folder's meta.json / run.json (the first that has one)."""
    for name in ID_FILES:
        try:
            data = json.loads((Path(folder) / name).read_text())
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and "output_id" in data:
            return data["output_id"] if isinstance(data["output_id"], str) else ""
    return None


def is_own_output(path: str | Path) -> bool:
    """Whether ``path`` is a folder schedcast wrote: its marker, with the id its meta.json / run.json records
    (when it has one of those). Folders of schedcast versions before the id are not recognised."""
    marker = read_marker(path)
    if marker is None:
        return False
    recorded = recorded_id(path)
    return recorded is None or recorded == marker["id"]


def _entries(folder: Path) -> list[str]:
    """Every file and folder under ``folder`` (relative, '/'-separated; links are not followed)."""
    out = []
    for root, dirs, files in os.walk(folder):
        rel = Path(root).relative_to(folder)
        for name in dirs + files:
            out.append((rel / name).as_posix())
    return sorted(out)


def foreign_files(path: str | Path) -> list[str]:
    """The entries of an own output folder that its marker does not list (added by someone else)."""
    marker = read_marker(path) or {}
    listed = set(marker.get("files") or []) | {MARKER}
    return [e for e in _entries(Path(path)) if e not in listed]


def _name_files(files: list[str]) -> str:
    shown = ", ".join(files[:_NAMED])
    return shown + (f" and {len(files) - _NAMED} more" if len(files) > _NAMED else "")


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
            own = is_own_output(out)
            raise OutputError(f"{flag} {out} exists and is not empty (" + (
                f"schedcast's output of an earlier run); give --force to replace it whole, or another folder"
                if own else f"it holds {_name_files(_entries(out))}, and it is not a folder schedcast wrote); "
                "give another folder"))
        if _holds_cwd(out):
            raise OutputError(f"{flag} {out} is the working folder, one of its parents or the home folder: "
                              "--force never replaces it; give a new folder")
        if not is_own_output(out):
            raise OutputError(f"{flag} {out} is not empty and is not a folder schedcast wrote (no valid {MARKER} "
                              f"marker; it holds {_name_files(_entries(out))}): --force replaces only "
                              "schedcast's own output; give a new folder")
        extra = foreign_files(out)
        if extra:
            raise OutputError(f"{flag} {out} is schedcast's output but holds files schedcast did not write "
                              f"({_name_files(extra)}): --force never deletes them; move them out or give "
                              "a new folder")
    parent = out.absolute().parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{flag} {out}: cannot create {parent}: {exc.strerror or exc}") from None
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{flag} {out}: {parent} is not writable")
    return out


def write_marker(folder: str | Path, kind: str, output_id: str | None = None) -> str:
    """Mark ``folder`` as schedcast's output of command ``kind``: a random id (``output_id`` when given) and
    the list of every file in it now. Returns the id."""
    folder = Path(folder)
    output_id = output_id or new_output_id()
    files = [e for e in _entries(folder) if e != MARKER]
    (folder / MARKER).write_text(json.dumps({"kind": kind, "written": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                                             "id": output_id, "files": files,
                                             "note": "written by schedcast; --force may replace this folder "
                                                     "when it holds only the files listed here"}) + "\n")
    return output_id


def claim_run_folder(out: str | Path, kind: str, flag: str = "--out") -> str:
    """A folder schedcast keeps adding to (an experiment's run folder, resumed run after run): a new or empty
    one is marked as ours (:data:`MARKER`, kind ``kind``); an existing non-empty one must carry our marker of
    that kind, with the id its run.json records. Anything else is refused, naming the files in it (a user's
    results.csv, leaderboard.html, run.json or spec.yaml is never replaced). Returns the folder's id, which
    the caller records as ``output_id`` in its run.json."""
    out = Path(out)
    check_run_folder(out, kind, flag)
    marker = read_marker(out)
    if marker is not None:
        return marker["id"]
    out.mkdir(parents=True, exist_ok=True)
    return write_marker(out, kind)


def check_run_folder(out: str | Path, kind: str, flag: str = "--out") -> None:
    """:func:`claim_run_folder`'s refusal without writing anything (validation before any work)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise OutputError(f"{flag} {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()):
        marker = read_marker(out)
        recorded = recorded_id(out)
        if marker is None or marker.get("kind") != kind or (recorded is not None and recorded != marker["id"]):
            raise OutputError(f"{flag} {out} is not empty and is not a {kind} folder schedcast wrote (no valid "
                              f"{MARKER} marker; it holds {_name_files(_entries(out))}): schedcast never writes "
                              "over those files; give a new folder")


def _record_id(folder: Path, output_id: str) -> None:
    """Record the id in the folder's meta.json (when it is a JSON mapping), beside the marker."""
    path = folder / "meta.json"
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return
    if isinstance(meta, dict):
        path.write_text(json.dumps({**meta, "output_id": output_id}, indent=1, default=str))


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _partial_owner(folder: Path) -> dict | None:
    """The (pid, host) a hidden temporary folder of ours carries; None when it is not one of ours."""
    try:
        st = (folder / PARTIAL).lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > 4096:
            return None
        data = json.loads((folder / PARTIAL).read_text())
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("pid"), int) else None


def _mark_partial(folder: Path) -> None:
    import socket

    (folder / PARTIAL).write_text(json.dumps({"pid": os.getpid(), "host": socket.gethostname()}))


def clean_stale_partials(out: str | Path) -> list[Path]:
    """Remove the hidden ``.NAME.XXXX.partial`` / ``.NAME.XXXX.old`` folders beside ``out`` that a killed run
    (its pid gone, on this host) left; a ``.old`` holding the previous output while ``out`` is missing is put
    back first. Only folders of that shape carrying schedcast's pid file are touched. Returns those removed."""
    import socket

    out = Path(out)
    parent = out.absolute().parent
    host = socket.gethostname()
    removed = []
    try:
        candidates = sorted(parent.glob(f".{glob_escape(out.name)}.*"))
    except OSError:
        return removed
    for p in candidates:
        if not re.fullmatch(re.escape(f".{out.name}.") + r"[A-Za-z0-9_]+\.(partial|old)", p.name):
            continue
        if p.is_symlink() or not p.is_dir():
            continue
        owner = _partial_owner(p)
        if owner is None or owner.get("host") != host or _pid_alive(owner["pid"]):
            continue
        previous = p / "previous"
        if p.name.endswith(".old") and previous.is_dir() and not out.exists():
            os.rename(previous, out)  # killed between the two renames: the previous output goes back
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def glob_escape(name: str) -> str:
    return re.sub(r"([*?\[])", r"[\1]", name)


def replace_folder(out_dir: str | Path, fill: Callable[[Path], T], *, kind: str, force: bool = False,
                   flag: str = "--out") -> T:
    """Write ``out_dir`` whole or not at all: ``fill(tmp)`` writes into a hidden sibling folder, which is
    marked (:data:`MARKER`) and renamed into place; an existing folder is replaced only under the rules
    of :func:`check_output` (checked again just before the swap). Stale hidden folders of killed runs
    beside it are removed first (:func:`clean_stale_partials`). Returns what ``fill`` returned."""
    out = check_output(out_dir, force, flag)
    parent = out.absolute().parent
    clean_stale_partials(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".partial", dir=parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)
    try:
        _mark_partial(tmp)
        value = fill(tmp)
        (tmp / PARTIAL).unlink()
        output_id = new_output_id()
        _record_id(tmp, output_id)
        write_marker(tmp, kind, output_id)
        if out.exists():
            check_output(out, force, flag)  # filled by someone else meanwhile, or replaced by a file
            old = Path(tempfile.mkdtemp(prefix=f".{out.name}.", suffix=".old", dir=parent))
            _mark_partial(old)
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
