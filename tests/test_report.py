"""Result folders are whole or absent; file columns carry units; plots are titled and readable."""
import json
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evaluation.report as report
from pipelines.cli import main

DEMO = ["simulate", "--synthetic", "demo", "--jobs", "300", "--no-progress"]


def run(capsys, *args):
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code
    return (code, *capsys.readouterr())


def _failing_parquet(monkeypatch, exc, after=1):
    """to_parquet writes ``after`` files, then half a file, then raises ``exc`` (a crash mid-write)."""
    calls = []
    original = pd.DataFrame.to_parquet

    def to_parquet(self, path, *args, **kwargs):
        calls.append(path)
        if len(calls) > after:
            Path(path).write_bytes(b"PAR1 truncated")
            raise exc
        return original(self, path, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", to_parquet)
    original_write = report.write_parquet  # the job files' writer (evaluation.report.JobsParquet)

    def write_parquet(frame, where):
        calls.append(where)
        if len(calls) > after:
            raise exc
        return original_write(frame, where)

    monkeypatch.setattr(report, "write_parquet", write_parquet)


def test_interrupted_write_leaves_no_folder(tmp_path, capsys, monkeypatch):
    _failing_parquet(monkeypatch, OSError(28, "No space left on device"), after=2)
    out = tmp_path / "res"
    code, _, err = run(capsys, *DEMO, "--policy", "fifo", "sjf", "--out", str(out))
    assert code == 2 and "No space left" in err
    assert list(tmp_path.iterdir()) == []  # no target and no temporary folder left behind


def test_interrupt_keeps_the_previous_result_whole(tmp_path, capsys, monkeypatch):
    out = tmp_path / "res"
    assert run(capsys, *DEMO, "--policy", "fifo", "sjf", "--out", str(out))[0] == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    _failing_parquet(monkeypatch, KeyboardInterrupt(), after=1)
    code, _, err = run(capsys, *DEMO, "--seed", "5", "--policy", "srtf", "--out", str(out), "--force")
    assert code == 130
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["res"]


def test_plots_in_process_and_in_the_worker(tmp_path, capsys, monkeypatch):
    assert run(capsys, *DEMO, "--policy", "fifo", "--out", str(tmp_path / "a"))[0] == 0
    monkeypatch.setenv("SCHEDCAST_PLOT_WORKER", "0")
    assert run(capsys, *DEMO, "--policy", "fifo", "--out", str(tmp_path / "b"))[0] == 0
    for name in ("jct_cdf.png", "gpu_allocation.png"):
        assert (tmp_path / "a" / name).stat().st_size > 10_000 and (tmp_path / "b" / name).stat().st_size > 10_000


def test_the_plot_worker_is_started_only_where_a_second_cpu_can_run_it(monkeypatch):
    from pipelines import simulate as sim_cli

    monkeypatch.delenv("SCHEDCAST_PLOT_WORKER", raising=False)
    monkeypatch.setattr(sim_cli, "usable_cpus", lambda: 1)
    assert sim_cli._start_plotter() is None  # one CPU: drawn in the command's own process
    monkeypatch.setattr(sim_cli, "usable_cpus", lambda: 2)
    worker = sim_cli._start_plotter()
    try:
        assert isinstance(worker, report.PlotWorker)
    finally:
        worker.close()
    monkeypatch.setenv("SCHEDCAST_PLOT_WORKER", "0")
    assert sim_cli._start_plotter() is None


def test_usable_cpus_follow_the_affinity_mask():
    import os

    from pipelines.simulate import usable_cpus

    if hasattr(os, "sched_getaffinity"):
        assert usable_cpus() == len(os.sched_getaffinity(0))
    assert usable_cpus() >= 1


def test_drawing_here_leaves_the_garbage_collector_as_it_found_it(tmp_path):
    import gc

    data = report.cdf_data({"fifo": pd.DataFrame({"jct": [1.0, 2.0, 4.0], "wait": [0.0, 1.0, 2.0]})})
    before = gc.get_freeze_count()
    report.draw_here([("jct_cdf", data, str(tmp_path / "c.png"), {"title": "t"})])
    assert gc.get_freeze_count() == before and (tmp_path / "c.png").stat().st_size > 1_000


def test_plot_worker_ignores_modules_in_the_working_directory(tmp_path, capsys, monkeypatch):
    # Seen: a `timeit.py` in the user's folder shadowed the standard library inside matplotlib and every
    # `schedcast simulate` run there failed with "plotting failed: IndexError".
    work = tmp_path / "work"
    work.mkdir()
    for name in ("timeit.py", "pickle.py", "numbers.py"):
        (work / name).write_text("raise SystemExit('user module imported by the plot worker')\n")
    monkeypatch.chdir(work)
    assert run(capsys, *DEMO, "--policy", "fifo", "--out", str(tmp_path / "a"))[0] == 0
    assert (tmp_path / "a" / "jct_cdf.png").stat().st_size > 10_000


def test_a_plot_worker_failing_while_the_tables_are_written_leaves_no_folder(tmp_path, capsys, monkeypatch):
    class Failing:
        def draw(self, tasks):
            raise RuntimeError("plotting failed: boom")

        def close(self):
            pass

    monkeypatch.setattr("pipelines.simulate._start_plotter", Failing)
    code, _, err = run(capsys, *DEMO, "--policy", "fifo", "--out", str(tmp_path / "res"))
    assert code == 1 and "plotting failed: boom" in err
    assert list(tmp_path.iterdir()) == []


def test_a_failing_plot_worker_is_an_error(tmp_path):
    worker = report.PlotWorker()
    with pytest.raises(RuntimeError, match="plotting failed: KeyError"):
        worker.draw([("no-such-plot", {}, str(tmp_path / "x.png"), {})])
    worker.close()
    idle = report.PlotWorker()
    idle.close()  # a worker that never got work is stopped
    assert idle.proc.returncode is not None


@pytest.mark.skipif(not hasattr(os, "getpriority"), reason="POSIX priorities")
def test_plot_worker_runs_below_the_commands_priority():
    """Its matplotlib import must not take a core from the CSV reader's threads."""
    worker = report.PlotWorker()
    try:
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        deadline = time.monotonic() + 20
        while os.getpriority(os.PRIO_PROCESS, worker.proc.pid) == mine and time.monotonic() < deadline:
            time.sleep(0.02)
        assert os.getpriority(os.PRIO_PROCESS, worker.proc.pid) == min(19, mine + 10)
    finally:
        worker.close()


def test_rerun_needs_force_and_force_replaces_the_folder_whole(tmp_path, capsys):
    out = tmp_path / "res"
    assert run(capsys, *DEMO, "--policy", "fifo", "sjf", "--out", str(out))[0] == 0
    code, stdout, err = run(capsys, *DEMO, "--seed", "5", "--policy", "srtf", "--out", str(out))
    assert code == 2 and "--force" in err and err.count("\n") == 1 and stdout == ""
    assert run(capsys, *DEMO, "--seed", "5", "--policy", "srtf", "--out", str(out), "--force")[0] == 0
    names = {p.name for p in out.iterdir()}
    assert not any("fifo" in n or "sjf" in n for n in names)  # no stale file of the first run
    meta = json.loads((out / "meta.json").read_text())
    assert meta["seed"] == 5 and meta["complete"] and sorted(meta["files"]) == sorted(names)
    assert meta["command"].startswith("schedcast simulate --synthetic demo") and "--seed 5" in meta["command"]
    assert pd.read_csv(out / "summary.csv")["policy"].tolist() == ["srtf"]


def test_empty_existing_folder_is_used(tmp_path, capsys):
    out = tmp_path / "res"
    out.mkdir()
    assert run(capsys, *DEMO, "--policy", "fifo", "--out", str(out))[0] == 0
    assert (out / "meta.json").exists()


def test_demo_replaces_its_own_folder_but_not_others(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert run(capsys, "demo", "--jobs", "100", "--no-plots")[0] == 0
    assert run(capsys, "demo", "--jobs", "120", "--no-plots")[0] == 0  # its own previous result
    assert pd.read_csv(tmp_path / "results" / "demo" / "summary.csv")["jobs"].iloc[0] == 120
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("x")
    code, _, err = run(capsys, "demo", "--jobs", "100", "--out", str(other))
    assert code == 2 and (other / "notes.txt").exists()


def test_files_carry_units_and_summary_shows_makespan(tmp_path, capsys):
    out = tmp_path / "res"
    code, stdout, _ = run(capsys, *DEMO, "--policy", "fifo", "--out", str(out))
    assert code == 0 and "makespan h" in stdout
    summary = pd.read_csv(out / "summary.csv")
    assert summary.columns[0] == "policy"
    for col in ("jct_mean_s", "jct_p99_s", "wait_p95_s", "futile_total_s", "makespan_s", "gpu_utilisation_frac"):
        assert col in summary.columns, col
    assert not {"jct_mean", "makespan", "gpu_utilisation"} & set(summary.columns)
    jobs = pd.read_parquet(out / "jobs_fifo.parquet")
    assert {"submit_s", "jct_s", "wait_s", "duration_s"} <= set(jobs.columns)
    assert np.allclose(jobs["jct_s"], jobs["wait_s"] + jobs["load_s"] + jobs["train_s"] + jobs["save_s"])
    assert "time_s" in pd.read_parquet(out / "allocation_fifo.parquet").columns
    assert "jct_mean_s" in pd.read_csv(out / "by_size_fifo.csv").columns


def test_no_plots(tmp_path, capsys):
    out = tmp_path / "res"
    assert run(capsys, *DEMO, "--policy", "fifo", "--out", str(out), "--no-plots")[0] == 0
    assert not list(out.glob("*.png"))


def _alloc(n: int, cap: int = 64) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.exponential(30.0, n))
    return pd.DataFrame({"time": t - t[0], "gpus_used": rng.integers(0, cap, n).astype(float),
                         "gpus_held": rng.integers(0, cap, n).astype(float)})


def test_allocation_plot_has_one_titled_panel_per_policy(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    saved = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: saved.append(self))
    names = ["fifo", "sjf", "srtf", "tiresias", "pollux-60"]
    report.plot_allocation({n: _alloc(5000) for n in names}, 64, tmp_path / "a.png", title="philly.csv on pool")
    fig = saved[0]
    assert len(fig.axes) == 5
    labels = [t.get_text() for ax in fig.axes for t in ax.texts]
    assert labels == names
    assert "philly.csv on pool" in fig._suptitle.get_text()


def test_binned_step_keeps_the_time_weighted_mean():
    a = _alloc(20000)
    t, v = a["time"].to_numpy(), a["gpus_held"].to_numpy()
    x, y = report._binned_step(t, v, 100)
    assert len(x) == 101
    exact = np.sum(v[:-1] * np.diff(t)) / (t[-1] - t[0])
    assert np.isclose(np.sum(y[:-1] * np.diff(x)) / (x[-1] - x[0]), exact)


def test_cdf_plot_title_names_trace_cluster_and_measured_jobs(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    saved = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: saved.append(self))
    jobs = pd.DataFrame({"jct": np.arange(1, 1001, dtype=float) * 60})
    report.plot_jct_cdf({"fifo": jobs, "sjf": jobs}, tmp_path / "c.png", title="t.csv on venus (1,000 GPUs)",
                        window=(86400.0, 2 * 86400.0))
    title = saved[0].axes[0].get_title()
    assert "t.csv on venus" in title and "1,000 jobs submitted in 1-2 d" in title
    line = saved[0].axes[0].lines[0]
    assert len(line.get_xdata()) <= 400  # downsampled through exact quantiles
    assert np.isclose(line.get_xdata()[-1], 1000 / 60)


@pytest.mark.parametrize("column, expected", [("jct_p99.9", "jct_p99.9_s"), ("decision_p99_ms", "decision_p99_ms"),
                                              ("jobs", "jobs"), ("sim_seconds", "sim_seconds"),
                                              ("gpu_utilisation", "gpu_utilisation_frac")])
def test_unit_names(column, expected):
    assert report.unit_name(column) == expected
