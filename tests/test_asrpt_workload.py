"""PAI-shaped generator for A-SRPT: shape, determinism, durations = iterations x alpha_min; pai-250."""
from __future__ import annotations

import pytest

from sim.asrpt.pai_workload import PaiSpec, generate_pai, recurring_share


@pytest.fixture(scope="module")
def table():
    return generate_pai(PaiSpec(jobs=1500, models=("bert-large", "gnmt")), seed=3)


def test_shape(table):
    f = table.frame
    assert len(f) == 1500
    assert (f["num_gpus"] == 1).mean() > 0.70
    assert recurring_share(f) == pytest.approx(0.65, abs=0.03)
    # one user, GPU count and model per group; iterations spread inside groups
    per_group = f.groupby("group_id").agg(users=("user", "nunique"), gpus=("num_gpus", "nunique"),
                                          models=("dl_model", "nunique"))
    assert (per_group == 1).all().all()
    big = f.groupby("group_id").filter(lambda g: len(g) >= 5)
    assert big.groupby("group_id")["iterations"].std().mean() > 0
    assert table.report.synthetic


def test_durations_are_iterations_times_alpha_min(table):
    from sim.asrpt.iteration import Bandwidth, alpha_min
    from sim.asrpt.profiles import StageCatalog

    f = table.frame
    row = f[f["num_gpus"] > 1].iloc[0]
    cfg = StageCatalog().config(row["dl_model"], int(row["num_gpus"]))
    assert row["duration"] == pytest.approx(row["iterations"] * alpha_min(cfg, Bandwidth(inter=10e9 / 8), 8))


def test_deterministic():
    a = generate_pai(PaiSpec(jobs=200, models=("gnmt",)), seed=5).frame
    b = generate_pai(PaiSpec(jobs=200, models=("gnmt",)), seed=5).frame
    c = generate_pai(PaiSpec(jobs=200, models=("gnmt",)), seed=6).frame
    assert a["duration"].tolist() == b["duration"].tolist()
    assert a["duration"].tolist() != c["duration"].tolist()


def test_pai_250_cluster():
    from sim.cluster import load_cluster

    c = load_cluster("pai-250")
    assert sum(p.gpus for p in c.partitions) == 2000
    assert c.inter_node_bandwidth_gbps == pytest.approx(1.25)


def test_paper_preset_load_is_the_calibrated_one():
    """A-SRPT's paper-scale shape at the trace's own rate (758,223 jobs in 61 days) offers its 6,000 GPUs the
    assumed production load (TARGET_LOAD 0.63, mean over seeds 0-2), so 2,000 GPUs get three times that
    (the paper's replay queues). The YAML presets carry the same iteration median and the trace's rate."""
    from pathlib import Path

    import yaml

    from sim.asrpt.pai_workload import PAPER, TARGET_LOAD, TRACE_RATE, trace_offered_load

    assert TRACE_RATE == pytest.approx(12_430, rel=0.01)
    load = trace_offered_load(PAPER["median_iterations"])  # 30,000 jobs x seeds 0-2, as calibrated
    assert load == pytest.approx(TARGET_LOAD, abs=0.01)
    assert load * 6000 / 2000 > 1.5  # the replay's 2,000 GPUs: jobs queue
    root = Path(__file__).resolve().parents[1] / "configs" / "workloads"
    for name in ("pai-paper.yaml", "pai-paper-multi.yaml"):
        preset = yaml.safe_load((root / name).read_text())
        assert preset["median_iterations"] == PAPER["median_iterations"]
        assert preset["jobs"] / preset["span_days"] == pytest.approx(TRACE_RATE, rel=0.01)


def test_calibration_bisects_to_the_target():
    from sim.asrpt.pai_workload import calibrate_median, trace_offered_load

    med, reached = calibrate_median(0.3, lo=1000, hi=20_000, steps=6, seeds=(0,), jobs=3000)
    assert reached == pytest.approx(trace_offered_load(med, seeds=(0,), jobs=3000))
    assert trace_offered_load(med * 1.5, seeds=(0,), jobs=3000) > reached  # monotone in the median
    assert reached == pytest.approx(0.3, rel=0.25)


def test_ledger_sizes_arrive_at_the_trace_rate():
    """Every Fig. 6 size of the ledger arrives at the trace's rate, scaled with the cluster (so the same
    offered load per GPU)."""
    from pipelines.papers.asrpt import make_case
    from sim.asrpt.pai_workload import TRACE_RATE

    case = make_case(37_500, 0, 0.02, servers=25, span_scale=0.2)
    assert case.history == 4 * len(case.w)  # the replayed jobs are the last 20 % (the forest learns from 80 %)
    days = float(case.full["submit_time"].iloc[-1] - case.full["submit_time"].iloc[0]) / 86400
    assert len(case.full) / days == pytest.approx(TRACE_RATE * 0.1, rel=0.15)  # history and replay: one rate
