"""The claims ledger: a paper's headline claims, quoted from the paper, checked against schedcast's replays.

A claims file (``configs/experiments/papers/<paper>/claims.yaml``, format in /work/CLAIMS_FORMAT.md and the
models below) lists each claim as the paper states it: where (``source``), what (``statement``, ``metric``,
``comparator``), and the paper's own number per setting with its line (``values: [{setting, value, cite}]``,
``cite`` = ``paper.txt:LINE``). It says how our measure reads (``unit``, ``direction``, the no-effect
``null``), what kind of claim it is (an ``effect``, a ``parity`` "unchanged" claim within ``margin``, or a
``threshold``), and what the setting must show for the comparison to mean anything (``preconditions``).

The runner measures, one sample per seed; this module judges and writes the ledger: ``claims.json`` (for
machines), ``claims.md`` and ``claims.html`` (the page a reviewer opens). Verdicts are graded and use the
95 % Student-t interval over the seed samples:

* *holds*: the effect is beyond noise (the interval excludes ``null``) and reaches the paper's figure (the
  paper's number, or the lowest of its range, lies within or below the interval's far end);
* *holds in direction*: beyond noise, the paper's sign, smaller than the paper's figure;
* *does not hold*: no effect beyond noise (the interval touches ``null``) or the opposite effect;
* *not testable*: ``testable: false``, a missing or non-finite measure (0/0), a precondition the setting does
  not meet, or fewer than two seeds in a full run — with the reason.

A tie is never a hold. A claim that does not hold is a finding, not an error: ``schedcast reproduce`` exits
0 when every claim got a verdict. Every verdict carries the measured causes (the measure with one deviation
switched at a time) and the claim's caveats. Nothing here knows any paper.
"""
from __future__ import annotations

import html
import json
import math
import operator
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Mapping

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

HOLDS, DIRECTION, MISSES, UNTESTABLE = "holds", "holds in direction", "does not hold", "not testable"
VERDICTS = (HOLDS, DIRECTION, MISSES, UNTESTABLE)
_RANK = {MISSES: 0, DIRECTION: 1, HOLDS: 2}
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
UNITS = ("fraction", "percent", "ratio", "s", "min", "h", "ms", "count", "bool")
CITE = re.compile(r"^[a-z0-9_\-]+\.txt:\d+$")
SMOKE = ("SMOKE TEST (--quick): small replays, few seeds; a check that the ledger runs, not evidence "
         "for or against any claim.")


# -- what a runner returns ---------------------------------------------------------------------------
@dataclass
class Measurement:
    """A runner's number for one measure (``<measure>`` or ``<measure>@<setting>``).

    ``samples`` holds ONE VALUE PER SEED (in seed order); the ledger's interval comes from them and
    ``value`` (the mean) is filled from them when omitted. Pass ``samples`` by keyword. ``interval`` is for a
    measure whose spread does not come from seeds (e.g. a bootstrap over many latency samples): ``(lo, hi)``
    at 95 %, with ``n`` the number of samples it rests on. ``value`` None or ``not_testable``: cannot be
    measured here (say why). ``causes``: deviation (switched one at a time) -> the measure under it, or a
    short measured explanation. ``caveats`` are printed with every verdict that reads this measure."""

    value: float | None = None
    detail: str = ""
    not_testable: str | None = None
    causes: dict[str, float | str] = field(default_factory=dict)
    samples: list[float] = field(default_factory=list)
    caveats: list[str] = field(default_factory=list)
    interval: tuple[float, float] | None = None
    n: int | None = None

    def __post_init__(self) -> None:
        self.samples = [float(s) if s is not None else math.nan for s in self.samples]
        if self.value is None and self.samples and not self.not_testable:
            finite = all(math.isfinite(s) for s in self.samples)
            self.value = sum(self.samples) / len(self.samples) if finite else math.nan


@dataclass
class ReproduceContext:
    """What a paper runner gets: the mode, a folder for its tables and plots, the seeds and the data."""

    quick: bool
    out: Path
    seeds: list[int]
    data_dir: Path
    progress: Callable[[str], None] = lambda message: None
    workers: int = 1
    #: where experiment cells are kept between runs (resumable); by default inside ``out`` (--cache DIR)
    work: Path | None = None
    #: True when the user chose ``seeds`` (--seeds); else runners may use their specs' own seeds
    seeds_given: bool = False
    #: named parts of the evaluation left out (--skip; a runner's PARTS): their claims become not testable
    skip: frozenset[str] = frozenset()
    #: the claims to measure (--claim): None for all; a runner may use it to restrict its work
    claims: frozenset[str] | None = None
    #: per setting, what the ledger page states (a runner fills it): trace, cluster, gpus, offered_load,
    #: seeds, calibration [{target, paper, cite, reached}], tables (paths under ``out``)
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)

    def wants(self, *claim_ids: str) -> bool:
        """True when any of ``claim_ids`` is to be measured (always, unless --claim restricted the run)."""
        return self.claims is None or any(c in self.claims for c in claim_ids)


# -- the claims file ---------------------------------------------------------------------------------
class Threshold(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: Literal[">=", ">", "<=", "<"]
    value: float

    def met(self, measured: float) -> bool:
        return bool(_OPS[self.op](measured, self.value))

    def text(self) -> str:
        return f"{self.op} {_fmt(self.value)}"


class Condition(Threshold):
    """A precondition: ``<measure>[@setting] op value``, and in words why the claim needs it."""

    measure: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    why: str = ""


class PaperValue(BaseModel):
    """The paper's own number for one setting, and the line it is printed on."""

    model_config = ConfigDict(extra="forbid")
    setting: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.\-+]+$")
    value: float | None = None
    cite: str
    text: str = ""

    @field_validator("cite")
    @classmethod
    def _cite(cls, cite: str) -> str:
        for part in cite.split(","):
            if not CITE.match(part.strip()):
                raise ValueError(f"cite {cite!r}: each part must read paper.txt:LINE")
        return cite

    def cites(self) -> list[tuple[str, int]]:
        return [(p.strip().split(":")[0], int(p.strip().split(":")[1])) for p in self.cite.split(",")]


class Claim(BaseModel):
    """One headline claim of a paper, the paper's numbers, and how it is tested."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    source: str = Field(min_length=1)
    statement: str = Field(min_length=1)
    metric: str = Field(min_length=1)
    comparator: str = Field(min_length=1)
    unit: str = "ratio"
    direction: Literal["higher", "lower"] = "higher"
    null: float | None = None
    kind: Literal["effect", "parity", "threshold"] = "effect"
    margin: float | None = Field(default=None, ge=0)
    measure: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    values: list[PaperValue] = Field(min_length=1)
    holds_if: Threshold | None = None
    preconditions: list[Condition] = Field(default_factory=list)
    causes: list[str] = Field(default_factory=list)
    caveats: str = ""
    quick: bool = True
    testable: bool = True
    why_not: str = ""

    @field_validator("unit")
    @classmethod
    def _unit(cls, unit: str) -> str:
        if unit not in UNITS:
            raise ValueError(f"unit {unit!r} is not one of {', '.join(UNITS)}")
        return unit

    @model_validator(mode="after")
    def _consistent(self) -> "Claim":
        if self.kind in ("effect", "parity") and self.null is None:
            raise ValueError(f"claim {self.id}: a {self.kind} claim needs 'null' (the no-effect value)")
        if self.kind == "parity" and self.margin is None:
            raise ValueError(f"claim {self.id}: a parity claim needs 'margin'")
        if self.kind == "threshold" and self.holds_if is None:
            raise ValueError(f"claim {self.id}: a threshold claim needs 'holds_if'")
        if not self.testable and not self.why_not.strip():
            raise ValueError(f"claim {self.id}: testable: false needs 'why_not'")
        settings = [v.setting for v in self.values]
        if len(set(settings)) != len(settings):
            raise ValueError(f"claim {self.id}: each setting appears once in 'values'")
        if None in settings and len(settings) > 1:
            raise ValueError(f"claim {self.id}: with several values every one names its 'setting'")
        return self

    def key(self, setting: str | None, measure: str | None = None) -> str:
        measure = measure or self.measure
        return f"{measure}@{setting}" if setting else measure

    def settings(self) -> list[str | None]:
        return [v.setting for v in self.values]


class ClaimsFile(BaseModel):
    """A paper's claims file: ``paper``, ``title``, ``paper_file`` and the claims (ids unique)."""

    model_config = ConfigDict(extra="forbid")
    paper: str = Field(pattern=r"^[a-z0-9\-]+$")
    title: str = Field(min_length=1)
    paper_file: str = Field(default="", pattern=r"^([a-z0-9_\-]+\.txt)?$")
    notes: str = ""
    claims: list[Claim] = Field(min_length=1)

    @field_validator("claims")
    @classmethod
    def _unique(cls, claims: list[Claim]) -> list[Claim]:
        ids = [c.id for c in claims]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise ValueError(f"claim ids must be unique: {', '.join(dup)}")
        return claims

    def only(self, ids: set[str] | frozenset[str] | None) -> "ClaimsFile":
        """The same file restricted to ``ids`` (a one-line error naming unknown ids)."""
        if ids is None:
            return self
        unknown = sorted(set(ids) - {c.id for c in self.claims})
        if unknown:
            raise ValueError(f"{self.paper} has no claim {', '.join(map(repr, unknown))} "
                             f"(its claims: {', '.join(c.id for c in self.claims)})")
        return self.model_copy(update={"claims": [c for c in self.claims if c.id in ids]})


def load_claims(path: str | Path) -> ClaimsFile:
    """Read and validate a claims file (safe YAML; one-line errors naming the file and the field)."""
    import yaml
    from pydantic import ValidationError

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ValueError(f"{path}: cannot read the claims file ({exc.strerror or exc})") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{path}: not valid YAML ({' '.join(str(exc).split())})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: a claims file is a mapping with 'paper', 'title' and 'claims'")
    for claim in data.get("claims") or []:
        if isinstance(claim, dict) and None in claim:  # YAML reads the key `null:` as None
            claim["null"] = claim.pop(None)
    try:
        return ClaimsFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"{path}: {where}: {err['msg']}") from None


# -- intervals ---------------------------------------------------------------------------------------
def t_quantile(df: int, q: float = 0.975) -> float:
    """Student t quantile (scipy, imported lazily)."""
    from scipy.stats import t

    return float(t.ppf(q, df))


def interval(samples: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """(mean, lo, hi): the Student-t interval of the mean of ``samples`` (n >= 2)."""
    n = len(samples)
    if n < 2:
        raise ValueError("an interval needs at least two samples")
    mean = sum(samples) / n
    sd = math.sqrt(sum((s - mean) ** 2 for s in samples) / (n - 1))
    half = t_quantile(n - 1, 0.5 + level / 2) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


# -- verdicts ----------------------------------------------------------------------------------------
@dataclass
class SettingVerdict:
    setting: str | None
    verdict: str
    paper_value: float | None
    cite: str
    paper_text: str = ""
    mean: float | None = None
    lo: float | None = None
    hi: float | None = None
    n: int = 0
    samples: list[float] = field(default_factory=list)
    reason: str = ""
    detail: str = ""
    one_seed: bool = False
    causes: dict[str, float | str] = field(default_factory=dict)


@dataclass
class Verdict:
    claim: str
    source: str
    statement: str
    metric: str
    comparator: str
    kind: str
    unit: str
    direction: str
    null: float | None
    verdict: str
    settings: list[SettingVerdict]
    #: the deciding setting's mean (the one that set the verdict); None when not testable
    measured: float | None = None
    threshold: str = ""
    reason: str = ""
    causes: dict[str, float | str] = field(default_factory=dict)
    caveats: list[str] = field(default_factory=list)

    @property
    def paper_value(self) -> float | None:
        return next((s.paper_value for s in self.settings if s.paper_value is not None), None)


def _rule(claim: Claim) -> str:
    """The claim's test in words (printed as 'holds if')."""
    if claim.kind == "parity":
        return f"within {_fmt(claim.null)} ± {_fmt(claim.margin)}"
    if claim.kind == "threshold":
        return claim.holds_if.text() if claim.holds_if else ""
    side = ">" if claim.direction == "higher" else "<"
    target = "; reaches the paper's figure" if any(v.value is not None for v in claim.values) else ""
    if claim.holds_if is not None and all(v.value is None for v in claim.values):
        target = f"; reaches {claim.holds_if.text()}"
    return f"interval {side} {_fmt(claim.null)}{target}"


def _lookup(measurements: Mapping[str, Measurement], key: str, setting: str | None) -> Measurement | None:
    m = measurements.get(f"{key}@{setting}") if setting else None
    return m if m is not None else measurements.get(key)


def _effect(claim: Claim, target: float | None, lo: float, hi: float) -> tuple[str, str]:
    null = float(claim.null)
    up = claim.direction == "higher"
    beyond = lo > null if up else hi < null
    if not beyond:
        opposite = hi < null if up else lo > null
        return MISSES, ("the opposite effect" if opposite else f"no effect beyond noise (the interval contains "
                        f"the no-effect value {_fmt(null)})")
    if target is None:
        return HOLDS, ""
    reached = hi >= target if up else lo <= target
    return (HOLDS, "") if reached else (DIRECTION, f"beyond noise but short of the paper's {_fmt(target)}")


def _judge_setting(claim: Claim, pv: PaperValue, measurements: Mapping[str, Measurement],
                   quick: bool) -> SettingVerdict:
    sv = SettingVerdict(setting=pv.setting, verdict=UNTESTABLE, paper_value=pv.value, cite=pv.cite,
                        paper_text=pv.text)
    if not claim.testable:
        sv.reason = claim.why_not.strip()
        return sv
    key = claim.key(pv.setting)
    m = _lookup(measurements, claim.measure, pv.setting)
    if m is None:
        sv.reason = f"the runner returned no measurement for {key!r} in this mode"
        return sv
    sv.detail = m.detail
    sv.causes = {k: (v if isinstance(v, str) else float(v)) for k, v in m.causes.items()
                 if (not claim.causes or k in claim.causes) and (isinstance(v, str) or math.isfinite(float(v)))}
    if m.not_testable:
        sv.reason = m.not_testable
        return sv
    samples = list(m.samples) or ([float(m.value)] if m.value is not None else [])
    sv.samples = samples
    if not samples:
        sv.reason = "no value measured"
        return sv
    if not all(math.isfinite(s) for s in samples):
        sv.reason = "the measurement is not a finite number (0/0, a zero baseline or a missing cell)"
        return sv
    for cond in claim.preconditions:
        c = _lookup(measurements, cond.measure, pv.setting)
        cv = None if c is None else c.value
        if cv is None or not math.isfinite(float(cv)):
            sv.reason = f"precondition {cond.measure} {cond.text()} not measured in this setting"
            return sv
        if not cond.met(float(cv)):
            sv.reason = (f"setting lacks {cond.why or cond.measure}: {cond.measure} = {_fmt(float(cv))} "
                         f"(needs {cond.text()})")
            return sv
    sv.n = m.n if m.n is not None else len(samples)
    if m.interval is not None:
        lo, hi = sorted(float(x) for x in m.interval)
        mean = float(m.value) if m.value is not None else (lo + hi) / 2
    elif len(samples) >= 2:
        mean, lo, hi = interval(samples)
    elif quick:
        mean = lo = hi = samples[0]
        sv.one_seed = True
    else:
        sv.mean = samples[0]
        sv.reason = "one seed: no interval (a full ledger needs >= 2 seeds; run with --seeds 0 1 2)"
        return sv
    sv.mean, sv.lo, sv.hi = mean, lo, hi
    if claim.kind == "effect":
        target = pv.value if pv.value is not None else (claim.holds_if.value if claim.holds_if else None)
        sv.verdict, sv.reason = _effect(claim, target, lo, hi)
    elif claim.kind == "parity":
        a, b = float(claim.null) - float(claim.margin), float(claim.null) + float(claim.margin)
        if a <= lo and hi <= b:
            sv.verdict = HOLDS
        elif hi < a or lo > b:
            sv.verdict, sv.reason = MISSES, f"the interval lies outside {_fmt(claim.null)} ± {_fmt(claim.margin)}"
        else:
            sv.verdict, sv.reason = UNTESTABLE, "the interval is too wide to tell (straddles the margin)"
    else:
        rule = claim.holds_if
        if rule.met(lo) and rule.met(hi):
            sv.verdict = HOLDS
        elif not rule.met(lo) and not rule.met(hi):
            sv.verdict, sv.reason = MISSES, f"the interval lies outside {rule.text()}"
        elif rule.met(mean):
            sv.verdict, sv.reason = DIRECTION, f"the mean meets {rule.text()}, the interval straddles it"
        else:
            sv.verdict, sv.reason = MISSES, f"the mean misses {rule.text()} (the interval straddles it)"
    return sv


def judge(claim: Claim, measurements: Mapping[str, Measurement] | Measurement | None,
          quick: bool = False) -> Verdict:
    """The verdict on one claim: per setting, then the claim's (the worst testable setting decides)."""
    if isinstance(measurements, Measurement) or measurements is None:
        measurements = {} if measurements is None else {claim.key(s): measurements for s in claim.settings()}
    settings = [_judge_setting(claim, pv, measurements, quick) for pv in claim.values]
    tested = [s for s in settings if s.verdict != UNTESTABLE]
    caveats = [claim.caveats.strip()] if claim.caveats.strip() else []
    for pv in claim.values:
        m = _lookup(measurements, claim.measure, pv.setting)
        caveats += [c for c in (m.caveats if m else []) if c not in caveats]
    causes: dict[str, float | str] = {}
    for s in settings:
        for k, v in s.causes.items():
            causes[f"{k} [{s.setting}]" if s.setting and len(settings) > 1 else k] = v
    v = Verdict(claim=claim.id, source=claim.source, statement=claim.statement, metric=claim.metric,
                comparator=claim.comparator, kind=claim.kind, unit=claim.unit, direction=claim.direction,
                null=claim.null, verdict=UNTESTABLE, settings=settings, threshold=_rule(claim), causes=causes,
                caveats=caveats)
    if not tested:
        reasons = list(dict.fromkeys(s.reason for s in settings if s.reason))
        v.reason = "; ".join(reasons)
        return v
    worst = min(tested, key=lambda s: _RANK[s.verdict])
    v.verdict, v.measured = worst.verdict, worst.mean
    notes = []
    if len(settings) > 1:
        notes.append(f"decided by {worst.setting}")
    if len(tested) < len(settings):
        notes.append(f"{len(settings) - len(tested)} of {len(settings)} settings not testable")
    if any(s.one_seed for s in tested):
        notes.append("(1 seed)")
    v.reason = "; ".join(filter(None, [worst.reason, *notes]))
    return v


def judge_all(claims: ClaimsFile, measurements: Mapping[str, Measurement], quick: bool = False) -> list[Verdict]:
    out = []
    for claim in claims.claims:
        if quick and not claim.quick:
            v = judge(claim, {}, quick)
            v.verdict, v.measured = UNTESTABLE, None
            v.reason = "not run in --quick mode (run `schedcast reproduce` without --quick)"
            for s in v.settings:
                s.verdict, s.reason = UNTESTABLE, v.reason
            out.append(v)
            continue
        out.append(judge(claim, measurements, quick))
    return out


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    return {v: sum(1 for x in verdicts if x.verdict == v) for v in VERDICTS}


# -- writing ----------------------------------------------------------------------------------------
def _fmt(value: Any, unit: str = "") -> str:
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if unit == "percent":
        return f"{v:.1f} %"
    if unit == "fraction":
        return f"{v * 100:.1f} %"
    if unit == "bool":
        return "yes" if v else "no"
    if abs(v) >= 1000:
        text = f"{v:,.0f}"
    elif abs(v) >= 10:
        text = f"{v:.1f}"
    else:
        text = f"{v:.4g}"
    return f"{text} {unit}" if unit in ("s", "min", "h", "ms") else text


def paper_cell(s: SettingVerdict, unit: str) -> str:
    number = _fmt(s.paper_value, unit) if s.paper_value is not None else ""
    text = s.paper_text if s.paper_text and s.paper_text != number else ""
    body = " ".join(filter(None, [number, f"({text})" if number and text else text])) or "–"
    return f"{body} [{s.cite}]"


def ours_cell(s: SettingVerdict, unit: str) -> str:
    """Our mean ± the interval's half-widths, with n; '–' for what was not measured."""
    if s.mean is None:
        return "–"
    if s.lo is None or s.hi is None or s.one_seed:
        return f"{_fmt(s.mean, unit)} (1 seed)" if s.one_seed else f"{_fmt(s.mean, unit)} (n={s.n})"
    return f"{_fmt(s.mean, unit)} [{_fmt(s.lo, unit)}, {_fmt(s.hi, unit)}] (n={s.n})"


#: Public name of the value formatter (the reproduce CLI and the docs table use it).
format_value = _fmt


def _why(v: Verdict, s: SettingVerdict) -> str:
    parts = [s.reason] if s.reason else []
    if s.verdict != UNTESTABLE and s.detail:
        parts.append(s.detail)
    if s.causes:
        parts.append("causes measured: " + "; ".join(f"{k}: {_fmt(c, v.unit)}" for k, c in s.causes.items()))
    if v.caveats:
        parts.append("caveats: " + "; ".join(v.caveats))
    return " ".join(parts)


def _label(verdict: str, s: SettingVerdict) -> str:
    return f"{verdict} (1 seed)" if s.one_seed and verdict != UNTESTABLE else verdict


def write_ledger(out: str | Path, claims: ClaimsFile, verdicts: list[Verdict], meta: dict[str, Any]) -> dict[str, Path]:
    """claims.json, claims.md and claims.html in ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tally = counts(verdicts)
    doc: dict[str, Any] = {}
    if meta.get("quick"):
        doc["smoke_test"] = SMOKE
    doc.update({"paper": claims.paper, "title": claims.title, "paper_file": claims.paper_file,
                "notes": claims.notes, "counts": tally, "meta": meta, "claims": [asdict(v) for v in verdicts]})
    paths = {"json": out / "claims.json", "md": out / "claims.md", "html": out / "claims.html"}
    paths["json"].write_text(json.dumps(_clean(doc), indent=1, default=str, allow_nan=False) + "\n")
    paths["md"].write_text(_markdown(claims, verdicts, meta, tally))
    paths["html"].write_text(_html(claims, verdicts, meta, tally))
    return paths


def _clean(obj: Any) -> Any:
    """NaN / inf as None so the JSON stays strict."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _summary(meta: dict[str, Any], tally: dict[str, int]) -> str:
    return (f"{tally[HOLDS]} hold, {tally[DIRECTION]} hold in direction, {tally[MISSES]} do not hold, "
            f"{tally[UNTESTABLE]} not testable here. Mode: {'quick (smoke test)' if meta.get('quick') else 'full'}; "
            f"code {meta.get('code_version', '?')}; seeds {meta.get('seeds')}; {meta.get('machine', '')}; "
            f"{float(meta.get('wall_s', 0)):.0f} s.")


def _settings_rows(meta: dict[str, Any]) -> tuple[list[list[str]], list[list[str]]]:
    """(setting rows, calibration rows) from meta['settings']."""
    rows, calib = [], []
    for name, s in (meta.get("settings") or {}).items():
        s = dict(s or {})
        tables = s.pop("tables", []) or []
        cal = s.pop("calibration", []) or []
        known = [str(s.pop(k)) if k in s else "–" for k in ("trace", "cluster", "gpus", "offered_load", "seeds")]
        other = "; ".join(f"{k}: {v}" for k, v in s.items())
        rows.append([name, *known, other, ", ".join(str(t) for t in tables)])
        for c in cal:
            calib.append([name, str(c.get("target", "")), _fmt(c.get("paper")), str(c.get("cite", "")),
                          _fmt(c.get("reached"))])
    return rows, calib


_SETTING_HEAD = ["setting", "trace", "cluster", "GPUs", "offered load", "seeds", "other", "tables"]
_CAL_HEAD = ["setting", "calibration target", "paper", "cite", "reached"]
_HEAD = ["claim", "setting", "source", "statement (metric; vs comparator)", "paper [cite]",
         "schedcast: mean [95 % interval] (n)", "test", "verdict", "why / causes / caveats"]


def _claim_rows(verdicts: list[Verdict]) -> list[tuple[Verdict, SettingVerdict, list[str]]]:
    rows = []
    for v in verdicts:
        for i, s in enumerate(v.settings):
            first = i == 0
            rows.append((v, s, [v.claim if first else "", s.setting or "–", v.source if first else "",
                                f"{v.statement} ({v.metric}; vs {v.comparator})" if first else "",
                                paper_cell(s, v.unit), ours_cell(s, v.unit), v.threshold if first else "",
                                _label(s.verdict, s), _why(v, s)]))
    return rows


def _md_table(head: list[str], rows: list[list[str]]) -> list[str]:
    esc = lambda c: str(c).replace("|", "/").replace("\n", " ")  # noqa: E731
    return ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)] + \
        ["| " + " | ".join(esc(c) for c in r) + " |" for r in rows]


def _markdown(claims: ClaimsFile, verdicts: list[Verdict], meta: dict[str, Any], tally: dict[str, int]) -> str:
    lines = [f"**{SMOKE}**", ""] if meta.get("quick") else []
    lines += [f"# {claims.title}: claims ledger", "", _summary(meta, tally), ""]
    lines += ["Verdict per claim: the worst of its testable settings. Per setting: *holds* = beyond noise "
              "(95 % interval excludes the no-effect value) and the paper's figure within reach; *holds in "
              "direction* = beyond noise, smaller; *does not hold* = within noise or opposite; *not testable* = "
              "with the reason.", ""]
    if claims.notes:
        lines += [claims.notes.strip(), ""]
    rows, calib = _settings_rows(meta)
    if rows:
        lines += ["## Settings", ""] + _md_table(_SETTING_HEAD, [r[:-1] + [", ".join(f"[{t}]({t})" for t in r[-1].split(", ") if t)] for r in rows]) + [""]
    if calib:
        lines += ["### Calibration", ""] + _md_table(_CAL_HEAD, calib) + [""]
    lines += ["## Claims", ""] + _md_table(_HEAD, [r for _, _, r in _claim_rows(verdicts)])
    lines += ["", f"Command: `{meta.get('command', '')}`", ""]
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1500px}table{border-collapse:collapse;margin-bottom:1em}
td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;font-size:14px}th{background:#f4f4f4}
.holds{background:#e3f6e3}.holds-in-direction{background:#f3f7dc}.does-not-hold{background:#fde2e2}
.not-testable{background:#f2f2f2}.v{font-weight:600;white-space:nowrap}.smoke{background:#fff3cd;padding:8px;font-weight:600}"""


def _html_table(head: list[str], rows: list[list[str]], css: list[str] | None = None, raw_last: bool = False) -> str:
    e = html.escape
    body = []
    for i, r in enumerate(rows):
        cls = f" class='{css[i]}'" if css else ""
        cells = [f"<td>{e(str(c))}</td>" for c in r]
        if raw_last:
            cells[-1] = f"<td>{r[-1]}</td>"
        body.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    return "<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>" + "".join(body) + "</table>"


def _html(claims: ClaimsFile, verdicts: list[Verdict], meta: dict[str, Any], tally: dict[str, int]) -> str:
    e = html.escape
    smoke = f"<p class='smoke'>{e(SMOKE)}</p>" if meta.get("quick") else ""
    rows, calib = _settings_rows(meta)
    for r in rows:
        r[-1] = ", ".join(f"<a href='{e(t)}'>{e(t)}</a>" for t in r[-1].split(", ") if t)
    settings = (f"<h2>Settings</h2>{_html_table(_SETTING_HEAD, rows, raw_last=True)}" if rows else "")
    if calib:
        settings += f"<h3>Calibration</h3>{_html_table(_CAL_HEAD, calib)}"
    crow = _claim_rows(verdicts)
    table = _html_table(_HEAD, [r for _, _, r in crow], css=[s.verdict.replace(" ", "-") for _, s, _ in crow])
    notes = f"<p>{e(claims.notes)}</p>" if claims.notes else ""
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(claims.title)} – claims"
            f"</title><style>{_CSS}</style></head><body>{smoke}<h1>{e(claims.title)}: claims ledger</h1>"
            f"<p>{e(_summary(meta, tally))}</p>{notes}{settings}<h2>Claims</h2>{table}"
            f"<p>Command: <code>{e(str(meta.get('command', '')))}</code></p></body></html>\n")
