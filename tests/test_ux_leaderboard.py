"""Issue 22 items 8, 11, 13: the leaderboard names the oracle predictor, warns when intervals rest on too
few seeds, keeps the CDF legend off the curves, labels time in s / min / h, links each row to its cell
folders, shows the reached load, writes unit-bearing CSV columns, and `experiment run` prints its top."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evaluation import leaderboard as L


def _record(workload, policy, seed, jct, predictor="unused", wait=30.0, reached=0.5):
    return {"id": f"{workload}-{policy}-{predictor}-{seed}", "status": "ok", "error": "",
            "cell": {"workload": workload, "label": policy, "policy": policy, "predictor": predictor, "seed": seed},
            "summary": {"policy": policy, "jct_mean": jct, "wait_mean": wait + seed, "gpu_utilisation": 0.4,
                        "lost_work_total": 0.0, "load_reached": reached}}


def _records(seeds: int):
    return [_record("earth@0.9", "spjf", s, 900.0 + s, predictor="oracle") for s in range(seeds)] + \
           [_record("earth@0.9", "fifo", s, 1200.0 + s) for s in range(seeds)]


def _cells(tmp_path, records):
    for rec in records:
        folder = tmp_path / "cells" / rec["id"]
        folder.mkdir(parents=True)
        pd.DataFrame({"jct_s": np.geomspace(30, 20000, 60), "status": "done"}).to_parquet(folder / "jobs_x.parquet")


def test_page_labels_oracle_links_cells_and_warns_on_two_seeds(tmp_path):
    records = _records(2)
    _cells(tmp_path, records)
    paths = L.write_report(tmp_path, records, metrics=["jct_mean", "wait_mean"], title="t")
    page = paths["html"].read_text()
    assert "<td class=l>oracle</td>" in page  # the oracle predictor is named, not blank
    assert 'href="cells/earth@0.9-spjf-oracle-0/"' in page and 'href="cells/earth@0.9-fifo-unused-1/"' in page
    assert "95 % intervals from 2 seeds are wide" in page
    assert "reached load" in page
    results = pd.read_csv(paths["results"])
    board = pd.read_csv(paths["leaderboard"])
    assert {"jct_mean_s", "lost_work_total_s", "gpu_utilisation_frac", "load_reached_frac"} <= set(results.columns)
    assert "jct_mean" not in results.columns and "lost_work_total" not in results.columns
    assert {"jct_mean_s", "jct_mean_ci95_s", "jct_mean_lo_s", "wait_mean_hi_s", "load_reached_frac"} <= set(board.columns)
    top = paths["top"].read_text()
    assert "leaderboard earth@0.9 (reached load 0.50):" in top and "spjf [oracle]" in top
    assert top.index("spjf [oracle]") < top.index("fifo")  # rank order
    assert "note: 95 % intervals from 2 seeds" in top


def test_enough_seeds_no_warning():
    board = L.leaderboard(L.results_frame(_records(5)), ["jct_mean"])
    assert L.seeds_warning(board) == ""
    assert "2 seeds" in L.seeds_warning(L.leaderboard(L.results_frame(_records(2)), ["jct_mean"]))


def test_cdf_legend_beside_the_axes_with_time_ticks(tmp_path, monkeypatch):
    records = _records(2)
    _cells(tmp_path, records)
    figures = []
    monkeypatch.setattr(L, "_png", lambda fig: figures.append(fig) or "x")
    ok = L.results_frame(records)
    assert L.cdf_figure(tmp_path, ok, "earth@0.9") == "x"
    fig = figures[0]
    ax = fig.axes[0]
    fig.canvas.draw()
    legend = ax.get_legend()
    assert {t.get_text() for t in legend.get_texts()} == {"spjf [oracle]", "fifo"}
    assert legend.get_window_extent().x0 >= ax.get_window_extent().x1  # off the curves
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert "1 min" in labels and "1 h" in labels
    assert L.queue_figure(L.leaderboard(ok, ["wait_mean"]), "earth@0.9") == "x"
    assert "(s)" in figures[1].axes[0].get_xlabel()  # 30 s waits shown in seconds, not 0.008 h


@pytest.mark.slow
def test_experiment_run_prints_the_top_of_the_leaderboard(tmp_path, capsys):
    from pipelines.cli import main

    spec = tmp_path / "s.yaml"
    spec.write_text("name: ux\nworkloads:\n  - {name: demo, synthetic: demo, jobs: 80}\n"
                    "policies: [fifo, sjf]\nseeds: 1\nplots: false\n")
    assert main(["experiment", "run", str(spec), "--engine", "serial", "--out", str(tmp_path / "run"),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "leaderboard demo (reached load" in out
    head = out[out.index("leaderboard demo"):]
    assert head.index("fifo") > 0 and "rank" in head.splitlines()[1]
