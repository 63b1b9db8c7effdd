"""The claims ledger: a paper's headline claims, checked against schedcast's own replays.

A claims file (``configs/experiments/papers/<paper>/claims.yaml``) lists each claim as printed in the
paper (where it is, what it says, the paper's number) and the measure that tests it (a key of what the
paper's runner returns, and the threshold at which the statement holds). The runner measures; this module
judges and writes the ledger: ``claims.json`` (for machines), ``claims.md`` and ``claims.html`` (the page a
reviewer opens).

Verdicts are deliberately three-valued. *holds*: the measured value meets the claim's threshold.
*does not hold*: it does not; the ledger gives the gap to the paper's number and the measured causes (the
runner's replays with one deviation switched at a time). *not testable*: the runner could not measure it
here, and says why. A claim that does not hold is a finding, not an error: ``schedcast reproduce`` exits 0
when every claim got a verdict.
"""
from __future__ import annotations

import html
import json
import math
import operator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

HOLDS, MISSES, UNTESTABLE = "holds", "does not hold", "not testable"
_OPS: dict[str, Callable[[float, float], bool]] = {
    ">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
UNITS = ("fraction", "percent", "ratio", "s", "min", "h", "ms", "count", "bool")


@dataclass
class Measurement:
    """A runner's number for one measure.

    ``value`` is None when it cannot be measured here (``not_testable`` says why). ``causes`` maps the name
    of a deviation switched off one at a time (or a cause label) to the measure's value under it, or to a
    short measured explanation; the ledger quotes the ones a claim names when the claim misses."""

    value: float | None
    detail: str = ""
    not_testable: str | None = None
    causes: dict[str, float | str] = field(default_factory=dict)


@dataclass
class ReproduceContext:
    """What a paper runner gets: the mode, a folder for its tables and plots, the seeds and the data."""

    quick: bool
    out: Path
    seeds: list[int]
    data_dir: Path
    progress: Callable[[str], None] = lambda message: None
    workers: int = 1
    #: where experiment cells are kept between runs (resumable); None: inside ``out``
    work: Path | None = None
    #: True when the user chose ``seeds`` (--seeds); else runners may use their specs' own seeds
    seeds_given: bool = False
    #: named parts of the evaluation left out (--skip; a runner's PARTS): their claims become not testable
    skip: frozenset[str] = frozenset()


class Threshold(BaseModel):
    model_config = ConfigDict(extra="forbid")
    op: Literal[">=", ">", "<=", "<"]
    value: float

    def met(self, measured: float) -> bool:
        return bool(_OPS[self.op](measured, self.value))

    def text(self) -> str:
        return f"{self.op} {_fmt(self.value)}"


class Claim(BaseModel):
    """One headline claim of a paper and how it is tested."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9.\-]*$")
    source: str = Field(min_length=1)
    statement: str = Field(min_length=1)
    paper_value: float | None = None
    paper_text: str = ""
    unit: str = "ratio"
    measure: str = Field(pattern=r"^[A-Za-z0-9_.\-]+$")
    holds_if: Threshold
    causes: list[str] = Field(default_factory=list)
    quick: bool = True

    @field_validator("unit")
    @classmethod
    def _unit(cls, unit: str) -> str:
        if unit not in UNITS:
            raise ValueError(f"unit {unit!r} is not one of {', '.join(UNITS)}")
        return unit


class ClaimsFile(BaseModel):
    """A paper's claims file: ``paper``, ``title`` and the claims (ids unique)."""

    model_config = ConfigDict(extra="forbid")
    paper: str = Field(pattern=r"^[a-z0-9\-]+$")
    title: str = Field(min_length=1)
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
    try:
        return ClaimsFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ValueError(f"{path}: {where}: {err['msg']}") from None


@dataclass
class Verdict:
    claim: str
    source: str
    statement: str
    verdict: str
    measured: float | None
    unit: str
    paper_value: float | None
    paper_text: str
    threshold: str
    gap: float | None = None
    detail: str = ""
    reason: str = ""
    causes: dict[str, float | str] = field(default_factory=dict)


def judge(claim: Claim, measured: Measurement | None) -> Verdict:
    """The verdict on one claim from the runner's measurement (a missing measurement is not testable)."""
    base = dict(claim=claim.id, source=claim.source, statement=claim.statement, unit=claim.unit,
                paper_value=claim.paper_value, paper_text=claim.paper_text, threshold=claim.holds_if.text())
    if measured is None:
        return Verdict(verdict=UNTESTABLE, measured=None, reason="the runner returned no measurement for "
                       f"{claim.measure!r} in this mode", **base)
    value = measured.value
    if measured.not_testable or value is None or not math.isfinite(float(value)):
        reason = measured.not_testable or ("the measurement is not a finite number" if value is not None
                                           else "no value measured")
        return Verdict(verdict=UNTESTABLE, measured=None, reason=reason, detail=measured.detail, **base)
    value = float(value)
    holds = claim.holds_if.met(value)
    gap = value - claim.paper_value if claim.paper_value is not None else None
    causes = {} if holds else {k: (float(v) if not isinstance(v, str) else v) for k, v in measured.causes.items()
                               if (not claim.causes or k in claim.causes)
                               and (isinstance(v, str) or math.isfinite(float(v)))}
    return Verdict(verdict=HOLDS if holds else MISSES, measured=value, gap=gap, detail=measured.detail,
                   causes=causes, **base)


def judge_all(claims: ClaimsFile, measurements: dict[str, Measurement], quick: bool = False) -> list[Verdict]:
    out = []
    for claim in claims.claims:
        if quick and not claim.quick:
            out.append(Verdict(claim=claim.id, source=claim.source, statement=claim.statement, verdict=UNTESTABLE,
                               measured=None, unit=claim.unit, paper_value=claim.paper_value,
                               paper_text=claim.paper_text, threshold=claim.holds_if.text(),
                               reason="not run in --quick mode (run `schedcast reproduce` without --quick)"))
            continue
        out.append(judge(claim, measurements.get(claim.measure)))
    return out


def counts(verdicts: list[Verdict]) -> dict[str, int]:
    return {v: sum(1 for x in verdicts if x.verdict == v) for v in (HOLDS, MISSES, UNTESTABLE)}


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


def _paper(v: Verdict) -> str:
    number = _fmt(v.paper_value, v.unit) if v.paper_value is not None else ""
    if v.paper_text and number:
        return f"{number} ({v.paper_text})"
    return number or v.paper_text or "–"


#: Public names of the two cell formatters (the reproduce CLI prints the ledger's table with them).
format_value, paper_cell = _fmt, _paper


def _why(v: Verdict) -> str:
    if v.verdict == UNTESTABLE:
        return v.reason
    parts = [v.detail] if v.detail else []
    if v.verdict == MISSES and v.causes:
        parts.append("causes measured: " + "; ".join(f"{k}: {_fmt(c, v.unit)}" for k, c in v.causes.items()))
    return " ".join(parts)


def write_ledger(out: str | Path, claims: ClaimsFile, verdicts: list[Verdict], meta: dict[str, Any]) -> dict[str, Path]:
    """claims.json, claims.md and claims.html in ``out``; returns their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tally = counts(verdicts)
    doc = {"paper": claims.paper, "title": claims.title, "notes": claims.notes, "counts": tally, "meta": meta,
           "claims": [asdict(v) for v in verdicts]}
    paths = {"json": out / "claims.json", "md": out / "claims.md", "html": out / "claims.html"}
    paths["json"].write_text(json.dumps(doc, indent=1, default=_json_default, allow_nan=False) + "\n")
    paths["md"].write_text(_markdown(claims, verdicts, meta, tally))
    paths["html"].write_text(_html(claims, verdicts, meta, tally))
    return paths


def _json_default(value: Any) -> Any:
    return str(value)


def _markdown(claims: ClaimsFile, verdicts: list[Verdict], meta: dict[str, Any], tally: dict[str, int]) -> str:
    lines = [f"# {claims.title}: claims ledger", "",
             f"{tally[HOLDS]} hold, {tally[MISSES]} do not hold, {tally[UNTESTABLE]} not testable here. "
             f"Mode: {'quick' if meta.get('quick') else 'full'}; code {meta.get('code_version', '?')}; "
             f"seeds {meta.get('seeds')}; {meta.get('machine', '')}; {meta.get('wall_s', 0):.0f} s.", ""]
    if claims.notes:
        lines += [claims.notes.strip(), ""]
    lines += ["| claim | source | statement | paper | schedcast | holds if | verdict | why / measured causes |",
              "|---|---|---|---|---|---|---|---|"]
    for v in verdicts:
        cells = [v.claim, v.source, v.statement, _paper(v), _fmt(v.measured, v.unit), v.threshold, v.verdict, _why(v)]
        lines.append("| " + " | ".join(c.replace("|", "/").replace("\n", " ") for c in cells) + " |")
    lines += ["", f"Command: `{meta.get('command', '')}`", ""]
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse}
td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top;font-size:14px}th{background:#f4f4f4}
.holds{background:#e3f6e3}.does-not-hold{background:#fde2e2}.not-testable{background:#f2f2f2}
.v{font-weight:600;white-space:nowrap}caption{text-align:left;padding:6px 0}"""


def _html(claims: ClaimsFile, verdicts: list[Verdict], meta: dict[str, Any], tally: dict[str, int]) -> str:
    e = html.escape
    rows = []
    for v in verdicts:
        css = v.verdict.replace(" ", "-")
        rows.append(f"<tr class='{css}' id='{e(v.claim)}'><td>{e(v.claim)}</td><td>{e(v.source)}</td>"
                    f"<td>{e(v.statement)}</td><td>{e(_paper(v))}</td><td>{e(_fmt(v.measured, v.unit))}</td>"
                    f"<td>{e(v.threshold)}</td><td class='v'>{e(v.verdict)}</td><td>{e(_why(v))}</td></tr>")
    notes = f"<p>{e(claims.notes)}</p>" if claims.notes else ""
    return (f"<!doctype html><html lang='en'><head><meta charset='utf-8'><title>{e(claims.title)} – claims"
            f"</title><style>{_CSS}</style></head><body><h1>{e(claims.title)}: claims ledger</h1>"
            f"<p><b>{tally[HOLDS]}</b> hold, <b>{tally[MISSES]}</b> do not hold, <b>{tally[UNTESTABLE]}</b> not "
            f"testable here. Mode: {'quick' if meta.get('quick') else 'full'}; code {e(str(meta.get('code_version')))};"
            f" seeds {e(str(meta.get('seeds')))}; {e(str(meta.get('machine', '')))}; "
            f"{float(meta.get('wall_s', 0)):.0f} s.</p>{notes}<table><caption>Each claim as the paper states "
            "it, our number, the threshold at which it holds, and for a miss the measured causes (one deviation "
            "switched at a time).</caption><tr><th>claim</th><th>source</th><th>statement</th><th>paper</th>"
            "<th>schedcast</th><th>holds if</th><th>verdict</th><th>why / measured causes</th></tr>"
            + "".join(rows) + f"</table><p>Command: <code>{e(str(meta.get('command', '')))}</code></p></body></html>\n")
