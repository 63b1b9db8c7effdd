"""One loader per trace format, each returning the canonical JobTable with its load report."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from features.jobtable import JobTable, TraceError
from features.plugins import PluginError, Registry, new_registry
from features.traces._io import COMPRESSION_SUFFIXES, check_path
from features.traces.alibaba import load_alibaba_v2023, load_pai
from features.traces.helios import load_acme, load_helios
from features.traces.philly import load_philly_csv, load_philly_json


def _as_format(name: str, entry) -> tuple[Callable[..., JobTable], str]:
    """What the registry stores: (loader, one-line description). A bare loader (an entry point's
    function ``load(path, **options) -> JobTable``) is described by its docstring's first line."""
    if isinstance(entry, tuple) and len(entry) == 2 and callable(entry[0]):
        return entry[0], str(entry[1])
    if not callable(entry):
        raise PluginError(f"trace format {name!r} must be a loader function (path, **options) -> JobTable")
    doc = (entry.__doc__ or "").strip().splitlines()
    return entry, doc[0] if doc else name


#: format name -> (loader, one-line description): the one registry of trace formats (entry-point group
#: ``schedcast.trace_formats``, whose entries are loader functions). The CLI and tests read it.
FORMATS: Registry[tuple[Callable[..., JobTable], str]] = new_registry("trace_formats", noun="trace format",
                                                                     adapt=_as_format)
for _name, _entry in {
    "philly": (load_philly_csv, "Philly processed CSV (timestamp, duration, num_gpus, gpu_time, cluster)"),
    "philly-json": (load_philly_json, "Philly raw cluster_job_log JSON (attempts, per-attempt GPUs)"),
    "helios": (load_helios, "Helios / Lucid cluster_log.csv or cluster_full_log.csv (node_num optional)"),
    "acme": (load_acme, "Acme Seren / Kalos trace_*.csv"),
    "pai": (load_pai, "Alibaba PAI-2020 headerless pai_job_table.csv (+ group_tag, task table)"),
    "alibaba-v2023": (load_alibaba_v2023, "Alibaba GPU cluster v2023 pod list (qos -> job_class)"),
}.items():
    FORMATS.register(_name, _entry)

#: schedcast's own modules that add formats: each exposes ``FORMATS`` (same shape) and is imported here,
#: so a new system's trace (GFS' spot trace, failure-annotated traces) plugs in from its own file
_PLUGIN_FORMATS = ("features.traces.gfs", "features.traces.failures")


def _load_plugin_formats() -> None:
    import importlib

    for module_name in _PLUGIN_FORMATS:
        for name, entry in getattr(importlib.import_module(module_name), "FORMATS", {}).items():
            if name in FORMATS._items:
                raise ValueError(f"trace format {name!r} of {module_name} is already registered")
            FORMATS.register(name, entry)


_load_plugin_formats()


def guess_format(path: str | Path) -> str:
    """Guess a format from the file name (a compression suffix is ignored); raise if unsure."""
    name = Path(path).name.lower()
    for suffix in COMPRESSION_SUFFIXES:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    if name.endswith(".json"):
        return "philly-json"
    if "philly" in name:
        return "philly"
    if "pai_job" in name:
        return "pai"
    if "openb_pod" in name:
        return "alibaba-v2023"
    if name.startswith("trace_"):
        return "acme"
    if "cluster_log" in name or "cluster_full_log" in name:
        return "helios"
    raise TraceError(path, f"cannot guess the trace format; pass one of: {', '.join(FORMATS)}")


def load_trace(path: str | Path, format: str | None = None, *, cache: bool = True, **options) -> JobTable:
    """Load any supported trace into a JobTable (format guessed from the name when not given).

    Every failure is a TraceError naming the file (the CLI prints it on one line and exits 2): the
    path is checked before the format is guessed, so a missing file says "file not found".

    A parsed trace is kept in the trace cache (features.traces.cache: keyed by the file's path, size
    and modification time, the format, the options and the loaders' code), so the next replay of the
    same file skips parsing; ``cache=False`` or SCHEDCAST_TRACE_CACHE=0 turns it off.
    """
    check_path(path)
    fmt = format or guess_format(path)
    if fmt not in FORMATS:
        raise TraceError(path, f"unknown format {fmt!r}; known: {', '.join(FORMATS.names())}")
    from features.traces import cache as trace_cache

    key = trace_cache.key_for(path, fmt, options) if cache else None
    if key is not None:
        hit = trace_cache.get(key)
        if hit is not None:
            return hit
    table = _parse(path, fmt, options)
    if key is not None:
        trace_cache.put(key, table)
    return table


def _parse(path: str | Path, fmt: str, options: dict) -> JobTable:
    try:
        return FORMATS[fmt][0](path, **options)
    except TraceError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, AttributeError, OverflowError, OSError, EOFError,
            RecursionError, MemoryError) as exc:
        # A case no loader anticipated: still one line naming the file, with the exception's type.
        raise TraceError(path, f"cannot read as {fmt} ({type(exc).__name__}: {exc}); please report this") from exc


#: The loaders that read through the fast CSV reader (features.traces._io.read_csv(fast=True)), whose
#: files read_trace_ahead may start reading.
_READ_AHEAD_LOADERS = (load_helios, load_acme, load_philly_csv)


def read_trace_ahead(path: str | Path, format: str | None = None) -> bool:
    """Start reading the file ``load_trace(path, format)`` will parse, in a background thread
    (features.traces._io.read_ahead), when its format's loader reads with the fast CSV reader and the
    trace cache holds no entry for it (a cached trace is not parsed at all); whether a read was started.
    Never raises: whatever is wrong with the path or the file is reported by load_trace itself."""
    from features.traces import cache as trace_cache
    from features.traces._io import read_ahead

    try:
        fmt = format or guess_format(path)
        if fmt not in FORMATS or FORMATS[fmt][0] not in _READ_AHEAD_LOADERS:
            return False
        if trace_cache.has(trace_cache.key_for(path, fmt, {})):
            return False
        return read_ahead(path)
    except Exception:  # noqa: BLE001 - an optimisation only: the command goes on and load_trace reports
        return False


__all__ = ["FORMATS", "load_trace", "guess_format", "read_trace_ahead"]
