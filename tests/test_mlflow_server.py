"""Integration: a real MLflow tracking server and a real `mlflow models serve` endpoint on free loopback
ports; the simulator's REST predictor against the endpoint. Both processes are stopped at the end."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import numpy as np

from tests.test_mlflow import PLUMBING

#: The server's environment in these tests: one thread per process, and no MLflow job runner (MLflow 3 starts
#: several huey consumer processes for GenAI jobs, each importing mlflow; schedcast's `server` turns it off too).
SERVER_ENV = {"OMP_NUM_THREADS": "1", "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false"}


#: MLflow's CLI run by the interpreter that runs the tests (its console script may live elsewhere, e.g. in a
#: virtual environment made with --system-site-packages)
MLFLOW_CLI = [sys.executable, "-m", "mlflow"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, timeout: float, proc: subprocess.Popen) -> None:
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode}: {proc.stdout.read()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(url)


def start(cmd, env) -> subprocess.Popen:
    return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=20)


def test_tracking_server_registry_and_serving_endpoint(tmp_path, philly_file, monkeypatch, empty_store_db):
    from features.duration import duration_features
    from features.traces import load_trace
    from models.registry import configure, load
    from pipelines.cli import main
    from sim.predictors import ModelPredictor, RestPredictor

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(SERVER_ENV)
    shutil.copy(empty_store_db, tmp_path / "server.db")  # migrated once per worker: the server skips its migrations
    server = start([*MLFLOW_CLI, "server", "--host", "127.0.0.1", "--port", str(port), "--backend-store-uri",
                    f"sqlite:///{tmp_path / 'server.db'}", "--default-artifact-root", (tmp_path / "art").as_uri(),
                    "--workers", "1"], env)
    serve = None
    try:
        wait_http(f"http://127.0.0.1:{port}/health", 240, server)  # generous: a loaded CI machine, xdist
        uri = f"http://127.0.0.1:{port}"
        monkeypatch.chdir(tmp_path)
        assert main(["train", "duration", "--trace", str(philly_file), "--tracking-uri", uri,
                     *PLUMBING, "--allow-worse-than-baseline"]) == 0
        configure(uri)
        model = load("models:/duration@champion")
        jobs = load_trace(philly_file).frame.iloc[:400]
        local = ModelPredictor("models:/duration@champion", tracking_uri=uri).predict(jobs)

        serve_port = free_port()
        serve = start([*MLFLOW_CLI, "models", "serve", "-m", "models:/duration@champion", "--env-manager", "local",
                       "-h", "127.0.0.1", "-p", str(serve_port)], {**env, "MLFLOW_TRACKING_URI": uri, "MLFLOW_REGISTRY_URI": uri})
        wait_http(f"http://127.0.0.1:{serve_port}/ping", 240, serve)
        remote = RestPredictor(f"http://127.0.0.1:{serve_port}", batch=150).predict(jobs)
        assert np.allclose(local, remote, rtol=1e-6)
        names = model.metadata.get_input_schema().input_names()
        features = duration_features(jobs)
        assert "submit_ts" in names and {c for c in names if c.startswith("hist_")} <= set(features.columns)
        # the registered model also takes raw job records (models.serving): same answers for these jobs,
        # whose past lies inside the trace the model was trained with
        from models.serving import to_records

        body = json.dumps({"dataframe_records": to_records(jobs)}).encode()
        req = urllib.request.Request(f"http://127.0.0.1:{serve_port}/invocations", data=body,
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=120) as resp:
            raw = np.asarray(json.loads(resp.read())["predictions"], dtype=float)
        assert np.allclose(raw, local, rtol=1e-9)
    finally:
        if serve is not None:
            stop(serve)
        stop(server)
    assert server.poll() is not None and (serve is None or serve.poll() is not None)
