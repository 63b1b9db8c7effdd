"""The drawn description of one job (truth + the surface choices its repository and log are written
with). A group's template fixes most choices; each job of the group varies a few of them."""
from __future__ import annotations

import hashlib
import math
import random
from dataclasses import asdict, dataclass, field, replace

from features.jobcorpus.catalog import DATASETS, FAMILIES, FAMILY_BY_KEY, Family

# style -> log formats it is written with
LOG_FORMATS = {
    "argparse": ("plain", "tqdm", "timm"),
    "hydra": ("pylogging", "tqdm"),
    "json": ("plain", "pylogging"),
    "hf": ("hf",),
    "lightning": ("lightning",),
    "launcher": ("deepspeed", "hf", "plain"),
    "megatron": ("megatron",),
    "mmengine": ("mmengine",),
}


def stable_seed(*parts: object) -> int:
    """A process-independent seed from any parts (Python's hash() is salted per process)."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "little")


@dataclass(frozen=True)
class JobTruth:
    """Ground truth of a job's metadata (what the extractor should find)."""

    model: str
    task: str
    dataset: str
    iterations: int
    iteration_unit: str  # "epochs" | "steps"
    batch_size: int      # per device
    gpus: int            # total GPUs (all nodes)
    nodes: int
    catalog_model: str | None = None  # profile catalog name (sim/profiles.py), if any
    style: str = ""
    log_format: str = ""
    total_steps: int = 0
    step_time: float = 0.0   # seconds per optimiser step
    duration: float = 0.0    # seconds, full run (startup + steps)
    gpu_util: float = 0.0    # percent

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class JobSpec:
    """Everything the renderers need: truth plus surface choices."""

    truth: JobTruth
    family: str
    source: str            # tv / timm / hf / plain / mm
    model_surface: str
    dataset_surface: str
    launcher: str          # python / torchrun / dist_launch / deepspeed / accelerate / srun / cuda_visible
    lr: float
    seed: int
    variant: int           # per-group layout variant (0..3)
    on_cli: frozenset      # fields passed on the command line (others come from defaults / configs)
    decoys: tuple[str, ...]  # other model surface names that appear as decoys
    decoy_dataset: str
    warmup: int
    log_every: int
    extra: dict = field(default_factory=dict)


def _pick(rng: random.Random, seq):
    return seq[rng.randrange(len(seq))]


def _steps_per_epoch(dataset: str, batch: int, gpus: int) -> int:
    n = DATASETS[dataset][0]
    return max(1, math.ceil(n / (batch * gpus)))


def draw_spec(group_key: str, job_index: int, seed: int) -> JobSpec:
    """The group's template (from group_key + seed) with this job's small changes (job_index)."""
    g = random.Random(stable_seed("group", group_key, seed))
    fam: Family = _pick(g, FAMILIES)
    style = _pick(g, fam.styles)
    dataset = _pick(g, fam.datasets)
    sources = [s for s in fam.names if not (style == "mmengine") or s == "mm"]
    if style == "mmengine":
        sources = ["mm"]
    elif style in ("hf",):
        sources = [s for s in sources if s == "hf"] or ["plain"]
    elif style == "megatron":
        sources = ["plain"]
    else:
        sources = [s for s in sources if s != "mm"]
        if style == "launcher" and "hf" in fam.names and fam.unit == "steps":
            sources = ["hf"]
    source = _pick(g, sources)
    model_surface = _pick(g, fam.names[source])
    dataset_surface = _pick(g, DATASETS[dataset][1])
    iterations = _pick(g, fam.iterations)
    batch = _pick(g, fam.batch)
    gpn = _pick(g, fam.gpus)
    nodes = 1
    if fam.max_nodes > 1 and gpn == 8 and g.random() < 0.45:
        nodes = _pick(g, [n for n in (2, 4, 8) if n <= fam.max_nodes])
    launchers = ["python", "cuda_visible"] if gpn * nodes == 1 else ["torchrun", "dist_launch", "cuda_visible"]
    if style in ("launcher",):
        launchers = ["deepspeed", "torchrun", "srun"] if fam.unit == "steps" or nodes > 1 else ["deepspeed", "torchrun"]
    elif style == "hf":
        launchers = ["python"] if gpn * nodes == 1 else ["torchrun", "accelerate", "deepspeed"]
    elif style in ("megatron", "mmengine"):
        launchers = ["torchrun"]
    elif nodes > 1:
        launchers = ["torchrun", "srun"]
    elif style == "lightning":
        launchers = ["python"]
    launcher = _pick(g, launchers)
    if launcher == "cuda_visible" and gpn == 8:
        launcher = "torchrun"
    variant = g.randrange(4)
    fields_ = ["model", "dataset", "iterations", "batch_size"]
    on_cli = frozenset(f for f in fields_ if g.random() < 0.55)
    others = [n for f in FAMILIES if f.key != fam.key and f.task == fam.task for n in f.names.get(source, ())]
    others = others or [n for f in FAMILIES if f.key != fam.key for n in f.names.get("plain", ())]
    decoys = tuple(g.sample(others, min(2, len(others))))
    dd = [d for f in FAMILIES if f.task == fam.task for d in f.datasets if d != dataset] or \
         [d for d in DATASETS if d != dataset]
    decoy_dataset = _pick(g, dd)
    lr = _pick(g, (0.1, 0.05, 3e-4, 1e-4, 5e-5, 2e-5, 6e-4))
    step_time = g.uniform(*fam.step_time)
    util = g.uniform(*fam.gpu_util)
    log_format = _pick(g, LOG_FORMATS[style])
    if log_format == "timm" and source != "timm":
        log_format = "plain"

    # -- the job's small changes (recurring jobs look alike, not identical) --
    j = random.Random(stable_seed("job", group_key, seed, job_index))
    if job_index > 0:
        if j.random() < 0.30:
            lr = _pick(j, (0.1, 0.05, 3e-4, 1e-4, 5e-5, 2e-5, 6e-4))
        if j.random() < 0.15:
            iterations = max(1, int(round(iterations * _pick(j, (0.5, 0.8, 1.25, 1.5, 2.0)))))
        if j.random() < 0.10:
            batch = max(1, batch * _pick(j, (2,)) if j.random() < 0.5 else batch // 2 or 1)
        if j.random() < 0.08 and nodes == 1 and gpn in (2, 4):
            gpn = gpn * 2
    gpus = gpn * nodes
    # step time: weak scaling per GPU with a per-job jitter (same group, similar speed)
    step_time = step_time * (batch / max(fam.batch)) ** 0.8 * j.uniform(0.92, 1.08)
    if fam.unit == "epochs":
        total_steps = iterations * _steps_per_epoch(dataset, batch, gpus)
    else:
        total_steps = iterations
    startup = j.uniform(30, 240)
    duration = startup + total_steps * step_time
    util = min(100.0, max(1.0, util + j.uniform(-4, 4)))
    log_every = _pick(g, (10, 20, 50, 100)) if total_steps > 2000 else _pick(g, (1, 5, 10))
    truth = JobTruth(model=fam.key, task=fam.task, dataset=dataset, iterations=int(iterations),
                     iteration_unit=fam.unit, batch_size=int(batch), gpus=int(gpus), nodes=int(nodes),
                     catalog_model=fam.catalog, style=style, log_format=log_format,
                     total_steps=int(total_steps), step_time=float(step_time), duration=float(duration),
                     gpu_util=float(util))
    return JobSpec(truth=truth, family=fam.key, source=source, model_surface=model_surface,
                   dataset_surface=dataset_surface, launcher=launcher, lr=lr,
                   seed=int(j.randrange(10_000)) if job_index and j.random() < 0.5 else 42 + variant,
                   variant=variant, on_cli=on_cli, decoys=decoys, decoy_dataset=decoy_dataset,
                   warmup=_pick(g, (0, 500, 1000, 2000)), log_every=log_every,
                   extra={"startup": startup, "gpn": gpn})


def with_truth(spec: JobSpec, **changes) -> JobSpec:
    return replace(spec, truth=replace(spec.truth, **changes))


def family_of(spec: JobSpec) -> Family:
    return FAMILY_BY_KEY[spec.family]
