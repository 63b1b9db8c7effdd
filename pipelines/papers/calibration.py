"""What fitting a generator on a paper's *baseline* figures means, shared by the papers' calibrators
(``lazer_calibrate``, ``lucid_calibrate``): the targets with their quotes, the factor-of-2 test, the error a
grid search minimises and the rows a ledger's settings page shows. Only the baselines' figures are targets;
the proposed system's numbers never are."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Iterable


@dataclass(frozen=True)
class Target:
    """One baseline figure the paper reports: ``key`` in the measured dict, the paper's value and line.
    ``weight`` 0 shows a figure without fitting it."""

    key: str
    text: str
    paper: float
    cite: str
    weight: float = 1.0


def within_factor(value: float, paper: float, factor: float = 2.0) -> bool:
    return paper / factor <= value <= paper * factor if paper > 0 else value == 0


def fit_error(targets: Iterable[Target], reached: dict[str, float]) -> float:
    """Sum over targets of weight x |log2(reached / paper)| (a reached 0 counts as 1/100 of the paper's)."""
    total = 0.0
    for t in targets:
        value = max(reached.get(t.key, 0.0), t.paper / 100.0)
        total += t.weight * abs(math.log2(value / t.paper))
    return total


def targets_met(targets: Iterable[Target], reached: dict[str, float]) -> int:
    """How many fitted targets (weight > 0) are reached within a factor of 2."""
    return sum(within_factor(reached.get(t.key, 0.0), t.paper) for t in targets if t.weight > 0)


def fit_table(targets: Iterable[Target], reached: dict[str, float]) -> list[dict[str, Any]]:
    """The fit as ledger rows (ctx.settings[...]['calibration']): target, paper, cite, reached, within 2x."""
    return [{"target": t.text, "paper": t.paper, "cite": t.cite, "reached": round(reached[t.key], 3),
             "within_2x": within_factor(reached[t.key], t.paper)} for t in targets if t.key in reached]


def parse_grid(items: list[str], free: Iterable[str]) -> dict[str, list[float]]:
    """``KEY=V1,V2`` items of ``--grid`` -> {KEY: [V1, V2]}; KEY must be one of the generator's ``free``
    parameters (ValueError naming them otherwise)."""
    free = tuple(free)
    grid: dict[str, list[float]] = {}
    for item in items:
        key, _, values = item.partition("=")
        if key not in free or not values:
            raise ValueError(f"--grid {item!r}: give KEY=V1,V2 with KEY one of {', '.join(free)}")
        try:
            grid[key] = [float(v) for v in values.split(",")]
        except ValueError:
            raise ValueError(f"--grid {item!r}: the values are numbers") from None
    return grid
