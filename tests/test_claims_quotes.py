"""Every claims file quotes its paper: each cite's line exists in ../shared/papers/ and shows the quoted number.

A value matches a number printed on the cited line(s) when, in one of the forms a paper prints it (the value,
100 x a fraction quoted as a percentage, 100 x (1 - a ratio) quoted as a reduction, or 1 / a ratio the paper
states as "N x lower"), it equals that number, or rounds to it at the paper's precision where the paper
prints two or more significant digits. A value derived from a table (one printed number over another, or
1 - that, or their difference in points, e.g. a variant's eviction rate over GFS's) matches when it is within 0.1 % of such a quotient of two
numbers printed on the cited lines.
Every number in a value's ``text`` must be printed there too. The paper texts are not in the repository:
without ../shared/papers the test is skipped."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaluation.claims import load_claims
from pipelines.papers import PAPERS_DIR, RUNNERS

PAPERS = Path(__file__).resolve().parents[1].parent / "shared" / "papers"
NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+)(?:\.(\d+))?")


def numbers(text: str) -> list[tuple[float, int, int]]:
    """(value, decimals, significant digits) of each number printed in ``text``."""
    out = []
    for m in NUMBER.finditer(text):
        whole, frac = m.group(1).replace(",", ""), m.group(2) or ""
        digits = (whole + frac).lstrip("0")
        out.append((float(f"{whole}.{frac}" if frac else whole), len(frac), len(digits)))
    return out


def quoted(value: float, printed: list[tuple[float, int, int]]) -> bool:
    forms = [value, value * 100, (1 - value) * 100]
    if value != 0:
        forms.append(1 / value)
    for form in forms:
        for number, decimals, sig in printed:
            if abs(form - number) <= 1e-6 * max(1.0, abs(number)):
                return True
            if sig >= 2 and number != 0 and round(form, decimals) == number:
                return True
    if value == 0:
        return False
    pairs = [(a, b) for a, _, sa in printed for b, _, sb in printed if a != b and min(sa, sb) >= 2]
    derived = [a / b for a, b in pairs if b != 0] + [a - b for a, b in pairs]
    return any(abs(q - v) <= 1e-3 * abs(v) for q in derived for v in (value, 1 - value, 100 * value) if v != 0)


def lines_of(name: str) -> list[str]:
    return (PAPERS / name).read_text(encoding="utf-8").splitlines()


def cases():
    for paper in sorted(RUNNERS):
        cf = load_claims(PAPERS_DIR / paper / "claims.yaml")
        for claim in cf.claims:
            for pv in claim.values:
                yield pytest.param(paper, cf.paper_file, claim.id, pv, id=f"{paper}:{claim.id}:{pv.setting or '-'}")


@pytest.mark.skipif(not PAPERS.is_dir(), reason="needs ../shared/papers")
@pytest.mark.parametrize("paper, paper_file, claim_id, pv", list(cases()))
def test_every_cite_shows_the_quoted_number(paper, paper_file, claim_id, pv):
    text = []
    for name, line in pv.cites():
        assert not paper_file or name == paper_file, f"{claim_id}: cites {name}, the file quotes {paper_file}"
        assert (PAPERS / name).is_file(), f"{claim_id}: no paper text {name}"
        lines = lines_of(name)
        assert 1 <= line <= len(lines), f"{claim_id}: {name} has {len(lines)} lines, cite says {line}"
        text.append(lines[line - 1])
    printed = numbers(" ".join(text))
    if pv.value is not None:
        assert quoted(pv.value, printed), f"{claim_id} [{pv.setting}]: {pv.value} is not printed on {pv.cite}"
    for number, _, _ in numbers(pv.text):
        assert any(abs(number - p) < 1e-9 for p, _, _ in printed), \
            f"{claim_id} [{pv.setting}]: text {pv.text!r} quotes {number}, not printed on {pv.cite}"


def test_the_matcher_is_strict_enough():
    line = numbers("reduces JCT by 60.17% and 1.2× (SJF), 11,690× at the tail; 0.0 wait")
    assert quoted(0.6017, line) and quoted(1.2, line) and quoted(11690, line) and quoted(0.0, line)
    assert quoted(1 / 11690, line) and not quoted(0.65, line) and not quoted(0.3, line) and not quoted(1.3, line)
    assert quoted(1 - 0.6017, line) and quoted(60.17 / 11690, line) and not quoted(0.07, line)
