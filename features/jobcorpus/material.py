"""JobMaterial: what a job carries (command, repository files, logs) with its ground truth, bound to
trace jobs by group so that recurring jobs share a template with small changes."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

from features.jobcorpus.logs import CAUSES, FailureTruth, ProgressTruth, failure_log, labelled_log, runtime_log
from features.jobcorpus.repos import render_repo
from features.jobcorpus.spec import JobSpec, JobTruth, draw_spec, stable_seed


@dataclass
class JobMaterial:
    """One job's material. Files are generated in memory; logs on demand (deterministic)."""

    group_key: str
    job_index: int
    seed: int
    command: str
    files: dict[str, str]
    truth: JobTruth
    spec: JobSpec = field(repr=False)

    def runtime_log(self, noisy: bool = False, progress: float | None = None,
                    speed_changes: Sequence[tuple[float, float]] = ()) -> tuple[list[str], ProgressTruth]:
        """The running job's log up to `progress` (fraction of its steps) and the progress truth."""
        return runtime_log(self.spec, self.group_key, self.job_index, self.seed, noisy=noisy,
                           progress=progress, speed_changes=speed_changes)

    def labelled_log(self, noisy: bool = False, progress: float | None = None) -> tuple[list[str], list[str]]:
        """A running job's log and each line's category (the line classifier's truth)."""
        return labelled_log(self.spec, self.group_key, self.job_index, self.seed, noisy=noisy, progress=progress)

    def failure_log(self, cause: str | None = None, noisy: bool = False,
                    at: float | None = None) -> tuple[list[str], FailureTruth]:
        """A failed run's log and the root-cause truth; `cause` drawn (seeded) when None."""
        if cause is None:
            rng = random.Random(stable_seed("cause", self.group_key, self.job_index, self.seed))
            cause = rng.choice(sorted(CAUSES))
        return failure_log(self.spec, self.group_key, self.job_index, self.seed, cause, noisy=noisy, at=at)

    def write(self, folder: str | Path, logs: bool = True) -> Path:
        """Write the repository (repo/), command.sh, logs/ (clean, noisy, failed) and truth.json."""
        root = Path(folder)
        for rel, text in self.files.items():
            path = root / "repo" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        (root / "command.sh").write_text(self.command + "\n")
        truth = {"job": {"group_key": self.group_key, "job_index": self.job_index, "seed": self.seed},
                 "metadata": self.truth.to_dict()}
        if logs:
            (root / "logs").mkdir(parents=True, exist_ok=True)
            clean, pt = self.runtime_log(noisy=False)
            noisy, pn = self.runtime_log(noisy=True)
            failed, ft = self.failure_log(noisy=bool(self.job_index % 2))
            for name, lines in (("run.log", clean), ("run_noisy.log", noisy), ("failed.log", failed)):
                (root / "logs" / name).write_text("\n".join(lines) + "\n")
            truth["logs"] = {"run.log": pt.to_dict(), "run_noisy.log": pn.to_dict(), "failed.log": ft.to_dict()}
        (root / "truth.json").write_text(json.dumps(truth, indent=2) + "\n")
        return root


def material_for_job(group_key: str, job_index_in_group: int, seed: int) -> JobMaterial:
    """The material of the `job_index_in_group`-th job of a group (user + name, or the trace's
    recurrence key). Same group -> same template (family, style, layout); the index varies a few
    values (learning rate, iterations, batch size, GPUs) as recurring jobs do."""
    spec = draw_spec(str(group_key), int(job_index_in_group), int(seed))
    files, command = render_repo(spec, str(group_key), int(seed))
    return JobMaterial(group_key=str(group_key), job_index=int(job_index_in_group), seed=int(seed),
                       command=command, files=files, truth=spec.truth, spec=spec)


def iter_corpus(n_jobs: int, seed: int, jobs_per_group: int = 4) -> Iterator[JobMaterial]:
    """A corpus of `n_jobs` jobs in groups of about `jobs_per_group` recurring jobs."""
    rng = random.Random(stable_seed("corpus", seed))
    made = 0
    g = 0
    while made < n_jobs:
        size = max(1, min(n_jobs - made, int(rng.expovariate(1 / jobs_per_group)) + 1))
        key = f"user{rng.randrange(1, 60):02d}/job-{seed}-{g:04d}"
        for j in range(size):
            yield material_for_job(key, j, seed)
        made += size
        g += 1


def write_corpus(folder: str | Path, n_jobs: int, seed: int, logs: bool = True) -> list[Path]:
    """Write a corpus (one folder per job, plus index.json). Never call with a folder in the repo."""
    root = Path(folder)
    root.mkdir(parents=True, exist_ok=True)
    out, index = [], []
    for i, m in enumerate(iter_corpus(n_jobs, seed)):
        path = m.write(root / f"job-{i:05d}", logs=logs)
        out.append(path)
        index.append({"folder": path.name, "group_key": m.group_key, "job_index": m.job_index,
                      "command": m.command, "model": m.truth.model})
    (root / "index.json").write_text(json.dumps({"seed": seed, "jobs": index}, indent=2) + "\n")
    return out
