import numpy as np
import pytest
from pydantic import ValidationError

from features.traces.synthetic import SyntheticSpec, generate, generate_preset, load_preset, preset_names


def test_deterministic_and_marked_synthetic():
    a = generate_preset("demo", seed=7)
    b = generate_preset("demo", seed=7)
    assert a.frame.equals(b.frame)
    assert a.synthetic and "SYNTHETIC" in a.report.render()
    assert not a.frame.equals(generate_preset("demo", seed=8).frame)


@pytest.mark.parametrize("name,minutes,gap", [("earth", 59.5, 39), ("saturn", 72.2, 80), ("uranus", 128.1, 243)])
def test_presets_match_lazer_table1(name, minutes, gap):
    spec = load_preset(name, jobs=50_000)
    f = generate(spec, seed=0).frame
    assert f["duration"].mean() / 60 == pytest.approx(minutes, rel=0.01)
    assert np.diff(f["submit_time"]).mean() == pytest.approx(gap, rel=0.05)
    assert load_preset(name).jobs in (427148, 698896, 329117)


def test_recurring_groups_and_heavy_tail():
    f = generate(SyntheticSpec(jobs=5000, mean_group_size=4), seed=1).frame
    groups = f.groupby("group_id")
    assert groups.size().mean() == pytest.approx(4, rel=0.15)
    assert (groups["job_name"].nunique() == 1).all() and (groups["user"].nunique() == 1).all()
    assert f["duration"].mean() > 5 * f["duration"].median()  # heavy tail


def test_diurnal_cycle_visible():
    f = generate(SyntheticSpec(jobs=20000, mean_interarrival=30), seed=2).frame
    hours = f["submit_ts"].dt.hour.value_counts()
    assert hours.loc[15] > 2 * hours.loc[3]


def test_bad_spec_rejected():
    with pytest.raises(ValidationError):
        SyntheticSpec(gpu_mix={0: 1.0})
    with pytest.raises(ValueError, match="unknown synthetic preset"):
        load_preset("mars")
    assert {"earth", "saturn", "uranus", "demo"} <= set(preset_names())
