"""Job files encoded beside the scoring (evaluation.report.JobsParquet): the same bytes as writing the
table when the folder is written, the encoding's errors surface in the writer, and simulate uses it."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation.metrics import evaluate
from evaluation.report import JobsParquet, job_file_frame, write_parquet, write_results
from features.traces import load_trace
from pipelines.cli import main
from sim import simulate
from sim.cluster import load_cluster
from sim.workload import build_workload


@pytest.fixture(scope="module")
def result(philly_file):
    w = build_workload(load_trace(philly_file), load_cluster("philly-pool"), limit=3_000)
    return simulate(w, "tiresias")


@pytest.mark.parametrize("window", [None, (86_400.0, 5 * 86_400.0)])
def test_encoded_bytes_are_the_written_tables(result, window, tmp_path):
    seen = []
    ev = evaluate(result, window, on_jobs=lambda jobs: seen.append((jobs, JobsParquet(jobs, window))))
    (jobs, pending), = seen
    assert jobs is ev["jobs"]  # the table scored is the one handed over
    pending.write_to(tmp_path / "encoded.parquet")
    write_parquet(job_file_frame(ev["jobs"], window), tmp_path / "direct.parquet")
    assert (tmp_path / "encoded.parquet").read_bytes() == (tmp_path / "direct.parquet").read_bytes()
    back = pd.read_parquet(tmp_path / "encoded.parquet")
    assert "jct_s" in back and ("in_window" in back) == (window is not None)
    if window is not None:
        submit = ev["jobs"]["submit"].to_numpy()
        assert back["in_window"].to_numpy().tolist() == ((submit >= window[0]) & (submit < window[1])).tolist()


def test_the_encoding_error_is_raised_by_the_writer(tmp_path):
    bad = pd.DataFrame({"submit": [0.0, 1.0], "job_id": np.array([1, "a"], dtype=object)})  # mixed: no arrow type
    pending = JobsParquet(bad, None)
    with pytest.raises(Exception, match="(?i)conversion|expected|int"):
        pending.write_to(tmp_path / "x.parquet")
    assert not (tmp_path / "x.parquet").exists()


def test_write_results_uses_an_encoding_of_the_same_window_only(result, tmp_path):
    ev = evaluate(result)
    other = ev["jobs"].head(7)  # a different table: shows which bytes were written
    meta = {"cluster_gpus": 864, "window": None}
    write_results(tmp_path / "a", {"p": ev}, meta, plots=False, encoded={"p": JobsParquet(other, None)})
    assert len(pd.read_parquet(tmp_path / "a" / "jobs_p.parquet")) == 7
    write_results(tmp_path / "b", {"p": ev}, meta, plots=False, encoded={"p": JobsParquet(other, (0.0, 1.0))})
    assert len(pd.read_parquet(tmp_path / "b" / "jobs_p.parquet")) == len(ev["jobs"])  # window differs: encoded here


def test_simulate_writes_the_tables_it_encoded(philly_file, tmp_path, monkeypatch, capsys):
    import evaluation.report as report

    made = []
    real = report.JobsParquet

    class Counting(real):
        def __init__(self, jobs, window):
            made.append(len(jobs))
            super().__init__(jobs, window)

    monkeypatch.setattr(report, "JobsParquet", Counting)
    code = main(["simulate", "--trace", str(philly_file), "--cluster", "philly-pool", "--jobs", "800",
                 "--policy", "sjf", "fifo", "--window", "1d", "20d", "--out", str(tmp_path / "out"), "--no-plots",
                 "--no-progress", "--no-track"])
    assert code == 0, capsys.readouterr().err
    assert made == [800, 800]
    for policy in ("sjf", "fifo"):
        jobs = pd.read_parquet(tmp_path / "out" / f"jobs_{policy}.parquet")
        assert len(jobs) == 800 and jobs["in_window"].any() and not jobs["in_window"].all()


def test_experiment_cells_write_the_tables_they_encoded(tmp_path, monkeypatch):
    import evaluation.report as report
    from pipelines.experiment import parse_spec, run_experiment

    made = []
    real = report.JobsParquet

    class Counting(real):
        def __init__(self, jobs, window):
            made.append((len(jobs), window))
            super().__init__(jobs, window)

    monkeypatch.setattr(report, "JobsParquet", Counting)
    spec = parse_spec({"name": "enc", "workloads": [{"name": "demo", "synthetic": "demo", "jobs": 60}],
                       "policies": ["fifo", "sjf"], "seeds": 1})
    done = run_experiment(spec, tmp_path / "out", engine="serial")
    assert done.ok == 2 and made == [(60, None), (60, None)]
    files = sorted((tmp_path / "out").rglob("jobs_*.parquet"))
    assert len(files) == 2 and all(len(pd.read_parquet(f)) == 60 for f in files)
