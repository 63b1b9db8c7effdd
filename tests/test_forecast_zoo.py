"""GFS's forecasting table (pipelines/papers/gfs_forecasting.py) and its library baselines
(models/forecast_zoo.py): rolling origins never hand a model data past its origin, the library models keep
the forecaster protocol, and OrgLinear's early stopping on a time-based validation window."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from models.forecast import Forecast, PreviousWeekPeak, SeasonalNaive
from pipelines.papers.gfs_forecasting import (RollingSpec, forecasting_table, markdown, masked_history,
                                              rolling_blocks, score_block, summarise)

SPEC = RollingSpec(lookback=24, horizon=6, n_origins=2, block_days=0.5)  # blocks of 72 ten-minute steps


def _demand(days: int = 4, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    index = pd.date_range("2020-05-01", periods=days * 144, freq="10min")
    day = np.sin(np.arange(len(index)) * 2 * np.pi / 144)
    demand = pd.DataFrame({f"org{i}": np.maximum(0.0, 20 + 8 * (i + 1) * day + rng.normal(0, 2, len(index)))
                           for i in range(3)}, index=index)
    return demand, pd.DataFrame({"quota_gpus": [40.0, 50.0, 60.0]}, index=demand.columns)


class _Spy:
    """A forecaster that records what it was given and fails on any value at or after an origin."""

    horizon = SPEC.horizon

    def __init__(self, log: list):
        self.log = log

    def fit(self, demand, attrs=None):
        self.log.append(("fit", demand.index[-1]))
        return self

    def forecast(self, demand, attrs, origins):
        for o in origins:
            future = demand.loc[demand.index >= o]
            assert future.isna().all().all(), f"the model was given values at or after its origin {o}"
            self.log.append(("forecast", o, demand.index[-1]))
        n, O = len(origins), demand.shape[1]
        m = np.zeros((n, O, self.horizon))
        return Forecast(list(origins), list(demand.columns), m, fixed_quantiles={0.9: m, 0.95: m})


def test_blocks_are_the_series_end_oldest_first_and_a_short_series_is_refused():
    blocks = rolling_blocks(576, SPEC, 72)
    assert [c for c, _ in blocks] == [432, 504]
    assert blocks[0][1] == list(range(432, 504 - 6 + 1, 6)) and blocks[1][1][-1] + 6 == 576
    with pytest.raises(ValueError, match="too short"):
        rolling_blocks(100, SPEC, 72)


def test_rolling_origins_never_see_the_future():
    demand, attrs = _demand()
    log: list = []
    forecasting_table(demand, attrs, {"spy": lambda: _Spy(log)}, SPEC)
    fits = [e for e in log if e[0] == "fit"]
    casts = [e for e in log if e[0] == "forecast"]
    assert [f[1] for f in fits] == [demand.index[431], demand.index[503]]  # trained before each block's cut
    assert len(casts) == 2 * 12
    for _, origin, last in casts:  # the masked frame reaches exactly the forecast's horizon
        assert last == origin + pd.Timedelta("10min") * (SPEC.horizon - 1)


def test_the_spy_fails_when_handed_the_unmasked_series():
    """The check above can fail: the same spy given the true future values raises."""
    demand, attrs = _demand()
    spy = _Spy([])
    with pytest.raises(AssertionError, match="at or after its origin"):
        spy.forecast(demand, attrs, [demand.index[450]])
    masked = masked_history(demand, 450, 6)
    assert masked.iloc[:450].equals(demand.iloc[:450]) and masked.iloc[450:].isna().all().all()
    assert len(masked) == 456


def test_a_model_that_peeks_scores_nan():
    """A forecaster that reads the values at its origin gets NaN from the harness, not a good score."""

    class Peek(SeasonalNaive):
        def _point(self, demand, attrs, origins):
            idx = demand.index
            return np.stack([demand.iloc[idx.get_loc(o): idx.get_loc(o) + self.horizon].to_numpy().T
                             for o in origins])

    demand, attrs = _demand()
    s = score_block(Peek(6, 144), demand, attrs, 504, [504, 510], 6)
    assert np.isnan(s["mae"])


def test_table_summary_and_markdown_name_every_model_and_the_missing_ones():
    demand, attrs = _demand()
    rows = forecasting_table(demand, attrs, {"seasonal": lambda: SeasonalNaive(6, 144),
                                             "gfs-e": lambda: PreviousWeekPeak(6, 288)}, SPEC)
    assert len(rows) == 4 and np.isfinite(rows[["mae", "ql_0.9", "ql_0.95"]].to_numpy()).all()
    summary = summarise(rows)
    assert list(summary.index) == ["seasonal", "gfs-e"] and (summary["origins"] == 2).all()
    assert (summary["mae_min"] <= summary["mae_mean"]).all() and (summary["mae_mean"] <= summary["mae_max"]).all()
    text = markdown(summary, SPEC, quick=False)
    for name in ("seasonal", "gfs-e", "Informer", "Autoformer", "FEDformer", "Transformer"):
        assert f"| {name} |" in text


@pytest.mark.slow  # GluonTS' first import: 1-2 s quiet, over a minute on the loaded 2-core machine
@pytest.mark.parametrize("model", ["patchtst", "tft", "lagtst"])
def test_gluonts_models_keep_the_protocol_and_read_only_the_past(model):
    from models.forecast_zoo import GluonTSForecaster

    demand, _ = _demand(days=3)
    make = lambda: GluonTSForecaster(model, lookback=24, horizon=6, max_epochs=1, num_batches_per_epoch=2,  # noqa: E731
                                     num_samples=8, patch_len=6)
    est = make().fit(demand.iloc[:300])
    origins = [demand.index[300], demand.index[306]]
    fc = est.forecast(demand, None, origins)
    assert fc.mean.shape == (2, 3, 6) and fc.quantile(0.9).shape == (2, 3, 6) and np.isfinite(fc.mean).all()
    hidden = est.forecast(masked_history(demand, 306, 6), None, origins[1:])  # the future hidden: the same
    np.testing.assert_allclose(hidden.mean[0], fc.mean[1], rtol=1e-5)  # forecast (up to batching's rounding)
    np.testing.assert_array_equal(make().fit(demand.iloc[:300]).forecast(demand, None, origins).mean, fc.mean)


def test_an_unknown_library_model_is_refused_by_name():
    from models.forecast_zoo import GluonTSForecaster

    with pytest.raises(ValueError, match="model must be one of patchtst"):
        GluonTSForecaster("informer")


def test_train_demand_knows_the_library_models():
    from models.forecast_zoo import GluonTSForecaster
    from pipelines.train_common import make_forecaster

    est = make_forecaster("tft", 24, 6, "10min", max_epochs=1)
    assert isinstance(est, GluonTSForecaster) and est.model == "tft" and est.max_epochs == 1
    with pytest.raises(ValueError, match="patchtst, tft, lagtst"):
        make_forecaster("informer", 24, 6, "10min")


def test_orglinear_early_stopping_validates_on_the_series_end_and_retrains_on_all():
    from models.forecast import OrgLinear

    demand, attrs = _demand(days=3)
    kw = dict(lookback=24, horizon=6, kernel=5, max_epochs=4, batch_size=64, holiday_country=None, engine="torch")
    est = OrgLinear(val_steps=72, patience=1, **kw).fit(demand, attrs)
    assert 1 <= est.best_epochs_ <= len(est.val_losses_) <= 4
    assert est.val_losses_[est.best_epochs_ - 1] == min(est.val_losses_)
    assert not hasattr(est, "updates_")  # the warm-start counter starts afresh for OrgLinear.update
    again = OrgLinear(val_steps=72, patience=1, **kw).fit(demand, attrs)
    o = [demand.index[400]]
    np.testing.assert_array_equal(est.forecast(demand, attrs, o).mean, again.forecast(demand, attrs, o).mean)
    with pytest.raises(ValueError, match="no training or no validation window"):
        OrgLinear(val_steps=len(demand), **kw).fit(demand, attrs)
    with pytest.raises(ValueError, match="needs engine='torch'"):
        OrgLinear(val_steps=72, **{**kw, "engine": "lightning"}).fit(demand, attrs)


def test_library_chatter_during_a_fit_stays_out_of_the_ledger_output(capfd, monkeypatch):
    """GluonTS' Lightning checkpoint callback logs 'Epoch 3, global step 100: ...' at INFO on every fit; the
    forecasting table ran 24 fits inside `reproduce gfs` and printed them all."""
    import logging
    import sys
    import warnings

    class Chatty(SeasonalNaive):
        def fit(self, demand, attrs=None):
            logging.getLogger("lightning.pytorch.callbacks.model_checkpoint").info("Epoch 3, global step 100")
            warnings.warn("a library warning")
            return super().fit(demand, attrs)

    handler = logging.StreamHandler(sys.stderr)  # Lightning attaches one like it to its logger
    logging.getLogger("lightning.pytorch").addHandler(handler)
    logging.getLogger("lightning.pytorch").setLevel(logging.INFO)
    monkeypatch.delenv("SCHEDCAST_VERBOSE", raising=False)
    try:
        demand, attrs = _demand()
        score_block(Chatty(6, 144), demand, attrs, 504, [504, 510], 6)
        out, err = capfd.readouterr()
        assert "global step" not in out + err and "library warning" not in out + err
        monkeypatch.setenv("SCHEDCAST_VERBOSE", "1")
        score_block(Chatty(6, 144), demand, attrs, 504, [504, 510], 6)
        assert "global step" in capfd.readouterr().err  # --verbose-style runs keep it
    finally:
        logging.getLogger("lightning.pytorch").removeHandler(handler)
