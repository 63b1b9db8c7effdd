"""bench_asrpt's Fig. 6 sweep as one command: the sizes dealt over --procs processes, bad --procs refused."""
from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    """benchmarks/bench_asrpt.py as the importable module ``bench_asrpt`` (its worker processes unpickle
    ``_sweep`` by that name)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    return importlib.import_module("bench_asrpt")


def test_sizes_split_largest_with_smallest():
    b = _bench()
    assert b._split([37_500, 75_000, 112_500, 150_000], 2) == [[150_000, 37_500], [112_500, 75_000]]
    assert b._split([37_500], 4) == [[37_500]]
    assert sorted(n for g in b._split([1, 2, 3, 4, 5], 3) for n in g) == [1, 2, 3, 4, 5]


def test_bad_procs_is_a_usage_error(capsys):
    b = _bench()
    with pytest.raises(SystemExit) as exc:
        b.main(["--only", "fig6", "--procs", "0"])
    assert exc.value.code == 2
    assert "--procs" in capsys.readouterr().err


@pytest.mark.slow
def test_fig6_sweep_over_two_processes_gives_the_one_process_rows(tmp_path, monkeypatch):
    """The same replays whether the sizes run in one process or two (same totals, same order of sizes)."""
    b = _bench()
    monkeypatch.setattr(b, "OUT", tmp_path)
    import json

    args = ["--only", "fig6", "--sizes", "300", "600", "--scale", "1", "--servers", "4", "--policies", "spjf",
            "wcs-subtime"]
    b.main(args + ["--procs", "1"])
    one = json.loads((tmp_path / "speed.json").read_text())["sweep"]
    b.main(args + ["--procs", "2"])
    two = json.loads((tmp_path / "speed.json").read_text())["sweep"]
    key = lambda r: (r["jobs"], r["policy"])  # noqa: E731
    assert [(key(r), r["total_jct_h"]) for r in sorted(one, key=key)] == \
        [(key(r), r["total_jct_h"]) for r in sorted(two, key=key)]
