"""SchedMate's Metric Tracker: read a running job's log and say where it is.

Each line is classified (progress / eval / checkpoint / error / warning / init / other): a fast regex
path recognises the common progress formats (tqdm and Lightning bars, Hugging Face dicts, timm,
Megatron iteration lines, mmengine, DeepSpeed, plain prints), and lines it cannot place are given the
category of their nearest embedding prototype. From the last N training-progress lines (evaluation
bars, other ranks' echoes and warnings excluded) it extracts the global step, the total steps
(from the line, the log's header, or a hint from the job's metadata), seconds per step (explicit
per-step times, else the bar's rate, else timestamps; outliers beyond 3 MADs removed), the loss and
the throughput in samples/s where the log gives the batch size.
"""
from __future__ import annotations

import ast
import json
import math
import re
import statistics
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Iterable, Sequence

from models.schedmate.records import (Fields, block_records, bounded, dict_fields, epoch_context, flatten, read_fields,
                                      robust_mean, table_header, table_row)
from models.schedmate.templates import mine, with_templates

CATEGORIES = ("progress", "eval", "checkpoint", "error", "warning", "init", "other")


@dataclass(frozen=True)
class Progress:
    step: int | None
    total_steps: int | None
    step_time: float | None     # seconds per step
    loss: float | None
    throughput: float | None    # samples / s (None when the log does not give the batch size)
    epoch: int | None = None
    lines_used: int = 0
    diverged: bool = False      # the last loss the log gives is NaN or infinite
    decided_by: str = "rules"   # "rules", "templates" (models.schedmate.templates) or "rules+templates"

    @property
    def fraction(self) -> float | None:
        return self.step / self.total_steps if self.step is not None and self.total_steps else None

    @property
    def remaining(self) -> float | None:
        """Seconds to the end at the current speed."""
        if self.step is None or not self.total_steps or self.step_time is None:
            return None
        return max(0, self.total_steps - self.step) * self.step_time

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("decided_by")  # provenance, not a reading: the record's fields stay what they were
        d["fraction"], d["remaining_s"] = self.fraction, self.remaining
        return d


_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_RANK = re.compile(r"^\s*\[rank(\d+)\]:\s?")
_EVAL = re.compile(r"Validation|Validating|\bvalid\b|Test:|\bTesting\b|Epoch\(val\)|Epoch\(test\)|\bEval\b|\beval\b|val_loss|"
                   r"\bval loss\b|Predicting|mAP@|\bClass\s+Images\b", re.I)
_TQDM = re.compile(r"(?P<pct>\d+)%\|[^|]*\|\s*(?P<n>\d+)/(?P<tot>\d+)\s*\[(?P<el>[\d:]+)<(?P<rem>[\d:?]+),\s*"
                   r"(?P<rate>[\d.]+|\?)\s*(?P<unit>it/s|s/it)?")
_BAR_LOOSE = re.compile(r"(?P<pct>\d+)%(?:\|[^|]*\|)?\s*(?P<n>\d+)/(?P<tot>\d+)(?:\s*\[(?P<el>[\d:]+)<(?P<rem>[\d:?]*)"
                        r"(?:,\s*(?P<rate>[\d.]+|\?)\s*(?P<unit>it/s|s/it)?)?)?")
_MEGATRON = re.compile(r"iteration\s+(\d+)\s*/\s*(\d+)\s*\|")
_MM_EPOCH = re.compile(r"Epoch\(train\)\s*\[(\d+)\]\s*\[\s*(\d+)\s*/\s*(\d+)\]")
_MM_ITER = re.compile(r"Iter\(train\)\s*\[\s*(\d+)\s*/\s*(\d+)\]")
_TIMM = re.compile(r"Train:\s*(\d+)\s*(?:/\s*(\d+)\s*\(\s*\d+%\)\s*)?\[\s*(\d+)\s*/\s*(\d+)")
_HF_DICT = re.compile(r"^[^{]{0,100}\{[^{}]*(?:'loss':\s*'?|\"loss\":\s*\"?)" + _NUM)  # Python or JSON dicts
_EPOCH_OF = re.compile(r"\bEpoch\s*:?\s*\[?\s*(\d+)\s*(?:/\s*(\d+))?\]?", re.I)
_STEP_OF = re.compile(r"\b(?:global[ _]step|step|iter(?:ation)?|it)\s*[=:]?\s*\[?\s*(\d+)\s*(?:/\s*(\d+))?", re.I)
_BRACKET = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_LOSS_NUM = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf(?:inity)?)\b)"
_LOSS = re.compile(r"(?<![\w.])(?:total[_ ]|lm[ _])?(?:train[_ ])?loss\s*[:=]?\s*" + _LOSS_NUM, re.I)
_LOSS_ANY = re.compile(r"(?<![\w.])(?!val|eval|test)[a-z]{1,8}_?loss\s*[:=]\s*" + _LOSS_NUM, re.I)
_TWO_PAIRS = re.compile(r"\[\s*(\d+)\s*/\s*(\d+)\s*\]\s*\[\s*(\d+)\s*/\s*(\d+)\s*\]")
_PAIR = re.compile(r"(?<![\d.\w])(\d+)\s*/\s*(\d+)(?![\d.])")
_TS = re.compile(r"(\d{4}[-/]\d{2}[-/]\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)")
_TIME_MS = re.compile(r"(?:elapsed time per iteration \(ms\)|time/step|step time|iter time)\s*[:=]?\s*" + _NUM + r"\s*(ms)?", re.I)
_MS_STEP = re.compile(_NUM + r"\s*ms\s*/\s*(?:step|it)", re.I)
_S_IT = re.compile(_NUM + r"\s*s/it\b")
_IT_S = re.compile(_NUM + r"\s*it/s\b")
_TIME_S = re.compile(r"(?<![_\w])time:\s*" + _NUM + r"s?\b")
_TIME_UNIT = re.compile(r"(?<![_\w])(?:time|step_time|iter_time)[:=]?\s*" + _NUM + r"\s*(ms|s)\b", re.I)
_UPDATES = re.compile(r"\bnum_updates[=:\s]\s*(\d+)")
_GSTEP = re.compile(r"\bglobal_step\s*[=:]\s*(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)")
# a batch counter named by the word before it ("| batch    500 |"), not a batch size ("batch_size 8", "batch: 32" in a header)
_BATCH_COUNT = re.compile(r"(?:^|[|,;]\s*)batch\s*[:=]?\s*(\d+)\s*(?:[|,;]|$)", re.I)
# a validation bar ("Validation DataLoader 0:  3%|...| 4/157", "Validating:  84%|...| 32/38")
_VAL_BAR = re.compile(r"^\s*Validat\w*(?: DataLoader \d+)?:\s*\d+%\|[^|]*\|\s*\d+/(\d+)")
_DS_STEP = re.compile(r"\[Rank 0\] step=(\d+), skipped=\d+")  # DeepSpeed's log_dist line (no loss printed)
_UPS = re.compile(r"\bups[=:\s]\s*" + _NUM)
_KERAS = re.compile(r"^\s*(\d+)/(\d+) (?:\[[=>.]*\]\s*)?-\s*(?:ETA:\s*([\d:]+)|\d+(?:\.\d+)?m?s\b)")
_EPOCH_HEAD = re.compile(r"^[\s`>]*Epoch (\d+)/(\d+)\s*$")
_SAMPLES = re.compile(r"(?:CurrSamplesPerSec|samples/s|samples_per_second|SamplesPerSec)\s*[=:]?\s*" + _NUM, re.I)
_TIMM_RATE = re.compile(r"Time:\s*" + _NUM + r"s,\s*" + _NUM + r"/s")
_GBS = re.compile(r"global batch size\s*[:.=\s]*\s*(\d+)", re.I)

# header facts: totals and batch sizes printed before training
_H_EPOCHS = re.compile(r"(?:Num Epochs\s*=|Scheduled epochs:|max_epochs\s*[=:]|\bepochs\s*[=:]|num_train_epochs\s*[=:]|"
                       r"n_epochs\s*[=:])\s*(\d+)", re.I)
_H_STEPS = re.compile(r"(?:Total optimization steps\s*=|max_steps\s*[=:]|train_iters\s*(?:\.+|[=:])|max_iters\s*[=:]|"
                      r"total_steps\s*[=:])\s*([\d,]+)", re.I)
_H_WIDGET = re.compile(r"description='(?:Iteration|Training|Steps?)'?,\s*max=(\d+)")
_H_SPE = re.compile(r"(?:train dataloader has|Steps per epoch\s*=|iters per epoch\s*[=:]?)\s*(\d+)", re.I)
_H_GBS = re.compile(r"(?:Total train batch size[^=]*=|global_batch_size\s*\.+)\s*([\d,]+)", re.I)
_H_BS = re.compile(r"(?:batch_size\s*[=:]|Instantaneous batch size per device\s*=|train_micro_batch_size_per_gpu\s+)\s*(\d+)", re.I)
_H_WORLD = re.compile(r"world_size\s*[=:]\s*(\d+)", re.I)
_H_ANY = ("epoch", "step", "batch", "iters", "world_size", "total", "max=", "dataloader has")

# literal hints (lower case) one of which must be in a line before the (slower) pattern is tried
_HINTS: dict = {_EVAL: ("valid", "test", "eval", "val)", "val_loss", "val loss", "predict", "map@", "class"), _EPOCH_OF: ("epoch",),
               _STEP_OF: ("step", "iter", "it"), _H_EPOCHS: ("epoch",),
               _H_STEPS: ("total optimization", "max_steps", "train_iters", "max_iters", "total_steps"),
               _H_GBS: ("total train batch", "global_batch_size"),
               _H_BS: ("batch_size", "batch size per device", "train_micro_batch"), _H_WORLD: ("world_size",),
               _TIME_UNIT: ("time",), _TIME_MS: ("elapsed time", "time/step", "step time", "iter time"), _MS_STEP: ("ms",),
               _S_IT: ("s/it",), _IT_S: ("it/s",), _TIME_S: ("time:",), _LOSS: ("loss",),
               _SAMPLES: ("samples", "persec"), _GBS: ("global batch",), _TIMM_RATE: ("time:",)}

_TB_LINE = re.compile(r'^\s*File "[^"]+", line \d+|^Traceback \(most recent call last\)')
_WARN = re.compile(r"^\[?W\d{4} |^\[W |\bWARN(?:ING)?\b|Warning\b|warnings\.warn|Exception ignored in|"
                   r"\bretr(?:y|ied|ying)\b|deprecat", re.I)
_CKPT = re.compile(r"saving checkpoint|checkpoint saved|save_checkpoint|saving model|checkpoints? (?:kept|manager)|"
                   r"\.(?:pth|pt|ckpt|safetensors)\b", re.I)
_INIT = re.compile(r"NCCL INFO|^\s+[A-Z][\w ()&,.-]* = \S|Namespace\(|world.?size|initiali[sz]|starting job|"
                   r"\bversion\b|configuration|arguments|environment|available:|param count|Running training|"
                   r"Bootstrap|\btorch \d|CUDA \d|building|^\s*\| Name|LOCAL_RANK|Config:|sys\.platform", re.I)

PROTOTYPES = {
    "progress": ("epoch 3 step 120/500 loss 0.53 lr 0.001 time 0.21", "iteration 100 / 5000 loss 2.3 ms per iteration",
                 "train step 40 of 900 loss 1.2 it/s"),
    "eval": ("validation accuracy 0.91 val loss 0.3", "evaluating on test set top1 76.1"),
    "checkpoint": ("saving checkpoint to /checkpoints/model_step_1000.pt", "saved model weights"),
    "error": ("Traceback error exception raised", "CUDA error fatal failure killed"),
    "warning": ("UserWarning deprecated will be removed", "warning retrying connection"),
    "init": ("NCCL INFO init complete rank world size", "loading config arguments namespace model created param count"),
    "other": ("wandb syncing run view project", "heartbeat ok host", "data shard loaded from cache",
              "gpu util mem MiB temp power W", "DEBUG http request HEAD GET 200", "queue depth host memory GB"),
}


def _find(rx: re.Pattern, line: str, low: str) -> re.Match | None:
    hint = _HINTS.get(rx)
    if hint is not None and not any(h in low for h in hint):
        return None
    return rx.search(line)


def _parse_ts(text: str) -> float | None:
    m = _TS.search(text)
    if not m:
        return None
    s = m.group(1).replace("/", "-").replace(",", ".").replace("T", " ")
    try:
        return datetime.fromisoformat(s).timestamp()
    except ValueError:
        return None


def _hms(s: str) -> float | None:
    try:
        parts = [float(p) for p in s.split(":")]
    except ValueError:
        return None
    v = 0.0
    for p in parts:
        v = v * 60 + p
    return v


@dataclass
class _Rec:
    idx: int
    epoch: int | None = None
    epoch_total: int | None = None
    s_in: int | None = None       # step within epoch (1-based)
    spe: int | None = None        # steps per epoch
    step: int | None = None       # global step
    total: int | None = None
    step_time: float | None = None
    rate_time: float | None = None  # from a bar's rate (smoothed)
    loss: float | None = None
    samples: float | None = None
    ts: float | None = None
    gbs: int | None = None
    zero_based_idx: bool = False
    kind: str = ""
    cols: tuple = ()              # a YOLO row's leading columns (named by the header line above it)
    ebase: int | None = None      # epoch base when the epoch came from an epoch line above (records.epoch_context)
    gstep: int | None = None      # a global step the record prints outright (a bar's `global_step=263.0`)


_TRAIN_HEAD = re.compile(r"\s*Train(?:ing)?\b")
_CAND = re.compile(r"\]\s*\[|%\||iteration|[Ee]poch|[Ss]tep|Iter|iter |Train:|it/s|s/it|[Ll]oss|num_updates|ETA:|[Bb]atch|"
                   r"[Uu]pdate|\b[Ee]p\b|[Ii]tr\b|LOSS|EPOCH|STEP")


def parse_progress(line: str) -> _Rec | None:
    """Progress fields of a training-progress line, or None (fast regex path)."""
    if not _CAND.search(line):
        return None
    low = line.lower()
    if "{" in line and "}" in line and (d := _dict_record(line)) is not None:
        return d
    if _find(_EVAL, line, low) and not _KERAS.match(line) and not _TRAIN_HEAD.match(line):
        return None  # an evaluation line (a Keras epoch line or a "Training ..." record carries val_ metrics)
    if "{" in line and "}" in line:
        d = _dict_record(line)
        if d is not None:
            return d
    r = _Rec(idx=-1)
    m = _MEGATRON.search(line)
    if m:
        r.kind, r.step, r.total = "megatron", int(m.group(1)), int(m.group(2))
        t = _find(_TIME_MS, line, low)
        if t:
            r.step_time = float(t.group(1)) / 1000.0
        g = _find(_GBS, line, low)
        r.gbs = int(g.group(1)) if g else None
    elif (m := _MM_EPOCH.search(line)):
        r.kind, r.epoch, r.s_in, r.spe = "mmengine", int(m.group(1)), int(m.group(2)), int(m.group(3))
    elif (m := _MM_ITER.search(line)):
        r.kind, r.step, r.total = "mmengine", int(m.group(1)), int(m.group(2))
    elif (m := _TIMM.search(line)) and m.group(2):  # "Train: 1/3 ( 33%) [ 149/323 ( 46%)]": a 1-based epoch
        r.kind, r.epoch, r.epoch_total, r.s_in, r.spe = "pairs", *(int(m.group(k)) for k in (1, 2, 3, 4))
    elif m:
        r.kind, r.epoch, r.s_in, r.spe = "timm", int(m.group(1)), int(m.group(3)) + 1, int(m.group(4))
        r.zero_based_idx = True
        t = _find(_TIMM_RATE, line, low)
        if t:
            r.step_time, r.samples = float(t.group(1)), float(t.group(2))
    elif "%" in line and (m := (_TQDM.search(line) if "%|" in line else None) or _BAR_LOOSE.search(line)):
        desc = line[:m.start()]
        n, tot = int(m.group("n")), int(m.group("tot"))
        e = re.search(r"Epoch\s*(\d+)", desc)
        y = re.match(r"\s*(\d+)/(\d+)\s", desc)
        if e:
            r.kind, r.epoch, r.s_in, r.spe = "bar", int(e.group(1)), n, tot
            if "v_num=" in line[m.end():]:  # Lightning's own postfix (its version tag): epochs count from 0
                r.ebase = 0
            if (g := _GSTEP.search(line, m.end())) and "e" not in g.group(1).lower():
                v = float(g.group(1))  # the trainer's own count beats the bar's arithmetic (its total may hold validation)
                r.gstep = int(v) if v == int(v) else None
        elif y and int(y.group(1)) <= int(y.group(2)):  # YOLO-style "epoch/last epoch" (0-based)
            r.kind, r.epoch, r.s_in, r.spe = "bar0", int(y.group(1)), n, tot
            r.epoch_total = int(y.group(2)) + 1
            r.cols = tuple(desc.rstrip(": ").split())
        else:
            r.kind, r.step, r.total = "bar", n, tot
            if re.match(r"[^\]]{0,40}(?:s/epoch|epochs?/s)", line[m.end():]):  # an outer bar counting epochs
                r.kind = "epochs"
        if m.group("rate") not in (None, "?", ""):
            rate = float(m.group("rate"))
            if rate > 0:
                r.rate_time = rate if m.group("unit") == "s/it" else 1.0 / rate
    elif (m := _KERAS.match(line)):  # Keras: "1000/1563 [==>....] - ETA: 1:00 - loss: ..." (epoch on its own line)
        r.kind, r.s_in, r.spe = "keras", int(m.group(1)), int(m.group(2))
        eta = _hms(m.group(3)) if m.group(3) else None
        if eta is not None and r.spe > r.s_in:
            r.rate_time = eta / (r.spe - r.s_in)
    elif (m := _TWO_PAIRS.search(line)) and int(m.group(1)) <= int(m.group(2)):
        # "[ 2/ 3][ 500/1000]": epoch a/b, then a step pair; whether that pair counts the whole run or
        # the epoch is decided in track() from the header's total steps
        r.kind, r.epoch, r.epoch_total = "pairs", int(m.group(1)), int(m.group(2))
        r.s_in, r.spe = int(m.group(3)), int(m.group(4))
    elif "[Rank 0] step=" in line and (m := _DS_STEP.search(line)):
        r.kind, r.step = "deepspeed", int(m.group(1))
    elif "num_updates" in line and (m := _UPDATES.search(line)):  # fairseq: the global update count
        r.kind, r.step = "fairseq", int(m.group(1))
        u = _UPS.search(line)
        if u and float(u.group(1)) > 0:
            r.rate_time = 1.0 / float(u.group(1))
    else:
        e = _find(_EPOCH_OF, line, low)
        s = _find(_STEP_OF, line, low)
        b = _BRACKET.search(line)
        if not (s or e):
            return _generic(line)
        r.kind = "plain"
        if e:
            r.epoch = int(e.group(1))
            r.epoch_total = int(e.group(2)) if e.group(2) else None
            # a bare "a/b" pair elsewhere on the line (not the epoch's, not the step's): steps in the epoch
            pair = next((p for p in _PAIR.finditer(line) if not (e.start() <= p.start() < e.end())
                         and not (s and s.start() <= p.start() < s.end()) and int(p.group(1)) <= int(p.group(2))), None)
            if s and s.group(2):
                r.s_in, r.spe = int(s.group(1)), int(s.group(2))
            elif b and (b.start() > e.end() or not e.group(2)):
                r.s_in, r.spe = int(b.group(1)), int(b.group(2))
            elif s:
                r.step = int(s.group(1))
                if pair and r.epoch_total:  # "Epoch 3/90 | step 12080 | 2070/5005": total = 90 x 5005
                    r.total = r.epoch_total * int(pair.group(2))
            elif pair:
                r.s_in, r.spe = int(pair.group(1)), int(pair.group(2))
            else:  # "Training Epoch:[855/1500] loss ...", "Epoch 2: loss=...": progress counted in epochs
                r.kind, r.step, r.total = "epochs", r.epoch, r.epoch_total
                if (bc := _BATCH_COUNT.search(line)) and "batch" in low:
                    r.s_in = int(bc.group(1))  # a batch counter or a batch size: track() tells them apart
        elif s:
            r.step = int(s.group(1))
            r.total = int(s.group(2)) if s.group(2) else None
        if r.step is None and r.s_in is None:
            return _generic(line)
        if not (e or s):
            return None
        if not (_find(_LOSS, line, low) or _find(_TIME_MS, line, low) or _find(_MS_STEP, line, low)
                or _find(_S_IT, line, low) or _find(_IT_S, line, low) or _find(_TIME_S, line, low)
                or _find(_TIME_UNIT, line, low)):
            return _generic(line)  # "oldest step 3000", "rank 3 step 12": a number, not a progress record
    # common fields
    if r.step_time is None and r.kind != "bar":
        for rx, scale in ((_TIME_MS, None), (_MS_STEP, 1e-3), (_S_IT, 1.0), (_TIME_UNIT, "unit"), (_TIME_S, 1.0)):
            t = _find(rx, line, low)
            if t:
                if scale == "unit":
                    r.step_time = float(t.group(1)) * (1e-3 if t.group(2).lower() == "ms" else 1.0)
                elif scale is None:
                    v = float(t.group(1))
                    r.step_time = v / 1000.0 if (t.group(2) or "ms" in t.group(0).lower() or v > 50) else v
                else:
                    r.step_time = float(t.group(1)) * scale
                break
        if r.step_time is None and r.rate_time is None:
            t = _find(_IT_S, line, low)
            if t and float(t.group(1)) > 0:
                r.rate_time = 1.0 / float(t.group(1))
    lm = _find(_LOSS, line, low) or ("loss" in low and _LOSS_ANY.search(line)) or None
    if lm:
        try:
            r.loss = float(lm.group(1))  # "nan" / "inf" too: a diverged run says so
        except ValueError:
            pass
    elif "loss" in low and (f := read_fields(line)) is not None:
        r.loss = f.loss  # a loss no format rule names ("reduced_train_loss: 1.34"): the role grammar's
    sm = _find(_SAMPLES, line, low)
    if sm and r.samples is None:
        r.samples = float(sm.group(1))
    r.ts = _parse_ts(line)
    return r


def _dict_record(line: str) -> _Rec | None:
    """A progress record from a dict on the line: fairseq's JSON log format, LLaMA-Factory's
    trainer_log.jsonl, TF/Keras-style dicts with 'step', a dict after a line number or a logger
    prefix (names read by their role: records.dict_fields). Only dicts that carry a step count;
    Hugging Face's step-less {'loss': ...} dicts are read by the tracker for their loss alone."""
    body = line[line.index("{"):line.rindex("}") + 1]
    if len(body) > 4000:
        return None
    try:
        d = json.loads(body)
    except ValueError:
        if "'" not in body:
            return None
        try:
            d = ast.literal_eval(body)
        except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
            return None
    if not isinstance(d, dict):
        return None
    if d.get("loss") is None and any(str(k).startswith("eval_") and v is not None for k, v in d.items()):
        return None  # an evaluation record
    f = dict_fields(d)
    if f is None:
        return None
    r = _Rec(idx=-1, kind="dict", step=f.step, total=f.total, loss=f.loss, epoch=f.epoch, step_time=f.step_time)
    ups = d.get("ups")
    if isinstance(ups, (int, float)) and ups > 0 and math.isfinite(ups):
        r.rate_time = 1.0 / ups
    r.ts = _parse_ts(line)
    return r


def _generic(line: str, fields: Fields | None = None) -> _Rec | None:
    """A record from the role grammar (models.schedmate.records) for lines no format rule knows."""
    f = fields or read_fields(line)
    if f is None:
        return None
    r = _Rec(idx=-1, kind="generic", epoch=f.epoch, epoch_total=f.epoch_total, s_in=f.s_in, spe=f.spe, step=f.step,
             total=f.total, loss=f.loss, step_time=f.step_time, ts=_parse_ts(line))
    if r.step is None and r.s_in is None:  # counted in epochs only ("Epoch 4/100 ... loss 0.3")
        r.kind, r.step, r.total = "epochs", r.epoch, r.epoch_total
    return r


class MetricTracker:
    """track(lines) -> Progress from the last `window` progress lines."""

    def __init__(self, window: int = 20, embedder: str = "hash", use_prototypes: bool = True,
                 head_lines: int = 400, tail_lines: int = 2000) -> None:
        self.window = int(window)
        # a log is read as its first head_lines (the run's header: totals, batch sizes, the first record's
        # epoch base) and its last tail_lines (the newest records; the paper's tail is 500 lines)
        self.head_lines, self.tail_lines = int(head_lines), int(tail_lines)
        self.embedder = embedder
        self.use_prototypes = use_prototypes
        self._proto = None

    # -- line classification -------------------------------------------------------------------
    def classify(self, line: str) -> str:
        """Category of a log line: regexes first (progress, eval, errors and traceback frames,
        warnings, checkpoints, start-up facts), then the nearest prototype (numbers masked)."""
        from models.schedmate.loglines import is_failure_line

        body = _RANK.sub("", line, count=1)
        if parse_progress(body) is not None or _HF_DICT.search(body):
            return "progress"
        if _EVAL.search(body) and re.search(r"\d", body):
            return "eval"
        if _TB_LINE.search(body):
            return "error"
        if _WARN.search(body):
            return "warning"
        if is_failure_line(body):
            return "error"
        if _CKPT.search(body):
            return "checkpoint"
        if _INIT.search(body):
            return "init"
        if not self.use_prototypes:
            return "other"
        return self._nearest(re.sub(r"\d+(?:\.\d+)?", " ", body))

    def _nearest(self, line: str) -> str:
        import numpy as np

        from models.schedmate.embed import get_embedder

        emb = get_embedder(self.embedder)
        if self._proto is None:
            names = [c for c, ps in PROTOTYPES.items() for _ in ps]
            self._proto = (names, emb.encode([p for ps in PROTOTYPES.values() for p in ps]))
        names, mat = self._proto
        return names[int(np.argmax(mat @ emb.encode(line)))]

    # -- tracking ------------------------------------------------------------------------------
    def track(self, lines: Iterable[str], total_steps: int | None = None, iterations: int | None = None,
              iteration_unit: str | None = None, global_batch: int | None = None) -> Progress:
        """Progress of a running job from its log lines. Hints (from the job's metadata) fill what the
        log does not print: total steps, or iterations + unit ("epochs" uses the log's steps/epoch)."""
        flat = _rejoin(flatten(bounded(lines, self.head_lines, self.tail_lines)))
        header = self._header(flat)

        def record(i: int) -> _Rec | None:
            raw = flat[i]
            rk = _RANK.match(raw)
            if rk and rk.group(1) != "0":
                return None  # another rank's echo
            r = parse_progress(raw[rk.end():] if rk else raw)
            if r is not None:
                r.idx = i
            return r

        # the last `window` records, scanning back from the end (a long log is not parsed whole)
        recs: list[_Rec] = []
        ds: list[_Rec] = []  # DeepSpeed's step-only lines: used only when the log has no other progress record
        hf_loss = None
        for i in range(len(flat) - 1, -1, -1):
            if hf_loss is None and (m := _HF_DICT.search(flat[i])):
                hf_loss = (i, float(m.group(1)))
            r = record(i)
            if r is not None and r.kind == "deepspeed":
                if len(ds) < self.window:
                    ds.append(r)
            elif r is not None:
                recs.append(r)
                if len(recs) >= self.window:
                    break
        recs = recs or ds
        recs.reverse()
        recs = recs or self._table(flat)
        # epoch records that print a batch counter ("epoch 0 | ... | batch 500 | loss ..."): a counter that
        # grows within an epoch counts steps; one that stays put is a batch size
        bc = [r for r in recs if r.kind == "epochs" and r.s_in is not None]
        if len({r.s_in for r in bc}) > 1 and all(a.s_in < b.s_in for a, b in zip(bc, bc[1:]) if a.epoch == b.epoch):
            for r in bc:
                r.kind, r.step, r.total = "batchcount", None, None
        ep_total = next((r.total for r in reversed(recs) if r.kind == "epochs" and r.total), None)
        if any(r.kind != "epochs" for r in recs):  # epoch summaries next to finer progress lines
            recs = [r for r in recs if r.kind != "epochs"]
        epoch_context(flat, recs)
        if not recs and (m := mine(flat)) is not None:  # no rule reads it: the repeated template does
            return Progress(m.step, m.total or total_steps or header.get("steps"), None, m.loss, None, epoch=m.epoch,
                            lines_used=m.repeats, diverged=m.loss is not None and not math.isfinite(m.loss),
                            decided_by="templates")
        if not recs:  # no count anywhere: a metrics list's loss (printed without its step) is still news
            lo = block_records(flat[-400:], need_count=False) if hf_loss is None else []
            return Progress(None, None, None, hf_loss[1] if hf_loss else (lo[-1][1].loss if lo else None), None)
        # the first record says whether epochs count from 0 (Lightning) or 1
        min_epoch = None
        last_kind = "epochs" if recs[-1].kind == "batchcount" else recs[-1].kind
        for i in range(len(flat)):
            r = record(i)
            if r is not None and r.kind == last_kind and (r.epoch is not None or recs[-1].epoch is None):
                min_epoch = r.epoch if r.kind != "timm" else None
                break
        base = 0 if min_epoch == 0 else 1
        epochs_total = header.get("epochs") or ep_total
        if iteration_unit == "epochs" and iterations:
            epochs_total = epochs_total or iterations
        val_total = _validation_in_bar(flat, recs)
        yolo0 = any(r.kind == "bar0" and r.epoch == 0 for r in recs)
        for r in recs:
            if val_total and r.kind == "bar" and r.spe and r.s_in is not None and r.spe > val_total:
                # the epoch bar also counts the validation batches (it went on while validation bars were drawn):
                # training steps in the epoch are its total less validation's
                r.spe -= val_total
                r.s_in = min(r.s_in, r.spe)
            if r.kind == "batchcount":
                r.step = r.s_in if r.epoch == base else None  # later epochs: the steps per epoch are not printed
                continue
            if r.kind == "keras" and r.epoch is None:  # the epoch is on an "Epoch 3/10" line above
                for j in range(r.idx, max(-1, r.idx - 20000), -1):
                    if (h := _EPOCH_HEAD.match(flat[j])):
                        r.epoch, r.epoch_total = int(h.group(1)), int(h.group(2))
                        break
            if r.kind == "pairs" and r.spe and header.get("steps") == r.spe:  # the pair counts the run
                r.step, r.total = r.s_in, r.spe
                continue
            # "261/300" after a header's epochs=300 counts from 1 (YOLOv8); without a header, a round last epoch
            # ("153/200") is a configured count printed 1-based, where YOLOv5's 0-based form prints "0/299"
            if (one_based := r.kind == "bar0" and (header.get("epochs") == (r.epoch_total or 0) - 1 or (
                    not header.get("epochs") and not yolo0 and (r.epoch_total or 1) > 10 and (r.epoch_total - 1) % 10 == 0))):
                r.epoch_total -= 1
            if r.s_in is not None and r.spe and r.epoch is not None:
                e = r.epoch - (1 if one_based else r.ebase if r.ebase is not None else
                               {"timm": 0, "bar0": 0, "keras": 1}.get(r.kind, base))
                r.step = e * r.spe + r.s_in
                et = r.epoch_total or epochs_total
                r.total = et * r.spe if et else None
            elif r.kind == "generic" and r.s_in is not None and r.epoch == base:
                r.step = r.s_in  # the first epoch: steps so far are the steps in it
            if r.gstep is not None:
                r.step = r.gstep
        last = recs[-self.window:]
        step = last[-1].step
        # totals of records shaped like the last one ("Training: 0/18" before "Epoch 0: 5/18" counts an epoch)
        totals = [r.total for r in last if r.total and (r.epoch is None) == (last[-1].epoch is None)]
        total = totals[-1] if totals else None
        if total is None:
            total = total_steps or header.get("steps")
            if total is None and iteration_unit == "steps" and iterations:
                total = iterations
            if total is None and header.get("spe") and last[-1].epoch_total:
                total = last[-1].epoch_total * header["spe"]
        # seconds per step: explicit per-step times, else bar rates, else timestamps
        times = [r.step_time or r.rate_time for r in last if r.step_time or r.rate_time]
        if not times:
            pts = [(r.step, r.ts) for r in last if r.ts is not None and r.step is not None]
            times = [(t2 - t1) / (s2 - s1) for (s1, t1), (s2, t2) in zip(pts, pts[1:]) if s2 > s1 and t2 >= t1]
        st = _robust_mean(times)
        loss = next((r.loss for r in reversed(last) if r.loss is not None), None)  # NaN stays NaN
        if loss is None and last[-1].cols:
            loss = _column(flat, last[-1], "total")
            loss = _column(flat, last[-1], None) if loss is None else loss
        if hf_loss and (loss is None or hf_loss[0] > last[-1].idx - 50):
            loss = hf_loss[1] if loss is None else loss
        samples = [r.samples for r in last if r.samples]
        thr = _robust_mean(samples) if samples else None
        if thr is None and st:
            gbs = global_batch or next((r.gbs for r in reversed(last) if r.gbs), None) or header.get("gbs")
            thr = gbs / st if gbs else None
        step, total, loss, decided = with_templates(flat, last[-1].idx, last[-1].kind, step, total, loss)
        ep = None
        if last[-1].epoch is not None:
            ep = last[-1].epoch + (1 if last[-1].kind == "timm" or base == 0 else 0)
        return Progress(step=step, total_steps=total, step_time=st, loss=loss, throughput=thr, epoch=ep,
                        lines_used=len(last), diverged=loss is not None and not math.isfinite(loss), decided_by=decided)

    def _table(self, flat: Sequence[str]) -> list[_Rec]:
        """Rows of a table whose header names a count and a loss ("| epoch | step | loss |"), the last
        `window` of them: the numbers of such rows carry no names of their own."""
        out: list[_Rec] = []
        roles = None
        for i, line in enumerate(flat):
            f = table_row(line, roles) if roles else None
            if f is not None:
                out.append(_generic(line, f))
                out[-1].idx = i
            elif len(line) < 400 and (h := table_header(line)) is not None:
                roles = h
        if not out:  # records printed one name per line
            for i, f in block_records(list(flat)):
                out.append(_generic(flat[i], f))
                out[-1].idx = i
        return out[-self.window:]

    @staticmethod
    def _header(lines: Sequence[str], limit: int = 400) -> dict:
        out: dict = {}
        bs = world = None
        for line in lines[:limit]:
            low = line.lower()
            if not any(h in low for h in _H_ANY):
                continue
            if "epochs" not in out and (m := _find(_H_EPOCHS, line, low)):
                out["epochs"] = int(m.group(1))
            if "steps" not in out and (m := _find(_H_STEPS, line, low)):
                out["steps"] = int(m.group(1).replace(",", ""))
            if "spe" not in out and (m := _H_SPE.search(line)):
                out["spe"] = int(m.group(1))
            if "steps" not in out and "max=" in low and (m := _H_WIDGET.search(line)):
                out["steps"] = int(m.group(1))
            if "gbs" not in out and (m := _find(_H_GBS, line, low)):
                out["gbs"] = int(m.group(1).replace(",", ""))
            if bs is None and (m := _find(_H_BS, line, low)):
                bs = int(m.group(1))
            if world is None and (m := _find(_H_WORLD, line, low)):
                world = int(m.group(1))
        if "gbs" not in out and bs and world:
            out["gbs"] = bs * world
        return out


# a record's rest wrapped onto the next line: only `name: number` pairs, indented ("  loss_mask: 0.55, loss: 1.83")
_CONT = re.compile(r"^\s+(?:[A-Za-z_][\w./]*\s*[:=]\s*[-+]?(?:\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|nan|inf)\s*,?\s*)+$")


# a progress bar's end ("... 81.02s/it]") with another record glued on without a newline ("[INFO|...] >> {...}")
_BAR_END = re.compile(r"\d(?:it/s|s/it)(?:, [^\]\[]{0,400})?\](?=[\[{])")


def _split_glued(line: str) -> list[str]:
    cuts = [m.end() for m in _BAR_END.finditer(line)]
    if not cuts:
        return [line]
    return [line[a:b] for a, b in zip([0, *cuts], [*cuts, len(line)]) if line[a:b].strip()]


def _rejoin(flat: list[str], reach: int = 60) -> list[str]:
    """Records printed over several lines, joined: a JSON/dict record pretty-printed one key per line
    (`{"iter": 120000,` ... `"time": 0.56}`), and a record the pager or console cut (ending in `$` or a
    comma) whose rest of `name: number` pairs is on the next, indented line. A record glued onto the end of
    a progress bar (a logger's line printed before the bar's newline) is split off."""
    out: list[str] = []
    i, n = 0, len(flat)
    if any("/it" in x or "it/" in x for x in flat):
        flat = [p for x in flat for p in (_split_glued(x) if ("/it" in x or "it/" in x) else (x,))]
        n = len(flat)
    while i < n:
        x = flat[i]
        st = x.strip()
        if st.startswith("{") and st.count("{") > st.count("}"):
            depth, j = st.count("{") - st.count("}"), i + 1
            while j < min(n, i + reach) and depth > 0:
                depth += flat[j].count("{") - flat[j].count("}")
                j += 1
            if depth == 0:
                out.append(" ".join(y.strip() for y in flat[i:j]))
                i = j
                continue
        if out and x[:1].isspace() and out[-1].rstrip().endswith(("$", ",")) and _CONT.match(x):
            out[-1] = out[-1].rstrip().rstrip("$").rstrip(",") + ", " + st
            i += 1
            continue
        out.append(x)
        i += 1
    return out


def _validation_in_bar(flat: Sequence[str], recs: list) -> int | None:
    """The validation pass's batch count when the epoch bar counts it too (Lightning 1.x draws one bar over the
    training and validation batches: it keeps counting while the validation bar runs), else None."""
    bars = [r for r in recs if r.kind == "bar" and r.epoch is not None]
    if len(bars) < 2:
        return None
    total = None
    for a, b in zip(bars, bars[1:]):
        if a.epoch != b.epoch or b.s_in <= a.s_in:
            continue
        for k in range(a.idx + 1, b.idx):
            if "Validat" in flat[k] and (m := _VAL_BAR.match(flat[k])):
                total = int(m.group(1))
    return total


def _column(flat: Sequence[str], r: _Rec, name: str | None) -> float | None:
    """A YOLO row's value under `name` in the header line above it ("Epoch gpu_mem box obj cls total ..."): the row
    has no names. name=None: the sum of the loss parts (YOLOv8 prints box_loss cls_loss dfl_loss, no total)."""
    for j in range(r.idx - 1, max(-1, r.idx - 12), -1):
        head = flat[j].split()
        if head[:1] == ["Epoch"] and len(head) == len(r.cols) and (name in head or name is None):
            idx = [head.index(name)] if name else [i for i, c in enumerate(head) if c.lower().endswith("_loss")]
            try:
                return sum(float(r.cols[i]) for i in idx) if idx else None
            except ValueError:
                return None
    return None


_robust_mean = robust_mean  # re-exported under its old name

