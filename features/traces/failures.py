"""Workloads with failures and early exits: Helios- and Acme-shaped generators, and Acme failure traces.

Each job ends in one of three final states (``final_state``): ``completed``; ``killed`` (an early exit:
the user stopped it, so it ran only part of its work; its ``duration`` is what it ran); ``failed``: an
attempt died ``fail_time`` s after it started, with a ``failure_cause`` "category/component"
(infrastructure: gpu, nvlink, network, nccl, node, storage; framework: oom, dataloader, shape; script:
import, key, type, syntax, file). A failed job that was resubmitted (``resubmitted``) is ONE job whose
``duration`` is its whole work: the replay fails it at ``fail_time`` and restarts it
(sim.failures.failures_from_spec("trace", ...)); one that was not resubmitted failed for good and its
``duration`` is ``fail_time`` (it ends early, like a killed job). ``full_duration`` is the work the job
would have done without an early exit. Jobs of one ``group_id`` (user + job template) share GPU count,
template and a base duration, as recurring jobs do in production; now and then a member asks for twice
or half the group's GPUs and runs shorter or longer for it (``gpu_change_share``, ``gpu_scaling``).
SchedMate's replay writes each job's material from its group's template and its own request and work
(features.jobcorpus.replay).

Shapes (presets in configs/workloads/helios-failures.yaml and acme-failures.yaml):
- Helios Venus GPU jobs (helios/cluster_summary.csv): 52.6 % completed, 27.2 % cancelled, 20.2 % failed.
- Acme (NSDI '24, Seren/Kalos): fewer users, LLM jobs of many GPUs next to many small evaluation jobs,
  failures that are more often infrastructure ones the larger the job. The cause shares of both presets
  are invented (no public per-job root causes); the tables say they are synthetic.

``FORMATS`` adds ``acme-failures``: an Acme ``trace_*.csv`` read with its states, ``fail_time`` (Kalos)
and resubmissions linked to the failed job.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from features.jobtable import JobTable, LoadReport, TraceError, finalize
from features.traces.synthetic import group_assignment

CATEGORIES: dict[str, tuple[str, ...]] = {
    "infrastructure": ("gpu", "nvlink", "network", "nccl", "node", "storage"),
    "framework": ("oom", "dataloader", "shape"),
    "script": ("import", "key", "type", "syntax", "file"),
}
STATES = ("completed", "killed", "failed")
_ARCH = ["resnet50", "bert-base", "gpt2", "vit-base", "swin-t", "yolov5", "unet", "t5-small", "llama-7b",
         "llama-13b", "clip", "mae", "deeplabv3", "wav2vec2", "efficientnet", "detr"]
_TASK = ["pretrain", "finetune", "sft", "eval", "sweep", "distill", "debug"]


def _normalised(mix: dict, keys: tuple[str, ...], what: str) -> dict:
    unknown = set(mix) - set(keys)
    if unknown:
        raise ValueError(f"{what}: unknown keys {sorted(unknown)}; valid: {', '.join(keys)}")
    if any(v < 0 for v in mix.values()) or sum(mix.values()) <= 0:
        raise ValueError(f"{what}: shares must be >= 0 with a positive sum")
    total = sum(mix.values())
    return {k: float(mix.get(k, 0.0)) / total for k in keys}


class FailureWorkloadSpec(BaseModel):
    """Knobs of the generator (preset YAML keys other than name / cluster / source / generator)."""

    model_config = ConfigDict(extra="forbid")

    jobs: int = Field(2000, ge=1)
    mean_interarrival: float = Field(90.0, gt=0, description="s between submissions (Poisson)")
    median_duration: float = Field(900.0, gt=0, description="median full run time, s")
    duration_sigma: float = Field(1.6, gt=0, description="log-normal sigma of group base durations")
    group_duration_sigma: float = Field(0.25, ge=0, description="spread of durations inside a group")
    gpu_change_share: float = Field(0.1, ge=0, le=1, description="jobs asking twice or half their group's GPUs")
    gpu_scaling: float = Field(0.7, ge=0, le=1, description="duration ~ gpus^-s for a job that changed its GPUs")
    max_duration: float = Field(7 * 86400.0, gt=0)
    gpu_mix: dict[int, float] = Field(default_factory=lambda: {1: 0.6, 2: 0.12, 4: 0.12, 8: 0.14, 16: 0.02})
    gpu_duration_exponent: float = Field(0.25, ge=0, description="larger jobs run longer: d ~ gpus^e")
    mean_group_size: float = Field(6.0, ge=1, description="mean jobs per recurring group")
    num_users: int = Field(60, ge=1)
    num_vcs: int = Field(4, ge=1)
    state_mix: dict[str, float] = Field(default_factory=lambda: {"completed": 0.526, "killed": 0.272,
                                                                 "failed": 0.202})
    cause_mix: dict[str, float] = Field(default_factory=lambda: {"infrastructure": 0.2, "framework": 0.35,
                                                                 "script": 0.45})
    infra_gpu_exponent: float = Field(0.5, ge=0, description="infrastructure causes weigh gpus^e more")
    resubmit_share: float = Field(0.7, ge=0, le=1, description="failed jobs resubmitted (linked)")
    script_fail_mean: float = Field(180.0, gt=0, description="mean s before a script error kills a job")
    checkpoint_interval: float = Field(1800.0, ge=0, description="s between checkpoints (0: none)")
    checkpoint_min_duration: float = Field(3600.0, ge=0, description="jobs shorter than this never save")
    start: str = "2020-06-01T00:00:00+08:00"

    @field_validator("gpu_mix")
    @classmethod
    def _gpus(cls, mix: dict[int, float]) -> dict[int, float]:
        if not mix or any(int(k) < 1 for k in mix) or any(v < 0 for v in mix.values()) or sum(mix.values()) <= 0:
            raise ValueError("gpu_mix maps GPU counts >= 1 to non-negative weights with a positive sum")
        total = sum(mix.values())
        return {int(k): float(v) / total for k, v in sorted(mix.items())}

    @field_validator("state_mix")
    @classmethod
    def _states(cls, mix: dict[str, float]) -> dict[str, float]:
        return _normalised(mix, STATES, "state_mix")

    @field_validator("cause_mix")
    @classmethod
    def _causes(cls, mix: dict[str, float]) -> dict[str, float]:
        return _normalised(mix, tuple(CATEGORIES), "cause_mix")


def generate_failures(spec: FailureWorkloadSpec, seed: int = 0) -> JobTable:
    """Draw a job table with final states, failure times and causes; same spec and seed, same table."""
    rng = np.random.default_rng(seed)
    n = spec.jobs
    group_of_job = group_assignment(rng, n, spec.mean_group_size)
    G = int(group_of_job[-1]) + 1
    rng.shuffle(group_of_job)  # recurring jobs spread over the trace
    counts = np.array(sorted(spec.gpu_mix))
    g_gpus = rng.choice(counts, size=G, p=np.array([spec.gpu_mix[c] for c in counts]))
    uw = 1.0 / np.arange(1, spec.num_users + 1) ** 1.1
    g_user = rng.choice(spec.num_users, size=G, p=uw / uw.sum())
    g_arch = rng.integers(0, len(_ARCH), size=G)
    g_task = rng.integers(0, len(_TASK), size=G)
    g_base = (np.log(spec.median_duration) + rng.normal(0.0, spec.duration_sigma, size=G)
              + spec.gpu_duration_exponent * np.log(g_gpus))
    gpus = g_gpus[group_of_job]
    full = np.exp(g_base[group_of_job] + rng.normal(0.0, spec.group_duration_sigma, size=n))
    # Members of a group now and then ask for other GPUs (twice or half), and run shorter / longer for it
    # (strong scaling ~ gpus^-gpu_scaling). A separate stream: every other draw stays as it was.
    g_rng = np.random.default_rng([seed, 0x6770])
    change = g_rng.random(n) < spec.gpu_change_share
    factor = np.where(g_rng.random(n) < 0.5, 2.0, 0.5)
    new = np.where(change, np.maximum(1, np.round(gpus * factor)), gpus).astype(gpus.dtype)
    full = full * (new / gpus) ** (-spec.gpu_scaling)
    gpus = new
    full = np.clip(np.round(full, 1), 30.0, spec.max_duration)
    # final states; causes weigh infrastructure more for larger jobs
    sm = spec.state_mix
    state = rng.choice(np.array(STATES), size=n, p=[sm[s] for s in STATES])
    cats = np.array(list(CATEGORIES))
    cm = np.array([spec.cause_mix[c] for c in cats])
    w = np.tile(cm, (n, 1))
    w[:, 0] *= (gpus / gpus.min()) ** spec.infra_gpu_exponent
    w /= w.sum(axis=1, keepdims=True)
    u = rng.random(n)
    cat_idx = np.minimum((u[:, None] > np.cumsum(w, axis=1)).sum(axis=1), len(cats) - 1)
    failed = state == "failed"
    category = np.where(failed, cats[cat_idx], None)
    component = [None if c is None else CATEGORIES[c][int(rng.integers(len(CATEGORIES[c])))] for c in category]
    cause = [None if c is None else f"{c}/{k}" for c, k in zip(category, component)]
    # when an attempt dies: script errors early, framework errors in the first third, infrastructure anywhere
    frac = rng.random(n)
    fail_time = np.where(category == "script", np.minimum(rng.exponential(spec.script_fail_mean, size=n),
                                                          0.5 * full),
                         np.where(category == "framework", frac * 0.3 * full, frac * full))
    fail_time = np.where(failed, np.maximum(np.round(fail_time, 1), 1.0), np.nan)
    resubmitted = failed & (rng.random(n) < spec.resubmit_share)
    killed_at = np.maximum(np.round(full * rng.uniform(0.05, 0.9, size=n), 1), 10.0)
    duration = np.where(state == "killed", killed_at, np.where(failed & ~resubmitted, fail_time, full))
    submit = np.cumsum(rng.exponential(spec.mean_interarrival, size=n))
    submit -= submit[0]
    vc = rng.integers(0, spec.num_vcs, size=G)
    names = np.array([f"{_ARCH[a]}_{_TASK[t]}" for a, t in zip(g_arch, g_task)], dtype=object)
    users = np.array([f"u{k:03d}" for k in range(spec.num_users)], dtype=object)
    ckpt = np.where((full >= spec.checkpoint_min_duration) & (spec.checkpoint_interval > 0),
                    spec.checkpoint_interval, np.nan)
    frame = pd.DataFrame({
        "job_id": [f"job-{i}" for i in range(n)],
        "submit_time": np.round(submit, 3),
        "submit_ts": pd.Timestamp(spec.start) + pd.to_timedelta(np.round(submit, 3), unit="s"),
        "duration": duration,
        "num_gpus": gpus,
        "num_nodes": np.ceil(gpus / 8).astype(int),
        "user": users[g_user[group_of_job]],
        "org": [f"vc{v}" for v in vc[group_of_job]],
        "job_name": names[group_of_job],
        "group_id": [f"{users[g_user[k]]}/{names[k]}/{k}" for k in group_of_job],
        "status": state,
        "final_state": state,
        "fail_time": fail_time,
        "failure_cause": pd.array(cause, dtype="string"),
        "failure_category": pd.array(list(category), dtype="string"),
        "resubmitted": resubmitted,
        "full_duration": full,
        "checkpoint_interval": ckpt,
    })
    report = LoadReport(source=f"synthetic:failures(seed={seed}, jobs={n})", format="synthetic", rows_read=n,
                        synthetic=True)
    report.notes.append("SYNTHETIC workload with failures and early exits: states follow the preset's shares; "
                        "failure causes and times are invented")
    table = finalize(frame, report, path=report.source)
    table.frame.attrs["synthetic"] = True
    return table


def generate_from_preset(params: dict, seed: int, jobs: int | None) -> JobTable:
    """The preset hook (configs/workloads/*-failures.yaml: ``generator: features.traces.failures:generate_from_preset``)."""
    data = dict(params)
    if jobs is not None:
        data["jobs"] = jobs
    try:
        spec = FailureWorkloadSpec(**data)
    except Exception as exc:  # pydantic ValidationError: one line naming the field
        errors = getattr(exc, "errors", None)
        if callable(errors):
            first = errors()[0]
            where = ".".join(str(x) for x in first.get("loc", ())) or "preset"
            raise ValueError(f"failure workload: bad field {where!r}: {first.get('msg')}") from None
        raise
    return generate_failures(spec, seed=seed)


# -- Acme traces with failures -------------------------------------------------------------------
_ACME_STATES = {"COMPLETED": "completed", "FAILED": "failed", "NODE_FAIL": "failed", "OUT_OF_MEMORY": "failed",
                "CANCELLED": "killed", "TIMEOUT": "killed", "PREEMPTED": "killed"}
_ACME_CAUSE = {"NODE_FAIL": "infrastructure/node", "OUT_OF_MEMORY": "framework/oom"}


def load_acme_failures(path: str | Path, *, tz: str = "Asia/Shanghai", link_window: float = 3600.0) -> JobTable:
    """An Acme ``trace_*.csv`` with its failures: ``final_state`` from ``state``; ``fail_time`` = the
    failed attempt's run time (``fail_time`` - ``start_time`` where Kalos gives it, else its duration);
    a failed job's resubmission (the next job of the same user, GPU count and type submitted within
    ``link_window`` s of the failure) is merged into it: one job whose duration is the resubmission's,
    failing at ``fail_time`` and restarting (the merged rows are counted in the load report)."""
    from features.traces._io import read_csv
    from features.traces.helios import ACME_REQUIRED, load_acme

    table = load_acme(path, tz=tz)
    report = table.report
    raw = read_csv(path, required=ACME_REQUIRED, report=LoadReport(source=str(path), format="acme-failures"))
    raw = raw.drop_duplicates(subset=["job_id"]).set_index(raw["job_id"].astype(str).drop_duplicates())
    f = table.frame.copy()
    ids = f["job_id"].astype(str)
    states = f["status"].astype("string").str.upper().fillna("")
    f["final_state"] = states.map(lambda s: _ACME_STATES.get(s, "completed" if s == "" else "killed")).astype("string")
    fail = f["duration"].astype(float).where(f["final_state"] == "failed")
    if "fail_time" in raw and "start_time" in raw:
        ft = pd.to_datetime(raw["fail_time"].reindex(ids).to_numpy(), errors="coerce")
        st = pd.to_datetime(raw["start_time"].reindex(ids).to_numpy(), errors="coerce")
        run = pd.Series((ft - st).total_seconds(), index=f.index)
        fail = run.where(run.notna() & (run >= 0) & (f["final_state"] == "failed"), fail)
    f["fail_time"] = fail
    f["failure_cause"] = states.map(lambda s: _ACME_CAUSE.get(s, "unknown" if s == "FAILED" else pd.NA)) \
        .where(f["final_state"] == "failed").astype("string")
    f["failure_category"] = f["failure_cause"].str.split("/").str[0].astype("string")
    f["resubmitted"] = False
    f["full_duration"] = f["duration"].astype(float)
    key = (f["user"].astype(str) + "|" + f["num_gpus"].astype(str) + "|"
           + f.get("workload_type", pd.Series("", index=f.index)).astype(str))
    f["group_id"] = key.astype("string")
    drop: set[int] = set()
    submit = f["submit_time"].to_numpy(dtype=float)
    queue = f["queue_time"].fillna(0).to_numpy(dtype=float) if "queue_time" in f else np.zeros(len(f))
    for _, rows in f.groupby(key, sort=False).groups.items():
        rows = sorted(rows, key=lambda r: submit[r])
        for a, b in zip(rows, rows[1:]):
            if a in drop or f.at[a, "final_state"] != "failed":
                continue
            failed_at = submit[a] + queue[a] + float(f.at[a, "fail_time"])
            if failed_at <= submit[b] <= failed_at + link_window:
                f.at[a, "resubmitted"] = True
                f.at[a, "duration"] = float(f.at[b, "duration"])
                f.at[a, "full_duration"] = float(f.at[b, "duration"])
                f.at[a, "final_state"] = f.at[b, "final_state"]
                drop.add(b)
    if drop:
        f = f.drop(index=sorted(drop)).reset_index(drop=True)
        report.notes.append(f"{len(drop)} resubmissions merged into the failed job they repeat (link window "
                            f"{link_window:g} s)")
        report.reject("resubmission merged into its failed job", len(drop))
        report.rows_kept = len(f)
    if not len(f):
        raise TraceError(path, "no job rows left")
    table.frame = f
    return table


FORMATS = {
    "acme-failures": (load_acme_failures, "Acme trace_*.csv with states, fail_time and linked resubmissions"),
}


def _check_params(params: dict) -> None:
    """The generator's parameters as FailureWorkloadSpec fields, checked before any work (issue 44)."""
    FailureWorkloadSpec(**params)


generate_from_preset.check_params = _check_params  # type: ignore[attr-defined]
