"""Experiment specs: validation names the field, grids expand into the right cells, the shipped specs
are valid."""
from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.experiment import expand, load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[1]
BASE = {"name": "t", "workloads": [{"name": "d", "synthetic": "demo", "jobs": 50}], "policies": ["fifo"]}


def spec(**changes):
    return parse_spec({**BASE, **changes}, source="t.yaml")


@pytest.mark.parametrize("changes, field, words", [
    ({"workloads": [{"name": "d", "synthetic": "demo", "jobs": 0}]}, "workloads[0].jobs", "greater than or equal to 1"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "trace": "x.csv"}]}, "workloads[0]", "exactly one"),
    ({"workloads": [{"name": "d", "trace": "x.csv"}]}, "workloads[0]", "needs 'cluster'"),
    ({"workloads": [{"name": "d", "synthetic": "nope"}]}, "workloads[0].synthetic", "unknown preset"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "bogus": 1}]}, "workloads[0].bogus", "Extra inputs"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "offered_load": -1}]}, "workloads[0].offered_load", "greater than 0"),
    ({"workloads": [{"name": "d", "synthetic": "demo", "window": ["2d", "1d"]}]}, "workloads[0]", "END must be after START"),
    ({"policies": ["fifo", "no-such-policy"]}, "policies[1]", "unknown policy 'no-such-policy'"),
    ({"policies": [{"name": "tiresias", "grid": {"num_queues": [2, 3]}}]}, "policies[0]", "unknown parameter 'num_queues'"),
    ({"policies": [{"name": "tiresias", "grid": {"thresholds": []}}]}, "policies[0].grid", "has no values"),
    ({"policies": [{"name": "lazer", "params": {"respect_wq": "maybe"}}]}, "policies[0]", "respect_wq"),
    ({"policies": [{"name": "fifo", "workloads": ["zzz"]}]}, "policies[0].workloads[0]", "no workload named"),
    ({"predictors": ["oracle", "noisy:x"]}, "predictors[1]", "noisy:SIGMA"),
    ({"predictors": ["models:/nope"]}, "predictors[0]", "bad model URI"),
    ({"seeds": 0}, "seeds", "seed count"),
    ({"exclude": ["nope"]}, "exclude[0]", "unknown policy"),
    ({"name": "has space"}, "name", "pattern"),
    ({"workloads": []}, "workloads", "at least 1"),
])
def test_errors_name_the_field(changes, field, words):
    with pytest.raises(ValueError) as info:
        spec(**changes)
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"t.yaml: field {field}:"), text
    assert words in text, text


def test_yaml_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    with pytest.raises(ValueError, match=r"bad.yaml: not valid YAML"):
        load_spec(bad)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_spec(tmp_path / "missing.yaml")
    bad.write_text("- a\n- b\n")
    with pytest.raises(ValueError, match="is a mapping"):
        load_spec(bad)


def test_grid_predictors_and_seeds_expand():
    s = spec(policies=["fifo", {"name": "tiresias", "grid": {"thresholds": [3600, [600, 7200]]}}, "spjf"],
             predictors=["oracle", "noisy:0.5"], seeds=2)
    cells = expand(s)
    labels = sorted({c.label for c in cells})
    assert labels == ["fifo", "spjf", "tiresias:thresholds=3600", "tiresias:thresholds=[600, 7200]"]
    # fifo and tiresias do not use predictions: one predictor ('unused'); spjf gets both
    assert sorted({c.predictor for c in cells if c.label == "fifo"}) == ["unused"]
    assert sorted({c.predictor for c in cells if c.label == "spjf"}) == ["noisy:0.5", "oracle"]
    assert len(cells) == (1 + 2 + 2) * 2
    assert len({c.key() for c in cells}) == len(cells) == len({c.id for c in cells})
    assert {c.seed for c in cells} == {0, 1}


def test_all_policies_exclude_and_explicit_override():
    from sim.policies import POLICIES

    s = spec(policies=["all", {"name": "sjf", "placement": "first-fit"}], exclude=["fifo"])
    cells = expand(s)
    names = {c.policy.split(":")[0] for c in cells}
    assert names == set(POLICIES) - {"fifo"}
    sjf = [c for c in cells if c.policy == "sjf"]
    assert len(sjf) == 1 and sjf[0].placement == "first-fit"


def test_overrides_cascade_and_workload_restriction():
    s = spec(workloads=[{"name": "a", "synthetic": "demo", "jobs": 50, "failures": "rate=1", "seeds": [5]},
                        {"name": "b", "synthetic": "demo", "jobs": 60}],
             policies=["fifo", {"name": "sjf", "failures": "none", "workloads": ["a"]}], performance="constant")
    cells = {(c.workload, c.policy): c for c in expand(s)}
    assert set(cells) == {("a", "fifo"), ("b", "fifo"), ("a", "sjf")}
    assert cells[("a", "fifo")].failures == "rate=1" and cells[("a", "fifo")].seed == 5
    assert cells[("b", "fifo")].failures == "none" and cells[("b", "fifo")].seed == 0
    assert cells[("a", "sjf")].failures == "none"
    assert all(c.performance == "constant" for c in cells.values())


def test_cell_key_depends_on_what_changes_numbers():
    a = expand(spec())[0]
    assert a.key() == expand(spec())[0].key()
    assert a.key() != expand(spec(seeds=[1]))[0].key()
    assert a.key() != expand(spec(workloads=[{"name": "d", "synthetic": "demo", "jobs": 51}]))[0].key()
    assert a.key() == expand(spec(description="another text"))[0].key()


def test_cell_key_does_not_depend_on_the_data_directory():
    s = spec(workloads=[{"name": "p", "trace": "philly/x.csv.gz", "cluster": "philly-pool"}])
    a, b = expand(s, "/data/one")[0], expand(s, "/elsewhere")[0]
    assert a.key() == b.key() and a.source["trace"] == "philly/x.csv.gz"


def test_window_accepts_times():
    s = spec(workloads=[{"name": "d", "synthetic": "demo", "window": ["1d", "36h"]}])
    assert s.workloads[0].window == (86400.0, 129600.0)


@pytest.mark.parametrize("path", sorted(p for p in (ROOT / "configs" / "experiments").rglob("*.yaml")
                                         if p.name != "claims.yaml"),
                         ids=lambda p: str(p.relative_to(ROOT / "configs" / "experiments")))
def test_shipped_specs_are_valid(path):
    s = load_spec(path)
    cells = expand(s)
    assert cells and len({c.key() for c in cells}) == len(cells)
