"""`--predict iterations=models:/iterations@champion`: the registered `iterations` model (pipelines/train.py,
A-SRPT's random forest on group and user) trained on the PAI preset in a real sqlite MLflow store, then
asked through sim.predictors.predict_kind."""
from __future__ import annotations

import numpy as np
import pytest

from pipelines.cli import main
from sim.predictors import predict_kind
from tests.test_mlflow import store  # noqa: F401 - fixture


def test_registered_iterations_model_predicts_iterations(store, capsys):
    from features.traces.synthetic import build_preset
    from sim.asrpt.jobs import job_models, true_iterations

    assert main(["train", "iterations", "--synthetic", "pai", "--jobs", "800", "--test-days", "0.0008",
                 "--param", "n_estimators=10", "--allow-worse-than-baseline"]) == 0
    capsys.readouterr()
    frame = build_preset("pai", seed=0, jobs=800)[0].frame
    it = np.array(predict_kind("iterations", "models:/iterations@champion", frame, 0, store))
    dur = np.array(predict_kind("duration", "models:/iterations@champion", frame, 0, store))
    assert len(it) == 800 and np.isfinite(it).all() and (it >= 0).all()
    # groups of the first 400 jobs (all in the training part) are known: positive; unseen groups only -> 0
    known = frame["group_id"].isin(set(frame["group_id"].iloc[:400])).to_numpy()
    assert (it[known] > 0).all() and (it == 0).mean() < 0.2
    # the PAI-shaped trace carries iterations, so the task fits them (run parameter target=iterations);
    # durations asked of it are iterations x alpha~_min at the reference NIC
    per_second = true_iterations(frame[["num_gpus"]].assign(duration=1.0), job_models(frame))
    assert dur == pytest.approx(it / per_second)
    truth = frame["iterations"].to_numpy(float)
    assert np.median(np.abs(it[known] - truth[known]) / truth[known]) < 0.8  # a fitted model, not noise
    # an alias that does not exist: one line naming it
    with pytest.raises(ValueError) as exc:
        predict_kind("iterations", "models:/iterations@nosuch", frame, 0, store)
    assert "\n" not in str(exc.value) and "iterations@nosuch" in str(exc.value)
