"""benchmarks/bench_gfs_differential.py without the released simulator: the trace it writes is in the format the
released simulator reads (columns, job types, whole-second submissions inside trace_range, no spot task before
log_range, node file), it reads back to the same tasks, the released per-job log is scored by hand-checkable
rules, and every difference above 15 % is printed with named rule differences."""
import importlib.util
import json
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("bench_gfs_differential", ROOT / "benchmarks" / "bench_gfs_differential.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def written(bench, tmp_path_factory):
    folder = tmp_path_factory.mktemp("released")
    old = bench.WARMUP_DAYS
    bench.WARMUP_DAYS = 1  # a short warm-up keeps the test fast; the format is the same
    try:
        table = bench.make_trace(seed=0, days=0.25, orgs=3)
        bench.write_released_input(table, folder, days=0.25)
    finally:
        bench.WARMUP_DAYS = old
    return table, folder


def test_job_file_is_in_the_released_format(written):
    table, folder = written
    jobs = pd.read_csv(folder / "job_info_df.csv")
    # the columns the released utils.trace_process reads (usecols) are all there
    assert {"job_name", "organization", "gpu_model", "worker_num", "gpu_request", "cpu_request", "submit_time",
            "duration", "job_type"} <= set(jobs.columns)
    assert set(jobs["job_type"]) == {"HP", "Spot"}
    assert (jobs["submit_time"] % 1 == 0).all() and (jobs["duration"] >= 1).all()
    assert (jobs["gpu_request"] <= 8).all() and (jobs["worker_num"] >= 1).all()
    assert jobs["organization"].nunique() <= 84  # the released forecaster's class_input_dim for organisations
    ranges = json.loads((folder / "ranges.json").read_text())
    start = pd.Timestamp(ranges["trace_range"][0])
    log0 = (pd.Timestamp(ranges["log_range"][0]) - start).total_seconds()
    log1 = (pd.Timestamp(ranges["log_range"][1]) - start).total_seconds()
    assert log0 == 86400 and log0 % 86400 == 0  # the forecaster first trains at a day boundary
    assert ranges["window_s"] == [log0, log1 + 1]
    assert (jobs["submit_time"] <= log1).all() and (jobs["submit_time"] >= 0).all()
    assert (jobs.loc[jobs["job_type"] == "Spot", "submit_time"] >= log0).all()  # no spot task in the warm-up
    nodes = pd.read_csv(folder / "node_info_df.csv")
    assert list(nodes.columns) == ["node_name", "gpu_model", "gpu_capacity_num", "cpu_num"] and len(nodes) == 40
    assert set(nodes["gpu_model"]) == set(jobs["gpu_model"])  # the released VCs are GPU models


def test_written_trace_reads_back_to_the_same_tasks(written):
    from features.traces.gfs import load_gfs_spot

    table, folder = written
    back = load_gfs_spot(folder / "job_info_df.csv").frame
    f = table.frame
    assert len(back) == len(f)
    assert back["num_gpus"].tolist() == f["num_gpus"].tolist()
    assert back["job_class"].tolist() == f["job_class"].tolist()
    # submissions moved up to the next whole second, never earlier, never by a second or more
    shift = back["submit_time"].to_numpy() - f["submit_time"].to_numpy()
    assert (shift >= 0).all() and (shift < 1).all()


def test_released_log_scored_by_hand(bench, tmp_path):
    log = pd.DataFrame({"type": ["HP", "HP", "Spot", "Spot", "Spot"], "submit_time": [10.0, 100.0, 100.0, 200.0, 5000.0],
                        "queue": [50.0, 30.0, 600.0, 0.0, 9.0], "end_time": [500.0, 900.0, 4100.0, 1200.0, 9000.0],
                        "preempt_times": [0, 0, 2, 0, 0]})
    log.to_csv(tmp_path / "x_log.csv", index=False)
    m = bench.released_metrics(tmp_path / "x_log.csv", (100.0, 1000.0))  # the first HP and last spot are outside
    assert m["hp_jqt"] == 30.0 and m["spot_tasks"] == 2
    assert m["spot_jqt"] == 300.0 and m["spot_jct"] == (4000.0 + 1000.0) / 2
    assert m["evict"] == pytest.approx(2 / 4)  # 2 evictions, 2 tasks: 4 runs


def test_differences_above_tolerance_name_their_rules(bench):
    ours = {p: {"spot_jct": 10000.0, "spot_jqt": 1000.0, "evict": 0.10, "hp_jqt": 0.0, "spot_tasks": 5, "wall_s": 1.0}
            for p in bench.PAIRS}
    theirs = {r: {"spot_jct": 10500.0, "spot_jqt": 3000.0, "evict": 0.10, "hp_jqt": 0.0, "spot_tasks": 5,
                  "wall_s": 120.0} for r in bench.PAIRS.values()}
    lines = bench.table_lines(ours, theirs)
    jqt = [ln for ln in lines if "spot JQT" in ln]
    assert len(jqt) == 3 and all("-67 %" in ln for ln in jqt)
    assert all(any(rule in ln for rule in bench.RULES) for ln in jqt)  # > 15 %: named rules
    jct = [ln for ln in lines if "spot JCT" in ln]
    assert all(ln.rstrip().endswith("|  |") for ln in jct)  # -5 %: nothing to explain
    assert all("equal (0)" in ln and ln.rstrip().endswith("|  |") for ln in lines if "HP JQT" in ln)  # 0 = 0
    assert any("| 120x |" in ln for ln in lines)
    for r in theirs.values():
        r["evict"] = 0.0  # ours evicts, theirs not: no ratio, still a difference to explain
    ev = [ln for ln in bench.table_lines(ours, theirs) if "evict/run" in ln]
    assert all("x / 0" in ln and any(rule in ln for rule in bench.RULES) for ln in ev)
    assert {r for rules in bench.EXPLAINS.values() for r in rules} <= set(bench.RULES)
    assert set(bench.EXPLAINS) == {(p, k) for p in [*bench.PAIRS, *bench.VARIANTS, *bench.LEAK_FIXED.values()]
                                   for k, _, _ in bench.METRICS}


def test_bad_spot_dir_is_a_one_line_error(bench, tmp_path, capsys):
    assert bench.main(["--spot-dir", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "simulator.py" in err[0]
    assert not (tmp_path / "out").exists()


def test_summary_over_seeds_means_the_seeds_with_a_released_run(bench):
    def row(jct_h, jqt_h, evict, wall):
        return {"spot_jct": jct_h * 3600.0, "spot_jqt": jqt_h * 3600.0, "evict": evict, "hp_jqt": 0.0,
                "spot_tasks": 5, "wall_s": wall}

    per_seed = {0: ({"gfs": row(3.0, 0.4, 0.05, 2.0)}, {"spot_scheduler": row(2.0, 0.2, 0.15, 600.0)}),
                1: ({"gfs": row(5.0, 0.6, 0.10, 3.0)}, {"spot_scheduler": row(6.0, 0.8, 0.25, 600.0)}),
                2: ({"gfs": row(9.0, 9.0, 0.50, 1.0)}, None)}  # no released run: listed, not in the mean
    lines = bench.summary_lines(per_seed)
    assert "| 0 | gfs | 3.00 / 2.00 (+50.0 %) | 0.40 / 0.20 | 5.0 / 15.0 | 300x |" in lines
    assert "| 2 | gfs | 9.00 / - | 9.00 / - | 50.0 / - | - |" in lines
    # mean of seeds 0 and 1: ours 4.0 h, released 4.0 h -> +0.0 %; evictions 7.5 % / 20.0 %
    assert "| mean of 2 | gfs | 4.00 / 4.00 (+0.0 %) | 0.50 / 0.50 | 7.5 / 20.0 | |" in lines
