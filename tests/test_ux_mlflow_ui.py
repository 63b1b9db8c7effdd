"""Issue 22 item 4: schedcast's MLflow experiments open on their runs in the MLflow 3 UI, not on the GenAI
traces overview. The experiments carry ``mlflow.experimentKind = custom_model_development`` (the tag MLflow 3
reads where its workflow switch is off) and the links schedcast prints carry ``workflowType=machine_learning``
(what MLflow 3.17's switch reads). Checked in a real `mlflow server` with headless Chromium."""
import os
import shutil
import subprocess

import pytest

from tests.test_mlflow_server import MLFLOW_CLI, SERVER_ENV, free_port, start, stop, wait_http


def _browser() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


def test_an_explicit_experiment_kind_is_kept():
    """mark_model_development tags an untagged experiment and leaves a kind the user chose."""
    from models.registry import mark_model_development

    calls = []

    class Client:
        def set_experiment_tag(self, *args):
            calls.append(args)

    mark_model_development(Client(), "1", {})
    mark_model_development(Client(), "2", {"mlflow.experimentKind": "genai_development"})
    assert calls == [("1", "mlflow.experimentKind", "custom_model_development")]


def test_ui_links_open_the_model_training_view():
    from pipelines.tracking import ui_url

    assert ui_url("http://127.0.0.1:5000/", "3", "abc") == \
        "http://127.0.0.1:5000/#/experiments/3/runs/abc?workflowType=machine_learning"
    assert ui_url("sqlite:///mlruns/mlflow.db", "3") is None


@pytest.mark.slow
def test_mlflow_ui_opens_schedcast_experiment_on_runs(tmp_path, empty_store_db):
    """A real tracking server on a free loopback port; the experiment page at the link schedcast gives is
    rendered by headless Chromium: the DOM lists the run (the runs table), not the traces overview, and the
    screenshot is not blank."""
    browser = _browser()
    if browser is None:
        pytest.skip("no chromium on PATH (Debian: apt-get install -y chromium)")
    from mlflow import MlflowClient

    from models.registry import EXPERIMENT, configure
    from pipelines.tracking import EXPERIMENT as SIM_EXPERIMENT
    from pipelines.tracking import Tracker, ui_url

    port = free_port()
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}, **SERVER_ENV}
    shutil.copy(empty_store_db, tmp_path / "server.db")
    server = start([*MLFLOW_CLI, "server", "--host", "127.0.0.1", "--port", str(port), "--backend-store-uri",
                    f"sqlite:///{tmp_path / 'server.db'}", "--default-artifact-root", (tmp_path / "art").as_uri(),
                    "--workers", "1"], env)
    try:
        wait_http(f"http://127.0.0.1:{port}/health", 180, server)  # slow only on a loaded machine
        uri = f"http://127.0.0.1:{port}"
        client = MlflowClient(uri)
        old = client.create_experiment(SIM_EXPERIMENT)  # an older store: created before the tag
        configure(uri)  # the training experiment (models.registry)
        tracker = Tracker(uri)  # the simulations experiment (pipelines.tracking)
        assert tracker.experiment_id == old
        for name in (EXPERIMENT, SIM_EXPERIMENT):
            assert client.get_experiment_by_name(name).tags.get("mlflow.experimentKind") == "custom_model_development"
        run = tracker.start("fifo | ux-probe | seed 0", metrics={"jct_mean_s": 10.0})
        tracker.end(run)
        url = ui_url(uri, tracker.experiment_id)
        shot = tmp_path / "ui.png"
        flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                 f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1400,900", "--virtual-time-budget=15000"]
        dom = subprocess.run([browser, *flags, f"--screenshot={shot}", "--dump-dom", url], capture_output=True,
                             text=True, timeout=120).stdout
    finally:
        stop(server)
    assert "fifo | ux-probe | seed 0" in dom, dom[-3000:]  # the runs table lists the run
    assert "matching run" in dom
    assert "Detect Issues" not in dom and "Tool calls" not in dom  # not the GenAI overview
    import matplotlib.image as mpimg

    pixels = mpimg.imread(shot)
    assert pixels.shape[0] >= 800 and pixels[..., :3].std() > 0.05
