"""Issue 22 item 12: plots a new user reads without guessing: the JCT CDF title fits on real traces, a
synthetic workload is not "synthetic demo on demo", the local explanation names its job and prediction and
explains its colours, the demand fan chart has time on its x-axis."""
from __future__ import annotations

import numpy as np
import pandas as pd

from evaluation import plots, report


def _inside(fig, artist) -> bool:
    fig.canvas.draw()
    box, page = artist.get_window_extent(), fig.bbox
    return box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y1 <= page.y1 + 1


def test_cdf_title_fits_a_real_trace_name(tmp_path, monkeypatch):
    from matplotlib.figure import Figure

    saved = []
    monkeypatch.setattr(Figure, "savefig", lambda self, *a, **k: saved.append(self))
    meta = {"trace_name": "philly_jobs_2017-09-04_2017-11-30.csv.gz", "cluster_name": "philly-pool",
            "cluster_gpus": 2490}
    jobs = pd.DataFrame({"jct": np.geomspace(10, 1e6, 74_110)})
    report.plot_jct_cdf({"fifo": jobs, "qssf:history=False": jobs}, tmp_path / "c.png", title=report._plot_title(meta),
                        window=(0.0, 80 * 86400.0))
    fig = saved[0]
    title = fig.axes[0].title
    assert "74,110 jobs" in title.get_text() and "philly-pool" in title.get_text()
    assert _inside(fig, title)


def test_synthetic_title_says_workload_and_cluster():
    meta = {"trace_name": "synthetic demo", "cluster_name": "demo", "cluster_gpus": 128}
    assert report._plot_title(meta) == "synthetic demo workload on cluster demo (128 GPUs)"


def test_local_explanation_names_the_job_prediction_and_colours():
    from models.tabular import make_duration_model

    rng = np.random.default_rng(0)
    X = pd.DataFrame({"num_gpus": rng.choice([1.0, 2.0, 8.0], 300), "hour": rng.integers(0, 24, 300).astype(float)})
    y = np.exp(5 + X["num_gpus"] / 4 + rng.normal(0, 0.3, 300)).to_numpy()
    model = make_duration_model("ebm", fast=True).fit(X, y)
    fig = plots.local_explanation_figure(model, X.head(1), "one duration prediction", job="j-42", actual=y[0])
    ax = fig.axes[0]
    pred = float(model.predict(X.head(1))[0])
    assert "job j-42" in ax.get_title() and f"predicted {pred:,.0f} s" in ax.get_title()
    assert f"actual {y[0]:,.0f} s" in ax.get_title()
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["raises the prediction", "lowers it"]
    plots.close({"f": fig})


def test_fan_chart_x_axis_is_time():
    from models.forecast import Forecast

    origins = list(pd.date_range("2020-05-01", periods=3, freq="60min"))
    mean = np.arange(3 * 2 * 6, dtype=float).reshape(3, 2, 6)
    fc = Forecast(origins, ["vc1", "vc2"], mean, scale=np.ones_like(mean))
    fig = plots.fan_figure(fc, mean + 1.0, freq="10min")
    ax = fig.axes[0]
    x = pd.to_datetime(ax.lines[0].get_xdata())
    assert x[0] == pd.Timestamp("2020-05-01 00:00") and x[-1] == pd.Timestamp("2020-05-01 02:50")
    assert len(x) == 18 and (np.diff(x.asi8) == 600 * 10**9).all()  # the windows tile the holdout
    assert ax.get_xlabel().startswith("time")
    assert list(plots.forecast_times(origins, 6)) == list(x)  # step inferred from the origins' spacing
    plots.close({"f": fig})
