"""What fitting a generator on a paper's *baseline* figures means, shared by the papers' calibrators
(``lazer_calibrate``, ``lucid_calibrate``): the targets with their quotes, the factor-of-2 test, the error a
grid search minimises and the rows a ledger's settings page shows. Only the baselines' figures are targets;
the proposed system's numbers never are."""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable


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


class TraceFits:
    """A calibrator's targets per trace, with the three questions its CLI and ledger ask of a fit."""

    def __init__(self, targets: dict[str, list[Target]]) -> None:
        self.targets = targets

    def error(self, trace: str, reached: dict[str, float]) -> float:
        """The fit's error on one trace (fit_error)."""
        return fit_error(self.targets[trace], reached)

    def met(self, trace: str, reached: dict[str, float]) -> int:
        """How many of the trace's fitted targets are reached within a factor of 2."""
        return targets_met(self.targets[trace], reached)

    def table(self, trace: str, reached: dict[str, float]) -> list[dict[str, Any]]:
        """The fit of one trace as ledger rows (ctx.settings[...]['calibration'])."""
        return fit_table(self.targets[trace], reached)


def print_fit(rows: list[dict[str, Any]], width: int = 52, pw: int = 8, paper_digits: int = 2) -> None:
    """A fit's rows (fit_table) as the calibrators' CLI prints them: target, paper, reached, within 2x, cite."""
    print(f"  {'target':{width}s} {'paper':>{pw}s} {'reached':>{pw}s}  within 2x  cite")
    for row in rows:
        print(f"  {row['target']:{width}s} {row['paper']:{pw}.{paper_digits}f} {row['reached']:{pw}.2f}  "
              f"{'yes' if row['within_2x'] else 'NO ':9s}  {row['cite']}")


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


def grid_search(label: str, targets: list[Target], grid: dict[str, list[float]], base: dict[str, Any],
                measure: Callable[[dict[str, Any]], dict[str, float]]) -> tuple[dict[str, Any], dict[str, float]]:
    """Every point of ``grid`` over ``base`` (``jobs`` as a whole number), printed as it is measured; the
    best point is the one with the most targets within 2x, then the lowest fit error. Returns the best
    point's parameters (``base`` updated) and what it reached."""
    keys = list(grid)
    best = None
    for combo in itertools.product(*(grid[k] for k in keys)):
        point = dict(zip(keys, combo))
        t0 = time.perf_counter()
        reached = measure({**base, **{k: (int(v) if k == "jobs" else v) for k, v in point.items()}})
        score = (-targets_met(targets, reached), fit_error(targets, reached))
        print(f"{label} {point}: " + ", ".join(f"{k} {v:.2f}" for k, v in reached.items())
              + f"  within 2x {-score[0]}, error {score[1]:.2f} ({time.perf_counter() - t0:.0f} s)", flush=True)
        if best is None or score < best[0]:
            best = (score, point, reached)
    if best is None:
        raise ValueError("the grid is empty")
    print(f"{label}: best {best[1]} ({-best[0][0]} targets within 2x, error {best[0][1]:.2f})")
    return {**base, **best[1]}, best[2]
