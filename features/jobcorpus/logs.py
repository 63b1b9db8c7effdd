"""Runtime logs of a job in the common progress formats, clean or noisy, and failed logs whose root
cause sits in the middle, followed by a realistic cascade.

Progress formats: plain prints, Python logging (Hydra), tqdm bars, timm, Hugging Face Trainer (tqdm bar
+ metric dicts), Lightning bars, DeepSpeed, Megatron iteration lines, mmengine. Every log carries its
ground truth: the progress at the cut (global step, total steps, seconds per step, loss, samples/s),
or for failed logs the root cause (type, component, the index of the error line and its block).
"""
from __future__ import annotations

import math
import random
import string
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta, timezone
from typing import Sequence

from features.jobcorpus.catalog import DATASETS
from features.jobcorpus.spec import JobSpec, stable_seed

BAR_W = 10


@dataclass(frozen=True)
class ProgressTruth:
    step: int
    total_steps: int
    step_time: float     # s per step over the recent window (no stalls)
    loss: float
    throughput: float    # samples / s, whole job
    epoch: int | None = None
    steps_per_epoch: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class FailureTruth:
    kind: str            # infrastructure / framework / script
    component: str       # GPU, NVLink, network, NCCL, node, storage / memory, dataloader, model / import, key, type, syntax, file
    cause: str           # fine-grained cause name
    line_index: int      # index of the error line that states the root cause
    span: tuple[int, int]  # [start, end] of the root-cause block (traceback header .. error line)
    rank: int

    def to_dict(self) -> dict:
        d = asdict(self)
        d["span"] = list(self.span)
        return d


# cause -> (kind, component)
CAUSES: dict[str, tuple[str, str]] = {
    "gpu_xid": ("infrastructure", "GPU"), "gpu_ecc": ("infrastructure", "GPU"),
    "nvlink": ("infrastructure", "NVLink"), "nccl_timeout": ("infrastructure", "NCCL"),
    "ib_error": ("infrastructure", "network"), "node_lost": ("infrastructure", "node"),
    "storage": ("infrastructure", "storage"),
    "cuda_oom": ("framework", "memory"), "dataloader_killed": ("framework", "dataloader"),
    "shape_error": ("framework", "model"),
    "import_error": ("script", "import"), "key_error": ("script", "key"), "type_error": ("script", "type"),
    "syntax_error": ("script", "syntax"), "file_not_found": ("script", "file"),
}
KINDS = ("infrastructure", "framework", "script")


def _hms(sec: float) -> str:
    sec = max(0, int(sec))
    h, r = divmod(sec, 3600)
    m, s = divmod(r, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class _Clock:
    def __init__(self, start: datetime) -> None:
        self.t = start
        self._iso: tuple[datetime, str] | None = None
        self._glog: tuple[datetime, str] | None = None

    def add(self, s: float) -> None:
        self.t += timedelta(seconds=s)

    def iso(self) -> str:
        if self._iso is None or self._iso[0] != self.t:
            self._iso = (self.t, self.t.strftime("%Y-%m-%d %H:%M:%S"))
        return self._iso[1]

    def ms(self) -> str:
        return self.t.strftime("%Y-%m-%d %H:%M:%S") + f",{self.t.microsecond // 1000:03d}"

    def mm(self) -> str:
        return self.t.strftime("%Y/%m/%d %H:%M:%S")

    def glog(self) -> str:
        if self._glog is None or self._glog[0] != self.t:
            self._glog = (self.t, self.t.strftime("%m%d %H:%M:%S") + f".{self.t.microsecond:06d}")
        return self._glog[1]


class _Geometry:
    """Global steps <-> (epoch, step in epoch) for the job."""

    def __init__(self, spec: JobSpec) -> None:
        t = spec.truth
        self.total = max(1, t.total_steps)
        if t.iteration_unit == "epochs":
            self.spe = max(1, math.ceil(DATASETS[t.dataset][0] / (t.batch_size * t.gpus)))
            self.epochs = t.iterations
        else:
            self.spe = self.total
            self.epochs = 1

    def split(self, step: int) -> tuple[int, int]:
        """1-based epoch and 1-based step within it."""
        e, s = divmod(step - 1, self.spe)
        return e + 1, s + 1


def _loss(spec: JobSpec, step: int, total: int, rng: random.Random) -> float:
    base = {"language-modeling": 10.5, "text-classification": 0.7, "image-classification": 6.9}.get(spec.truth.task, 2.5)
    floor = base * 0.18
    frac = step / max(total, 1)
    return max(1e-3, floor + (base - floor) * math.exp(-5 * frac) * (1 + rng.gauss(0, 0.03)))


def _bar(frac: float) -> str:
    n = frac * BAR_W
    full = int(n)
    parts = " ▏▎▍▌▋▊▉"
    rem = parts[int((n - full) * 8)] if full < BAR_W else ""
    return ("█" * full + rem).ljust(BAR_W)


def _rate(st: float) -> str:
    return f"{1 / st:.2f}it/s" if st < 1 else f"{st:.2f}s/it"


class ProgressWriter:
    """Formats one progress line (and companions) for a log format."""

    def __init__(self, spec: JobSpec, geo: _Geometry, clock: _Clock, start: datetime) -> None:
        self.spec, self.geo, self.clock, self.start = spec, geo, clock, start
        self.fmt = spec.truth.log_format
        self.gbs = spec.truth.batch_size * spec.truth.gpus
        self.avg_loss: list[float] = []

    def lines(self, step: int, loss: float, st: float, lr: float, rng: random.Random) -> list[str]:
        f, g, c = self.fmt, self.geo, self.clock
        ep, s_in = g.split(step)
        total = g.total
        elapsed = (c.t - self.start).total_seconds()
        thr = self.gbs / st
        self.avg_loss.append(loss)
        avg = sum(self.avg_loss[-50:]) / len(self.avg_loss[-50:])
        unit_epochs = self.spec.truth.iteration_unit == "epochs"
        if f == "plain":
            if unit_epochs:
                return [f"[{c.iso()}] Epoch {ep}/{g.epochs} | step {s_in}/{g.spe} | loss {loss:.4f} | "
                        f"lr {lr:.2e} | {st:.3f} s/it"]
            return [f"[{c.iso()}] step {step}/{total} loss={loss:.4f} lr={lr:.2e} time/step={st * 1000:.0f}ms"]
        if f == "pylogging":
            if unit_epochs:
                return [f"[{c.ms()}][__main__][INFO] - Epoch {ep} [{s_in}/{g.spe}]  loss: {loss:.4f}  "
                        f"time: {st:.4f}  data: {st * rng.uniform(0.01, 0.08):.4f}"]
            return [f"[{c.ms()}][__main__][INFO] - step {step}/{total}  loss: {loss:.4f}  time: {st:.4f}"]
        if f == "tqdm":
            if unit_epochs:
                frac = s_in / g.spe
                rem = (g.spe - s_in) * st
                return [f"Epoch {ep}: {int(frac * 100):3d}%|{_bar(frac)}| {s_in}/{g.spe} "
                        f"[{_hms(s_in * st)}<{_hms(rem)}, {_rate(st)}, loss={loss:.3f}]"]
            frac = step / total
            return [f"Training: {int(frac * 100):3d}%|{_bar(frac)}| {step}/{total} "
                    f"[{_hms(elapsed)}<{_hms((total - step) * st)}, {_rate(st)}, loss={loss:.3f}]"]
        if f == "timm":
            e0 = ep - 1
            pct = 100.0 * (s_in - 1) / g.spe
            return [f"Train: {e0} [{s_in - 1:>4d}/{g.spe} ({pct:>3.0f}%)]  Loss: {loss:#.3g} ({avg:#.3g})  "
                    f"Time: {st:.3f}s, {thr:>7.2f}/s  ({st * rng.uniform(0.98, 1.04):.3f}s, {thr * 0.99:>7.2f}/s)  "
                    f"LR: {lr:.3e}  Data: {st * 0.02:.3f} ({st * 0.025:.3f})"]
        if f == "hf":
            frac = step / total
            out = [f"{int(frac * 100):3d}%|{_bar(frac)}| {step}/{total} [{_hms(elapsed)}<{_hms((total - step) * st)}, {_rate(st)}]"]
            if step % max(1, self.spec.log_every) == 0:
                out.append("{" + f"'loss': {loss:.4f}, 'grad_norm': {rng.uniform(0.3, 3):.4f}, "
                           f"'learning_rate': {lr:.4e}, 'epoch': {step / g.spe:.2f}" + "}")
            return out
        if f == "lightning":
            frac = s_in / g.spe
            return [f"Epoch {ep - 1}: {int(frac * 100):3d}%|{_bar(frac)}| {s_in}/{g.spe} "
                    f"[{_hms(s_in * st)}<{_hms((g.spe - s_in) * st)}, {_rate(st)}, v_num=0, train_loss={loss:.3f}]"]
        if f == "deepspeed":
            return [f"[{c.iso()},{rng.randrange(1000):03d}] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, "
                    f"skipped=0, lr=[{lr:.6e}], mom=[(0.9, 0.999)]",
                    f"[{c.iso()},{rng.randrange(1000):03d}] [INFO] [timer.py:260:stop] epoch={ep - 1}/micro_step={step}/"
                    f"global_step={step}, RunningAvgSamplesPerSec={thr * rng.uniform(0.97, 1.0):.2f}, "
                    f"CurrSamplesPerSec={thr * rng.uniform(0.95, 1.05):.2f}, MemAllocated=21.4GB, MaxMemAllocated=38.9GB",
                    f"global step {step}/{total} | train loss {loss:.4f} | {st * 1000:.1f} ms/step"]
        if f == "megatron":
            return [f" [{c.iso()}] iteration {step:>8d}/{total:>8d} | consumed samples: {step * self.gbs:>12d} | "
                    f"elapsed time per iteration (ms): {st * 1000:.1f} | learning rate: {lr:.6E} | global batch size: "
                    f"{self.gbs:>5d} | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: {rng.uniform(0.2, 2):.3f} | "
                    f"number of skipped iterations:   0 | number of nan iterations:   0 |"]
        if f == "mmengine":
            eta = _hms((total - step) * st)
            if unit_epochs:
                head = f"Epoch(train) [{ep}][{s_in:>4d}/{g.spe}]"
            else:
                head = f"Iter(train) [{step:>6d}/{total}]"
            return [f"{c.mm()} - mmengine - INFO - {head}  base_lr: {lr:.4e} lr: {lr:.4e}  eta: {eta}  "
                    f"time: {st:.4f}  data_time: {st * 0.03:.4f}  memory: {rng.randrange(3000, 9000)}  "
                    f"grad_norm: {rng.uniform(1, 9):.4f}  loss: {loss:.4f}  loss_cls: {loss * 0.4:.4f}"]
        raise ValueError(f"unknown log format {f!r}")


def _header(spec: JobSpec, clock: _Clock, geo: _Geometry, rng: random.Random) -> list[str]:
    t = spec.truth
    out = [f"[{clock.iso()}] host {rng.choice(['gpu', 'node', 'dgx'])}-{rng.randrange(1, 64):02d} starting job",
           f"Python 3.{rng.choice([9, 10, 11])}.{rng.randrange(12)} | torch 2.{rng.randrange(1, 5)}.{rng.randrange(2)}+cu121 | "
           f"CUDA 12.1 | cuDNN 8902",
           f"world_size={t.gpus} nodes={t.nodes} backend=nccl"]
    if t.gpus > 1:
        out += [f"node-0:{1000 + r}:{1000 + r} [{r}] NCCL INFO Bootstrap : Using eth0:10.0.0.{rng.randrange(2, 250)}<0>"
                for r in range(min(t.gpus, 4))]
        out += ["NCCL version 2.18.5+cuda12.1",
                f"node-0:1000:1200 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.5<0>",
                f"node-0:1000:1200 [0] NCCL INFO Channel 00/{rng.choice([8, 16, 24])} :    0   1   2   3   4   5   6   7",
                "node-0:1000:1200 [0] NCCL INFO Connected all rings",
                "node-0:1000:1200 [0] NCCL INFO comm 0x5581c2a0 rank 0 nranks 8 cudaDev 0 busId 18000 - Init COMPLETE"]
    f = t.log_format
    if f in ("plain", "tqdm", "timm", "pylogging"):
        key = "epochs" if t.iteration_unit == "epochs" else "max_steps"
        out.append(f"Namespace(batch_size={t.batch_size}, {key}={t.iterations}, lr={spec.lr}, workers=8, "
                   f"seed={spec.seed}, output_dir='./output')")
        if f == "timm":
            out.append(f"Model {spec.model_surface} created, param count:{rng.randrange(5, 300) * 1_000_000 + rng.randrange(999999)}")
            out.append(f"Scheduled epochs: {geo.epochs}. LR stepped per epoch.")
    if f == "hf":
        out += ["***** Running training *****", f"  Num examples = {DATASETS[t.dataset][0]:,}",
                f"  Num Epochs = {geo.epochs}", f"  Instantaneous batch size per device = {t.batch_size}",
                f"  Total train batch size (w. parallel, distributed & accumulation) = {t.batch_size * t.gpus}",
                "  Gradient Accumulation steps = 1", f"  Total optimization steps = {geo.total:,}",
                f"  Number of trainable parameters = {rng.randrange(10, 7000) * 1_000_000:,}"]
    if f == "lightning":
        out += ["GPU available: True (cuda), used: True", "TPU available: False, using: 0 TPU cores",
                f"Initializing distributed: GLOBAL_RANK: 0, MEMBER: 1/{t.gpus}",
                "LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]",
                "  | Name | Type | Params", "---------------------------------",
                f"0 | net  | {spec.model_surface.split('/')[-1]} | {rng.randrange(3, 200)}.{rng.randrange(10)} M",
                f"Trainer(max_{'epochs' if t.iteration_unit == 'epochs' else 'steps'}={t.iterations}) "
                f"reached from config: configs/trainer.yaml"]
    if f == "megatron":
        out += ["using world size: %d, data-parallel size: %d, tensor-model-parallel size: 1" % (t.gpus, t.gpus),
                "------------------------ arguments ------------------------",
                f"  micro_batch_size ................................ {t.batch_size}",
                f"  global_batch_size ............................... {t.batch_size * t.gpus}",
                f"  train_iters ..................................... {t.iterations}",
                "-------------------- end of arguments ---------------------",
                "> building GPT2BPETokenizer tokenizer ...", "> initializing torch distributed ...",
                "time to initialize megatron (seconds): 41.237"]
    if f == "mmengine":
        out += [f"{clock.mm()} - mmengine - INFO - ", "------------------------------------------------------------",
                "System environment:", "    sys.platform: linux", "    CUDA available: True",
                f"    GPU 0,1,2,3,4,5,6,7: NVIDIA A100-SXM4-80GB", "------------------------------------------------------------",
                f"{clock.mm()} - mmengine - INFO - Config:", f"train_cfg = dict(max_{'epochs' if t.iteration_unit == 'epochs' else 'iters'}={t.iterations})",
                f"{clock.mm()} - mmengine - WARNING - The prefix is not set in metric class DetMetric."]
    if f == "deepspeed":
        out += [f"[{clock.iso()},123] [INFO] [config.py:1000:print] DeepSpeedEngine configuration:",
                f"[{clock.iso()},123]   train_micro_batch_size_per_gpu  {t.batch_size}",
                f"[{clock.iso()},124]   zero_optimization_stage ...... 2"]
    out.append(f"/usr/lib/python3/site-packages/torch/utils/data/dataloader.py:557: UserWarning: This DataLoader will "
               f"create 16 worker processes in total. Our suggested max number of worker in current system is 12.")
    out.append("[W socket.cpp:464] [c10d] The server socket has failed to bind to [::]:29500 (errno: 98 - Address "
               "already in use).")
    return out


_NOISE = (
    "node-{n}:{pid}:{pid2} [{r}] NCCL INFO Channel {ch:02d}/0 : {r} -> {r2} via P2P/IPC/read",
    "node-{n}:{pid}:{pid2} [{r}] NCCL INFO {r} -> {r2} [send] via NET/IB/0",
    "W{glog} {pid} torch/distributed/run.py:779] Setting OMP_NUM_THREADS environment variable for each process to be 1",
    "wandb: Syncing run {word}-{word2}-{n}",
    "wandb: ⭐️ View project at https://wandb.example/team/{word}",
    "[{iso}] prefetch queue depth={n} host_mem={r}.{pid} GB",
    "data: loaded shard {n:05d}/{pid} ({r2}.{r} MB) from /datasets/cache",
    "[{iso}] gpu{r}: util={n}% mem={pid} MiB temp={r2}C power={pid2}W",
    "[{iso}] eval metrics: error_rate={er:.4f} top1_err={er:.4f} loss_err_bound={er:.3f}",
    "[{iso}] WARNING retrying connection to metrics server (attempt {r}/5): timeout",
    "/opt/conda/lib/python3.10/site-packages/torch/nn/modules/conv.py:456: UserWarning: Applied workaround for "
    "CuDNN issue, install nvrtc.so (Triggered internally at ../aten/src/ATen/native/cudnn/Conv_v8.cpp:80.)",
    "  warnings.warn(",
    "[rank{r}]:[W{glog} ProcessGroupNCCL.cpp:1856] Warning: 0NCCL_AVOID_RECORD_STREAMS=1 has no effect",
    "INFO:root:checkpoint manager: {n} checkpoints kept, oldest step {pid}",
    "[{iso}] heartbeat ok (rank {r}, host node-{n})",
    "DEBUG:urllib3.connectionpool:https://hub.example:443 \"HEAD /api/models/{word} HTTP/1.1\" 200 0",
    "Exception ignored in: <function _MultiProcessingDataLoaderIter.__del__ at 0x7f{pid}>  # benign at interpreter exit",
    "[{iso}] retried 1 failed read on /datasets/cache/shard-{n} (transient, ok)",
)
# the category of each _NOISE template (for the line classifier's ground truth)
_NOISE_LABELS = ("init", "init", "warning", "other", "other", "other", "other", "other", "eval", "warning", "warning",
                 "warning", "warning", "checkpoint", "other", "other", "warning", "warning")
_WORDS = ("amber", "brisk", "cedar", "dawn", "ember", "fable", "gale", "harbor", "iris", "jade")


# the fields of each template in order of first appearance: a tuple, not a set, so the random draws come in
# the same order in every process (a set's order of strings follows the per-process hash salt)
_NOISE_FIELDS = [tuple(dict.fromkeys(f for _, f, _, _ in string.Formatter().parse(t) if f)) for t in _NOISE]
_NOISE_DRAW = {
    "n": lambda rng, c: rng.randrange(1, 64), "pid": lambda rng, c: rng.randrange(1000, 99999),
    "pid2": lambda rng, c: rng.randrange(1000, 99999), "r": lambda rng, c: rng.randrange(8),
    "r2": lambda rng, c: rng.randrange(8), "ch": lambda rng, c: rng.randrange(32), "glog": lambda rng, c: c.glog(),
    "word": lambda rng, c: rng.choice(_WORDS), "word2": lambda rng, c: rng.choice(_WORDS),
    "iso": lambda rng, c: c.iso(), "er": lambda rng, c: rng.uniform(0, 0.3),
}


def _noise_line(rng: random.Random, clock: _Clock) -> str:
    return _noise_labelled(rng, clock)[1][0]


def _noise_labelled(rng: random.Random, clock: _Clock) -> tuple[str, list[str]]:
    i = int(rng.random() * len(_NOISE))
    return _NOISE_LABELS[i], [_NOISE[i].format(**{f: _NOISE_DRAW[f](rng, clock) for f in _NOISE_FIELDS[i]})]


def _red_herring(rng: random.Random, clock: _Clock) -> list[str]:
    """An error that was handled (a metrics upload, a prefetch retry): failure-looking, not a failure."""
    if rng.random() < 0.5:
        return [f"wandb: ERROR Error while calling W&B API: An internal error occurred (<Response [502]>)",
                "Traceback (most recent call last):",
                '  File "/opt/conda/lib/python3.10/site-packages/wandb/sdk/internal/internal_api.py", line 212, in execute',
                "    return self.client.execute(*args, **kwargs)",
                "requests.exceptions.HTTPError: 502 Server Error: Bad Gateway for url: https://api.wandb.example/graphql",
                f"wandb: Network error resolved after 0:00:{rng.randrange(10, 59)}, resuming normal operation."]
    return [f"[{clock.iso()}] prefetcher: caught exception while reading shard {rng.randrange(1000)}, skipping sample",
            "Traceback (most recent call last):",
            '  File "/workspace/data/prefetch.py", line 88, in _load',
            "    img = Image.open(path).convert('RGB')",
            "PIL.UnidentifiedImageError: cannot identify image file '/datasets/cache/broken_00042.jpg'",
            f"[{clock.iso()}] prefetcher: continuing ({rng.randrange(1, 9)} samples skipped so far)"]


def _eval_lines(spec: JobSpec, clock: _Clock, rng: random.Random, ep: int) -> list[str]:
    f = spec.truth.log_format
    n = rng.choice([50, 98, 196])
    if f == "timm":
        return [f"Test: [{i:>4d}/{n}]  Time: 0.{rng.randrange(100, 999)} (0.210)  Loss:  {rng.uniform(0.8, 3):.4f} "
                f"({rng.uniform(0.8, 3):.4f})  Acc@1: {rng.uniform(40, 90):.4f}" for i in (0, n // 2, n)]
    if f in ("lightning", "tqdm", "hf"):
        return [f"Validation DataLoader 0: {int(100 * i / n):3d}%|{_bar(i / n)}| {i}/{n} [00:{i % 60:02d}<00:10, "
                f"{rng.uniform(5, 20):.2f}it/s]" for i in (n // 3, n)]
    if f == "mmengine":
        return [f"{clock.mm()} - mmengine - INFO - Epoch(val) [{ep}][{i:>4d}/{n}]    eta: 0:00:{rng.randrange(10, 59)}  "
                f"time: 0.0{rng.randrange(10, 99)}  data_time: 0.002" for i in (n // 2, n)]
    return [f"[{clock.iso()}] Eval epoch {ep}: val_loss={rng.uniform(0.5, 3):.4f} val_acc={rng.uniform(0.3, 0.95):.4f}"]


@dataclass
class _Run:
    lines: list[str]
    labels: list[str]
    step: int
    recent_st: list[float]
    loss: float
    clock: _Clock
    geo: _Geometry
    progress_lines: int = 0


def _simulate(spec: JobSpec, rng: random.Random, cut_step: int, noisy: bool,
              speed_changes: Sequence[tuple[float, float]] = ()) -> _Run:
    t = spec.truth
    start = datetime(2024, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=rng.randrange(0, 300 * 86400))
    clock = _Clock(start)
    geo = _Geometry(spec)
    lines = _header(spec, clock, geo, rng)
    labels = ["warning" if ("Warning" in x or x.startswith("[W ")) else "init" for x in lines]

    def add(kind: str, items: list[str]) -> None:
        lines.extend(items)
        labels.extend([kind] * len(items))

    writer = ProgressWriter(spec, geo, clock, start)
    # log interval: the job's own, coarsened so that a log holds at most ~250 progress records
    every = max(spec.log_every, 1)
    while cut_step / every > 250:
        every *= 2 if every < 10 else (5 if str(every).startswith("2") else 2)
    if t.iteration_unit == "epochs":  # every epoch shows progress, as real logs do
        while every > max(1, geo.spe // 2) and every > 1:
            every = max(1, every // 2)
    if t.log_format == "hf":
        every = max(every, 1)
    recent: list[float] = []
    loss = _loss(spec, 1, geo.total, rng)
    n_records = max(1, cut_step // every)
    herring = rng.randrange(n_records) if noisy and rng.random() < 0.6 else -1
    last = 0
    n_progress = 0
    for step in range(every, cut_step + 1, every):
        factor = 1.0
        for frac, mult in speed_changes:
            if step >= frac * geo.total:
                factor = mult
        st = t.step_time * factor
        stalled = rng.random() < 0.04  # a slow step window (eval, checkpoint, a straggler)
        dt = sum(st * rng.uniform(0.95, 1.05) for _ in range(1)) * (step - last)
        if stalled:
            dt += st * (step - last) * rng.uniform(1.5, 4.0)
        clock.add(dt)
        shown = dt / (step - last)
        recent.append(st)
        loss = _loss(spec, step, geo.total, rng)
        lr = spec.lr * min(1.0, step / max(spec.warmup, 1)) * (0.5 * (1 + math.cos(math.pi * step / geo.total)))
        add("progress", writer.lines(step, loss, shown, max(lr, 1e-8), rng))
        n_progress += 1
        ep, s_in = geo.split(step)
        if t.iteration_unit == "epochs" and s_in + every > geo.spe and rng.random() < 0.7:
            add("eval", _eval_lines(spec, clock, rng, ep))
            add("checkpoint", [f"[{clock.iso()}] Saving checkpoint to /checkpoints/{t.model}/epoch_{ep}.pth"])
        elif step % (every * 40) == 0:
            add("checkpoint", [f"[{clock.iso()}] saving checkpoint at step {step} -> /checkpoints/{t.model}/step_{step}"])
        if n_progress - 1 == herring:  # a handled error: training goes on (a linear scan's trap)
            block = _red_herring(rng, clock)
            add("error", block[:-1])
            add("other", block[-1:])
        if noisy:
            for _ in range(rng.randrange(4, 30)):
                add(*_noise_labelled(rng, clock))
            if t.gpus > 1 and rng.random() < 0.3:  # another rank's echo of the same progress line
                other = writer.lines(step, loss * rng.uniform(0.97, 1.03), shown, max(lr, 1e-8), rng)[0]
                add("progress", [f"[rank{rng.randrange(1, min(t.gpus, 8))}]: {other}"])
        elif rng.random() < 0.15:
            add(*_noise_labelled(rng, clock))
        last = step
    return _Run(lines=lines, labels=labels, step=last, recent_st=recent, loss=loss, clock=clock, geo=geo,
                progress_lines=n_progress)


def labelled_log(spec: JobSpec, group_key: str, job_index: int, seed: int, *, noisy: bool = False,
                 progress: float | None = None) -> tuple[list[str], list[str]]:
    """A running job's log with each line's category (progress / eval / checkpoint / error / warning /
    init / other), the truth for the Metric Tracker's line classifier."""
    rng = random.Random(stable_seed("labelled", group_key, job_index, seed, noisy, progress))
    geo = _Geometry(spec)
    frac = rng.uniform(0.1, 0.9) if progress is None else min(max(progress, 0.0), 1.0)
    run = _simulate(spec, rng, max(1, int(frac * geo.total)), noisy)
    return run.lines, run.labels


def runtime_log(spec: JobSpec, group_key: str, job_index: int, seed: int, *, noisy: bool = False,
                progress: float | None = None, speed_changes: Sequence[tuple[float, float]] = ()
                ) -> tuple[list[str], ProgressTruth]:
    """A running job's log up to `progress` (fraction of its steps; drawn when None) and the truth at
    the cut. `speed_changes` [(fraction, factor)] multiplies the step time from that fraction on
    (interference after packing)."""
    rng = random.Random(stable_seed("log", group_key, job_index, seed, noisy, progress))
    geo = _Geometry(spec)
    frac = rng.uniform(0.1, 0.9) if progress is None else min(max(progress, 0.0), 1.0)
    cut = max(1, int(frac * geo.total))
    run = _simulate(spec, rng, cut, noisy, speed_changes)
    if run.step == 0:  # too early for any progress line: one record at the cut
        run = _simulate(spec, rng, max(cut, spec.log_every), noisy, speed_changes)
    st = sum(run.recent_st[-10:]) / len(run.recent_st[-10:]) if run.recent_st else spec.truth.step_time
    ep = run.geo.split(run.step)[0] if run.step else None
    truth = ProgressTruth(step=run.step, total_steps=run.geo.total, step_time=st, loss=run.loss,
                          throughput=spec.truth.batch_size * spec.truth.gpus / st, epoch=ep,
                          steps_per_epoch=run.geo.spe)
    return run.lines, truth


# ------------------------------------------------------------------------------------------------
# failures


def _traceback(frames: list[tuple[str, int, str, str]], last: str, prefix: str = "") -> list[str]:
    out = [prefix + "Traceback (most recent call last):"]
    for path, line, fn, code in frames:
        out.append(prefix + f'  File "{path}", line {line}, in {fn}')
        out.append(prefix + f"    {code}")
    out.append(prefix + last)
    return out


def _train_frames(rng: random.Random, entry: str = "train.py") -> list[tuple[str, int, str, str]]:
    return [(f"/workspace/{entry}", rng.randrange(80, 200), "<module>", "main()"),
            (f"/workspace/{entry}", rng.randrange(40, 79), "main", "train_one_epoch(model, loader, optimizer, epoch, args)"),
            ("/workspace/engine.py", rng.randrange(20, 90), "train_one_epoch", "loss.backward()")]


def root_cause_block(cause: str, spec: JobSpec, rng: random.Random, clock: _Clock, rank: int) -> tuple[list[str], int]:
    """(lines, offset of the error line within them) for a root cause."""
    host = f"node-{rng.randrange(1, 64):02d}"
    pci = f"0000:{rng.choice(['18', '3b', '5e', '86', 'af', 'd8'])}:00"
    p = f"[rank{rank}]: " if rng.random() < 0.5 else ""
    torch_site = "/opt/conda/lib/python3.10/site-packages/torch"
    if cause == "gpu_xid":
        xid = rng.choice([(79, "GPU has fallen off the bus."), (48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer"),
                          (119, "Timeout after 6s of waiting for RPC response from GPU0 GSP!"), (95, "Uncontained ECC error.")])
        err = f"[{clock.iso()}] {host} kernel: NVRM: Xid (PCI:{pci}): {xid[0]}, pid={rng.randrange(1000, 99999)}, name=python, {xid[1]}"
        tail = _traceback(_train_frames(rng), "RuntimeError: CUDA error: unspecified launch failure", p)
        return [err] + tail, 0
    if cause == "gpu_ecc":
        lines = _traceback(_train_frames(rng) + [(f"{torch_site}/autograd/__init__.py", 251, "backward", "Variable._execution_engine.run_backward(")],
                           "RuntimeError: CUDA error: uncorrectable ECC error encountered", p)
        lines.append(p + "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.")
        return lines, len(lines) - 2
    if cause == "nvlink":
        err = (f"[{clock.iso()}] {host} kernel: NVRM: Xid (PCI:{pci}): 74, pid={rng.randrange(1000, 99999)}, "
               f"NVLink: fatal error detected on link {rng.randrange(12)}(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)")
        alt = (f"{host}:{rng.randrange(1000, 9999)}:{rng.randrange(1000, 9999)} [{rank}] NCCL WARN Cuda failure 'an illegal memory "
               f"access was encountered' (NVLink error on peer {rng.randrange(8)})")
        return [err if rng.random() < 0.6 else alt], 0
    if cause == "nccl_timeout":
        seq = rng.randrange(1000, 90000)
        return [f"{p}[E ProcessGroupNCCL.cpp:475] [Rank {rank}] Watchdog caught collective operation timeout: "
                f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={rng.randrange(10**5, 10**8)}, NumelOut=same, "
                f"Timeout(ms)=1800000) ran for 1800{rng.randrange(100, 999)} milliseconds before timing out."], 0
    if cause == "ib_error":
        opts = [f"{host}:{rng.randrange(1000, 9999)}:{rng.randrange(1000, 9999)} [{rank}] NCCL WARN NET/IB : Got completion from peer "
                f"10.0.{rng.randrange(255)}.{rng.randrange(255)}<{rng.randrange(30000, 60000)}> with error 12, opcode 0, len 0, vendor err 129 (Recv)",
                f"[{clock.iso()}] {host} kernel: mlx5_core {pci}.0: mlx5_port_module_event: Port 1 link is down (InfiniBand cable unplugged or faulty)",
                f"{host}:{rng.randrange(1000, 9999)}:{rng.randrange(1000, 9999)} [{rank}] transport/net_ib.cc:1295 NCCL WARN NET/IB : "
                f"ibv_poll_cq error: local QP operation error, retry exceeded (IB link flapping on mlx5_{rng.randrange(4)})"]
        return [rng.choice(opts)], 0
    if cause == "node_lost":
        opts = [f"slurmstepd: error: *** STEP {rng.randrange(10**5, 10**6)}.0 ON {host} CANCELLED AT {clock.t.strftime('%Y-%m-%dT%H:%M:%S')} DUE TO NODE FAILURE ***",
                f"[{clock.iso()}] torch.distributed.elastic.agent.server.api: [ERROR] rendezvous: node {host} lost heartbeat "
                f"(last seen {rng.randrange(30, 300)}s ago); worker group membership changed",
                f"[{clock.iso()}] kubelet: Node {host} status is now: NodeNotReady (node unreachable, pod evicted)"]
        return [rng.choice(opts)], 0
    if cause == "storage":
        path = f"/mnt/{rng.choice(['lustre', 'nfs', 'cephfs'])}/checkpoints/{spec.truth.model}/step_{rng.randrange(1000, 9999)}.pt"
        last = rng.choice([f"OSError: [Errno 5] Input/output error: '{path}'",
                           f"OSError: [Errno 116] Stale file handle: '{path}'",
                           f"OSError: [Errno 28] No space left on device: '{path}'",
                           f"RuntimeError: [enforce fail at inline_container.cc:595] . unexpected pos 123456 vs 65536 "
                           f"(PytorchStreamWriter failed writing file data/12: file write failed on {path})"])
        frames = [("/workspace/train.py", rng.randrange(80, 200), "main", "save_checkpoint(model, optimizer, step)"),
                  ("/workspace/utils/ckpt.py", rng.randrange(10, 60), "save_checkpoint", "torch.save(state, path)"),
                  (f"{torch_site}/serialization.py", 628, "save", "_save(obj, opened_zipfile, pickle_module, pickle_protocol)")]
        lines = _traceback(frames, last, p)
        return lines, len(lines) - 1
    if cause == "cuda_oom":
        gib = rng.choice([1.0, 2.0, 3.5, 8.0, 16.0])
        last = (f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {gib:.2f} GiB. GPU {rank % 8} has a total "
                f"capacity of 79.15 GiB of which {rng.uniform(0.1, 0.9):.2f} GiB is free. Of the allocated memory "
                f"{rng.uniform(60, 75):.2f} GiB is allocated by PyTorch")
        if rng.random() < 0.3:
            last = f"RuntimeError: CUDA out of memory. Tried to allocate {int(gib * 1024)}.00 MiB (GPU {rank % 8}; 39.59 GiB total capacity)"
        lines = _traceback(_train_frames(rng)[:2] + [("/workspace/engine.py", 41, "train_one_epoch", "output = model(images)")], last, p)
        return lines, len(lines) - 1
    if cause == "dataloader_killed":
        pid = rng.randrange(1000, 99999)
        lines = ([f"ERROR: Unexpected bus error encountered in worker. This might be caused by insufficient shared memory (shm)."]
                 if rng.random() < 0.4 else [])
        tb = _traceback([("/workspace/engine.py", 30, "train_one_epoch", "for i, (images, target) in enumerate(loader):"),
                         (f"{torch_site}/utils/data/dataloader.py", 1133, "_try_get_data", "data = self._data_queue.get(timeout=timeout)")],
                        f"RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Killed. ", p)
        if lines:
            return lines + tb, 0
        return tb, len(tb) - 1
    if cause == "shape_error":
        a, b = rng.choice([(2048, 1024), (768, 1024), (512, 2048)])
        last = rng.choice([f"RuntimeError: mat1 and mat2 shapes cannot be multiplied ({rng.choice([32, 64, 128])}x{a} and {b}x1000)",
                           f"RuntimeError: The size of tensor a ({rng.choice([197, 512, 1024])}) must match the size of tensor b "
                           f"({rng.choice([196, 514, 2048])}) at non-singleton dimension 1",
                           f"RuntimeError: Error(s) in loading state_dict for Model: size mismatch for head.weight: copying a param "
                           f"with shape torch.Size([1000, {a}]) from checkpoint, the shape in current model is torch.Size([1000, {b}])."])
        lines = _traceback(_train_frames(rng)[:2] + [(f"{torch_site}/nn/modules/linear.py", 116, "forward",
                                                      "return F.linear(input, self.weight, self.bias)")], last, p)
        return lines, len(lines) - 1
    if cause == "import_error":
        mod = rng.choice(["apex", "flash_attn", "deepspeed.ops.adam", "timm.layers.norm", "wandb_helpers"])
        last = rng.choice([f"ModuleNotFoundError: No module named '{mod}'",
                           f"ImportError: cannot import name 'fused_layer_norm' from '{mod}' (/opt/conda/lib/python3.10/site-packages/{mod}/__init__.py)"])
        lines = _traceback([("/workspace/engine.py", 77, "evaluate", f"from {mod} import fused_layer_norm")], last, p)
        return lines, len(lines) - 1
    if cause == "key_error":
        key = rng.choice(["'input_ids'", "'labels'", "'model.head.weight'", "'val_acc'", "'pixel_values'"])
        lines = _traceback([("/workspace/engine.py", 64, "evaluate", "metrics[name] = batch[name]")], f"KeyError: {key}", p)
        return lines, len(lines) - 1
    if cause == "type_error":
        last = rng.choice(["TypeError: forward() got an unexpected keyword argument 'labels'",
                           "TypeError: unsupported operand type(s) for +: 'NoneType' and 'int'",
                           "TypeError: 'NoneType' object is not subscriptable"])
        lines = _traceback([("/workspace/engine.py", 52, "evaluate", "out = model(**batch)")], last, p)
        return lines, len(lines) - 1
    if cause == "syntax_error":
        lines = [p + "Traceback (most recent call last):",
                 p + '  File "/workspace/engine.py", line 70, in evaluate',
                 p + "    from metrics import compute_map",
                 p + f'  File "/workspace/metrics.py", line {rng.randrange(10, 200)}',
                 p + "    return {k: v for k, v in scores.items() if v > 0",
                 p + "                                                  ^",
                 p + "SyntaxError: '{' was never closed"]
        return lines, len(lines) - 1
    if cause == "file_not_found":
        path = rng.choice(["/datasets/imagenet/val/n01440764/ILSVRC2012_val_00000293.JPEG", "data/eval_split.json",
                           "/checkpoints/pretrained/backbone.pth", "./vocab/tokenizer.json"])
        lines = _traceback([("/workspace/engine.py", 58, "evaluate", "with open(path) as f:")],
                           f"FileNotFoundError: [Errno 2] No such file or directory: '{path}'", p)
        return lines, len(lines) - 1
    raise ValueError(f"unknown cause {cause!r}")


def _cascade(spec: JobSpec, rng: random.Random, clock: _Clock, rank: int, cause: str, writer: ProgressWriter,
             step: int, noisy: bool) -> list[str]:
    """What follows a root cause: other ranks' normal lines, then their tracebacks / NCCL watchdog
    timeouts, SIGTERM to the rest, and torch-elastic's ChildFailedError summary."""
    t = spec.truth
    out: list[str] = []
    ranks = [r for r in range(min(t.gpus, 64)) if r != rank]
    # other ranks keep logging normally for a while (they do not know yet)
    for k in range(rng.randrange(1, 5)):
        clock.add(t.step_time * spec.log_every)
        out.append(f"[rank{rng.choice(ranks) if ranks else 0}]: " + writer.lines(step + (k + 1) * spec.log_every, writer.avg_loss[-1] if writer.avg_loss else 1.0,
                                                                                 t.step_time, spec.lr, rng)[0])
        if noisy:
            out.extend(_noise_line(rng, clock) for _ in range(rng.randrange(2, 10)))
    if t.gpus > 1:
        clock.add(1800)
        # every rank's watchdog fires: about half to all of them get their lines into the log
        for r in sorted(rng.sample(ranks, rng.randint(max(1, len(ranks) // 2), len(ranks)))):
            seq = rng.randrange(1000, 90000)
            out.append(f"[rank{r}]:[E ProcessGroupNCCL.cpp:563] [Rank {r}] Watchdog caught collective operation timeout: "
                       f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn={rng.randrange(10**5, 10**8)}, Timeout(ms)=1800000) "
                       f"ran for 18000{rng.randrange(10, 99)} milliseconds before timing out.")
            out.append(f"[rank{r}]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank {r}] Exception (either an error or timeout) detected by "
                       f"watchdog at work: {seq}, last enqueued NCCL work: {seq + 1}, last completed NCCL work: {seq - 1}.")
            out.append(f"[rank{r}]:[E ProcessGroupNCCL.cpp:577] [Rank {r}] Some NCCL operations have failed or timed out. Due to the "
                       "asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.")
            out.append(f"[rank{r}]:[E ProcessGroupNCCL.cpp:583] [Rank {r}] To avoid data inconsistency, we are taking the entire process down.")
            if rng.random() < 0.7:  # PyTorch 2.x prints the watchdog's C++ backtrace per rank
                out.append(f"[rank{r}]:Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/"
                           f"ProcessGroupNCCL.cpp:565 (most recent call first):")
                for k in range(rng.randrange(6, 22)):
                    out.append(f"[rank{r}]:frame #{k}: {rng.choice(_CPP_FRAMES)} + 0x{rng.randrange(16**3, 16**5):x} "
                               f"(0x7f{rng.randrange(16**9, 16**10):x} in {rng.choice(_CPP_LIBS)})")
            if rng.random() < 0.5:
                out.append(f"[rank{r}]: terminate called after throwing an instance of 'c10::DistBackendError'")
                out.append(f"[rank{r}]:   what():  [PG 0 Rank {r}] Process group watchdog thread terminated with exception: NCCL error: "
                           f"remote process exited or there was a network error, NCCL version 2.18.5")
            if rng.random() < 0.4:
                out += _traceback([("/workspace/engine.py", 45, "train_one_epoch", "loss.backward()"),
                                   ("/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py", 2050, "all_reduce",
                                    "work.wait()")],
                                  "torch.distributed.DistBackendError: NCCL communicator was aborted on rank %d." % r, f"[rank{r}]: ")
            if noisy:
                out.extend(_noise_line(rng, clock) for _ in range(rng.randrange(1, 6)))
    pids = [rng.randrange(10000, 99999) for _ in range(min(t.gpus, 8))]
    out.append(f"W{clock.glog()} {rng.randrange(100, 999)} torch/distributed/elastic/multiprocessing/api.py:858] Sending process "
               f"{pids[0]} closing signal SIGTERM")
    for pid in pids[1:4]:
        out.append(f"W{clock.glog()} {rng.randrange(100, 999)} torch/distributed/elastic/multiprocessing/api.py:858] Sending process "
                   f"{pid} closing signal SIGTERM")
    first_rank = rng.choice(ranks) if (ranks and cause != "nccl_timeout" and rng.random() < 0.6) else rank
    out.append(f"E{clock.glog()} {rng.randrange(100, 999)} torch/distributed/elastic/multiprocessing/api.py:833] failed "
               f"(exitcode: {-6 if first_rank != rank else 1}) local_rank: {first_rank} (pid: {pids[0]}) of binary: /opt/conda/bin/python")
    out += ["Traceback (most recent call last):",
            '  File "/opt/conda/bin/torchrun", line 8, in <module>',
            "    sys.exit(main())",
            '  File "/opt/conda/lib/python3.10/site-packages/torch/distributed/run.py", line 892, in main',
            "    run(args)",
            "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
            "============================================================",
            "train.py FAILED",
            "------------------------------------------------------------",
            "Failures:",
            "  <NO_OTHER_FAILURES>",
            "------------------------------------------------------------",
            "Root Cause (first observed failure):",
            "[0]:",
            f"  time      : {clock.iso()}",
            f"  host      : node-{rng.randrange(1, 64):02d}",
            f"  rank      : {first_rank} (local_rank: {first_rank})",
            f"  exitcode  : {-6 if first_rank != rank else 1} (pid: {pids[0]})",
            "  error_file: <N/A>",
            "  traceback : " + (f"Signal 6 (SIGABRT) received by PID {pids[0]}" if first_rank != rank else
                                "To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html"),
            "============================================================"]
    if rng.random() < 0.5:
        out.append(f"srun: error: node-{rng.randrange(1, 64):02d}: task {first_rank}: Exited with exit code 1")
    return out


_CPP_FRAMES = ("c10::Error::Error(c10::SourceLocation, std::string)", "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout("
               "std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >)",
               "c10d::ProcessGroupNCCL::watchdogHandler()", "c10d::ProcessGroupNCCL::ncclCommWatchdog()",
               "<unknown function>", "start_thread", "clone", "c10::detail::torchCheckFail(char const*, char const*, "
               "unsigned int, std::string const&)")
_CPP_LIBS = ("/opt/conda/lib/python3.10/site-packages/torch/lib/libc10.so",
             "/opt/conda/lib/python3.10/site-packages/torch/lib/libtorch_cuda.so",
             "/lib/x86_64-linux-gnu/libc.so.6", "/opt/conda/bin/../lib/libstdc++.so.6")


def failure_log(spec: JobSpec, group_key: str, job_index: int, seed: int, cause: str, *, noisy: bool = False,
                at: float | None = None) -> tuple[list[str], FailureTruth]:
    """A failed run's log: normal progress up to `at` (fraction; drawn in [0.2, 0.8] when None), the
    root cause on one rank, then the cascade."""
    if cause not in CAUSES:
        raise ValueError(f"unknown failure cause {cause!r}; known: {', '.join(CAUSES)}")
    rng = random.Random(stable_seed("fail", group_key, job_index, seed, cause, noisy, at))
    geo = _Geometry(spec)
    frac = rng.uniform(0.2, 0.8) if at is None else at
    run = _simulate(spec, rng, max(1, int(frac * geo.total)), noisy)
    rank = rng.randrange(max(1, min(spec.truth.gpus, 8)))
    block, off = root_cause_block(cause, spec, rng, run.clock, rank)
    if noisy and rng.random() < 0.5:  # a few unrelated lines between the failing step and the error
        run.lines.extend(_noise_line(rng, run.clock) for _ in range(rng.randrange(1, 5)))
    start = len(run.lines)
    run.lines.extend(block)
    writer = ProgressWriter(spec, geo, run.clock, run.clock.t)
    writer.avg_loss.append(run.loss)
    run.lines.extend(_cascade(spec, rng, run.clock, rank, cause, writer, run.step, noisy))
    kind, component = CAUSES[cause]
    truth = FailureTruth(kind=kind, component=component, cause=cause, line_index=start + off,
                         span=(start, start + off), rank=rank)
    return run.lines, truth
