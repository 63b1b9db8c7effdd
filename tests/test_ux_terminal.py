"""Terminal output: tables fit the terminal without wrapping or breaking a word (logs keep whole lines),
server children print no third-party deprecation notices, and `train` shows its spinner before the
silent seconds of imports and data loading."""
from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest

from evaluation.report import render_table

ROWS = [{"policy": name, "jct_mean": 3600.0, "jct_p50": 100.0, "jct_p95": 5000.0, "jct_p99": 9000.0, "wait_mean": 50.0,
         "wait_p95": 30.0, "wait_p99.9": 40.0, "futile_p95": 0.0, "preemptions": 0, "makespan": 1e5,
         "gpu_utilisation": 0.3, "sim_seconds": 0.1} for name in ("fifo", "longest-first:strict=true")]


def test_tables_fit_the_terminal_in_blocks_of_whole_columns():
    whole = render_table(ROWS, "t")
    narrow = render_table(ROWS, "t", width=80)
    assert max(len(line) for line in whole.splitlines()) > 80  # one block of full lines for a log
    assert len(whole.splitlines()) == 4
    lines = narrow.splitlines()
    assert max(len(line) for line in lines) <= 80
    headers = [line for line in lines if line.strip().startswith("policy")]
    assert len(headers) >= 2  # cut into blocks, the policy column repeated in each
    for label in ("avg JCT h", "P99.9 wait h", "futile P95 min", "util %", "sim s"):  # no header split
        assert sum(label in line for line in headers) == 1, label
    assert sum("longest-first:strict=true" in line for line in lines) == len(headers)


def test_server_children_print_no_deprecation_notices():
    pytest.importorskip("mlflow")
    from pipelines.server import child_env

    proc = subprocess.run([sys.executable, "-c", "import mlflow.server.fastapi_app"], env=child_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Deprecat" not in proc.stderr, proc.stderr


def test_train_spinner_starts_before_the_slow_imports_and_data(monkeypatch):
    from pipelines import modelops, progress

    events = []

    @contextlib.contextmanager
    def step(what, enabled=True):
        events.append(f"spinner: {what}")
        yield

    def trainer(args):
        events.append("data")
        raise KeyboardInterrupt  # stop here: the order is what is checked

    monkeypatch.setattr(progress, "step", step)
    monkeypatch.setattr(modelops, "_task_trainer", trainer)
    args = modelops.argparse.Namespace(task="duration", algo=None, alias="champion", tracking_uri=None, verbose=False)
    with pytest.raises(KeyboardInterrupt):
        modelops._train(args)
    assert events == ["spinner: loading the duration data and the model store", "data"]
