import os
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

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"


# The suite runs under pytest-xdist (`-n auto --dist loadgroup`, pyproject.toml): single tests are spread over
# the workers. A module whose module-scoped fixtures are dear (a trained model, a registry) stays on one
# worker, so that they are built once rather than once per worker.
ONE_WORKER_MODULES = ("test_serving_model", "test_cli_predictors")


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook, which reads the marks
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.nodeid.split("::", 1)[0].rsplit("/", 1)[-1].removesuffix(".py")
        if module in ONE_WORKER_MODULES:
            item.add_marker(pytest.mark.xdist_group(module))


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


@pytest.fixture(autouse=True)
def _isolate_mlflow_env():
    """mlflow.set_tracking_uri / set_registry_uri write os.environ; keep tests from leaking into each other."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("MLFLOW_")}
    yield
    for k in [k for k in os.environ if k.startswith("MLFLOW_")]:
        del os.environ[k]
    os.environ.update(saved)
