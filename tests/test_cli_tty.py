"""The CLI in a real pseudo-terminal: progress bars are drawn only there (piped runs never show them),
so a broken bar crashes only what a user types. Every command with a progress bar runs here
(`simulate`, `demo`; `train`, `retrain` and `evaluate` have none)."""
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_in_pty(args: list[str], timeout: float = 180.0) -> tuple[int, str]:
    """Run `python -m pipelines.cli ARGS` with stdin, stdout and stderr on a pseudo-terminal."""
    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "120", "LINES": "40"}
    env.pop("NO_COLOR", None)
    proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", *args], stdin=slave, stdout=slave,
                            stderr=slave, cwd=ROOT, env=env, close_fds=True)
    os.close(slave)
    chunks = []
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError:  # EIO: the child closed the terminal
                    break
                if not data:
                    break
                chunks.append(data)
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    return code, b"".join(chunks).decode("utf-8", "replace")


def test_simulate_in_a_terminal_draws_progress_and_finishes(tmp_path):
    code, text = run_in_pty(["simulate", "--synthetic", "demo", "--jobs", "400", "--policy", "fifo", "srtf",
                             "--out", str(tmp_path / "out")])
    assert code == 0, text[-2000:]
    assert "Traceback" not in text
    assert "/400 jobs" in text  # the bar was drawn (jobs finished / jobs) ...
    assert (tmp_path / "out" / "summary.csv").exists()  # ... and the results were written


def test_demo_in_a_terminal_draws_progress(tmp_path):
    code, text = run_in_pty(["demo", "--jobs", "300", "--out", str(tmp_path / "demo")])
    assert code == 0, text[-2000:]
    assert "/300 jobs" in text and "Traceback" not in text


def test_no_progress_in_a_terminal_draws_none(tmp_path):
    code, text = run_in_pty(["simulate", "--synthetic", "demo", "--jobs", "200", "--policy", "fifo",
                             "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 0, text[-2000:]
    assert "/200 jobs" not in text


def test_console_script_output_is_complete_through_a_pipe_with_the_fast_exit(tmp_path):
    # simulate ends with os._exit after flushing: nothing printed may be lost when stdout is a pipe
    out = tmp_path / "res"
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "simulate", "--synthetic", "demo", "--jobs", "60",
                           "--policy", "fifo", "sjf", "--no-plots", "--out", str(out)], capture_output=True, text=True,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().splitlines()[-1].startswith("time: ") and "results in" in proc.stdout
    assert (out / "meta.json").exists()
    bad = subprocess.run([sys.executable, "-m", "pipelines.cli", "simulate", "--synthetic", "nope", "--out",
                          str(tmp_path / "x")], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1
