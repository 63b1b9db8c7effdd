"""Leaderboard numbers by hand, the static HTML page, and the page in a real headless browser."""
from __future__ import annotations

import base64
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from evaluation.leaderboard import leaderboard, overall, render_html, results_frame, write_report


def _record(workload, policy, seed, jct, wait=10.0, util=0.5, status="ok", predictor="unused", error=""):
    rec = {"id": f"{workload}-{policy}-{seed}", "status": status, "error": error,
           "cell": {"workload": workload, "label": policy, "policy": policy, "predictor": predictor, "seed": seed}}
    if status == "ok":
        rec["summary"] = {"policy": policy, "jct_mean": jct, "wait_mean": wait, "gpu_utilisation": util}
    return rec


RECORDS = [
    _record("w1", "a", 0, 100.0), _record("w1", "a", 1, 200.0), _record("w1", "a", 2, 300.0),
    _record("w1", "b", 0, 150.0, util=0.9), _record("w1", "b", 1, 150.0, util=0.7), _record("w1", "b", 2, 150.0, util=0.8),
    _record("w2", "a", 0, 50.0), _record("w2", "b", 0, 40.0), _record("w2", "c", 0, 40.0),
    _record("w2", "d", 0, 0.0, status="skipped", error="ValueError: d needs a performance model"),
]


def test_mean_interval_and_ranks_by_hand():
    board = leaderboard(results_frame(RECORDS), ["jct_mean", "gpu_utilisation"], "jct_mean")
    a1 = board[(board.workload == "w1") & (board.policy == "a")].iloc[0]
    assert a1["seeds"] == 3 and a1["jct_mean"] == pytest.approx(200.0)
    # t(0.975, 2) = 4.302653; sd = 100; half-width = 4.302653 * 100 / sqrt(3)
    assert a1["jct_mean_ci95"] == pytest.approx(4.302653 * 100 / np.sqrt(3), rel=1e-6)
    assert a1["jct_mean_lo"] == pytest.approx(200 - 248.4138, rel=1e-5)
    b1 = board[(board.workload == "w1") & (board.policy == "b")].iloc[0]
    assert b1["jct_mean_ci95"] == pytest.approx(0.0) and b1["gpu_utilisation"] == pytest.approx(0.8)
    assert (b1["rank"], a1["rank"]) == (1, 2)
    w2 = board[board.workload == "w2"].set_index("policy")
    assert np.isnan(w2.loc["a", "jct_mean_ci95"])  # one seed: no interval
    assert list(w2["rank"]) == [1, 1, 3] and "d" not in w2.index  # ties share a rank; skipped cells are left out
    ov = overall(board).set_index("policy")
    assert ov.loc["b", "mean_rank"] == 1.0 and ov.loc["a", "mean_rank"] == 2.5 and ov.loc["c", "mean_rank"] == 1.0
    assert ov.loc["a", "overall_rank"] == 3


def test_rank_by_utilisation_prefers_higher():
    board = leaderboard(results_frame(RECORDS), ["jct_mean", "gpu_utilisation"], "gpu_utilisation")
    w1 = board[board.workload == "w1"].set_index("policy")
    assert (w1.loc["b", "rank"], w1.loc["a", "rank"]) == (1, 2)


def test_html_has_tables_plots_and_reasons(tmp_path):
    # job tables for the CDF plot, as cells write them
    for rec in RECORDS:
        if rec["status"] == "ok":
            folder = tmp_path / "cells" / rec["id"]
            folder.mkdir(parents=True)
            pd.DataFrame({"jct_s": np.linspace(60, rec["summary"]["jct_mean"] * 2, 50), "status": "done"}).to_parquet(
                folder / f"jobs_{rec['cell']['label']}.parquet")
    paths = write_report(tmp_path, RECORDS, metrics=["jct_mean", "wait_mean", "gpu_utilisation"], title="unit <test>")
    page = paths["html"].read_text()
    assert page.count('<table class="leaderboard">') == 2 and "<table class=overall>" in page
    assert "unit &lt;test&gt;" in page  # escaped
    assert "d needs a performance model" in page and "Cells not run" in page
    images = re.findall(r'src="data:image/png;base64,([^"]+)"', page)
    assert len(images) == 4  # a CDF and a queueing plot per workload
    assert all(base64.b64decode(img)[:8] == b"\x89PNG\r\n\x1a\n" for img in images)
    # one unit per metric on the page, chosen by its largest mean (200 s): minutes, in the header too
    assert "200.000" not in page and "3.33 &plusmn; 4.14" in page and "avg JCT (min)" in page
    frame = pd.read_csv(paths["results"])
    assert len(frame) == len(RECORDS) and set(frame["status"]) == {"ok", "skipped"}
    assert "http://" not in page.replace("http://www.w3.org", "")  # nothing fetched from a server


def test_empty_board_renders():
    page = render_html(leaderboard(results_frame([]), ["jct_mean"]), results_frame([]), ["jct_mean"], "jct_mean", "e")
    assert "<h1>Leaderboard: e</h1>" in page


def _browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


@pytest.mark.slow
def test_report_renders_in_headless_browser(tmp_path):
    """The page opens from disk in a real browser: the DOM it builds has the tables and the images load
    (their natural width is known only after decoding), and a screenshot is not blank."""
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install -y chromium)")
    for rec in RECORDS:
        if rec["status"] == "ok":
            folder = tmp_path / "cells" / rec["id"]
            folder.mkdir(parents=True)
            pd.DataFrame({"jct_s": np.linspace(60, 7200, 30), "status": "done"}).to_parquet(folder / "jobs_x.parquet")
    paths = write_report(tmp_path, RECORDS, metrics=["jct_mean", "wait_mean"], title="browser")
    # the page's own script writes what the browser decoded into the DOM, which --dump-dom prints
    probe = tmp_path / "probe.html"
    probe.write_text(paths["html"].read_text().replace(
        "</body>", "<script>window.addEventListener('load', () => { const d = document.createElement('div');"
        " d.id = 'probe'; d.textContent = 'tables=' + document.querySelectorAll('table').length + ' rows=' +"
        " document.querySelectorAll('tr').length + ' images=' + [...document.images].filter(i => i.complete &&"
        " i.naturalWidth > 100).length; document.body.appendChild(d); });</script></body>"))
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([browser, *flags, "--virtual-time-budget=5000", "--dump-dom", probe.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    found = re.search(r'id="probe">tables=(\d+) rows=(\d+) images=(\d+)<', dom)
    assert found, dom[-2000:]
    tables, rows, images = map(int, found.groups())
    assert tables == 4 and images == 4 and rows >= 2 + 3 + 1 + 3 + 1 + 1 + 1
    shot = tmp_path / "shot.png"
    subprocess.run([browser, *flags, "--window-size=1200,1600", f"--screenshot={shot}", paths["html"].as_uri()],
                   capture_output=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    assert pixels.shape[0] >= 1000 and pixels.shape[1] >= 1000
    assert pixels[..., :3].std() > 0.05  # not a blank page
