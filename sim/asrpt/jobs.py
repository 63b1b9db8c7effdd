"""What A-SRPT needs per job from a trace: a recurring-group key, a DL model (stage profile) and the true
iteration count, for traces that carry them (the PAI-shaped generator) and for those that do not (Philly).

- **Group key** (:func:`group_keys`): the trace's ``group_id`` where present, else
  :func:`features.duration.recurring_group_id`, the key the ``iterations`` model is trained on: a hash of
  (user, normalised job name), else (user, GPUs), else (org, GPUs). On Philly's processed file (no users,
  no names) that is **(VC, GPUs)**: jobs of one virtual cluster asking for the same GPU count are taken to
  be recurring submissions of one job. This is our reading; the paper groups PAI jobs by PAI's own group
  tag, which Philly lacks.
- **Model** (:func:`job_models`): the trace's ``dl_model`` column where present; else, with ``assign``,
  one model per group drawn from :data:`ASSIGN_MODELS` by a seeded hash of (seed, group key) — the
  paper assigns a model and configuration per group; a hash keeps the choice independent of row order
  and of which other groups are in the trace.
- **True iterations** (:func:`true_iterations`): the trace's ``iterations`` column where present; else
  ``duration / alpha~_min`` at the *reference* bandwidths (:data:`REF_INTER_GBIT` = 10 Gb/s between
  servers, the paper's default NIC; 300 GB/s inside), i.e. a trace duration is read as the run time on
  the best (fewest-servers, Heavy-Edge) placement of the paper's cluster. Jobs without a profile have
  alpha = 1 (an iteration is a second). The PAI-shaped generator writes durations the same way, so both
  traces agree, and the performance model, the oracle and the group predictors all use these counts.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Sequence

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from sim.asrpt.iteration import Bandwidth
    from sim.asrpt.profiles import StageCatalog

#: models assigned per group (measured PipeDream profiles and derived transformers)
ASSIGN_MODELS = ("resnet50", "vgg16", "gnmt", "inception_v3", "resnet18", "bert-large", "gpt-6.7b", "t5-large")
#: reference NIC bandwidth (Gb/s) at which a trace duration is the best-placement run time
REF_INTER_GBIT = 10.0
#: reference intra-server bandwidth (GB/s)
REF_INTRA_GBYTE = 300.0


def reference_bandwidth(server_gpus: int = 8) -> "Bandwidth":
    from sim.asrpt.iteration import Bandwidth

    return Bandwidth(inter=REF_INTER_GBIT * 1e9 / 8, intra=REF_INTRA_GBYTE * 1e9, server_gpus=server_gpus)


def group_keys(frame: "pd.DataFrame") -> np.ndarray:
    """One recurring-group key per row (see the module docstring), as Python strings."""
    from features.duration import recurring_group_id

    derived = recurring_group_id(frame)
    keys = frame["group_id"].astype("string").fillna(derived) if "group_id" in frame else derived
    return keys.astype(str).to_numpy(dtype=object)


def assign_model(key: str, seed: int = 0, models: Sequence[str] = ASSIGN_MODELS) -> str:
    """The model of group ``key``: a seeded hash (stable across processes and row orders)."""
    h = int(hashlib.sha256(f"{int(seed)}\x1f{key}".encode()).hexdigest()[:12], 16)
    return models[h % len(models)]


def job_models(frame: "pd.DataFrame", fallback: Sequence[str | None] | None = None, assign: bool = True,
               seed: int = 0, models: Sequence[str] = ASSIGN_MODELS) -> list[str | None]:
    """Per job: ``dl_model`` of the trace, else ``fallback[job]`` (e.g. Workload.model), else (with
    ``assign``) the group's seeded model, else None (speed 1)."""
    n = len(frame)
    out: list[str | None] = [None] * n
    if "dl_model" in frame:
        col = frame["dl_model"].astype(object).to_numpy()
        out = [None if v is None or v is np.nan or (isinstance(v, float) and np.isnan(v)) or str(v) in ("", "<NA>")
               else str(v) for v in col]
    if fallback is not None:
        out = [m if m is not None else (fallback[i] if fallback[i] is not None else None) for i, m in enumerate(out)]
    if assign and any(m is None for m in out):
        keys = group_keys(frame)
        cache: dict[str, str] = {}
        for i, m in enumerate(out):
            if m is None:
                k = keys[i]
                if k not in cache:
                    cache[k] = assign_model(k, seed, models)
                out[i] = cache[k]
    return out


def alpha_min_of(catalog: "StageCatalog", model: str | None, gpus: int, bw: "Bandwidth",
                 gpus_per_server: int = 8, cache: dict | None = None) -> float | None:
    """alpha~_min of ``model`` on ``gpus`` GPUs at ``bw`` (None without a profile)."""
    from sim.asrpt.iteration import alpha_min

    key = (model, int(gpus), bw, gpus_per_server)
    if cache is not None and key in cache:
        return cache[key]
    cfg = catalog.config(model, int(gpus)) if model is not None else None
    a = None if cfg is None else alpha_min(cfg, bw, gpus_per_server)
    if cache is not None:
        cache[key] = a
    return a


def true_iterations(frame: "pd.DataFrame", models: Sequence[str | None], gpus: Sequence[int] | None = None,
                    catalog: "StageCatalog | None" = None, bw: "Bandwidth | None" = None,
                    gpus_per_server: int = 8) -> np.ndarray:
    """Per job: the ``iterations`` column where present and positive, else duration / alpha~_min at
    ``bw`` (default: the reference bandwidths)."""
    from sim.asrpt.profiles import StageCatalog

    n = len(frame)
    out = np.full(n, np.nan)
    if "iterations" in frame:
        col = np.asarray(frame["iterations"].astype("Float64").to_numpy(dtype=float, na_value=np.nan), dtype=float)
        ok = np.isfinite(col) & (col > 0)
        out[ok] = col[ok]
    missing = np.flatnonzero(~np.isfinite(out))
    if len(missing):
        catalog = catalog if catalog is not None else shared_catalog()
        bw = bw if bw is not None else reference_bandwidth(gpus_per_server)
        dur = frame["duration"].to_numpy(dtype=float)
        g = np.asarray(gpus if gpus is not None else frame["num_gpus"].to_numpy(dtype=float), dtype=float)
        cache: dict = {}
        for i in missing:
            gi = int(g[i]) if np.isfinite(g[i]) and g[i] >= 1 else 1
            a = alpha_min_of(catalog, models[i], gi, bw, gpus_per_server, cache)
            out[i] = dur[i] / a if a else dur[i]
    return out


_SHARED: list = []


def shared_catalog() -> "StageCatalog":
    """One process-wide catalog (plans are cached per model)."""
    if not _SHARED:
        from sim.asrpt.profiles import StageCatalog

        _SHARED.append(StageCatalog())
    return _SHARED[0]
