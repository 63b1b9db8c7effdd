"""Job material for a replayed trace job: what each job's code, command and logs say, written per job.

Why per job. Binding one corpus entry to a whole recurring group made every member's text identical,
so SchedMate's Advisor reduced to "mean of the group's last three durations". Here each job gets its
own material:

- The group fixes the template (family, style, layout, log format): ``draw_spec(template, index)``.
  A share of groups (``LOOKALIKE_SHARE``) reuse another group's template (a colleague's fork of the
  same script), so texts of unrelated groups look alike and retrieval, not the group key, decides.
- Members vary as recurring jobs do: learning rate, batch size (the corpus' per-job draws), now and
  then the dataset (another of the family's), and the GPUs the job asked for.
- The step count the text states is the one that makes the job's work: ``work = startup + steps x
  step_time`` with the template's step time, so a job's duration follows from what its text says
  (``steps_per_epoch`` from the dataset, batch and GPUs for epoch-based families). People write round
  numbers (``nice``: 1, 2, 3, 5 x 10^k) and runs vary for reasons no text
  states (``RUN_NOISE``: data loading, stragglers, contention), so equal texts do not mean equal
  durations.

A trace's failure cause ("infrastructure/gpu", a node label, ...) maps to the corpus' causes
(``corpus_cause``), so a failed job's log is generated with the right root cause for the real
classifier to read.
"""
from __future__ import annotations

import math
import random
from dataclasses import replace

from features.jobcorpus.catalog import FAMILY_BY_KEY
from features.jobcorpus.spec import JobSpec, draw_spec, stable_seed

#: share of groups whose template is another group's (look-alike jobs of other groups)
LOOKALIKE_SHARE = 0.25
#: chance that a recurring job (index > 0) trains on another of its family's datasets
DATASET_CHANGE = 0.15
#: log-normal sigma of the work a text does not explain (same text, different run time)
RUN_NOISE = 0.15
_NICE = (1.0, 2.0, 3.0, 5.0, 10.0)

#: trace cause component -> corpus causes (one is picked per job, stably)
_CAUSE_MAP: dict[str, tuple[str, ...]] = {
    "gpu": ("gpu_xid", "gpu_ecc"), "nvlink": ("nvlink",), "network": ("ib_error",), "nccl": ("nccl_timeout",),
    "node": ("node_lost",), "storage": ("storage",),
    "oom": ("cuda_oom",), "dataloader": ("dataloader_killed",), "shape": ("shape_error",),
    "import": ("import_error",), "key": ("key_error",), "type": ("type_error",), "syntax": ("syntax_error",),
    "file": ("file_not_found",),
}
_BY_CATEGORY = {"infrastructure": ("gpu", "nvlink", "network", "nccl", "node", "storage"),
                "framework": ("oom", "dataloader", "shape"),
                "script": ("import", "key", "type", "syntax", "file")}


def nice(x: float) -> int:
    """The round number nearest ``x`` (in log scale) that a person would write: 1..10 as is, then
    1, 2, 3, 5 x 10^k (coarse on purpose: recurring jobs share step counts, so texts recur)."""
    if x <= 10:
        return max(1, int(round(x)))
    k = 10 ** math.floor(math.log10(x))
    best = min(_NICE, key=lambda m: abs(math.log(x / (m * k))))
    return int(round(best * k))


def template_keys(keys: list[str], seed: int) -> dict[str, str]:
    """Each distinct group key -> the key whose template it uses: itself, or (``LOOKALIKE_SHARE`` of
    groups, stably drawn) another group of the same trace."""
    distinct = sorted(set(keys))
    out = {}
    for k in distinct:
        r = random.Random(stable_seed("lookalike", k, seed))
        if len(distinct) > 1 and r.random() < LOOKALIKE_SHARE:
            other = distinct[r.randrange(len(distinct) - 1)]
            out[k] = other if other != k else distinct[-1]
        else:
            out[k] = k
    return out


def replay_spec(template: str, group_key: str, index: int, seed: int, gpus: int, work_s: float) -> JobSpec:
    """The ``index``-th job of ``group_key`` (template ``template``) asking ``gpus`` GPUs for ``work_s`` s
    of work: the template's spec with this job's dataset and a step count that makes its work."""
    spec = draw_spec(str(template), int(index), int(seed))
    fam = FAMILY_BY_KEY[spec.family]
    t = spec.truth
    j = random.Random(stable_seed("replay-job", group_key, index, seed))
    dataset, surface = t.dataset, spec.dataset_surface
    if index > 0 and len(fam.datasets) > 1 and j.random() < DATASET_CHANGE:
        from features.jobcorpus.catalog import DATASETS

        dataset = fam.datasets[j.randrange(len(fam.datasets))]
        if dataset != t.dataset:
            names = DATASETS[dataset][1]
            surface = names[j.randrange(len(names))]
    gpus = max(1, int(gpus))
    startup = min(float(spec.extra.get("startup", 60.0)), 0.2 * max(work_s, 1.0))
    step_time = max(t.step_time, 1e-3)
    steps = max(1.0, (max(work_s, 1.0) - startup) / step_time * math.exp(j.gauss(0.0, RUN_NOISE)))
    if t.iteration_unit == "epochs":
        from features.jobcorpus.catalog import DATASETS

        spe = max(1, math.ceil(DATASETS[dataset][0] / (t.batch_size * gpus)))
        iterations = nice(steps / spe)
        total = iterations * spe
    else:
        iterations = total = nice(steps)
    truth = replace(t, dataset=dataset, iterations=int(iterations), total_steps=int(total),
                    duration=float(startup + total * step_time))
    return replace(spec, truth=truth, dataset_surface=surface,
                   decoy_dataset=spec.decoy_dataset if spec.decoy_dataset != dataset else t.dataset)


def corpus_cause(trace_cause: str, group_key: str, index: int, seed: int) -> str:
    """The corpus cause (features.jobcorpus.CAUSES) a failed job's log is written with: from the trace's
    'category/component' ('infrastructure/gpu'); a node label ('node N of partition P') is a lost node;
    an unknown cause (real traces say only FAILED) is drawn, stably, from every cause."""
    r = random.Random(stable_seed("replay-cause", group_key, index, seed, trace_cause))
    cause = (trace_cause or "").strip().lower()
    if cause.startswith("node "):
        return "node_lost"
    head, _, comp = cause.partition("/")
    if comp in _CAUSE_MAP:
        names = _CAUSE_MAP[comp]
    elif head in _BY_CATEGORY:
        names = tuple(n for c in _BY_CATEGORY[head] for n in _CAUSE_MAP[c])
    else:
        names = tuple(n for v in _CAUSE_MAP.values() for n in v)
    return names[r.randrange(len(names))]
