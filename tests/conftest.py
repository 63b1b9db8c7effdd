import os
import sys
import tempfile
from pathlib import Path

import pytest

# What the suite needs, set here so `python -m pytest` alone is the README's test command: one BLAS /
# OpenMP thread per process (deterministic, and the suite runs servers and Dask workers beside it), a
# non-interactive matplotlib backend, and no Hugging Face download at run time.
os.environ["OMP_NUM_THREADS"] = "1"
os.environ["MPLBACKEND"] = "Agg"
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# parsed traces are cached per user; tests keep theirs in a temporary folder (never in ~/.cache)
os.environ.setdefault("SCHEDCAST_TRACE_CACHE", tempfile.mkdtemp(prefix="schedcast-trace-cache-"))
# Compiled bytecode is kept (Python's default, in the git-ignored __pycache__ folders): with
# PYTHONDONTWRITEBYTECODE=1 in the environment, every xdist worker re-did pytest's assertion rewrite of
# every test module and recompiled the repo's modules at each start (collection: 21.6 s of CPU per worker
# instead of 11.5 s once cached), and so did every `schedcast` subprocess a test starts (they inherit this).
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


# The suite runs under pytest-xdist (`-n auto --dist loadgroup`, pyproject.toml): single tests are spread over
# the workers. A module whose module-scoped fixtures are dear (a trained model, a registry) stays on one
# worker, so that they are built once rather than once per worker.
ONE_WORKER_MODULES = ("test_serving_model", "test_cli_predictors")
#: Tests that import lightning (a Trainer, or gluonts' torch models): ~7.5 s of CPU per process, most of it
#: torchmetrics -> transformers. On one worker (one group, one unit) only that worker pays it; spread, both
#: did. Found with a plug-in that logged, per test, imports of and attribute reads on lightning, gluonts
#: and torchmetrics (test_estimator_conformance, test_forecast_zoo, test_models_ml, test_gfs_*, ...).
LIGHTNING_TESTS = frozenset({
    "test_estimator_conformance::test_fit_returns_self_is_deterministic_clones_unfitted_and_pickles[orglinear-lightning]",
    "test_estimator_conformance::test_fit_returns_self_is_deterministic_clones_unfitted_and_pickles[deepar]",
    "test_estimator_conformance::test_fit_returns_self_is_deterministic_clones_unfitted_and_pickles[gluonts-patchtst]",
    "test_forecast_zoo::test_gluonts_models_keep_the_protocol_and_read_only_the_past[patchtst]",
    "test_forecast_zoo::test_gluonts_models_keep_the_protocol_and_read_only_the_past[tft]",
    "test_forecast_zoo::test_gluonts_models_keep_the_protocol_and_read_only_the_past[lagtst]",
    "test_models_ml::test_orglinear_learns_a_daily_cycle_and_gives_ordered_quantiles",
    "test_models_ml::test_forecast_baselines_and_deepar_wiring",
})


#: The slowest work units, slowest first: they are started first. xdist hands the workers their tests in
#: collection order (groups of several tests first), and these sit late in the alphabet (test_mlflow*,
#: test_serving_model, test_train_*): a long unit started last leaves the other core idle at the end.
#: Longest first leaves the short tests to fill the gaps at the end. An entry is "module::test" or a whole
#: module of ONE_WORKER_MODULES (one unit: its tests run one after the other on one worker). Seconds: the
#: quiet 2-core run of 2026-11-26 06:55 (--durations; a group is the sum of its tests), with this stop's
#: changes (reproduce lazer on 10,000 jobs: 32 -> ~6 s; the invariant screen: gfs_registry ~5 s less).
SLOW_FIRST = (
    "test_serving_model",  # ~60: one worker, a trained model, serve, holdout, forests
    "test_mlflow_server::test_tracking_server_registry_and_serving_endpoint",  # 39
    "test_train_output::test_training_is_quiet_by_default_and_the_models_table_is_fast",  # 36
    "test_train_lifecycle::test_two_first_trains_on_a_new_store_both_succeed",  # 28
    "test_cli_predictors",  # ~27: one worker, a registry
    "test_mlflow::test_lucid_runs_with_registry_models",  # 26
    "lightning",  # ~20: one worker, LIGHTNING_TESTS (~10 of it the import)
    "test_ux_mlflow_ui::test_mlflow_ui_opens_schedcast_experiment_on_runs",  # 23
    "test_mlflow::test_other_tasks_train_and_register",  # 19
    "test_mlflow::test_train_registers_and_simulator_uses_champion",  # 18.5
    "test_gfs_registry::test_gfs_quota_uses_the_registered_demand_champion",  # ~18
    "test_serving_processes::test_server_banner_after_readiness_and_sigterm_leaves_nothing",  # 17
    "test_corpus_determinism::test_corpus_is_the_same_under_every_hash_seed",  # 17
    "test_mlflow::test_retrain_promotes_refuses_and_survives_a_crash",  # 17
    "test_retrain_gate::test_gate_scores_on_the_champions_lineage_or_refuses",  # 14
    "test_train_lifecycle::test_killed_first_train_leaves_a_failed_run_and_no_half_version",  # 14
    "test_experiment_run::test_serial_and_dask_two_workers_agree",  # 14
    "test_cli::test_simulate_every_policy_on_real_philly",  # 6-13.5 per chunk
    "test_retrain_gate::test_concurrent_retrains_promote_at_most_one",  # 12
    "test_hardening_data::test_the_lost_race_names_the_champion_that_is_there_now",  # 9
    "test_plugins::test_an_installed_plugin_runs_in_simulate",  # 8
    "test_plugins::test_plugins_reach_dask_workers_in_experiment_run",  # 7
    "test_hardening_data::test_first_version_worse_than_baseline_is_not_champion_and_models_says_so",  # 6
    "test_hardening_data::test_rows_appended_to_the_champions_trace_are_the_same_source_by_content",  # 6
    "test_reproduce::test_reproduce_lazer_quick_gives_every_claim_a_verdict",  # ~6 (10,000 Philly jobs)
    "test_experiment_run::test_resume_skips_finished_cells_and_reruns_on_new_code",  # 6
    "test_schedmate_sim::test_cli_with_the_failure_handlers_measured_rates",  # 6
    "test_models_ml::test_ga2m_monotone_gpu_shape",  # 5.6
    "test_schedmate_text_failures::test_long_noisy_log_gives_the_final_fatal_error_not_one_the_job_survived",  # 5.4
)


def _module(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def group(item: pytest.Item) -> str | None:
        module = _module(item)
        if module in ONE_WORKER_MODULES:
            return module
        return "lightning" if f"{module}::{item.name}" in LIGHTNING_TESTS else None

    for item in items:
        if group(item):
            item.add_marker(pytest.mark.xdist_group(group(item)))
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}

    def key(item: pytest.Item) -> int:
        return rank.get(group(item) or f"{_module(item)}::{getattr(item, 'originalname', item.name)}", len(rank))

    # stable: every other test keeps its place (xdist needs the same order on every worker: it is)
    items.sort(key=key)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The real public data; CI has ../shared/data beside the clone."""
    if not SHARED.exists():
        if os.environ.get("CI"):
            pytest.fail(f"CI must run with the shared data beside the clone; {SHARED} is missing")
        pytest.skip("../shared/data is not present")
    return SHARED


@pytest.fixture(scope="session")
def philly_file(shared_data) -> Path:
    return shared_data / "philly" / "philly_jobs_2017-09-04_2017-11-30.csv.gz"


@pytest.fixture(scope="session")
def empty_store_db(tmp_path_factory):
    """A migrated, empty MLflow sqlite database, created once per worker: creating the tables takes ~3 s of
    CPU, copying the file does not (each test still gets its own store and artifact folder). Defined here,
    not in a test module: a session fixture imported into several test modules is one fixture per module,
    built once in each of them."""
    import contextlib
    import logging

    import mlflow

    logging.getLogger("mlflow").setLevel(logging.WARNING)  # no "Creating initial MLflow database tables"
    folder = tmp_path_factory.mktemp("template")
    db = folder / "mlflow.db"
    with contextlib.chdir(folder):  # the Default experiment's ./mlruns is the template's, never the repo's
        client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{db}", registry_uri=f"sqlite:///{db}")
        client.search_experiments()
        client.search_registered_models()
    return db


@pytest.fixture()
def migrated_store(empty_store_db):
    """``migrated_store(db)``: a copy of the migrated template at ``db`` (its folder made); returns its
    sqlite URI. For tests whose subject is not table creation (on a new store it is ~3 s of CPU in the
    process that opens it first: the test's, a `schedcast` child's or an MLflow server's)."""
    import shutil

    def make(db: Path) -> str:
        db.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(empty_store_db, db)
        return f"sqlite:///{db}"

    return make


@pytest.fixture(autouse=True)
def _isolate_mlflow_env():
    """mlflow.set_tracking_uri / set_registry_uri write os.environ; keep tests from leaking into each other."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}
    yield
    for k in [k for k in os.environ if k.startswith("MLFLOW_")]:
        del os.environ[k]
    os.environ.update(saved)
