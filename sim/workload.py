"""JobTable + cluster -> Workload: the simulator's per-job arrays, with what traces lack filled in.

Everything filled (GPU counts, models, load and save times) is seeded and recorded in the workload's
report, and jobs that can never run on the modelled cluster are rejected and counted here, before the
simulation starts, instead of waiting in a queue forever.

A job's **request** is richer than a GPU count (:class:`Request`, ``Workload.request(job)``). It is read
once from optional job-table columns into per-job lists:

- ``num_pods`` / ``gpus_per_pod``: a gang of pods, each with its GPUs on one node; all pods start
  together or none does. Without them a job is one pod of ``num_gpus`` GPUs that the placement may
  spread over nodes when no node holds it (today's behaviour: traces give GPU counts only).
- ``gpu_fraction`` (< 1): each pod needs that share of one GPU; pods of any jobs share a physical GPU
  up to its capacity (1000 milli-GPUs). Without ``num_pods`` a fractional job has ``num_gpus`` pods.
  ``gpus[job]`` is then the whole-GPU bound ceil(pods x fraction) and ``gpu_demand[job]`` the exact
  demand (pods x fraction); for whole-GPU jobs both equal ``num_gpus``.
- ``gpu_type``: the job runs on nodes of that GPU model only (in clusters with more than one model;
  a homogeneous cluster ignores it, noted in the report). Untyped jobs run on any one model: all their
  pods on nodes of the same model.
- ``job_class`` (any label, e.g. hp / spot), ``stages`` / ``replicas`` (pipeline stages x replicas, for
  A-SRPT), ``checkpoint_interval`` (s of training between checkpoints; none = a failure or an
  eviction loses the whole attempt; GFS spot tasks checkpoint every 3,600 s).
"""
from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from features.jobtable import TEXT_DTYPE, JobTable, is_arrow_text, null_text
from sim.cluster import Cluster
from sim.memory import age_tracked_objects
from sim.profiles import CostModel, ProfileCatalog


MILLI = 1000  # a GPU's capacity in milli-GPUs (fractions are integers of these: no float drift)
#: ``job_class`` labels of preemptible (spot) jobs; every other label (hp, None, ...) is high priority.
SPOT_LABELS = frozenset({"spot", "lp", "be", "low"})
#: The per-job lists build_workload leaves as its arrays until they are first read (Workload.__getattr__).
#: Why: the compiled loop, the scoring and the fingerprint read the arrays (Workload.column); only the
#: Python loops and policies read the lists, and making two lists of 1.75 M floats costs about 0.1 s and
#: 110 MB of fresh pages that the largest replays, which run compiled, never use.
DEFERRED_LISTS = ("submit", "duration")


def is_spot(label: str | None) -> bool:
    """A ``job_class`` of a spot (preemptible, low-priority) job."""
    return label is not None and str(label).lower() in SPOT_LABELS


@dataclass(frozen=True, slots=True)
class Request:
    """What one job asks for. ``milli`` is 0 for whole GPUs, else the milli-GPUs each pod needs."""

    pods: int
    gpus_per_pod: int
    milli: int = 0
    gpu_type: str | None = None
    job_class: str | None = None
    stages: tuple[int, int] | None = None  # (pipeline stages, replicas per stage)
    spread: bool = True  # a single pod given only by a GPU count may span nodes

    @property
    def fraction(self) -> float:
        """Share of one GPU per pod (1.0 for whole GPUs)."""
        return self.milli / MILLI if self.milli else 1.0

    @property
    def fractional(self) -> bool:
        return self.milli > 0

    @property
    def gpus(self) -> float:
        """Total demand in GPUs (pods x GPUs per pod, or pods x fraction)."""
        return self.pods * self.milli / MILLI if self.milli else self.pods * self.gpus_per_pod

    @property
    def whole_gpus(self) -> int:
        """GPUs counted as whole ones (an upper bound for fractional requests)."""
        return -(-self.pods * self.milli // MILLI) if self.milli else self.pods * self.gpus_per_pod


@dataclass
class Workload:
    """Simulator jobs, indexed 0..n-1 in submission order. Hot-path arrays are Python lists; built by
    build_workload, ``submit`` and ``duration`` are made from its arrays at their first read
    (:data:`DEFERRED_LISTS`).

    The request lists (``pods`` ... ``checkpoint``) are optional when a Workload is built by hand:
    left as None they are filled with today's semantics (one pod of ``gpus`` whole GPUs, any GPU
    model, no class, no stages, no checkpoints).
    """

    job_id: list[str] | JobIds  # JobIds: built from a job table (build_workload)
    submit: list[float]
    duration: list[float]
    gpus: list[int]
    partition: list[int]
    load_time: list[float]
    save_time: list[float]
    model: list[str | None]
    frame: pd.DataFrame  # the kept rows of the JobTable (same order), for predictors and metrics
    cluster: Cluster
    report: dict[str, Any] = field(default_factory=dict)
    pods: list[int] | None = None
    gpus_per_pod: list[int] | None = None
    gpu_milli: list[int] | None = None  # 0: whole GPUs
    gpu_type: list[str | None] | None = None
    job_class: list[str | None] | None = None
    stages: list[tuple[int, int] | None] | None = None
    checkpoint: list[float] | None = None  # s of training between checkpoints (inf: none)
    gpu_demand: list[float] | None = None
    spread: list[bool] | None = None  # a single pod given by a GPU count only: may span nodes
    simple: bool = field(default=True, init=False)  # every job: one spreadable pod, whole GPUs, any model
    #: name -> (the list, the array it was made from): see column(); filled by build_workload only
    _columns: dict[str, tuple[list, np.ndarray]] = field(default_factory=dict, init=False, repr=False,
                                                         compare=False)

    def __post_init__(self) -> None:
        n = len(self.submit)
        if self.pods is None:
            self.pods = [1] * n
        if self.gpus_per_pod is None:
            self.gpus_per_pod = list(self.gpus)
        if self.gpu_milli is None:
            self.gpu_milli = [0] * n
        if self.gpu_type is None:
            self.gpu_type = [None] * n
        if self.job_class is None:
            self.job_class = [None] * n
        if self.stages is None:
            self.stages = [None] * n
        if self.checkpoint is None:
            self.checkpoint = [math.inf] * n
        if self.gpu_demand is None:  # whole GPUs only (the common case): the GPU counts themselves
            self.gpu_demand = ([g if not m else p * m / MILLI for g, p, m in zip(self.gpus, self.pods, self.gpu_milli)]
                               if any(self.gpu_milli) else list(self.gpus))
        if self.spread is None:
            self.spread = [p == 1 and not m for p, m in zip(self.pods, self.gpu_milli)]
        self.simple = all(self.spread) and self.gpu_type.count(None) == len(self.gpu_type)

    def __getattr__(self, name: str) -> Any:
        """A list of :data:`DEFERRED_LISTS` that build_workload left as its array: made at its first read,
        then an ordinary attribute (``column(name)`` keeps returning the array, read-only)."""
        hit = self.__dict__.get("_columns", {}).get(name) if name in DEFERRED_LISTS else None
        if hit is None or hit[0] is not None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        values = hit[1].tolist()
        self.__dict__[name] = values
        self._columns[name] = (values, hit[1])
        age_tracked_objects(len(values))  # as build_workload does with its lists (sim.memory)
        return values

    def __len__(self) -> int:
        submit = self.__dict__.get("submit")
        return len(self._columns["submit"][1]) if submit is None else len(submit)

    def column(self, name: str) -> np.ndarray:
        """The per-job list ``name`` (submit, duration, gpus, gpu_demand, partition, load_time, save_time) as
        the array ``np.asarray(list)`` gives, values and dtype: the one build_workload made the list from
        while the attribute still holds that list (read-only: copy it to write), else converted now.

        Why: scoring, fingerprints and load figures each turned 1.75 M-element lists back into arrays
        (0.05-0.1 s per list on a loaded machine). The lists are the hot path's form and never written
        into after the build (a policy that needs other values replaces the list: dataclasses.replace)."""
        hit = self.__dict__.get("_columns", {}).get(name)  # (a Workload unpickled from an older tree has none)
        if hit is not None and hit[0] is None and name not in self.__dict__:  # a list not made yet
            return hit[1]
        values = getattr(self, name)
        if hit is not None and hit[0] is values and len(hit[1]) == len(values):
            return hit[1]
        return np.asarray(values)

    def _keep_columns(self, arrays: dict[str, np.ndarray]) -> None:
        """Remember the arrays the lists were made from (only dtypes a list round-trips exactly). An
        attribute of :data:`DEFERRED_LISTS` holding that very array (build_workload's) is deferred: the list
        is made at its first read (``(None, array)`` until then; None pickles, so a copy stays deferred)."""
        for name, arr in arrays.items():
            if arr.dtype in (np.float64, np.int64, np.bool_) and arr.ndim == 1:
                view = arr.view()
                view.flags.writeable = False
                values = self.__dict__.get(name)
                if name in DEFERRED_LISTS and values is arr:
                    del self.__dict__[name]
                    values = None
                self._columns[name] = (values, view)

    def request(self, job: int) -> Request:
        """The typed request of one job (built on demand; the lists are the hot-path form)."""
        pods = self.pods[job]
        return Request(pods, self.gpus_per_pod[job], self.gpu_milli[job], self.gpu_type[job],
                       self.job_class[job], self.stages[job], self.spread[job])

    @property
    def fingerprint(self) -> str:
        """Hash of the per-job arrays (requests included when any job is more than a GPU count, so
        plain workloads keep the fingerprint they had before requests existed)."""
        h = hashlib.sha256()
        for name in ("submit", "duration", "gpus", "partition", "load_time", "save_time"):
            h.update(np.asarray(self.column(name), dtype=float).tobytes())
        if not self.simple:
            for arr in (self.pods, self.gpus_per_pod, self.gpu_milli, self.checkpoint):
                h.update(np.asarray(arr, dtype=float).tobytes())
            for labels in (self.gpu_type, self.job_class, self.stages):
                h.update("\x1f".join("" if x is None else str(x) for x in labels).encode())
        return h.hexdigest()[:16]


def _partition_of(frame: pd.DataFrame, cluster: Cluster, report: dict) -> np.ndarray:
    if not cluster.partitioned:
        return np.zeros(len(frame), dtype=int)
    orgs = frame["org"]
    if not isinstance(orgs.dtype, pd.StringDtype):  # pyarrow-backed text (the job table's) is used as it is
        orgs = orgs.astype("string")
    orgs = orgs.fillna("<none>")
    part = orgs.map(cluster.index)
    unknown = part.isna()
    if unknown.any():
        policy = cluster.unknown_org
        counts = orgs[unknown].value_counts().to_dict()
        if policy == "reject":
            report["rejected"]["org names no partition of the cluster"] = int(unknown.sum())
            report["unknown_orgs"] = {str(k): int(v) for k, v in counts.items()}
        else:
            target = (max(range(len(cluster.partitions)), key=lambda i: cluster.partitions[i].gpus)
                      if policy == "largest" else cluster.index.get(policy))
            if target is None:
                raise ValueError(f"unknown_org names partition {policy!r}, which the cluster lacks")
            part = part.fillna(target)
            report["notes"].append(f"{int(unknown.sum())} jobs of unknown orgs sent to partition "
                                   f"{cluster.partitions[target].name}")
    return part.fillna(-1).astype(int).to_numpy()


def build_workload(table: JobTable | pd.DataFrame, cluster: Cluster, *, costs: CostModel | None = None,
                   catalog: ProfileCatalog | None = None, seed: int = 0, default_gpus: int | None = None,
                   assignment_strength: float = 1.0, limit: int | None = None) -> Workload:
    """Map jobs to partitions, fill missing fields, reject jobs that can never fit, and build arrays.

    - ``default_gpus``: GPU count for jobs whose trace has none (else they are rejected).
    - ``catalog`` + ``costs``: draw a model per job (larger GPU-time -> larger models, see
      ProfileCatalog.assign) and derive load / save times; without ``costs`` both are 0.
    - ``limit``: keep only the first ``limit`` jobs by submission (quick runs).
    """
    frame = table.frame if isinstance(table, JobTable) else table
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, (int, np.integer)) or limit < 1:
            raise ValueError(f"the job limit must be a whole number >= 1, got {limit!r}")
        frame = frame.iloc[:int(limit)]
    n_in = len(frame)
    report: dict[str, Any] = {"jobs_in": int(n_in), "rejected": {}, "notes": []}
    gpus = frame["num_gpus"].astype("Float64")
    if gpus.isna().any():
        if default_gpus is None:
            report["rejected"]["no GPU count (pass default_gpus to fill)"] = int(gpus.isna().sum())
        else:
            report["notes"].append(f"{int(gpus.isna().sum())} jobs without a GPU count given {default_gpus}")
            gpus = gpus.fillna(default_gpus)
    part = _partition_of(frame, cluster, report)
    req = _requests(frame, gpus, cluster, part, report)
    gpus_np = req["gpus"]
    cap = np.array([p.gpus for p in cluster.partitions] + [0])[part]
    too_big = (gpus_np > cap) & (part >= 0) & (gpus_np > 0)
    if too_big.any():
        report["rejected"]["needs more GPUs than its partition has"] = int(too_big.sum())
        report["too_big_examples"] = frame.loc[too_big, ["job_id", "num_gpus"]].head(5).astype(str).values.tolist()
    keep = (part >= 0) & (gpus_np > 0) & ~too_big
    keep &= _fits_models(req, cluster, part, keep, report)
    # a frame of its own (columns are added to it below): every row kept (the common case) shares the table's
    # columns, never written into (frame[keep] would copy all of them: seconds for 1.75 M rows)
    kept = (frame.copy(deep=False).set_axis(pd.RangeIndex(n_in), copy=False) if keep.all()
            else frame[keep].reset_index(drop=True))
    part, gpus_np = part[keep], gpus_np[keep]
    if not keep.all():
        req = {k: v[keep] for k, v in req.items()}
    n = len(kept)
    duration = kept["duration"].to_numpy(dtype=float)

    model: list[str | None] = [None] * n
    load = np.zeros(n)
    save = np.zeros(n)
    if catalog is not None:
        idx = catalog.assign(duration * gpus_np, seed=seed, strength=assignment_strength)
        names = np.array([p.name for p in catalog.profiles], dtype=object)
        model = names[idx].tolist()
        if costs is not None:
            pbytes = np.array([p.param_bytes for p in catalog.profiles])[idx]
            load, save = costs.load_time(pbytes), costs.save_time(pbytes)
            report["costs"] = costs.model_dump()
        report["catalog"] = {"name": catalog.name, "seed": seed, "assignment_strength": assignment_strength,
                             "models": {p.name: p.param_source for p in catalog.profiles}}
    # column by column into the copy made above (assign would copy all 1.75 M rows again); no per-job Python
    kept["model"] = (pd.array(model, dtype=TEXT_DTYPE) if catalog is not None else null_text(kept.index).array)
    kept["sim_gpus"] = gpus_np
    kept["partition"] = np.array([p.name for p in cluster.partitions], dtype=object)[part]
    kept["load_time"], kept["save_time"] = load, save
    report["jobs_kept"] = n
    report["jobs_rejected"] = int(sum(report["rejected"].values()))
    arrays = {"submit": kept["submit_time"].to_numpy(dtype=float), "duration": duration, "gpus": gpus_np,
              "partition": part, "load_time": np.asarray(load, dtype=float), "save_time": np.asarray(save, dtype=float)}
    workload = Workload(
        job_id=_ids(kept["job_id"]),
        submit=arrays["submit"],  # deferred to lists (DEFERRED_LISTS) by _keep_columns below
        duration=duration,
        gpus=_as_list(gpus_np),
        partition=_as_list(part),
        load_time=_as_list(arrays["load_time"]),
        save_time=_as_list(arrays["save_time"]),
        model=model,
        frame=kept,
        cluster=cluster,
        report=report,
        pods=_as_list(req["pods"].astype(int)),
        gpus_per_pod=_as_list(req["gpp"].astype(int)),
        gpu_milli=_as_list(req["milli"].astype(int)),
        gpu_type=req["gpu_type"].tolist(),
        job_class=req["job_class"].tolist(),
        stages=_stages_list(req["stages"]),
        checkpoint=_as_list(req["checkpoint"].astype(float)),
        spread=_as_list(req["spread"].astype(bool)),
    )
    if not req["milli"].any():  # whole GPUs: __post_init__ made gpu_demand a copy of the GPU counts
        arrays["gpu_demand"] = gpus_np
    workload._keep_columns(arrays)
    age_tracked_objects(n)  # its per-job lists: out of the young generation's collections
    return workload


def _as_list(values: np.ndarray) -> list:
    """``values.tolist()``; a column holding one value throughout (no pods, no checkpoints, one partition:
    most traces) is that value repeated, without converting every element (the same Python objects' values;
    floats are compared bit for bit, so 0.0 and -0.0 or NaNs never merge)."""
    n = len(values)
    if n and values.dtype.kind in "biuf":
        bits = values.view(np.uint64) if values.dtype == np.float64 else values
        if (bits == bits[0]).all():
            return [values[0].item()] * n
    return values.tolist()


class JobIds(Sequence):
    """A workload's job ids kept as the job table's pyarrow-backed text, turned into Python strings only
    when one is asked for (then all at once, kept): a sequence of str equal to that list.

    Why: a replay reads no job id (only error messages and failure traces naming jobs by id do), and the
    job file writes them from the same Arrow data; one Python string per job was 0.2 s and 130 MB for
    1.75 M jobs, and writing them back to Arrow another 0.15 s."""

    __slots__ = ("array", "_strings")

    def __init__(self, array: Any) -> None:
        self.array = array  # a pandas ArrowStringArray without missing values
        self._strings: list[str] | None = None

    def _list(self) -> list[str]:
        if self._strings is None:
            self._strings = self.array.__arrow_array__().to_pylist()
        return self._strings

    def __len__(self) -> int:
        return len(self.array)

    def __getitem__(self, i):  # type: ignore[override]
        return self._list()[i]

    def __iter__(self):
        return iter(self._list())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (JobIds, list, tuple)):
            return len(self) == len(other) and self._list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # a sequence compared by value, like the list it stands for

    def __repr__(self) -> str:
        return f"JobIds({len(self)} ids)"

    def __reduce__(self):
        return JobIds, (self.array,)


def _ids(values: pd.Series) -> list[str] | JobIds:
    """Job ids as a sequence of str (``values.astype(str).tolist()``): pyarrow-backed text without nulls
    (the canonical table's ids) stays Arrow data (:class:`JobIds`)."""
    if is_arrow_text(values) and not values.hasnans:
        return JobIds(values.array)
    return values.astype(str).tolist()


def _stages_list(stages: np.ndarray) -> list[tuple[int, int] | None]:
    """Per-job (stages, replicas) or None, as a list (a job table without stages: no per-job Python)."""
    out = stages.tolist()
    if out.count(None) == len(out):
        return out
    return [None if s is None else tuple(s) for s in out]


def _column(frame: pd.DataFrame, name: str) -> np.ndarray | None:
    """A numeric optional column as floats (NaN where null), or None when the table lacks it."""
    if name not in frame:
        return None
    return pd.to_numeric(frame[name], errors="coerce").astype(float).to_numpy()


def _labels(frame: pd.DataFrame, name: str) -> np.ndarray:
    """A text column as objects, None where missing or empty."""
    if name not in frame:
        return np.full(len(frame), None, dtype=object)
    col = frame[name]
    if not isinstance(col.dtype, pd.StringDtype):  # any storage will do: no conversion of pyarrow text
        col = col.astype("string")
    if col.isna().all():  # the common case (traces without the column): nothing to convert
        return np.full(len(frame), None, dtype=object)
    missing = (col.isna() | (col.fillna("") == "")).to_numpy()
    out = col.astype(object).to_numpy(dtype=object, na_value=None)
    out[missing] = None
    return out


def _requests(frame: pd.DataFrame, gpus: pd.Series, cluster: Cluster, part: np.ndarray,
              report: dict) -> dict[str, np.ndarray]:
    """Per-job request arrays from the optional columns (see the module docstring)."""
    n = len(frame)
    total = gpus.fillna(0).to_numpy(dtype=float)
    pods = np.ones(n, dtype=int)
    gpp = total.astype(int)
    milli = np.zeros(n, dtype=int)
    spread = np.ones(n, dtype=bool)
    bad = np.zeros(n, dtype=bool)
    num_pods, per_pod = _column(frame, "num_pods"), _column(frame, "gpus_per_pod")
    if num_pods is not None or per_pod is not None:
        np_ = num_pods if num_pods is not None else np.full(n, np.nan)
        pp = per_pod if per_pod is not None else np.full(n, np.nan)
        given = ~np.isnan(np_) | ~np.isnan(pp)
        np_ = np.where(np.isnan(np_), np.where(np.isnan(pp), 1, np.round(total / np.where(pp > 0, pp, 1))), np_)
        pp = np.where(np.isnan(pp), total / np.where(np_ > 0, np_, 1), pp)
        wrong = given & ((np_ < 1) | (pp < 1) | (np_ != np.round(np_)) | (pp != np.round(pp))
                         | ((total > 0) & (np_ * pp != total)))
        if wrong.any():
            report["rejected"]["num_pods x gpus_per_pod does not match num_gpus"] = int(wrong.sum())
        bad |= wrong
        ok = given & ~wrong
        pods = np.where(ok, np_, pods).astype(int)
        gpp = np.where(ok, pp, gpp).astype(int)
        total = np.where(ok, pods * gpp, total)
        spread &= ~ok
    fraction = _column(frame, "gpu_fraction")
    if fraction is not None:
        frac = (fraction > 0) & (fraction < 1)
        if frac.any():
            m = np.clip(np.round(np.nan_to_num(fraction) * 1000), 1, 999).astype(int)
            explicit = num_pods is not None and ~np.isnan(num_pods)
            fpods = np.where(explicit, pods, np.maximum(total, 1)).astype(int) if num_pods is not None \
                else np.maximum(total, 1).astype(int)
            milli = np.where(frac, m, 0)
            pods = np.where(frac, fpods, pods)
            gpp = np.where(frac, 1, gpp)
            total = np.where(frac, -(-(fpods * m) // 1000), total)
            spread &= ~frac
            report["notes"].append(f"{int(frac.sum())} jobs ask for a fraction of a GPU per pod")
    gtype = _labels(frame, "gpu_type")
    typed = ~np.equal(gtype, None)
    hetero = [len(set(p.gpu_types)) > 1 for p in cluster.partitions] + [False]
    ignore = typed & ~np.asarray(hetero, dtype=bool)[part]
    if ignore.any():
        gtype = np.where(ignore, None, gtype)
        report["notes"].append(f"gpu_type of {int(ignore.sum())} jobs ignored: their partition has one GPU model")
    stages = np.full(n, None, dtype=object)
    st, rep = _column(frame, "stages"), _column(frame, "replicas")
    if st is not None:
        reps = rep if rep is not None else np.ones(n)
        for i in np.flatnonzero(~np.isnan(st)):
            stages[i] = (int(st[i]), int(reps[i]) if not np.isnan(reps[i]) else 1)
    ckpt = _column(frame, "checkpoint_interval")
    ckpt = np.full(n, np.inf) if ckpt is None else np.where(np.isnan(ckpt) | (ckpt <= 0), np.inf, ckpt)
    total = np.where(bad, 0, total)
    return {"gpus": total.astype(int), "pods": pods, "gpp": gpp, "milli": milli, "spread": spread,
            "gpu_type": gtype, "job_class": _labels(frame, "job_class"), "stages": stages, "checkpoint": ckpt}


def _fits_models(req: dict[str, np.ndarray], cluster: Cluster, part: np.ndarray, keep: np.ndarray,
                 report: dict) -> np.ndarray:
    """Jobs that fit the nodes of their GPU model (and pods that fit one node), among ``keep``."""
    ok = np.ones(len(part), dtype=bool)
    if all(len(set(p.gpu_types)) <= 1 for p in cluster.partitions) and req["spread"][keep].all():
        return ok  # one model per partition and no pods: the partition-size check said it all
    unknown = too_big = pod_big = 0
    info = []
    for p in cluster.partitions:
        by_type: dict[str, tuple[int, int]] = {}
        for cap, t in zip(p.capacities, p.gpu_types):
            g, m = by_type.get(t, (0, 0))
            by_type[t] = (g + cap, max(m, cap))
        info.append(by_type)
    gtype, gpus, gpp, milli, pods, spread = (req["gpu_type"], req["gpus"], req["gpp"], req["milli"], req["pods"],
                                             req["spread"])
    for i in np.flatnonzero(keep):
        by_type = info[part[i]]
        if gtype[i] is not None:
            if gtype[i] not in by_type:
                ok[i] = False
                unknown += 1
                continue
            options = [by_type[gtype[i]]]
        else:
            options = list(by_type.values())
        if not any(gpus[i] <= total for total, _ in options):
            ok[i] = False
            too_big += 1
        elif not spread[i] and not milli[i] and not any(gpp[i] <= biggest for _, biggest in options):
            ok[i] = False
            pod_big += 1
    if unknown:
        report["rejected"]["no node of its GPU model in its partition"] = unknown
    if too_big:
        report["rejected"]["needs more GPUs of one model than its partition has"] = too_big
    if pod_big:
        report["rejected"]["a pod needs more GPUs than any node has"] = pod_big
    return ok
