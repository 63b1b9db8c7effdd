"""Helios-shaped jobs for Lazer's simulation setting (``generator: helios-shaped``).

Lazer (DAC '26) replays the Helios Earth, Saturn and Uranus job logs (lazer.txt:269, Table 1 at
lazer.txt:252-257) in the Tiresias simulator on about 512 GPUs (lazer.txt:122, 271). Those job tables are not
in ``shared/data``; what is there, and what this generator is seeded from, is real Helios data:

- **arrival intensity**: the real GPU-job submissions per 10 minutes of Helios Venus
  (``helios/venus_throughput_10min_*.csv.gz``, column ``submit_gpu_job``: bursts of hundreds of jobs in ten
  minutes, quiet nights, weekly cycles), rescaled so the mean inter-arrival is Table 1's for the trace,
  divided by ``arrival_scale`` (a free parameter, fitted on the baselines by
  ``pipelines/papers/lazer_calibrate.py``); jobs arrive as a non-homogeneous Poisson process under that
  intensity (optionally raised to ``intensity_power``; 1 in the presets), in submission bursts of geometric size
  (mean ``burst_size``, the third free parameter, ``burst_gap`` s apart);
- **durations**: log-normal with the trace's median GPU-job run time (``helios/cluster_summary.csv``,
  ``med_run_time_gpu``) and the mean training time of Table 1, capped at ``max_duration`` (sigma solved so
  the capped mean is Table 1's);
- **GPU counts**: ``gpu_mix`` with the weights of jobs of 8 GPUs or more multiplied by ``large_scale`` (the
  second free parameter: the size mix), then renormalised;
- **users** (off unless ``users > 0``; Lucid's settings use them, Lazer's do not): each job belongs to one of
  ``users`` users (popularity ~ rank^-``user_skew``), and ``user_share`` of the log-duration variance is the
  user's own offset, so a user's jobs recur with similar run times (lucid.txt:462) and a duration model has
  something to learn; the marginal duration law stays the same. The user population (offsets, popularity)
  is drawn from ``user_seed``, not from the job seed, so a training period generated with another seed
  shares the test period's users;
- **virtual clusters** (off unless ``vc_cluster`` names a partitioned cluster config, e.g. ``venus``: Helios
  Venus' 15 real VCs): each job's ``org`` is a VC drawn among those large enough for it, weighted by
  VC GPUs^``vc_power`` (1: every VC equally loaded on average);
- **size-duration correlation** (off unless ``size_duration_corr > 0``; Lucid's Saturn-shaped setting uses
  it): the log-duration's normal score is mixed with the GPU count's normal score (ranks, ties broken at
  random) at correlation ``size_duration_corr``, so large jobs run longer while the duration law stays the
  same log-normal (a user's share of the variance becomes ``user_share`` x (1 - corr^2)). Helios' own series
  show large jobs running longer: on Earth (helios/earth_vc_1min_*.csv.gz) running GPU jobs hold 7.6 GPUs on
  average against 2.1 for the submitted ones (helios/cluster_summary.csv), which by Little's law is
  E[gpus x duration] / (E[gpus] E[duration]) = 3.6; independent draws give 1
  (:func:`size_duration_ratio` measures it on a generated table).

Everything is seeded (``numpy.random.default_rng(seed)``) and the table is labelled synthetic.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from features.jobtable import JobTable, LoadReport, finalize

DAY = 86_400.0
SERIES_FILE = "helios/venus_throughput_10min_2020-04_2020-08.csv.gz"
SERIES_BIN_S = 600.0


class HeliosShapedSpec(BaseModel):
    """Parameters of the Helios-shaped generator (a preset of configs/workloads/ holds them)."""

    model_config = ConfigDict(extra="forbid")

    jobs: int = Field(20_000, ge=1)
    mean_duration: float = Field(3570.0, gt=0, description="mean training time per job, s (Lazer Table 1)")
    median_duration: float = Field(234.0, gt=0, description="median GPU-job run time, s (Helios summary)")
    max_duration: float = Field(20 * DAY, gt=0)
    mean_interarrival: float = Field(39.0, gt=0, description="mean inter-job arrival time, s (Lazer Table 1)")
    arrival_scale: float = Field(1.0, gt=0, description="arrival rate x this (free parameter, fitted)")
    gpu_mix: dict[int, float] = Field(default_factory=lambda: {1: 0.72, 2: 0.10, 4: 0.08, 8: 0.09, 16: 0.01})
    large_scale: float = Field(1.0, ge=0, description="weights of >= 8-GPU jobs x this (free parameter)")
    series: str = Field("venus-submissions", description="'venus-submissions' (real) or 'flat'")
    series_file: str = SERIES_FILE
    series_offset_days: float = Field(0.0, ge=0)
    intensity_power: float = Field(1.0, gt=0, description="rate ~ submissions^power: > 1 sharpens the series' "
                                   "peaks and quiet hours (free parameter)")
    burst_size: float = Field(1.0, ge=1, description="mean jobs per submission burst")
    burst_gap: float = Field(5.0, ge=0, description="mean seconds between jobs of one burst")
    users: int = Field(0, ge=0, description="users that submit the jobs (0: no user column)")
    user_share: float = Field(0.0, ge=0, le=1, description="share of log-duration variance that is the "
                              "user's own (how predictable durations are from the user)")
    user_skew: float = Field(1.0, ge=0, description="user popularity ~ rank^-user_skew")
    user_seed: int = Field(0, ge=0, description="seed of the user population (shared by every job seed)")
    vc_cluster: str | None = Field(None, description="a partitioned cluster config whose VCs get the jobs")
    vc_power: float = Field(1.0, ge=0, description="VC weight ~ VC GPUs^vc_power")
    size_duration_corr: float = Field(0.0, ge=0, lt=1, description="correlation of the log-duration's normal "
                                      "score with the GPU count's (0: independent, the default)")
    start: str = "2020-04-01T00:00:00+00:00"
    data_dir: str | None = None

    @field_validator("gpu_mix")
    @classmethod
    def _mix(cls, mix: dict[int, float]) -> dict[int, float]:
        if not mix or any(int(k) < 1 for k in mix) or any(v < 0 for v in mix.values()) or sum(mix.values()) <= 0:
            raise ValueError("gpu_mix maps GPU counts >= 1 to non-negative weights with a positive sum")
        return {int(k): float(v) for k, v in sorted(mix.items())}

    @field_validator("series")
    @classmethod
    def _series(cls, value: str) -> str:
        if value not in ("venus-submissions", "flat"):
            raise ValueError(f"series must be 'venus-submissions' or 'flat', got {value!r}")
        return value

    @model_validator(mode="after")
    def _durations(self) -> "HeliosShapedSpec":
        if not self.median_duration < self.mean_duration <= self.max_duration:
            raise ValueError("durations need median_duration < mean_duration <= max_duration (a right tail)")
        return self

    def mix(self) -> dict[int, float]:
        """The GPU-count mix after ``large_scale``, normalised."""
        raw = {k: v * (self.large_scale if k >= 8 else 1.0) for k, v in self.gpu_mix.items()}
        total = sum(raw.values())
        if total <= 0:
            raise ValueError("gpu_mix is empty after large_scale (every weight is 0)")
        return {k: v / total for k, v in raw.items()}

    @property
    def mean_gpus(self) -> float:
        return sum(k * v for k, v in self.mix().items())

    def offered_gpus(self) -> float:
        """Mean GPUs the jobs ask for at once (GPU-seconds of work per second of arrivals)."""
        return self.mean_gpus * self.mean_duration * self.arrival_scale / self.mean_interarrival


@lru_cache(maxsize=4)
def _series_counts(path: str) -> np.ndarray:
    frame = pd.read_csv(path, usecols=["time", "submit_gpu_job"])
    counts = frame["submit_gpu_job"].to_numpy(dtype=float)
    if not len(counts) or not np.isfinite(counts).all() or counts.sum() <= 0:
        raise ValueError(f"{path}: no GPU-job submissions in column submit_gpu_job")
    return counts


def intensity(spec: HeliosShapedSpec, horizon: float) -> tuple[np.ndarray, np.ndarray]:
    """(bin edges in s, relative rate per bin, mean 1 over the series) covering ``horizon`` seconds."""
    n_bins = int(np.ceil(horizon / SERIES_BIN_S)) + 1
    if spec.series == "flat":
        return np.arange(n_bins + 1) * SERIES_BIN_S, np.ones(n_bins)
    from features.paths import resolve_data_path

    path = resolve_data_path(spec.series_file, spec.data_dir)
    if not path.exists():
        raise FileNotFoundError(f"helios-shaped: arrival series {path} not found (set --data-dir)")
    counts = _series_counts(str(path)) ** spec.intensity_power
    rate = counts / counts.mean()
    rate = 0.98 * rate + 0.02  # a small floor: no bin is impossible (the cumulative stays increasing)
    offset = int(spec.series_offset_days * DAY // SERIES_BIN_S) % len(rate)
    idx = (offset + np.arange(n_bins)) % len(rate)  # the series wraps round when the trace is longer
    return np.arange(n_bins + 1) * SERIES_BIN_S, rate[idx]


def arrival_times(spec: HeliosShapedSpec, n: int, rng: np.random.Generator) -> np.ndarray:
    """Submission times (s, from 0): bursts as a non-homogeneous Poisson process under the series'
    intensity, jobs of one burst ``burst_gap`` (exponential) apart."""
    if n == 0:
        return np.zeros(0)
    sizes = rng.geometric(1.0 / spec.burst_size, size=n) if spec.burst_size > 1 else np.ones(n, dtype=int)
    ends = np.cumsum(sizes)
    n_bursts = int(np.searchsorted(ends, n) + 1)
    sizes = sizes[:n_bursts].copy()
    sizes[-1] -= ends[n_bursts - 1] - n
    mean_gap = spec.mean_interarrival / spec.arrival_scale * sizes.mean()  # between bursts
    gaps = rng.exponential(mean_gap, size=n_bursts)
    gaps[0] = 0.0
    operational = np.cumsum(gaps)  # unit-intensity time
    horizon = operational[-1] * 1.5 + DAY
    while True:  # real time long enough for the arrivals' unit-intensity span
        edges, rate = intensity(spec, horizon)
        cumulative = np.concatenate([[0.0], np.cumsum(rate * SERIES_BIN_S)])
        if cumulative[-1] >= operational[-1]:
            break
        horizon *= 2
    burst_at = np.interp(operational, cumulative, edges)
    within = np.concatenate([[0.0], rng.exponential(spec.burst_gap, size=max(n - 1, 0))]) if spec.burst_gap \
        else np.zeros(n)
    burst_of_job = np.repeat(np.arange(n_bursts), sizes)
    first = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    within[first] = 0.0
    offsets = np.cumsum(within)
    offsets -= offsets[first][burst_of_job]
    return np.sort(burst_at[burst_of_job] + offsets)


def duration_sigma(median: float, mean: float, cap: float) -> float:
    """Log-normal sigma whose mean, capped at ``cap``, is ``mean`` for the given median (bisection)."""
    from scipy.stats import norm

    mu = np.log(median)

    def capped_mean(s: float) -> float:
        # E[min(X, c)] for X ~ LogNormal(mu, s)
        z = (np.log(cap) - mu) / s
        return float(np.exp(mu + s * s / 2) * norm.cdf(z - s) + cap * norm.sf(z))

    lo, hi = 1e-3, 10.0
    if capped_mean(hi) < mean:
        raise ValueError(f"no log-normal with median {median:g} s reaches mean {mean:g} s under the cap {cap:g} s")
    for _ in range(100):
        mid = 0.5 * (lo + hi)
        if capped_mean(mid) < mean:
            lo = mid
        else:
            hi = mid
    return hi


def generate(spec: HeliosShapedSpec, seed: int = 0) -> JobTable:
    """Draw a Helios-shaped job table; identical spec and seed give identical tables."""
    rng = np.random.default_rng(seed)
    n = spec.jobs
    submit = arrival_times(spec, n, rng)
    sigma = duration_sigma(spec.median_duration, spec.mean_duration, spec.max_duration)
    log_duration = rng.normal(np.log(spec.median_duration), sigma, size=n)
    duration = np.exp(log_duration)
    duration = np.maximum(np.round(np.minimum(duration, spec.max_duration)), 1.0)
    mix = spec.mix()
    gpus = rng.choice(np.array(list(mix)), size=n, p=np.array(list(mix.values())))
    users = None
    if spec.users > 0:  # drawn after everything above: a table without users is unchanged
        pop = np.random.default_rng([spec.user_seed, 7919])
        offsets = pop.normal(0.0, 1.0, size=spec.users)
        weights = 1.0 / np.arange(1, spec.users + 1) ** spec.user_skew
        users = rng.choice(spec.users, size=n, p=weights / weights.sum())
        z = np.sqrt(spec.user_share) * offsets[users] + np.sqrt(1.0 - spec.user_share) * rng.normal(size=n)
        log_duration = np.log(spec.median_duration) + sigma * z
        duration = np.exp(log_duration)
        duration = np.maximum(np.round(np.minimum(duration, spec.max_duration)), 1.0)
    frame = pd.DataFrame({
        "job_id": [f"hs-{i}" for i in range(n)],
        "submit_time": np.round(submit, 3),
        "submit_ts": pd.Timestamp(spec.start) + pd.to_timedelta(np.round(submit, 3), unit="s"),
        "duration": duration,
        "num_gpus": gpus,
        "num_nodes": np.maximum(1, np.ceil(gpus / 8)).astype(int),
        "status": "COMPLETED",
    })
    if users is not None:
        frame["user"] = [f"u{u}" for u in users]
    if spec.vc_cluster:  # drawn last, too
        frame["org"] = _vcs(spec, gpus, rng)
    if spec.size_duration_corr > 0:  # drawn after everything else: a table without it is unchanged
        z = (log_duration - np.log(spec.median_duration)) / sigma
        z = np.sqrt(1.0 - spec.size_duration_corr ** 2) * z + spec.size_duration_corr * _size_score(gpus, rng)
        duration = np.exp(np.log(spec.median_duration) + sigma * z)
        frame["duration"] = np.maximum(np.round(np.minimum(duration, spec.max_duration)), 1.0)
    report = LoadReport(source=f"synthetic:helios-shaped(seed={seed}, jobs={n})", format="synthetic",
                        rows_read=n, synthetic=True)
    report.notes.append("SYNTHETIC trace: Helios-shaped (real Venus submission intensity, Helios duration "
                        f"median / Lazer Table 1 mean, log-normal sigma {sigma:.2f}), individual jobs invented")
    table = finalize(frame, report, path=report.source)
    table.frame.attrs["synthetic"] = True
    return table


def _size_score(gpus: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Normal scores of the GPU counts (ranks with ties broken at random): N(0, 1) over the jobs, increasing
    with the GPU count, independent of the durations."""
    from scipy.stats import norm

    order = np.lexsort((rng.random(len(gpus)), gpus))
    ranks = np.empty(len(gpus))
    ranks[order] = np.arange(1, len(gpus) + 1)
    return norm.ppf(ranks / (len(gpus) + 1))


def size_duration_ratio(frame: pd.DataFrame) -> float:
    """E[gpus x duration] / (E[gpus] E[duration]): by Little's law, the running jobs' mean GPUs over the
    submitted jobs' (1 when size and duration are independent; Helios Earth's series give 3.6)."""
    g, d = frame["num_gpus"].to_numpy(dtype=float), frame["duration"].to_numpy(dtype=float)
    return float((g * d).mean() / (g.mean() * d.mean()))


def _vcs(spec: HeliosShapedSpec, gpus: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Each job's VC: drawn among the VCs of ``spec.vc_cluster`` with at least its GPUs, by GPUs^vc_power."""
    from features.traces.lucid_synthetic import partition_gpus

    vcs = partition_gpus(spec.vc_cluster, spec.data_dir)
    names = np.array([n for n, _ in vcs], dtype=object)
    size = np.array([g for _, g in vcs], dtype=float)
    out = np.empty(len(gpus), dtype=object)
    for g in np.unique(gpus):
        fits = size >= g
        rows = np.flatnonzero(gpus == g)
        if not fits.any():  # larger than every VC: the largest (the workload layer rejects it, counted)
            out[rows] = names[int(np.argmax(size))]
            continue
        w = np.where(fits, size ** spec.vc_power, 0.0)
        out[rows] = names[rng.choice(len(names), size=len(rows), p=w / w.sum())]
    return out


def generate_from_preset(params: dict, seed: int, jobs: int | None) -> JobTable:
    """The registered generator (``generator: helios-shaped``): ``params`` are :class:`HeliosShapedSpec`
    fields; ``jobs`` overrides the preset's count."""
    data = dict(params)
    if jobs is not None:
        data["jobs"] = jobs
    return generate(HeliosShapedSpec(**data), seed=seed)


def _check_params(params: dict) -> None:
    """Refuse unknown or out-of-range fields before any work (synthetic.check_generator_params)."""
    HeliosShapedSpec(**params)


generate_from_preset.check_params = _check_params  # type: ignore[attr-defined]


__all__ = ["HeliosShapedSpec", "generate", "generate_from_preset", "duration_sigma", "arrival_times",
           "size_duration_ratio"]
