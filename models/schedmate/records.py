"""A small grammar for training-progress records the Metric Tracker has no format rule for.

Why: format rules written one log family at a time missed about a third of the progress logs of each
new batch of real material (issue 25: step 73 %, loss 65 % at first sight). Most unseen formats are
still "names next to numbers": `key=value`, `key: value`, `key value`, `key [a/b]`, dicts, JSON objects,
and table rows whose names sit in a header line above. This module reads any of those shapes by the
*role* of each name (step-like, epoch-like, total-like, loss-like) instead of by a family's layout:

- every number (or `a/b` pair) on a line is named by the last one or two words before it;
- names are normalised (`train/global_step` -> `global_step`, `Train Loss` -> `loss`) and mapped to a role;
- a pair with no name right after an epoch is the step within that epoch (`Epoch: [3][120/500]`);
- a line is a progress record only if it counts steps or epochs AND gives a loss (or a per-step time):
  a number next to "step" alone is too weak ("oldest step 3000").

The tracker turns epoch + step-in-epoch into a global step (epoch base inferred from the first record).
"""
from __future__ import annotations

import html
import math
import re
from collections import deque
from dataclasses import dataclass
from itertools import islice
from typing import Iterable, Sequence

_STEP = frozenset({"step", "steps", "global_step", "total_timesteps", "timesteps", "num_timesteps", "env_steps", "globalstep", "iter", "iters", "iteration", "iterations", "it",
                   "update", "updates", "num_updates", "n_updates", "train_step", "current_step", "current_steps", "n_iter",
                   "niter", "step_num", "num_steps", "trained_steps", "batch_idx", "batch", "batches", "itr", "i",
                   "up", "upd", "total_updates", "total_train_updates"})  # "Up. 26000": an update count abbreviated
#: names that count only when given as a pair ("batch 32" is a batch size; "Batch [20/100]" is progress)
_PAIR_ONLY = frozenset({"batch", "batches", "i", "it"})
#: step names that count the whole run: they win over a per-epoch or per-rollout counter on the same record
_STRONG_STEP = frozenset({"global_step", "globalstep", "total_timesteps", "timesteps", "num_timesteps", "env_steps",
                          "total_steps_done", "num_updates", "trained_steps", "total_updates", "total_train_updates"})
_EPOCH = frozenset({"epoch", "epochs", "ep", "epoch_num", "cur_epoch", "current_epoch"})
_TOTAL = frozenset({"total_steps", "max_steps", "max_iters", "max_iter", "num_training_steps", "total_iters",
                    "max_update", "total_iterations", "max_iterations", "num_train_steps", "total_step"})
_LOSS = frozenset({"loss", "total_loss", "loss_total", "lm_loss", "avg_loss", "loss_avg", "mean_loss", "tot_loss",
                   "training_loss", "train_loss", "objective", "overall_loss", "full_loss", "loss_sum", "sum_loss",
                   "running_loss", "batch_loss", "loss_all", "all_loss", "xent", "cross_entropy",
                   "crossentropy", "nll", "reduced_train_loss", "reduced_loss", "cost", "train_cost"})
_TIME = frozenset({"time", "step_time", "iter_time", "time_per_step", "batch_time", "time_per_iter", "sec_per_iter",
                   "s_per_step", "elapsed_time_per_iteration"})
_NOT_TRAIN = ("val", "valid", "validation", "eval", "test", "dev")
_PREFIXES = ("train_", "training_", "trainer_", "tr_", "my_", "mean_")

# a number (maybe signed, float, sci, nan/inf) or an a/b pair, not inside a word, a date or a version
_TOK = re.compile(r"(?<![\w./-])(?<!\d:)(?:(?P<a>\d+)\s*/\s*(?P<b>\d+)(?![\d.%])|"
                  r"(?P<v>[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+)|[-+]?(?:nan|inf(?:inity)?)\b)(?![\w%/-]|:\d|\.\d))", re.I)
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_]*(?:[./][A-Za-z][A-Za-z0-9_]*)*")
_TABLE_SPLIT = re.compile(r"\s*\|\s*|\s{2,}|\t|,\s*")
# box-drawing characters (Ray's result boxes, rich tables): vertical strokes are column bars, the rest rules
_BOX = {c: ("|" if c in "\u2502\u2503\u2551\u2506\u2507\u250a\u250b\u254e\u254f" else "-") for c in map(chr, range(0x2500, 0x2580))}
_BOX_TABLE = str.maketrans(_BOX)
# a bullet before a `name: value` item ("- Train loss: 2.1", "* step: 40")
_BULLET = re.compile(r"^[-*\u2022\u00b7]\s+")


def unbox(line: str) -> str:
    """Box-drawing characters as the ASCII table characters the grammar reads."""
    return line.translate(_BOX_TABLE) if any("\u2500" <= ch < "\u2580" for ch in line) else line


def normalise(name: str) -> str:
    """`train/global_step` -> `global_step`, `Train Loss` -> `train_loss`, `loss(avg)` -> `loss_avg`."""
    n = re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")
    if "_" in n and "/" in name:
        n = n.split("_", 1)[1] if n.split("_", 1)[0] in ("train", "trainer", "training", "metrics", "charts") else n
    return n


def role(name: str) -> str | None:
    """step / epoch / total / loss / time, or None. Evaluation names ("val_loss", "eval/loss") are not
    training progress."""
    n = normalise(name)
    if not n or n.split("_")[0] in _NOT_TRAIN:
        return None
    for cand in (n, *(n[len(p):] for p in _PREFIXES if n.startswith(p))):
        if cand in _LOSS:
            return "loss"
        if cand in _STEP:
            return "step"
        if cand in _EPOCH:
            return "epoch"
        if cand in _TOTAL:
            return "total"
        if cand in _TIME:
            return "time"
    if "/" in name:  # a metric path ("loss/train/total", "Train_loss/train/total"): a loss component names it
        comps = [normalise(c) for c in name.split("/")]
        if not any(c.split("_")[0] in _NOT_TRAIN for c in comps) and any(c in _LOSS for c in comps):
            return "loss"
    if n.endswith("loss"):
        return "loss2"  # a named part of the loss (cls_loss): used when no total loss
    # a loss qualified after its name ("loss_net", "Loss content"): a part too; "loss_scale" is AMP's scaler
    if n.startswith("loss_") and not n.startswith(("loss_scale", "loss_weight")) \
            and not any(part in _NOT_TRAIN for part in n.split("_")):  # "loss/val/total" is an evaluation
        return "loss2"
    return None


@dataclass
class Fields:
    """What the grammar found on one line (None: not given)."""
    step: int | None = None
    total: int | None = None
    epoch: int | None = None
    epoch_total: int | None = None
    s_in: int | None = None
    spe: int | None = None
    loss: float | None = None
    step_time: float | None = None


def _key(gap: str) -> str:
    """The name of the number after `gap`: the last one or two words, when one of them names a role."""
    words = _WORD.findall(re.sub(r"\([^()]*\)\W*$", "", gap[-40:]))  # "loss (avg):": the qualifier is not the name
    if not words:
        return ""
    if len(words) >= 2:
        two = words[-2] + "_" + words[-1]
        if role(two) is not None:
            return two
        if words[-1].lower() in ("train", "training") and role(words[-2]) is not None:
            return words[-2]  # "loss train: 1.2": the split named after the quantity
    return words[-1]


# a number named by the word right after it: "1epoch", "1365-2046batch", "12 steps" (the range's end counts)
# an unnamed bracketed count that opens a record of `name=value` items (metric writers: "[500] a=1, b=2")
_BRACKET_STEP = re.compile(r"(?:^|[\]:]\s)\s*\[(\d+)\]\s+[A-Za-z_][\w/]*=[-+\d.]+,?\s+[A-Za-z_][\w/]*=")
_SUFFIXED = re.compile(r"(?<![\w.])(?:\d+-)?(\d+)\s?(epoch|batch|iter|step)s?\b", re.I)


def read_fields(line: str, need_count: bool = True) -> Fields | None:
    """Progress fields of one line by the roles of its names, or None when the line is not a training
    progress record (no step/epoch count, or neither a loss nor a per-step time). need_count=False
    accepts a record with a loss and no count (a metrics list printed without its step)."""
    f = Fields()
    loss2 = None
    strong = False
    prev_end, prev_role = 0, None
    for m in _TOK.finditer(line):
        gap = line[prev_end:m.start()]
        prev_end = m.end()
        name = _key(gap)
        r = role(name) if name else None
        if r is None and not name and prev_role == "epoch" and m.group("a"):
            r = "in_epoch"  # "Epoch: [3][120/500]", "Epoch  1, 13400/37527": the unnamed pair after the epoch
        if name and r is None and _WORD.findall(gap):
            prev_role = None
            continue
        prev_role = r
        if r is None:
            continue
        if m.group("a") is not None:
            a, b = int(m.group("a")), int(m.group("b"))
            if a > b or b == 0:
                continue
            if r == "epoch" and f.epoch is None:
                f.epoch, f.epoch_total = a, b
            elif r in ("step", "in_epoch") and f.s_in is None and f.step is None:
                f.s_in, f.spe = a, b
            continue
        v = m.group("v")
        try:
            x = float(v)
        except ValueError:
            continue
        is_int = re.fullmatch(r"[-+]?\d+", v) is not None
        n = normalise(name)
        if r == "epoch" and f.epoch is None and is_int:
            f.epoch = int(x)
        elif r == "step" and is_int and n not in _PAIR_ONLY and not strong and (
                (f.step is None and f.s_in is None) or n in _STRONG_STEP):
            f.step, strong = int(x), n in _STRONG_STEP  # a whole-run count wins over a per-epoch counter
        elif r == "total" and is_int and x > 0:
            f.total = int(x)
        elif r == "loss" and f.loss is None:
            f.loss = x
        elif r == "loss2" and loss2 is None:
            loss2 = x
        elif r == "time" and f.step_time is None and x > 0:
            f.step_time = x
    if f.step is None and f.s_in is None and f.epoch is None and (m := _BRACKET_STEP.search(line)):
        f.step = int(m.group(1))  # "] [500] steps_per_second=..., train_loss=...": a writer's step before its metrics
    if f.step is None and f.s_in is None:
        for m in _SUFFIXED.finditer(line):
            word = m.group(2).lower()
            if word == "epoch" and f.epoch is None:
                f.epoch = int(m.group(1))
            elif word != "epoch" and f.s_in is None:
                f.s_in = int(m.group(1))  # steps within the epoch; steps per epoch unknown
    if f.loss is None:
        f.loss = loss2
    counts = f.step is not None or f.s_in is not None or f.epoch is not None
    if (not counts and (need_count or f.loss is None)) or (f.loss is None and f.step_time is None):
        return None
    if strong or (f.s_in is not None and f.epoch is None):
        # an explicit whole-run count, or "step 120/500" without an epoch: the pair counts the run
        if f.step is None:
            f.step, f.total = f.s_in, f.total or f.spe
        f.s_in, f.spe = None, None
    return f


def block_records(lines: list[str], need_count: bool = True) -> list[tuple[int, Fields]]:
    """Records printed one name per line ("|    total_timesteps | 3584 |", "Mean value loss: 19.7",
    "- Train loss: 2.1", a box drawn with `│`): consecutive lines holding a single name and number are one
    record, ended by a rule line, a blank line or a line of another shape; a short title line ending in
    ":" right above the items ("[batch=12/100]:") belongs to the record (it may hold the count).
    (index of the record's last line, fields) for each record; need_count as in read_fields."""
    out: list[tuple[int, Fields]] = []
    parts: list[str] = []
    title = None

    def close(i: int) -> None:
        if len(parts) >= 2 and (f := read_fields(" | ".join(parts), need_count)) is not None:
            out.append((i, f))
        parts.clear()

    for i, line in enumerate(lines):
        body = _BULLET.sub("", unbox(line).strip().strip("|").strip())
        cells = [c for c in re.split(r"\s*\|\s*|:\s+|\s{2,}", body) if c]
        if len(cells) == 2 and _WORD.match(cells[0]) and _TOK.fullmatch(cells[1].strip()):
            if not parts and title is not None and title[0] == i - 1:
                parts.append(title[1])
            parts.append(f"{cells[0].strip()}: {cells[1].strip()}")
        elif body and not re.fullmatch(r"[-=+*#_~\s]+", body) and len(cells) == 1 and len(body) < 60 \
                and not any(ch.isdigit() for ch in body):
            continue  # a section title inside the record ("| train/ |")
        elif parts:
            close(i - 1)
        if not parts and len(body) < 60 and body.endswith(":") and any(ch.isdigit() for ch in body):
            title = (i, body.rstrip(":"))
    if parts:
        close(len(lines) - 1)
    return out


def table_header(line: str) -> list[str | None] | None:
    """Roles of a table header's columns ("| Epoch | Step | Loss |", "epoch  iter  loss  lr"), or None
    when the line does not name both a count and a loss."""
    cells = [c for c in _TABLE_SPLIT.split(unbox(line).strip().strip("|")) if c != ""]
    if len(cells) < 2 or len(cells) > 40 or any(any(ch.isdigit() for ch in c) for c in cells):
        return None
    roles = [role(c) for c in cells]
    if not ({"step", "epoch"} & set(roles)) or not ({"loss", "loss2"} & set(roles)):
        return None
    return roles


def table_row(line: str, roles: list[str | None]) -> Fields | None:
    """A data row under a header with these column roles (the same number of cells, numbers where the
    header names a count or a loss)."""
    cells = [c for c in _TABLE_SPLIT.split(unbox(line).strip().strip("|")) if c != ""]
    if len(cells) != len(roles):
        return None
    f = Fields()
    loss2 = None
    for c, r in zip(cells, roles):
        if r is None:
            continue
        pm = re.fullmatch(r"(\d+)\s*/\s*(\d+)", c)
        try:
            x = float(c) if not pm else None
        except ValueError:
            return None
        if r == "epoch":
            if pm:
                f.epoch, f.epoch_total = int(pm.group(1)), int(pm.group(2))
            elif x is not None and x.is_integer():
                f.epoch = int(x)
        elif r == "step":
            if pm:
                f.s_in, f.spe = int(pm.group(1)), int(pm.group(2))
            elif x is not None and x.is_integer():
                f.step = int(x)
        elif r == "loss" and x is not None:
            f.loss = x
        elif r == "loss2" and x is not None and loss2 is None:
            loss2 = x
        elif r == "total" and x is not None and x > 0:
            f.total = int(x)
    f.loss = f.loss if f.loss is not None else loss2
    if f.loss is None or (f.step is None and f.s_in is None and f.epoch is None):
        return None
    if f.s_in is not None and f.epoch is None:
        f.step, f.total, f.s_in, f.spe = f.s_in, f.total or f.spe, None, None
    return f


_D_STEP = ("num_updates", "current_steps", "global_step", "step", "iteration", "iter", "train_step", "steps", "it")
_D_TOTAL = ("total_steps", "max_steps", "max_iters", "max_iter", "num_training_steps", "total_iters", "max_update")
_D_LOSS = ("loss", "train_loss", "total_loss", "train/loss", "lm_loss", "train_inner_loss")


def _flat(d: dict, depth: int = 0) -> dict:
    """Nested records flattened to their leaf names ({"data": {"step": 2}} -> {"step": 2}); a metric
    record {"name": "loss", "value": 4.49} becomes {"loss": 4.49}."""
    out: dict = {}
    for k, v in d.items():
        if isinstance(v, dict) and depth < 3:
            for k2, v2 in _flat(v, depth + 1).items():
                out.setdefault(k2, v2)
        else:
            out.setdefault(k, v)
    name = next((out[k] for k in ("name", "tag", "metric", "key") if isinstance(out.get(k), str)), None)
    if name and "value" in out and name not in out:
        out[name] = out["value"]
    return out


def dict_fields(d: dict) -> Fields | None:
    """Progress fields of a parsed dict / JSON record: the known names first (fairseq, LLaMA-Factory,
    TF/Keras), then any name by its role (`train/global_step`, `trainer/loss`, `Loss`). None without a
    step count."""
    def num(keys) -> float | None:
        for k in keys:
            if k in d:
                try:
                    return float(d[k])
                except (TypeError, ValueError):
                    continue
        return None

    d = _flat(d)
    by_role: dict[str, list] = {}
    for k in d:
        r = role(str(k)) if isinstance(k, str) else None
        if r is not None:
            by_role.setdefault(r, []).append(k)
    step = num(_D_STEP)
    if step is None:
        keys = [k for k in by_role.get("step", ()) if normalise(k) not in _PAIR_ONLY]  # a whole-run count first
        step = num(sorted(keys, key=lambda k: normalise(k) not in _STRONG_STEP))
    if step is None or not math.isfinite(step) or step < 0:
        return None
    total = num(_D_TOTAL)
    if total is None:
        total = num(by_role.get("total", ()))
    loss = num(_D_LOSS)
    if loss is None:
        loss = num(by_role.get("loss", ()))
    f = Fields(step=int(step), total=int(total) if total and math.isfinite(total) and total > 0 else None, loss=loss)
    ep = d.get("epoch")
    if isinstance(ep, int) and not isinstance(ep, bool):
        f.epoch = ep
    t = num(("time/step", "step_time", "iter_time", "time_per_step"))
    f.step_time = t if t and t > 0 else None
    return f


def robust_mean(values) -> float | None:
    """Mean after dropping values more than 3 MADs from the median (stalls, eval pauses)."""
    import statistics

    vals = [v for v in values if v is not None and math.isfinite(v) and v > 0]
    if not vals:
        return None
    if len(vals) < 3:
        return statistics.median(vals)
    med = statistics.median(vals)
    mad = statistics.median(abs(v - med) for v in vals) or 0.01 * med
    kept = [v for v in vals if abs(v - med) <= 3 * 1.4826 * mad]
    return statistics.fmean(kept or vals)


# a pasted log whose newlines were lost: records glued together, each behind its bracketed timestamp
_GLUED = re.compile(r"(?=\[\d{4}[/-]\d{2}[/-]\d{2} \d{2}:\d{2}:\d{2}\])")
_WRAPPED = re.compile(r"^\s{8,}[A-Za-z_][\w/.]*=[-+]?[\d.]")  # a console-wrapped record's `name=number` rest

def flatten(lines) -> list[str]:
    """A log's non-blank records, one per item: carriage-return redraws (also pasted as `^M`) split into
    records, HTML-pasted logs unescaped, a record the console wrapped onto a deeper-indented line joined,
    records glued onto one pasted line split. Plain lines take the cheapest branch (no generator per line):
    a running job's log has thousands of them."""
    flat: list[str] = []
    for line in lines:
        line = html.unescape(line) if "&quot;" in line or "&#" in line else str(line)
        line = line.replace("^M", "\r") if "^M" in line else line
        if line[:1].isspace() and flat and _WRAPPED.match(line) and \
                len(line) - len(line.lstrip()) >= len(flat[-1]) - len(flat[-1].lstrip()) + 8:
            flat[-1] += " " + line.strip()
        elif "\r" in line or not line.strip():
            flat.extend(p for p in line.replace("\r\n", "\n").split("\r") if p.strip())
        else:
            flat.append(line)
        if flat and len(flat[-1]) > 160 and flat[-1].count("[") > 3 and len(_GLUED.findall(flat[-1])) > 1:
            flat.extend(q for q in _GLUED.split(flat.pop()) if q.strip())
    return flat


def bounded(lines: Iterable[str], head: int, tail: int) -> Sequence[str]:
    """The first `head` and last `tail` lines of a log: a running job's log grows without end, and its
    header and newest records are all the tracker reads. A sequence is sliced (lines between are never
    touched); an iterator is consumed but only head + tail lines are kept."""
    if isinstance(lines, Sequence) and not isinstance(lines, str):
        n = len(lines)
        return lines if n <= head + tail else [*lines[:head], *lines[n - tail:]]
    it = iter(lines)
    first = list(islice(it, head))
    return first + list(deque(it, maxlen=tail))


# a line that only says which epoch starts ("Epoch 5/120", "epoch 6/80", "Going into epoch 8", "... - Epoch 0/139")
_EPOCH_CTX = re.compile(r"(?:^|[\s>:|\]-])(?:going into )?epoch\s*:?\s*(\d+)\s*(?:/\s*(\d+))?\s*$", re.I)


def epoch_context(flat, recs: list) -> None:
    """Records that count within an epoch but do not print it, read against the epoch line above them.

    Why: many loops print "Epoch 5/120" (or "Going into epoch 8") on its own line and then a bar or a
    `Batch a/b` record that restarts every epoch; the count alone is not the run's step. In place, on the
    tracker's records (attributes kind, idx, step, total, loss, epoch, epoch_total, s_in, spe, ebase):
    - a bar that prints no loss while the other bars do, with another total, is an evaluation pass: dropped;
    - a bar that restarts (or completes twice) and a `generic` pair record take the epoch of the nearest epoch
      line above; epochs count from 0 when an epoch line says 0, and then `a/b` gives b as the last index."""
    lossy = {r.total for r in recs if r.kind == "bar" and r.loss is not None}
    if lossy:
        recs[:] = [r for r in recs if not (r.kind == "bar" and r.loss is None and r.total not in lossy)]
    bars = [r for r in recs if r.kind == "bar" and r.epoch is None]
    restarts = len(bars) >= 2 and (sum(r.step == r.total for r in bars) >= 2 or
                                   any(b.step < a.step and b.total == a.total for a, b in zip(bars, bars[1:])))
    cands = [r for r in recs if r.epoch is None and r.step is not None and r.total and
             ((r.kind == "bar" and restarts) or (r.kind == "generic" and r.s_in is None))]
    if not cands:
        return
    ctx = [(i, m) for i in range(min(len(flat), cands[-1].idx)) if "poch" in flat[i]
           and (m := _EPOCH_CTX.search(flat[i].rstrip()))]
    if not ctx:
        return
    zero = any(m.group(1) and int(m.group(1)) == 0 for _, m in ctx)
    for r in cands:
        m = next((m for i, m in reversed(ctx) if i < r.idx), None)
        if m is None:
            continue
        r.epoch, r.s_in, r.spe, r.step, r.total = int(m.group(1)), r.step, r.total, None, None
        r.epoch_total = (int(m.group(2)) + (1 if zero else 0)) if m.group(2) else None
        r.ebase = 0 if zero else 1
