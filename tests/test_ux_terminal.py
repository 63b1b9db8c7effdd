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


LEDGER = (["claim", "source", "paper", "schedcast", "holds if", "verdict"],
          [["T5-hp-jqt-low", "Table 5 (Low)", "-62 %", "+27.1 %", "cut >= 50 % of the paper's", "does not hold"],
           ["T6-eviction-ratio-medium", "Table 6, spot eviction ratio", "0.41", "2.03", "<= 0.5 x YARN-CS",
            "does not hold"],
           ["F7-forecast", "Figure 7, OrgLinear vs DLinear", "0.86", "0.913", "< 1", "holds"]])


def test_rich_tables_never_break_a_word_at_80_columns():
    import io

    from rich.console import Console

    from pipelines.console import rich_table

    buf = io.StringIO()
    console = Console(file=buf, width=80, force_terminal=False, color_system=None)
    console.print(rich_table(*LEDGER, title="gfs: claims ledger", width=80))
    text = buf.getvalue()
    assert max(len(line) for line in text.splitlines()) <= 80
    words = {w for row in [LEDGER[0], *LEDGER[1]] for cell in row for w in str(cell).split()}
    printed = set(text.replace("│", " ").replace("┃", " ").split())
    assert words <= printed, words - printed  # every word whole (wrapped at spaces only)


def test_plain_tables_are_one_line_per_row_outside_a_terminal():
    import io

    from pipelines.console import print_table

    buf = io.StringIO()  # not a terminal
    print_table(*LEDGER, title="gfs: claims ledger", file=buf)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1 + 2 + len(LEDGER[1]) and lines[0] == "gfs: claims ledger"
    assert lines[3].startswith("T5-hp-jqt-low") and lines[3].rstrip().endswith("does not hold")
