"""GFS (ASPLOS '26) workloads: the spot trace loader, the v2023 pods as HP / spot, and a GFS-shaped generator.

Three sources of HP (high-priority, never evicted) and spot (evictable, checkpointed) tasks:

1. ``load_gfs_spot``: the Alibaba spot trace ``job_info_df.csv`` (cluster-trace-v2026-spot-gpu; schema in
   shared/data/README.md: job_name, organization, gpu_model, cpu_request, gpu_request, worker_num,
   submit_time, duration, job_type). Our readings: ``gpu_request`` is GPUs **per worker** (pod) and
   ``worker_num`` the pods of one gang, so num_gpus = gpu_request x worker_num; a gpu_request in (0, 1)
   is a fractional pod (gpu_fraction). ``submit_time`` is either seconds on the trace's clock or a date
   (read as UTC). job_type HP -> job_class ``hp``, Spot -> ``spot``; spot tasks get
   ``checkpoint_interval`` (3,600 s by default, GFS §5). Bad rows are counted under their reason (missing
   or unknown job_type, non-numeric / non-positive gpu_request or worker_num, the shared time and GPU
   bounds), never dropped silently.
2. ``load_v2023_hp_spot``: the Alibaba GPU v2023 pods through the existing loader
   (features.traces.alibaba.load_alibaba_v2023: qos LS/Guaranteed -> hp, BE/Burstable -> spot,
   gpu_milli -> gpu_fraction) plus what GFS needs: spot pods checkpoint every ``checkpoint_interval``.
3. ``generate_from_preset(params, seed, jobs)``: a GFS-shaped synthetic workload (presets
   configs/workloads/gfs-low.yaml, gfs-medium.yaml, gfs-high.yaml), see :class:`GfsSpec`:

   - **HP per organisation follows a real series**: one Helios Earth VC = one organisation; its
     ``running_gpu_num`` per minute (shared/data/helios/earth_vc_1min_*.csv.gz, any file of that
     format) is scaled so that the summed peak is ``hp_peak_share`` of the cluster. Each minute, an
     organisation whose generated HP tasks (still running by their drawn durations) hold fewer GPUs
     than its series submits new tasks until the gap is closed ("top-up"): generated demand follows
     the series from below and lags its drops by the tasks' remaining run times.
   - **Spot** tasks arrive as a Poisson process at ``spot_multiplier`` x the base rate (1 / 2 / 4 =
     Low / Medium / High); the base rate gives an offered spot load of ``spot_base_load`` of the cluster.
   - **GPU-per-pod mixes and gang shares** (``hp_pod_mix``, ``spot_pod_mix``, ``*_gang_share``,
     ``gang_pods``): our stand-ins for GFS Table 3 (HP: many 8-GPU pods and gangs for training, 1-GPU
     inference; spot: mostly small pods). The printed table was not available to this session; the
     values are parameters of the preset, so a user with the paper can set its numbers.
   - **Warm-up**: the first ``warmup_hours`` hold HP tasks only (spot starts after), so the cluster is
     loaded before the measured window; the ``warmup`` column marks jobs submitted in it.
   Everything is seeded (numpy Generator from ``seed``) and the table is labelled synthetic.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from features.jobtable import JobTable, LoadReport, TraceError, as_number, finalize

GFS_COLUMNS = ["job_name", "organization", "gpu_model", "cpu_request", "gpu_request", "worker_num",
               "submit_time", "duration", "job_type"]
JOB_TYPES = {"hp": "hp", "spot": "spot", "lp": "spot"}
DEFAULT_CHECKPOINT = 3600.0


def load_gfs_spot(path: str | Path, *, checkpoint_interval: float = DEFAULT_CHECKPOINT) -> JobTable:
    """The GFS spot trace ``job_info_df.csv`` as a JobTable (see the module docstring for the readings)."""
    from features.traces._io import drop_exact_duplicates, drop_repeated_ids, read_csv, reject_where

    if not checkpoint_interval > 0:
        raise ValueError(f"checkpoint_interval must be > 0 s, got {checkpoint_interval}")
    report = LoadReport(source=str(path), format="gfs-spot")
    raw = read_csv(path, required=GFS_COLUMNS, report=report)
    raw = drop_exact_duplicates(raw, report)
    jt = raw["job_type"].astype("string").str.strip().str.lower()
    raw = reject_where(raw, jt.isna() | (jt == ""), "missing job_type", report)
    jt = raw["job_type"].astype("string").str.strip().str.lower()
    raw = reject_where(raw, ~jt.isin(list(JOB_TYPES)), "unknown job_type (expected HP or Spot)", report)
    per_pod, per_pod_text = as_number(raw["gpu_request"])
    raw = reject_where(raw, per_pod_text, "gpu_request not a number", report)
    per_pod, _ = as_number(raw["gpu_request"])
    raw = reject_where(raw, per_pod.isna() | (per_pod <= 0), "missing or non-positive gpu_request", report)
    per_pod, _ = as_number(raw["gpu_request"])
    raw = reject_where(raw, (per_pod > 1) & (per_pod % 1 != 0), "gpu_request above 1 and not whole", report)
    workers, workers_text = as_number(raw["worker_num"])
    raw = reject_where(raw, workers_text | workers.isna() | (workers < 1) | (workers % 1 != 0),
                       "worker_num not a whole number >= 1", report)
    per_pod, _ = as_number(raw["gpu_request"])
    workers, _ = as_number(raw["worker_num"])
    submit, submit_text = as_number(raw["submit_time"])
    submit_ts = pd.Series(pd.NaT, index=raw.index, dtype="datetime64[ns, UTC]")
    if submit_text.any() and not submit.notna().any():  # dates, not seconds
        submit_ts = pd.to_datetime(raw["submit_time"], errors="coerce", utc=True)
        submit = pd.Series(np.nan, index=raw.index)
        report.notes.append("submit_time read as dates (UTC)")
    elif submit_text.any():
        raw = reject_where(raw, submit_text, "submit time not a number", report)
        submit, per_pod, workers = submit[raw.index], per_pod[raw.index], workers[raw.index]
        submit_ts = submit_ts[raw.index]
    cls = raw["job_type"].astype("string").str.strip().str.lower().map(JOB_TYPES)
    frac = per_pod < 1
    whole_pp = per_pod.where(~frac, 1.0)
    out = pd.DataFrame({
        "job_id": raw["job_name"].astype("string"),
        "submit_time": submit,
        "submit_ts": submit_ts,
        "duration": raw["duration"],
        "num_gpus": (whole_pp * workers).where(~frac, np.ceil(per_pod * workers - 1e-9)),
        "org": raw["organization"].astype("string"),
        "gpu_type": raw["gpu_model"].astype("string"),
        "job_class": cls.astype("string"),
        "num_pods": workers.astype(float),
        "gpus_per_pod": whole_pp.where(~frac, np.nan),
        "gpu_fraction": per_pod.where(frac, np.nan),
        "cpu_request": pd.to_numeric(raw["cpu_request"], errors="coerce"),
        "checkpoint_interval": np.where(cls == "spot", float(checkpoint_interval), np.nan),
    })
    out = drop_repeated_ids(out, report, "job_name")
    report.notes.append(f"spot tasks checkpoint every {checkpoint_interval:g} s; gpu_request read as GPUs per "
                        "worker (pod)")
    return finalize(out, report, path=path, require_jobs=True)


def load_v2023_hp_spot(path: str | Path, *, checkpoint_interval: float = DEFAULT_CHECKPOINT) -> JobTable:
    """Alibaba GPU v2023 pods as HP (qos LS / Guaranteed) and spot (BE / Burstable) tasks; spot pods
    checkpoint every ``checkpoint_interval`` s (the existing loader does the rest)."""
    from features.traces.alibaba import load_alibaba_v2023

    if not checkpoint_interval > 0:
        raise ValueError(f"checkpoint_interval must be > 0 s, got {checkpoint_interval}")
    table = load_alibaba_v2023(path)
    f = table.frame
    spot = (f["job_class"] == "spot").fillna(False).to_numpy()
    f["checkpoint_interval"] = np.where(spot, float(checkpoint_interval), np.nan)
    f.loc[(f["gpu_fraction"] >= 1) | (f["gpu_fraction"] <= 0), "gpu_fraction"] = np.nan
    table.report.format = "alibaba-v2023-spot"
    table.report.notes.append(f"GFS reading: qos LS/Guaranteed = HP, BE/Burstable = spot, spot checkpoints every "
                              f"{checkpoint_interval:g} s")
    return table


# --------------------------------------------------------------------------------------------------------
# GFS-shaped generator


class GfsSpec(BaseModel):
    """Parameters of the GFS-shaped generator (a preset's keys minus name / cluster / source / generator)."""

    model_config = ConfigDict(extra="forbid")

    series: str = Field("helios/earth_vc_1min_2020-05-01_2020-05-21.csv.gz",
                        description="per-VC series (relative to the data folder, or absolute)")
    series_column: str = "running_gpu_num"
    start_day: float = Field(0.0, ge=0, description="day of the series where the replay starts")
    days: float = Field(4.0, gt=0, description="measured days after the warm-up")
    warmup_hours: float = Field(24.0, ge=0)
    cluster_gpus: int = Field(3456, ge=1, description="GPUs of the target pool (A100 pool of v2026: 3,456)")
    hp_peak_share: float = Field(0.7, gt=0, le=2, description="summed HP series peak / cluster GPUs")
    hp_mean_duration: float = Field(4 * 3600.0, gt=0, description="s, log-normal mean")
    hp_sigma: float = Field(1.0, ge=0)
    spot_base_load: float = Field(0.1, ge=0, description="offered spot GPU load at x1, share of the cluster")
    spot_multiplier: float = Field(1.0, ge=0, description="1 / 2 / 4 = Low / Medium / High")
    spot_mean_duration: float = Field(2 * 3600.0, gt=0)
    spot_sigma: float = Field(1.0, ge=0)
    hp_pod_mix: dict[int, float] = Field(default_factory=lambda: {1: 0.45, 2: 0.1, 4: 0.1, 8: 0.35})
    spot_pod_mix: dict[int, float] = Field(default_factory=lambda: {1: 0.55, 2: 0.15, 4: 0.15, 8: 0.15})
    hp_gang_share: float = Field(0.2, ge=0, le=1, description="share of 8-GPU-pod HP tasks that are gangs")
    spot_gang_share: float = Field(0.1, ge=0, le=1)
    gang_pods: dict[int, float] = Field(default_factory=lambda: {2: 0.6, 4: 0.3, 8: 0.1})
    gang_scope: str = Field("largest", pattern="^(largest|any)$",
                            description="largest: only pods of the largest size form gangs (gang shares are "
                                        "shares of those); any: a task of any pod size is a gang with the "
                                        "share (Table 3 gives the share of all tasks)")
    checkpoint_interval: float = Field(DEFAULT_CHECKPOINT, gt=0)
    gpu_type: str = "A100-SXM4-80GB"
    max_orgs: int | None = Field(None, ge=1)

    @field_validator("hp_pod_mix", "spot_pod_mix", "gang_pods")
    @classmethod
    def _mix(cls, v: dict[int, float]) -> dict[int, float]:
        if not v or any(k < 1 or p < 0 for k, p in v.items()) or sum(v.values()) <= 0:
            raise ValueError("a mix maps sizes >= 1 to shares >= 0, not all 0")
        total = sum(v.values())
        return {int(k): p / total for k, p in v.items()}


def _series_path(name: str) -> Path:
    p = Path(name)
    if p.is_absolute():
        return p
    from features.paths import data_dir

    return Path(data_dir()) / p


def read_org_series(path: str | Path, column: str = "running_gpu_num") -> pd.DataFrame:
    """A per-VC series file (columns vc, time, ``column``) as a time x org frame at 1-minute steps."""
    path = Path(path)
    if not path.exists():
        raise TraceError(path, "file not found")
    frame = pd.read_csv(path, usecols=["vc", "time", column])
    wide = frame.pivot_table(index=pd.to_datetime(frame["time"]), columns="vc", values=column, aggfunc="max")
    wide = wide.sort_index().asfreq("1min").ffill().fillna(0.0)
    return wide


def _draw(mix: dict[int, float], rng: np.random.Generator, n: int) -> np.ndarray:
    keys = np.array(list(mix))
    return keys[rng.choice(len(keys), size=n, p=np.array(list(mix.values())))]


def _durations(mean: float, sigma: float, rng: np.random.Generator, n: int) -> np.ndarray:
    mu = np.log(mean) - sigma ** 2 / 2
    return np.clip(rng.lognormal(mu, sigma, n), 60.0, 30 * 86400.0)


def _shapes(mix: dict[int, float], gang_share: float, gang_pods: dict[int, float], rng, n: int,
            scope: str = "largest"):
    """(pods, GPUs per pod) per task: a pod size from the mix; a task is a gang with ``gang_share`` (of the
    largest pods only, or of every task with ``scope="any"``)."""
    gpp = _draw(mix, rng, n)
    pods = np.ones(n, dtype=int)
    eligible = (gpp == max(mix)) if scope == "largest" else np.ones(n, dtype=bool)
    gang = eligible & (rng.random(n) < gang_share)
    if gang.any():
        pods[gang] = _draw(gang_pods, rng, int(gang.sum()))
    return pods, gpp


def generate(spec: GfsSpec, seed: int = 0, series: pd.DataFrame | None = None) -> JobTable:
    """A GFS-shaped HP / spot workload (see the module docstring)."""
    rng = np.random.default_rng(seed)
    if series is None:
        series = read_org_series(_series_path(spec.series), spec.series_column)
    start = int(spec.start_day * 1440)
    steps = int((spec.warmup_hours * 60) + spec.days * 1440)
    block = series.iloc[start:start + steps]
    if len(block) < steps:
        raise ValueError(f"the series has {len(series) - start} minutes from day {spec.start_day}; "
                         f"{steps} are needed (warm-up + days)")
    if spec.max_orgs is not None:
        block = block[list(block.max().sort_values(ascending=False).index[:spec.max_orgs])]
    peak = float(block.sum(axis=1).max())
    scale = spec.hp_peak_share * spec.cluster_gpus / peak if peak > 0 else 0.0
    target = block.to_numpy(dtype=float) * scale  # (minutes, orgs)
    orgs = [str(o) for o in block.columns]
    rows: list[tuple] = []
    # HP: top-up each minute while generated running GPUs < the org's series.
    ends: list[list[tuple[float, int]]] = [[] for _ in orgs]  # per org: (end time, gpus) of alive tasks
    import heapq

    alive = np.zeros(len(orgs))
    batch = 4096
    pool_shapes = _shapes(spec.hp_pod_mix, spec.hp_gang_share, spec.gang_pods, rng, batch)
    pool_dur = _durations(spec.hp_mean_duration, spec.hp_sigma, rng, batch)
    k = 0
    for m in range(steps):
        t0 = m * 60.0
        for o in range(len(orgs)):
            heap = ends[o]
            while heap and heap[0][0] <= t0:
                alive[o] -= heapq.heappop(heap)[1]
            while alive[o] < target[m, o] - 0.5:
                if k == batch:
                    pool_shapes = _shapes(spec.hp_pod_mix, spec.hp_gang_share, spec.gang_pods, rng, batch)
                    pool_dur = _durations(spec.hp_mean_duration, spec.hp_sigma, rng, batch)
                    k = 0
                pods, gpp, dur = int(pool_shapes[0][k]), int(pool_shapes[1][k]), float(pool_dur[k])
                k += 1
                gpus = pods * gpp
                if gpus > max(1.0, target[m, o] - alive[o] + 0.5):  # larger than the gap: a 1-GPU task
                    pods, gpp, gpus = 1, 1, 1
                t = t0 + float(rng.uniform(0, 60.0))
                rows.append((t, dur, pods, gpp, orgs[o], "hp"))
                alive[o] += gpus
                heapq.heappush(heap, (t + dur, gpus))
    # Spot: Poisson after the warm-up at multiplier x base rate.
    warm = spec.warmup_hours * 3600.0
    horizon = steps * 60.0
    mean_gpus = sum(k * p for k, p in spec.spot_pod_mix.items())
    extra_pods = sum(k * p for k, p in spec.gang_pods.items()) - 1
    if spec.gang_scope == "any":  # E[pods x GPUs per pod] with gang size independent of pod size
        mean_task_gpus = mean_gpus * (1 + spec.spot_gang_share * extra_pods)
    else:  # (the original approximation: kept so that existing presets generate the same tasks)
        mean_task_gpus = mean_gpus * (1 + spec.spot_gang_share * spec.spot_pod_mix.get(max(spec.spot_pod_mix), 0)
                                      * extra_pods)
    rate = spec.spot_multiplier * spec.spot_base_load * spec.cluster_gpus / (
        mean_task_gpus * spec.spot_mean_duration)
    if rate > 0:
        n = int(rng.poisson(rate * (horizon - warm)))
        times = np.sort(rng.uniform(warm, horizon, n))
        pods, gpp = _shapes(spec.spot_pod_mix, spec.spot_gang_share, spec.gang_pods, rng, n, spec.gang_scope)
        dur = _durations(spec.spot_mean_duration, spec.spot_sigma, rng, n)
        sorgs = rng.choice(orgs, size=n)
        rows.extend(zip(times.tolist(), dur.tolist(), pods.tolist(), gpp.tolist(), sorgs.tolist(), ["spot"] * n))
    rows.sort(key=lambda r: r[0])
    t, dur, pods, gpp, org, cls = (np.array(x, dtype=object) for x in zip(*rows)) if rows else ([],) * 6
    n = len(rows)
    frame = pd.DataFrame({
        "job_id": [f"{c}-{i}" for i, c in enumerate(cls)],
        "submit_time": np.asarray(t, dtype=float),
        "submit_ts": pd.Series(pd.NaT, index=range(n), dtype="datetime64[ns, UTC]"),
        "duration": np.asarray(dur, dtype=float),
        "num_gpus": np.asarray(pods, dtype=int) * np.asarray(gpp, dtype=int),
        "org": pd.array(list(org), dtype="string"),
        "gpu_type": spec.gpu_type,
        "job_class": pd.array(list(cls), dtype="string"),
        "num_pods": np.asarray(pods, dtype=float),
        "gpus_per_pod": np.asarray(gpp, dtype=float),
        "checkpoint_interval": np.where(np.asarray(cls) == "spot", spec.checkpoint_interval, np.nan),
        "warmup": np.asarray(t, dtype=float) < warm,
    })
    report = LoadReport(source=f"gfs-generator(seed={seed})", format="gfs-synthetic", rows_read=n, synthetic=True)
    report.notes.append(f"HP per organisation follows {spec.series_column} of {len(orgs)} series in "
                        f"{Path(spec.series).name}, scaled x{scale:.3g} (summed peak = {spec.hp_peak_share:g} of "
                        f"{spec.cluster_gpus} GPUs); spot x{spec.spot_multiplier:g} of base load "
                        f"{spec.spot_base_load:g}; warm-up {spec.warmup_hours:g} h HP only")
    table = finalize(frame, report, path=report.source, sort=True)
    table.frame.attrs["warmup_seconds"] = warm - (float(frame["submit_time"].min()) if n else 0.0)
    table.frame.attrs["synthetic"] = True
    return table


def generate_from_preset(params: dict, seed: int, jobs: int | None) -> JobTable:
    """The preset entry point (``generator: "features.traces.gfs:generate_from_preset"``): ``params`` are
    :class:`GfsSpec` fields; ``jobs`` keeps the HP-only warm-up whole and the first N measured tasks after
    it (a quick run: the first N tasks overall would all be warm-up HP tasks, without a spot task)."""
    spec = GfsSpec(**params)
    table = generate(spec, seed=seed)
    if jobs is not None:
        if isinstance(jobs, bool) or int(jobs) < 1:
            raise ValueError(f"jobs must be a whole number >= 1, got {jobs!r}")
        frame = table.frame
        warm = frame["warmup"].fillna(False).astype(bool).to_numpy() if "warmup" in frame \
            else np.zeros(len(frame), dtype=bool)
        measured_rank = np.cumsum(~warm)  # 1 for the first measured task, 2 for the second, ...
        kept = frame[warm | (measured_rank <= int(jobs))].reset_index(drop=True)
        kept.attrs.update(frame.attrs)
        table.report.reject(f"measured tasks beyond the first {int(jobs)} (jobs=; the warm-up is kept whole)",
                            len(frame) - len(kept))
        if warm.any():
            table.report.notes.append(f"kept the HP-only warm-up whole ({int(warm.sum()):,} tasks) and the first "
                              f"{min(int(jobs), int((~warm).sum())):,} measured tasks after it")
        table.frame = kept
        table.report.rows_kept = len(kept)
    return table


# --------------------------------------------------------------------------------------------------------
# Contended GFS-format traces (issue 40): HP demand inside a band of the cluster with bursts


class ContendedSpec(BaseModel):
    """A contended HP / spot trace: the summed HP demand stays inside [``hp_min_share``, ``hp_max_share``] of
    the cluster (a daily cycle around ``hp_mean_share``, an AR(1) wander and Poisson bursts of
    ``burst_share`` lasting ``burst_hours``), split over ``orgs`` organisations with fixed Dirichlet weights;
    HP tasks top the series up as in :func:`generate`, spot tasks arrive as a Poisson process. Pod mixes and
    gang shares default to GFS Table 3 (gfs.txt:359-360; the < 1 GPU column folded into 1 GPU), durations
    to Table 5 (HP JCT ~17,800 s, spot JCT - JQT ~10,100 s: gfs.txt:411, 415)."""

    model_config = ConfigDict(extra="forbid")

    cluster_gpus: int = Field(320, ge=8)
    orgs: int = Field(6, ge=1)
    days: float = Field(3.0, gt=0)
    warmup_hours: float = Field(168.0, ge=0)
    hp_mean_share: float = Field(0.70, gt=0, le=1)
    hp_min_share: float = Field(0.60, ge=0, le=1)
    hp_max_share: float = Field(0.80, gt=0, le=1)
    diurnal_share: float = Field(0.05, ge=0, description="amplitude of the daily cycle, share of the cluster")
    wander_share: float = Field(0.02, ge=0, description="stationary sd of the AR(1) wander (1 h correlation)")
    bursts_per_day: float = Field(2.0, ge=0)
    burst_share: float = Field(0.12, ge=0, description="height of a burst, share of the cluster")
    burst_hours: float = Field(2.0, gt=0, description="mean length of a burst (exponential)")
    hp_mean_duration: float = Field(17700.0, gt=0)
    hp_sigma: float = Field(1.0, ge=0)
    spot_load: float = Field(0.25, ge=0, description="offered spot GPU load, share of the cluster")
    spot_mean_duration: float = Field(10100.0, gt=0)
    spot_sigma: float = Field(1.0, ge=0)
    hp_pod_mix: dict[int, float] = Field(default_factory=lambda: {1: 0.5522, 2: 0.1337, 4: 0.0753, 8: 0.2369})
    spot_pod_mix: dict[int, float] = Field(default_factory=lambda: {1: 0.6817, 2: 0.0567, 4: 0.12, 8: 0.1404})
    hp_gang_share: float = Field(0.0866, ge=0, le=1)
    spot_gang_share: float = Field(0.2726, ge=0, le=1)
    gang_pods: dict[int, float] = Field(default_factory=lambda: {2: 0.6, 4: 0.3, 8: 0.1})
    checkpoint_interval: float = Field(DEFAULT_CHECKPOINT, gt=0)
    gpu_type: str = "A100-SXM4-80GB"

    @field_validator("hp_pod_mix", "spot_pod_mix", "gang_pods")
    @classmethod
    def _mix(cls, v: dict[int, float]) -> dict[int, float]:
        return GfsSpec._mix(v)


def contended_series(spec: ContendedSpec, rng: np.random.Generator) -> pd.DataFrame:
    """The per-organisation HP demand (GPUs, 1-minute steps, warm-up + days) of a contended trace."""
    minutes = int(spec.warmup_hours * 60 + spec.days * 1440)
    t = np.arange(minutes) / 60.0  # hours
    share = spec.hp_mean_share + spec.diurnal_share * np.sin(2 * np.pi * (t - 9.0) / 24.0)
    a = math.exp(-1.0 / 60.0)  # AR(1), 1 h correlation
    eps = rng.normal(0.0, spec.wander_share * math.sqrt(1 - a * a), minutes)
    wander = np.empty(minutes)
    x = 0.0
    for i in range(minutes):
        x = a * x + eps[i]
        wander[i] = x
    share = share + wander
    n_bursts = int(rng.poisson(spec.bursts_per_day * minutes / 1440.0))
    for start in rng.uniform(0, minutes, n_bursts):
        length = max(10.0, rng.exponential(spec.burst_hours * 60.0))
        i0, i1 = int(start), min(minutes, int(start + length))
        share[i0:i1] += spec.burst_share * rng.uniform(0.7, 1.0)
    share = np.clip(share, spec.hp_min_share, spec.hp_max_share)
    weights = rng.dirichlet(np.full(spec.orgs, 2.0))
    gpus = share[:, None] * weights[None, :] * spec.cluster_gpus
    index = pd.date_range("2024-04-01", periods=minutes, freq="1min")
    return pd.DataFrame(gpus, index=index, columns=[f"org{o}" for o in range(spec.orgs)])


def generate_contended(spec: ContendedSpec, seed: int = 0) -> JobTable:
    """A contended GFS-shaped trace (see :class:`ContendedSpec`), seeded; the table is labelled synthetic."""
    rng = np.random.default_rng(seed)
    series = contended_series(spec, rng)
    peak = float(series.sum(axis=1).max())
    mix_gpus = sum(k * p for k, p in spec.spot_pod_mix.items())
    extra = sum(k * p for k, p in spec.gang_pods.items()) - 1
    gspec = GfsSpec(series="<contended>", days=spec.days, warmup_hours=spec.warmup_hours,
                    cluster_gpus=spec.cluster_gpus, hp_peak_share=max(1e-9, peak / spec.cluster_gpus),
                    hp_mean_duration=spec.hp_mean_duration, hp_sigma=spec.hp_sigma, spot_base_load=spec.spot_load,
                    spot_multiplier=1.0, spot_mean_duration=spec.spot_mean_duration, spot_sigma=spec.spot_sigma,
                    hp_pod_mix=spec.hp_pod_mix, spot_pod_mix=spec.spot_pod_mix, hp_gang_share=spec.hp_gang_share,
                    spot_gang_share=spec.spot_gang_share, gang_pods=spec.gang_pods, gang_scope="any",
                    checkpoint_interval=spec.checkpoint_interval, gpu_type=spec.gpu_type)
    table = generate(gspec, seed=int(rng.integers(1 << 31)), series=series)
    table.report.source = f"gfs-contended(seed={seed})"
    table.report.notes.append(f"contended: HP demand in [{spec.hp_min_share:g}, {spec.hp_max_share:g}] of "
                              f"{spec.cluster_gpus} GPUs (mean {float(series.sum(axis=1).mean()) / spec.cluster_gpus:.3f}, "
                              f"bursts {spec.bursts_per_day:g}/day of {spec.burst_share:g}); spot load "
                              f"{spec.spot_load:g} (mean spot task {mix_gpus * (1 + spec.spot_gang_share * extra):.2f} GPUs)")
    table.frame.attrs["hp_series_mean_share"] = float(series.sum(axis=1).mean()) / spec.cluster_gpus
    return table


def contended_from_preset(params: dict, seed: int, jobs: int | None) -> JobTable:
    """The preset entry point of ``generator: gfs-contended`` (:class:`ContendedSpec` fields); ``jobs`` keeps
    the warm-up whole and the first N measured tasks, as :func:`generate_from_preset`."""
    table = generate_contended(ContendedSpec(**params), seed=seed)
    if jobs is not None:
        if isinstance(jobs, bool) or int(jobs) < 1:
            raise ValueError(f"jobs must be a whole number >= 1, got {jobs!r}")
        frame = table.frame
        warm = frame["warmup"].fillna(False).astype(bool).to_numpy()
        kept = frame[warm | (np.cumsum(~warm) <= int(jobs))].reset_index(drop=True)
        kept.attrs.update(frame.attrs)
        table.report.reject(f"measured tasks beyond the first {int(jobs)} (jobs=; the warm-up is kept whole)",
                            len(frame) - len(kept))
        table.frame = kept
        table.report.rows_kept = len(kept)
    return table


def write_gfs_csv(table: JobTable, folder: str | Path, *, nodes: int | None = None, gpus_per_node: int = 8,
                  start: str = "2024-03-01 00:00:00") -> Path:
    """Write ``table`` in GFS's trace format (job_info_df.csv, the columns of :data:`GFS_COLUMNS`, submit_time
    in seconds; read back by :func:`load_gfs_spot`) and, with ``nodes``, node_info_df.csv (node_name,
    gpu_model, gpu_capacity_num, cpu_num) as GFS's released simulator reads them. Returns the folder."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    f = table.frame
    pods = f["num_pods"].fillna(1).astype(int) if "num_pods" in f else pd.Series(1, index=f.index)
    per_pod = (f["num_gpus"] / pods).astype(float)
    cls = f["job_class"].astype("string").str.lower().map({"hp": "HP", "spot": "Spot"}).fillna("HP")
    out = pd.DataFrame({"job_name": f["job_id"].astype(str), "organization": f["org"].astype(str),
                        "gpu_model": f["gpu_type"].astype(str), "cpu_request": (per_pod * 8).astype(int),
                        "gpu_request": per_pod, "worker_num": pods, "submit_time": f["submit_time"].round(3),
                        "duration": f["duration"].round().astype(int).clip(lower=1), "job_type": cls})
    out.to_csv(folder / "job_info_df.csv", index=False)
    if nodes is not None:
        gpu_model = str(f["gpu_type"].iloc[0]) if len(f) else "A100-SXM4-80GB"
        pd.DataFrame({"node_name": [f"node{i}" for i in range(nodes)], "gpu_model": gpu_model,
                      "gpu_capacity_num": gpus_per_node, "cpu_num": 8 * gpus_per_node}).to_csv(
            folder / "node_info_df.csv", index=False)
    return folder


#: Trace formats merged into ``--format`` (features/traces/__init__.py _PLUGIN_FORMATS).
FORMATS = {
    "gfs-spot": (load_gfs_spot, "GFS spot trace job_info_df.csv (HP / Spot tasks, organisations, GPU models)"),
    "alibaba-v2023-spot": (load_v2023_hp_spot, "Alibaba GPU v2023 pods as HP (LS) / spot (BE) tasks with "
                                               "checkpoints (GFS reading)"),
}


def _check_params(params: dict) -> None:
    """The generator's parameters as GfsSpec fields, checked before any work (issue 44)."""
    GfsSpec(**params)


generate_from_preset.check_params = _check_params  # type: ignore[attr-defined]
