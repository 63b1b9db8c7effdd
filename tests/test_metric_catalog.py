"""One metric catalog (evaluation.catalog): every table that names metrics names catalog metrics, the
HP / spot metrics are catalogued (with the workloads that have them), a spec may rank by them, and MLflow
logs only what the catalog names."""
from __future__ import annotations

import pandas as pd
import pytest

from evaluation.catalog import CATALOG, DISPLAY, file_name, known, names


def test_every_metric_table_names_catalog_metrics():
    from evaluation.report import HP_SPOT_COLUMNS, TABLE_COLUMNS
    from pipelines.experiments.spec import DEFAULT_METRICS
    from pipelines.tracking import COMPARISON_METRICS, GROUP_METRICS

    used = {key for _, key, _ in TABLE_COLUMNS + HP_SPOT_COLUMNS} | set(DISPLAY) | set(GROUP_METRICS)
    used |= set(COMPARISON_METRICS) | set(DEFAULT_METRICS)
    assert used - set(CATALOG) == set()


def test_hp_spot_metrics_are_catalogued_with_their_workloads_and_keep_their_written_names():
    from evaluation.gfs_metrics import pool_summary

    jobs = pd.DataFrame({"measured": [True, True, True], "klass": ["hp", "spot", "spot"],
                         "status": ["done"] * 3, "jct": [10.0, 20.0, 30.0], "wait": [0.0, 1.0, 2.0],
                         "evictions": [0, 1, 0], "run_gpu_h": [1.0, 1.0, 1.0], "lost_gpu_h": [0.0, 0.5, 0.0]})
    keys = set(pool_summary(jobs))
    assert keys <= set(CATALOG)
    assert {CATALOG[k].workloads for k in keys} == {"spot"}
    assert "evict_rate_runs" in names("spot") and "jct_mean" not in names("spot")
    # the names written to summary.csv before the catalog knew them
    assert [file_name(k) for k in ("evict_rate_runs", "evictions", "hp_jobs", "hp_jct_mean")] == [
        "evict_rate_runs", "evictions", "hp_jobs", "hp_jct_mean_s"]


def test_a_spec_may_rank_by_an_hp_spot_metric_but_not_by_an_unknown_name():
    from pipelines.experiments.spec import check_metric

    assert check_metric("evict_rate_runs") == "evict_rate_runs"
    assert check_metric("class/spot/jct_mean") == "class/spot/jct_mean"
    with pytest.raises(ValueError, match="unknown metric 'lucid_packs'"):
        check_metric("lucid_packs")


def test_mlflow_logs_only_what_the_catalog_names():
    from pipelines.tracking import summary_metrics

    m = summary_metrics({"jct_mean": 5.0, "evict_rate_runs": 0.1, "lucid_packs": 3, "sqa_model_fits": 2,
                         "policy": "x"})
    assert m == {"jct_mean": 5.0, "evict_rate_runs": 0.1}
    assert known("size/le8/jct_mean") and not known("lucid_packs")
