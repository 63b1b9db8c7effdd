"""`schedcast server` / `serve` process handling: the MLflow child and everything it starts run in their
own session and stop with schedcast (SIGTERM, Ctrl-C, errors); the running interpreter is used (no
activated venv / PATH needed); "UI at ..." is printed only once the UI answers."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: Bound on one server start-up in these tests (measured 12-95 s on the 2-core test machine under load).
READY_S = 240


# -- helpers shared with test_serving_model ------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return [text[:text.rfind(")") + 1]] + text[text.rfind(")") + 2:].split()  # [comm, state, ppid, pgrp, sid, ...]


def process_tree(root: int) -> dict[int, str]:
    """(pid -> start time) of ``root``'s descendants and of every process in their sessions."""
    procs = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st is not None:
                procs[int(entry.name)] = st
    children: dict[int, list[int]] = {}
    for pid, st in procs.items():
        children.setdefault(int(st[2]), []).append(pid)
    found, todo = set(), [root]
    while todo:
        for c in children.get(todo.pop(), []):
            if c not in found:
                found.add(c)
                todo.append(c)
    sessions = {int(procs[p][4]) for p in found if p in procs} - {int(procs[root][4])} if root in procs else set()
    found |= {p for p, st in procs.items() if int(st[4]) in sessions}
    return {p: procs[p][20] for p in found if p in procs}  # field 22 of stat: start time


def survivors(tree: dict[int, str]) -> list[str]:
    """Processes of ``tree`` still alive (same pid and start time, not a zombie), with their command line."""
    out = []
    for pid, start in tree.items():
        st = _stat(pid)
        if st is not None and st[20] == start and st[1] != "Z":
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:200]
            except OSError:
                cmd = "?"
            out.append(f"{pid}: {cmd}")
    return out


def listening(port: int) -> bool:
    """Something listens on 127.0.0.1:port (or any address) according to /proc/net/tcp*."""
    for name in ("tcp", "tcp6"):
        try:
            lines = Path(f"/proc/net/{name}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                return True
    return False


def bare_env(**extra: str) -> dict[str, str]:
    """An environment without the interpreter's bin directory (or pyenv shims) on PATH, as for a venv that
    was never activated, and without MLFLOW_* leaking in from the test process."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_")}
    env.update(PATH="/usr/bin:/bin", PYTHONPATH=str(REPO), OMP_NUM_THREADS="1", **extra)
    return env


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class CliProcess:
    """`python -m pipelines.cli ...` as a child of the test, its output collected by a thread."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str]):
        # SIGINT as in a terminal: a test run started as a shell background job (`pytest &`) has SIGINT
        # ignored, and ignored signals are inherited, so Ctrl-C tests would wait for nothing.
        self.proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1,
                                     preexec_fn=_default_sigint)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self.lines.append(line)

    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if text in self.output():
                return
            if self.proc.poll() is not None:
                time.sleep(0.2)
                raise AssertionError(f"exited {self.proc.returncode} before {text!r}:\n{self.output()[-3000:]}")
            time.sleep(0.2)
        raise AssertionError(f"no {text!r} within {timeout} s:\n{self.output()[-3000:]}")

    def terminate_and_check(self, port: int, tree: dict[int, str], sig: int = signal.SIGTERM) -> float:
        """Send ``sig`` to schedcast only (not its group) and check that it exits and takes every process
        it started with it, and that the port is free again. Returns the seconds the stop took."""
        t0 = time.monotonic()
        self.proc.send_signal(sig)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.kill_all(tree)
            raise AssertionError("schedcast did not exit within 60 s of the signal")
        secs = time.monotonic() - t0
        time.sleep(0.5)
        left = survivors(tree)
        self.kill_all(tree)
        assert not left, f"processes survived schedcast:\n" + "\n".join(left)
        assert not listening(port), f"port {port} still has a listener"
        return secs

    def kill_all(self, tree: dict[int, str]) -> None:
        """Clean-up after a failed test: kill what is left of the tree (pid and start time checked)."""
        if self.proc.poll() is None:
            self.proc.kill()
        for line in survivors(tree):
            try:
                os.kill(int(line.split(":")[0]), signal.SIGKILL)
            except OSError:
                pass


# -- unit tests: no MLflow ------------------------------------------------------------------------------
def test_child_env_puts_the_interpreter_first_on_path(monkeypatch):
    from pipelines.server import child_env

    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    env = child_env({"X_TEST": "1"})
    assert env["PATH"].split(os.pathsep)[0] == os.path.dirname(sys.executable)
    assert env["PATH"].endswith("/usr/bin:/bin") and env["X_TEST"] == "1"


def test_managed_process_stops_the_whole_session_including_other_groups():
    """A child that starts a grandchild in a separate process group (as daemons do) and ignores SIGTERM:
    stop() reaches every member of the session and falls back to SIGKILL after the grace period."""
    from pipelines.server import ManagedProcess, session_pids

    code = ("import os, signal, subprocess, sys, time\n"
            "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'], process_group=0)\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(300)'])\n"
            "time.sleep(300)\n")
    child = ManagedProcess([sys.executable, "-c", code], dict(os.environ))
    deadline = time.monotonic() + 20
    while len(session_pids(child.pid)) < 3 and time.monotonic() < deadline:
        time.sleep(0.1)
    members = session_pids(child.pid)
    assert len(members) == 3
    groups = {int(_stat(p)[3]) for p in members}
    assert len(groups) == 2  # one grandchild left the child's process group
    t0 = time.monotonic()
    child.stop(grace=1.0)
    assert time.monotonic() - t0 < 10
    assert child.proc.poll() is not None
    assert session_pids(child.pid) == []


def test_busy_port_is_refused_before_starting(tmp_path):
    from pipelines.cli import main

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        t0 = time.monotonic()
        assert main(["server", "--port", str(port), "--backend-store-uri", f"sqlite:///{tmp_path / 'x.db'}"]) == 2
        assert main(["serve", "models:/duration@champion", "--port", str(port)]) == 2
        assert time.monotonic() - t0 < 20  # refused up front: a server start takes 30 s or more here


def test_readiness_timeout_is_one_line_and_stops_the_child(tmp_path):
    """`--ready-timeout` shorter than the start-up: exit 2 with one clear line, nothing left behind."""
    port = free_port()
    cli = CliProcess(["server", "--port", str(port), "--workers", "1", "--ready-timeout", "2",
                      "--backend-store-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"], tmp_path, bare_env())
    tree: dict[int, str] = {}
    deadline = time.monotonic() + 60
    while cli.proc.poll() is None and time.monotonic() < deadline:
        tree.update(process_tree(cli.proc.pid))
        time.sleep(0.2)
    try:
        assert tree, "the mlflow child was never seen"
        assert cli.proc.returncode == 2, cli.output()
        assert "did not answer at http://127.0.0.1" in cli.output() and "within 2 s" in cli.output()
        assert "Traceback" not in cli.output()
        time.sleep(0.5)
        assert not survivors(tree), survivors(tree)
        assert not listening(port)
    finally:
        cli.kill_all(tree)


# -- the real thing --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_server_banner_after_readiness_and_sigterm_leaves_nothing(tmp_path, migrated_store):
    """`schedcast server` on a free port without the interpreter on PATH: "UI at" appears only once /health
    answers; SIGINT (Ctrl-C) to schedcast alone stops the mlflow server, its uvicorn workers and everything else.
    (The store is migrated already: what is tested is the banner and the stop, not table creation.)"""
    port = free_port()
    cli = CliProcess(["server", "--port", str(port), "--workers", "1", "--ready-timeout", str(READY_S),
                      "--backend-store-uri", migrated_store(tmp_path / "mlflow.db")], tmp_path, bare_env())
    tree: dict[int, str] = {}
    try:
        t0 = time.monotonic()
        cli.wait_for("UI at", READY_S + 30)
        ready = time.monotonic() - t0
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as resp:
            assert resp.status == 200  # the banner is never ahead of the UI
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as resp:
            assert resp.status == 200
        tree = process_tree(cli.proc.pid)
        assert any("uvicorn" in line for line in survivors(tree)), survivors(tree)
        assert f"UI at http://127.0.0.1:{port}" in cli.output()
        stop = cli.terminate_and_check(port, tree, signal.SIGINT)  # what Ctrl-C sends in a terminal
        assert cli.proc.returncode == 130
        print(f"schedcast server: ready after {ready:.1f} s, stopped in {stop:.1f} s")
    finally:
        cli.kill_all(tree)


def test_spinner_in_a_terminal(tmp_path):
    """Under a pseudo-terminal the wait shows a rich spinner with the elapsed seconds (then the timeout
    message); nothing crashes in the TTY-only code path."""
    import pty

    port = free_port()
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pipelines.cli", "server", "--port", str(port), "--workers", "1",
                             "--ready-timeout", "3", "--backend-store-uri", f"sqlite:///{tmp_path / 'mlflow.db'}"],
                            cwd=tmp_path, env=bare_env(TERM="xterm-256color"), stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    chunks, tree = [], {}
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            tree.update(process_tree(proc.pid))
            try:
                data = os.read(master, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            chunks.append(data.decode(errors="replace"))
        proc.wait(timeout=30)
        text = "".join(chunks)
        assert proc.returncode == 2, text
        import re

        assert re.search(r"starting MLflow server \.\.\.\s+[1-3] s", text), text
        assert "did not answer" in text and "Traceback" not in text
        time.sleep(0.5)
        assert not survivors(tree), survivors(tree)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        for line in survivors(tree):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)


def test_serve_names_a_model_that_is_not_registered(tmp_path, capsys):
    from pipelines.cli import main

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert main(["serve", "models:/duration@champion", "--tracking-uri", uri, "--port", str(free_port())]) == 2
    assert capsys.readouterr().err.strip() == f"schedcast: error: no model registry at {uri} (train a model " \
        "first, or pass --tracking-uri)"
    assert not (tmp_path / "mlflow.db").exists()  # a look-up creates no store


@pytest.mark.slow
def test_serve_names_a_model_missing_from_an_existing_registry(tmp_path, capsys):
    import mlflow

    from pipelines.cli import main

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.MlflowClient(tracking_uri=uri, registry_uri=uri).search_registered_models()  # an empty store
    capsys.readouterr()  # mlflow's own messages while creating it
    for missing in ("models:/duration@champion", "models:/duration/3"):
        assert main(["serve", missing, "--tracking-uri", uri, "--port", str(free_port())]) == 2
        err = capsys.readouterr().err
        assert f"model {missing} is not in the registry at {uri}" in err and len(err.strip().splitlines()) == 1


def test_serve_refuses_an_untrusted_local_model_path(tmp_path, capsys):
    from pipelines.cli import main

    assert main(["serve", str(tmp_path / "some_model_dir"), "--port", "1"]) == 2
    err = capsys.readouterr().err
    assert "refusing to serve" in err and "--trust-local-models" in err and len(err.strip().splitlines()) == 1


# -- arguments checked before anything starts (issue 20 items 12-13) ---------------------------------------
@pytest.mark.parametrize("command", ["server", "serve"])
@pytest.mark.parametrize("host", ["not a host", "no-such-host.invalid", "203.0.113.7"])
def test_bad_host_is_refused_in_one_line(tmp_path, capsys, command, host):
    """`--host 'not a host'` (and a name that does not resolve, an address not on this machine): exit 2
    with the reason, quickly, nothing started."""
    from pipelines.cli import main

    args = ["server", "--backend-store-uri", f"sqlite:///{tmp_path / 'x.db'}"] if command == "server" else \
        ["serve", "models:/duration@champion", "--tracking-uri", f"sqlite:///{tmp_path / 'x.db'}"]
    t0 = time.monotonic()
    assert main([*args, "--host", host, "--port", str(free_port())]) == 2
    assert time.monotonic() - t0 < 20
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "--host" in err and repr(host) in err, err
    assert not (tmp_path / "x.db").exists()


@pytest.mark.parametrize("command", ["server", "serve"])
@pytest.mark.parametrize("workers", ["0", "-3", "two"])
def test_workers_below_one_are_refused(capsys, command, workers):
    """`server --workers 0` used to be dropped from mlflow's command line (mlflow then started 4)."""
    from pipelines.cli import main

    args = ["server"] if command == "server" else ["serve", "models:/duration@champion"]
    with pytest.raises(SystemExit) as exc:
        main([*args, "--workers", workers, "--port", str(free_port())])
    assert exc.value.code == 2
    assert "--workers: must be a whole number >= 1" in capsys.readouterr().err


def test_server_workers_reach_mlflow(monkeypatch):
    """The validated --workers is always passed on (1 by default), never left to mlflow's default of 4."""
    import argparse as _argparse

    from pipelines import server

    seen = {}
    monkeypatch.setattr(server, "run_managed", lambda cmd, **kw: seen.setdefault("cmd", cmd) and 0)
    monkeypatch.setattr(server, "_check_port", lambda host, port: None)
    parser = _argparse.ArgumentParser()
    server.add_parsers(parser.add_subparsers())
    server.cmd_server(parser.parse_args(["server", "--backend-store-uri", "sqlite:////tmp/never-created.db"]))
    cmd = seen["cmd"]
    assert cmd[cmd.index("--workers") + 1] == "1"


def test_serve_engine_schedcast_refuses_several_workers(capsys):
    from pipelines.cli import main

    assert main(["serve", "models:/duration@champion", "--workers", "2", "--port", str(free_port())]) == 2
    assert "--engine mlflow" in capsys.readouterr().err


FAKE_CHILD = r"""
import http.server, sys, time
print("CHILD-LOG: INFO starting up", flush=True)
print("CHILD-LOG: WARNING something MLflow-like", file=sys.stderr, flush=True)
time.sleep(2.5)
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.end_headers(); self.wfile.write(b"ok")
    def log_message(self, *a):
        pass
srv = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
srv.timeout = 0.2
end = time.monotonic() + 2.0
while time.monotonic() < end:
    srv.handle_request()
"""


def test_child_output_is_held_until_the_spinner_stops(tmp_path):
    """Under a terminal, what the child prints while starting (MLflow's logs and warnings) comes after
    the last spinner frame and before the banner, not interleaved with the spinner."""
    import pty
    import re

    port = free_port()
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\nfrom pipelines.server import run_managed\n"
        f"sys.exit(run_managed([sys.executable, '-c', {FAKE_CHILD!r}, '{port}'], ready_url='http://127.0.0.1:{port}/',"
        " what='fake server', banner='FAKE-BANNER', timeout=60))\n")
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, str(script)], cwd=REPO, env=bare_env(TERM="xterm-256color"),
                            stdin=slave, stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                data = os.read(master, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data.decode(errors="replace"))
        proc.wait(timeout=30)
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    text = "".join(chunks)
    frames = [m.end() for m in re.finditer(r"starting fake server \.\.\.", text)]
    assert frames, text
    assert text.index("CHILD-LOG: INFO") > frames[-1] and text.index("CHILD-LOG: WARNING") > frames[-1], text
    assert text.index("FAKE-BANNER") > text.index("CHILD-LOG: WARNING"), text
