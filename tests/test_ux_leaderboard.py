"""Issue 22 items 8, 11, 13: the leaderboard names the oracle predictor, warns when intervals rest on too
few seeds, keeps the CDF legend off the curves, labels time in s / min / h, links each row to its cell
folders, shows the reached load, writes unit-bearing CSV columns, and `experiment run` prints its top."""
from __future__ import annotations

import re

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
    assert "leaderboard earth@0.9 (reached load 0.50):" in top and "loads: offered = " in top and "spjf [oracle]" in top
    assert top.index("spjf [oracle]") < top.index("fifo")  # rank order
    assert "note: 95 % intervals from 2 seeds" in top


def test_enough_seeds_no_warning():
    board = L.leaderboard(L.results_frame(_records(5)), ["jct_mean"])
    assert L.seeds_warning(board) == ""
    assert "2 seeds" in L.seeds_warning(L.leaderboard(L.results_frame(_records(2)), ["jct_mean"]))


def test_cdf_small_multiples_tell_every_entry_apart_with_time_ticks(tmp_path, monkeypatch):
    records = [_record("earth@0.9", f"p{i}", s, 900.0 + 10 * i + s) for i in range(9) for s in range(2)]
    _cells(tmp_path, records)
    figures = []
    monkeypatch.setattr(L, "_png", lambda fig: figures.append(fig) or "x")
    ok = L.results_frame(records)
    assert L.cdf_figure(tmp_path, ok, "earth@0.9") == "x"
    fig = figures[0]
    fig.canvas.draw()
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert len(panels) == 9  # nine entries: nine panels, not nine overlapping lines on one
    titles = [ax.get_title(loc="left") for ax in panels]
    assert titles[0] == "1. p0" and titles[-1] == "9. p8"
    for ax in panels:  # one line in colour (the entry), the others in grey behind it
        coloured = [ln for ln in ax.get_lines() if ln.get_color() != "#cccccc"]
        assert len(coloured) == 1 and len(ax.get_lines()) == 9
    labels = [t.get_text() for t in panels[-1].get_xticklabels()]
    assert "1 min" in labels and "1 h" in labels
    assert L.queue_figure(L.leaderboard(ok, ["wait_mean"]), "earth@0.9") == "x"
    ax = figures[1].axes[0]
    assert "(s)" in ax.get_xlabel()  # 30 s waits shown in seconds, not 0.008 h


def test_intervals_are_symmetric_and_units_are_one_per_metric(tmp_path, monkeypatch):
    records = _records(3)
    board = L.leaderboard(L.results_frame(records), ["wait_mean", "jct_mean"])
    units = L.page_units(board, ["wait_mean", "jct_mean"])
    assert units["wait_mean"][0] == "avg queueing (s)" and units["jct_mean"][0] == "avg JCT (min)"
    figures = []
    monkeypatch.setattr(L, "_png", lambda fig: figures.append(fig) or "x")
    L.queue_figure(board, "earth@0.9", units)
    ax = figures[0].axes[0]
    bars = [c for c in ax.collections if c.get_segments()]
    for seg in bars[0].get_segments():  # each whisker pair runs mean - h .. mean + h
        (x0, y0), (x1, y1) = seg
        assert y0 == y1 and x0 < x1
    row = board[board["policy"] == "fifo"].iloc[0]
    lo, hi = sorted(seg[0][0] for seg in bars[0].get_segments())[0], max(seg[1][0] for seg in bars[0].get_segments())
    assert lo < row["wait_mean"] < hi
    mids = sorted((a[0] + b[0]) / 2 for a, b in bars[0].get_segments())
    assert mids == pytest.approx(sorted(board["wait_mean"]))  # symmetric about the mean
    page = L.render_html(board, L.results_frame(records), ["wait_mean", "jct_mean"], "jct_mean", "t")
    assert "31.0 &plusmn; 2.5" in page  # waits 30, 31, 32 s: mean 31, t(0.975, 2) * 1 / sqrt(3) = 2.48
    assert "avg queueing (s)" in page and "What each column means" in page


@pytest.mark.slow
def test_experiment_run_prints_the_top_of_the_leaderboard(tmp_path, capsys):
    from pipelines.cli import main

    spec = tmp_path / "s.yaml"
    spec.write_text("name: ux\nworkloads:\n  - {name: demo, synthetic: demo, jobs: 80}\n"
                    "policies: [fifo, sjf]\nseeds: 1\nplots: false\n")
    assert main(["experiment", "run", str(spec), "--engine", "serial", "--out", str(tmp_path / "run"),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"leaderboard demo \(offered load [0-9.]+, reached load [0-9.]+\):", out)
    assert "loads: offered = GPU-seconds submitted" in out
    head = out[out.index("leaderboard demo"):]
    assert head.index("fifo") > 0 and "rank" in head.splitlines()[1]


@pytest.mark.slow
def test_page_in_headless_chromium_defines_columns_symmetric_intervals_distinguishable_cdfs(tmp_path):
    """The page as a browser shows it: every table header is defined on the page, every number with an
    interval reads 'mean ± half' (symmetric), and in a screenshot each of six CDF entries has its own
    colour (small multiples: one panel each, the others in grey)."""
    import shutil
    import subprocess

    browser = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if browser is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install -y chromium)")
    records = []
    for i in range(6):
        for s in range(3):
            rec = _record("earth@0.9", f"policy{i}", s, 900.0 + 60 * i + s, wait=20.0 * i + s, reached=0.4 + 0.02 * i)
            rec["meta"] = {"offered_load": 0.9}
            records.append(rec)
    for rec in records:
        folder = tmp_path / "cells" / rec["id"]
        folder.mkdir(parents=True)
        scale = 1.0 + 0.5 * int(rec["cell"]["policy"][-1])
        pd.DataFrame({"jct_s": np.geomspace(30, 20000, 80) * scale, "status": "done"}).to_parquet(folder / "jobs_x.parquet")
    paths = L.write_report(tmp_path, records, metrics=["jct_mean", "wait_mean", "gpu_utilisation"], title="browser")
    probe = tmp_path / "probe.html"
    probe.write_text(paths["html"].read_text().replace(
        "</body>", "<script>window.addEventListener('load', () => { const heads = [...document.querySelectorAll("
        "'table.leaderboard th')].map(t => t.textContent); const defined = new Set([...document.querySelectorAll("
        "'dl.columns dt')].map(t => t.textContent)); const cells = [...document.querySelectorAll('table.leaderboard "
        "td')].map(t => t.textContent).filter(t => /\\d/.test(t) && t.includes('\\u00b1')); const d = "
        "document.createElement('pre'); d.id = 'probe'; d.textContent = JSON.stringify({undefined: heads.filter(h =>"
        " !defined.has(h)), heads: heads.length, pm: cells, images: [...document.images].filter(i => i.complete && "
        "i.naturalWidth > 100).length}); document.body.appendChild(d); });</script></body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    import html as html_lib
    import json

    found = re.search(r'<pre id="probe">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    seen = json.loads(html_lib.unescape(found.group(1)))
    assert seen["heads"] >= 9 and seen["undefined"] == []  # every column header has its definition
    assert seen["images"] == 2
    # 6 entries x (3 metrics with an interval + the reached load); the offered load is the workload's: no interval
    assert len(seen["pm"]) == 6 * 4
    for text in seen["pm"]:
        mean, half = (float(v) for v in re.findall(r"[-0-9.]+", text.replace(",", ""))[:2])
        assert half >= 0 and mean - half <= mean <= mean + half
    shot = tmp_path / "shot.png"
    subprocess.run([browser, *flags, "--window-size=1300,4200", f"--screenshot={shot}", paths["html"].as_uri()],
                   capture_output=True, timeout=120)
    import matplotlib.image as mpimg
    from matplotlib.colors import to_rgb

    pixels = mpimg.imread(shot)[..., :3]
    for i in range(1, 6):  # tab10 C1..C5 (C0 is near the queueing chart's blue): each entry's own line
        distance = np.abs(pixels - np.array(to_rgb(f"C{i}"))).max(axis=-1)
        assert (distance < 0.08).sum() > 40, f"C{i} not drawn"
    grey = np.abs(pixels - np.array(to_rgb("#cccccc"))).max(axis=-1) < 0.03
    assert grey.sum() > 200  # the other entries behind each panel's own line
