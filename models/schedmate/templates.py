"""Template mining over a log's last records: progress read from how numbers behave, not from a format rule.

Why: format rules (models.schedmate.tracker) and the role grammar (models.schedmate.records) read one line
at a time, so every log family that prints its numbers in a new arrangement (an unnamed step, a loss printed
after a progress bar, two step counters on one line) was missed at first sight until a rule for it was
written (issue 25: 52 unseen real logs, step 65 %, loss 62 % at first sight). A running job, however,
prints the SAME record shape over and over; what changes between those lines is exactly the numbers, and
each number's behaviour across the repeats says what it is:

- lines are grouped by their template (Drain-style: numbers masked, bar glyphs and blank runs collapsed),
  and only templates that repeat are kept: a record the job prints once is not progress;
- a column's role comes from its name (the words right before it, `records.role`) when it has one, else
  from its behaviour: a step counter is an integer that never decreases and grows by a steady stride; an
  `a/b` pair with a constant `b` counts towards the total `b`; a pair that resets while an epoch column
  grows is the step within the epoch; two growing counters whose ratio is a whole number k >= 2 are micro
  batches and optimizer steps (gradient accumulation: the slower one is the step);
- a loss is a float named by a loss-like word; with no loss name on the template, the one float column that
  is neither a counter, a time, a learning rate (tiny) nor a percentage, printed next to a step counter.

The tracker uses this where its rules are silent (no record, no loss) or only guessing (the generic kinds);
`Mined.kind` says which evidence decided.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Sequence

from models.schedmate.records import _key, normalise, role

# a number not glued to a word on its left ("mAP50", "I1002" stay literal), maybe a float / sci / nan
_NUM = re.compile(r"(?<![A-Za-z_\d.,])[-+]?(?:\d{1,3}(?:,\d{3})+(?![\d.])|\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|nan\b|inf\b)", re.I)
_CLOCK = re.compile(r"\d{1,4}[-/:]\d{2}[-/:]\d{2}(?:[ T.,:]\d+)*|\d+:\d{2}(?::\d{2})?")  # dates and clock times
_GLYPHS = re.compile(r"[^\x00-\x7f]+|\|[#=> .-]*\||\[[=>.#*-]{3,}\]")  # bar fill ("|##  |", "[==>..]"), box and block characters
# a number named by the word right before it ("loss: 2", "Batch [40]", '"words":7'), not by a unit of the number before
_NAMED_GAP = re.compile(r"[A-Za-z_][\w.]*[\"']?\s*[:=]?\s*[\[(]?\s*$")
_LR = frozenset({"lr", "learning_rate", "lr_0", "lr0", "learningrate", "train_learning_rate", "lr_rate"})
_MIN_REPEATS = 3
# a template that opens as an evaluation record (a "val (prev val iter)" aside later in a training line is fine)
_EVAL_OPEN = re.compile(r"^[^A-Za-z]{0,30}(?:[A-Za-z]+\W+){0,2}(?:val|valid|validation|validating|eval|evaluation|test|"
                        r"testing)\b", re.I)


@dataclass
class Mined:
    """The newest record of the best repeated template, read by column roles (None: not given)."""
    idx: int                      # index of the record's line in the lines given
    step: int | None = None
    total: int | None = None
    loss: float | None = None
    epoch: int | None = None
    kind: str = "template"        # "template-named" (roles from names) or "template-behaviour" (from how columns move)
    repeats: int = 0
    rows: list = field(default_factory=list, repr=False)  # the template's line indices


def template(line: str) -> tuple[str, list[tuple[int, int]]]:
    """(template, spans of its numbers): clock times and dates are literal `T`, bar glyphs `~`, numbers `#`."""
    masked = _CLOCK.sub(lambda m: "T" * len(m.group(0)), line)
    masked = _GLYPHS.sub(lambda m: "~" * len(m.group(0)), masked)
    spans = [m.span() for m in _NUM.finditer(masked)]
    parts, prev = [], 0
    for a, b in spans:
        parts.append(masked[prev:a])
        parts.append("#")
        prev = b
    parts.append(masked[prev:])
    key = re.sub(r"T+", "T", re.sub(r"~+", "~", re.sub(r"\s+", " ", "".join(parts)).strip()))
    return key, spans


@dataclass
class _Col:
    name: str
    role: str | None
    vals: list[float]
    ints: bool
    pair_total: bool = False      # the b of an a/b pair
    in_pair: bool = False         # the a of an a/b pair
    unit: bool = False            # followed by a unit or % ("12.2s/it", "6.7G", "33%"): a measure, not a loss
    named: bool = False           # a word names it right before it

    @property
    def grows(self) -> bool:
        v = self.vals
        return len(v) >= 2 and v[-1] > v[0] and all(b >= a for a, b in zip(v, v[1:]))

    @property
    def resets(self) -> bool:
        return any(b < a for a, b in zip(self.vals, self.vals[1:]))

    @property
    def constant(self) -> bool:
        return len(set(self.vals)) == 1

    @property
    def steady(self) -> bool:
        """Grows by a constant-ish stride (repeated lines of one step allowed)."""
        d = [b - a for a, b in zip(self.vals, self.vals[1:]) if b != a]
        if not d or not self.ints or any(x < 0 for x in d):
            return False
        med = sorted(d)[len(d) // 2]
        return sum(0.5 * med <= x <= 2 * med for x in d) >= 0.7 * len(d)


# a rate after a space ("56.12 sent/s", "2143.80 words/s", "3.1 samples/sec"): a throughput, not a loss
_RATE_UNIT = re.compile(r" ?[A-Za-z]+/(?:s|sec|second)\b")


def _columns(lines: list[str], rows: list[int], spans: list[list[tuple[int, int]]]) -> list[_Col]:
    first = lines[rows[0]]
    cols: list[_Col] = []
    prev_end = 0
    for j, (a, b) in enumerate(spans[0]):
        gap = first[prev_end:a]
        prev_end = b
        name = _key(gap) if re.search(r"[A-Za-z]", gap) else ""
        texts = [lines[r][spans[k][j][0]:spans[k][j][1]] for k, r in enumerate(rows)]
        try:
            vals = [float(t.replace(",", "")) for t in texts]
        except ValueError:
            vals = [math.nan] * len(texts)
        after = first[b:b + 2].lstrip()
        col = _Col(name=name, role=role(name) if name else None, vals=vals,
                   ints=all(re.fullmatch(r"[-+]?[\d,]+", t) for t in texts), unit=(first[b:b + 1].isalpha() or after[:1] == "%"
                         or _RATE_UNIT.match(first, b) is not None),
                   named=bool(name) and _NAMED_GAP.search(gap) is not None)
        if gap.strip() == "/" and cols and cols[-1].ints and col.ints and not re.search(r"[A-Za-z]", gap):
            col.pair_total, cols[-1].in_pair = True, True
        cols.append(col)
    return cols


def _read(cols: list[_Col], rows: list[int]) -> tuple[int | None, int | None, float | None, int | None, str]:
    """(step, total, loss, epoch, evidence) of the newest row of a template, by column roles."""
    n = len(cols)
    weak = ("i", "it", "batch", "batches")  # names that are a step only when the column moves like one
    named_step = [i for i, c in enumerate(cols) if c.role == "step" and c.ints and (normalise(c.name) not in weak
                  or (c.steady and c.grows and not c.in_pair))]
    epoch_i = next((i for i, c in enumerate(cols) if c.role == "epoch" and c.ints), None)
    evidence = "template-named"
    step = total = epoch = None
    # whole-run counters: named, or unnamed and steady; an a/b pair's total rides along
    counters = named_step or [i for i, c in enumerate(cols) if c.role is None and not c.named and not c.pair_total and not c.unit
                              and c.steady and c.grows and not (c.in_pair and cols[i + 1].vals[-1] < c.vals[-1])
                              and not (i == 0 and not c.in_pair and len({v - r for v, r in zip(c.vals, rows)}) == 1)]
    # (a first column that grows exactly with the line number is the paste's line numbering, not a step)
    if not named_step:
        evidence = "template-behaviour"
    if len(counters) >= 2:
        # two growing counters: micro-batches vs optimizer steps (a whole ratio k >= 2) -> the slower one
        a, b = cols[counters[0]].vals[-1], cols[counters[1]].vals[-1]
        if a > 0 and b > 0 and max(a, b) / min(a, b) >= 2 and (max(a, b) / min(a, b)).is_integer():
            counters = [counters[0] if a < b else counters[1]]
    if counters:
        i = counters[0]
        c = cols[i]
        if c.in_pair and epoch_i is not None and (c.resets or cols[i + 1].vals[-1] > 0):
            pass  # handled below as the step within the epoch
        else:
            step = int(c.vals[-1])
            if c.in_pair and i + 1 < n and cols[i + 1].constant:
                total = int(cols[i + 1].vals[-1])
            if epoch_i is not None and normalise(c.name) in weak and \
                    cols[epoch_i].vals[-1] > (0 if min(cols[epoch_i].vals) == 0 else 1):
                step = None  # "Epoch[3] Batch [200]": batches within a later epoch of unknown length
    if epoch_i is not None:
        epoch = int(cols[epoch_i].vals[-1])
        if step is None:
            # the unnamed pair after the epoch that resets (or any pair there): steps within the epoch
            pair = next((i for i in range(epoch_i + 1, n) if cols[i].in_pair and cols[i].role is None), None)
            if pair is not None and cols[pair + 1].constant:
                spe = int(cols[pair + 1].vals[-1])
                e_vals = cols[epoch_i].vals
                base = 0 if min(e_vals) == 0 else 1
                step = int((epoch - base) * spe + cols[pair].vals[-1])
                evidence = "template-behaviour"
            elif pair is None and not counters and cols[epoch_i].grows and not cols[epoch_i].in_pair:
                step = epoch  # counted in epochs ("epoch: 3" records)
    loss = None
    for want in ("loss", "loss2"):
        i = next((i for i, c in enumerate(cols) if c.role == want), None)
        if i is not None:
            loss = cols[i].vals[-1]
            break
    if loss is None and step is not None:
        # the one float column that is no counter, time, learning rate or percentage
        cand = [c for c in cols if c.role is None and not c.ints and not c.unit and not c.grows and not c.constant
                and normalise(c.name) not in _LR and not all(abs(v) < 1e-2 for v in c.vals if not math.isnan(v))
                and not c.name]
        if len(cand) == 1:
            loss = cand[0].vals[-1]
            evidence = "template-behaviour"
    return step, total, loss, epoch, evidence


_DIGITS = str.maketrans("", "", "0123456789")


def mine(lines: list[str], last: int = 500, min_repeats: int = _MIN_REPEATS, like: int | None = None) -> Mined | None:
    """The newest progress record of the last `last` lines read by template mining, or None when no
    template repeats with a step counter. like=i: only the lines shaped like line i (the same text once
    digits are dropped: a cheap test that spares templating the rest when one record's reading is checked)."""
    start = max(0, len(lines) - last)
    skeleton = lines[like].translate(_DIGITS) if like is not None else None
    groups: dict[str, list[int]] = {}
    spans: dict[int, list[tuple[int, int]]] = {}
    # newest first: a template's last 50 rows are all that is read of it
    for i in range(len(lines) - 1, start - 1, -1):
        line = lines[i]
        if len(line) > 1000 or (skeleton is not None and line.translate(_DIGITS) != skeleton) or \
                not any(ch.isdigit() for ch in line):
            continue
        key, sp = template(line)
        if not sp or len(sp) > 60:
            continue
        rows = groups.setdefault(key, [])
        if len(rows) < 50:
            rows.append(i)
            spans[i] = sp
        elif skeleton is not None:
            break
    for rows in groups.values():
        rows.reverse()
    best: Mined | None = None
    losses: list[tuple[list[int], list[float]]] = []  # loss-only templates: (rows, losses)
    counted: list[Mined] = []
    for key, rows in groups.items():
        if len(rows) < min_repeats or _EVAL_OPEN.match(key):
            continue
        cols = _columns(lines, rows, [spans[r] for r in rows])
        step, total, loss, epoch, ev = _read(cols, rows)
        if step is None:
            i = next((i for i, c in enumerate(cols) if c.role == "loss" and c.named), None)
            if i is not None:
                losses.append((rows, cols[i].vals))
            continue
        counted.append(Mined(idx=rows[-1], step=step, total=total, loss=loss, epoch=epoch, kind=ev, repeats=len(rows),
                             rows=rows))
    for m in counted:  # the template with a loss wins; then the newest
        if m.loss is None:
            m.loss = _interleaved(m.rows, losses)
        if best is None or (m.loss is not None, m.idx) > (best.loss is not None, best.idx):
            best = m
    return best


def _interleaved(rows: list[int], losses: list[tuple[list[int], list[float]]]) -> float | None:
    """The loss of a count whose record spans lines ("epoch: 3" then "train loss : 1.17"): a loss template whose
    lines fall one between each two lines of the count's template belongs to it; its line after the last count."""
    for lrows, vals in losses:
        ends = [*rows[1:], 1 << 60]
        between = [[j for j, r in enumerate(lrows) if a < r < b] for a, b in zip(rows, ends)]
        if all(len(b) == 1 for b in between[:-1]) and len(between[-1]) == 1:
            return vals[between[-1][0]]
    return None


_GUESSING = ("plain", "generic")  # rule kinds read by generic patterns, not by a known format's layout


def with_templates(flat: Sequence[str], idx: int, kind: str, step: int | None, total: int | None,
                    loss: float | None) -> tuple[int | None, int | None, float | None, str]:
    """The rules' reading, completed or overruled by template mining (models.schedmate.templates) where the
    rules are silent (no step, no loss) or only guessing (a generic pattern) about the same record: rules
    that recognised a format are sure and stay. Returns (step, total, loss, which decided)."""
    if step is not None and loss is not None and kind not in _GUESSING:
        return step, total, loss, "rules"
    silent = step is None or loss is None  # else the rules only guess: check the record's own template
    m = mine(flat if isinstance(flat, list) else list(flat), like=None if silent else idx)
    if m is None:
        return step, total, loss, "rules"
    used = False
    same = m.idx == idx
    if m.step is not None and (step is None or (same and kind in _GUESSING and m.step != step)):
        step, used = m.step, True
        total = m.total if same and m.total else total
    if loss is None and m.loss is not None and abs(m.idx - idx) <= 2:  # the loss printed with (or right by) the record
        loss, used = m.loss, True
    return step, total, loss, ("rules+templates" if used else "rules")
