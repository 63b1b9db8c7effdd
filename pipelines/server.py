"""`schedcast server` (MLflow tracking server and UI) and `schedcast serve` (a model behind a REST
endpoint), both run as managed children of this process.

Why managed: `mlflow server` and `mlflow models serve` start further processes (uvicorn / gunicorn
workers, huey job consumers). Run naively, killing schedcast leaves them all holding the port. Here
the child runs in its own session (process group), and every way out of schedcast (Ctrl-C, SIGTERM,
SIGHUP, an exception, normal exit) stops the whole group: SIGTERM, a grace period, then SIGKILL.

The child is started with the running interpreter (``sys.executable -m mlflow``) and that interpreter's
bin directory first on its PATH, so a virtual environment works without being activated (mlflow itself
starts ``uvicorn`` by name). "UI at ..." is printed only once the endpoint answers; until then a spinner
shows the elapsed time (in a terminal), and a readiness timeout stops the child with a clear error.
"""
from __future__ import annotations

import argparse
import atexit
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Sequence

#: Seconds a stopped child gets between SIGTERM and SIGKILL.
GRACE_S = 10.0


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the interpreter's bin directory first on PATH (not resolved:
    a venv's python is a symlink, and the venv's bin is what holds its console scripts)."""
    env = dict(os.environ)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join([bindir] + [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bindir])
    env.update(extra or {})
    return env


def port_in_use(host: str, port: int) -> bool:
    """True when something accepts connections on (host, port)."""
    try:
        with socket.create_connection((host if host not in ("0.0.0.0", "::") else "127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def session_pids(sid: int) -> list[int]:
    """Live processes of session ``sid`` (Linux /proc; empty elsewhere): the child and everything it
    started, including those re-parented to init after their parent died."""
    out = []
    proc = Path("/proc")
    if not proc.is_dir():
        return out
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()  # after "pid (comm) ": state ppid pgrp session ...
        if len(fields) > 3 and int(fields[3]) == sid and fields[0] != "Z":
            out.append(int(entry.name))
    return out


class ManagedProcess:
    """A child command in its own session, stopped as a whole group (idempotent ``stop``)."""

    def __init__(self, cmd: Sequence[str], env: dict[str, str]):
        self.cmd = list(cmd)
        self.proc = subprocess.Popen(self.cmd, env=env, start_new_session=True)
        self.pid = self.proc.pid

    def _signal_all(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        for pid in session_pids(self.pid):  # members that moved to another group of the session
            try:
                os.kill(pid, sig)
            except (ProcessLookupError, PermissionError):
                pass

    def alive(self) -> bool:
        return self.proc.poll() is None or bool(session_pids(self.pid))

    def stop(self, grace: float = GRACE_S) -> None:
        """SIGTERM to the child first (mlflow forwards it to its uvicorn server, which shuts its workers
        down; killing workers directly makes a uvicorn supervisor start new ones). Once everything the
        child started has exited, a child that lingers (mlflow's CLI takes ~5 s to exit after its
        server) gets SIGKILL after one second; whatever is left after ``grace`` seconds gets SIGTERM,
        then SIGKILL."""
        if not self.alive():
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        deadline, idle_since = time.monotonic() + grace, None
        while time.monotonic() < deadline:
            self.proc.poll()
            if not self.alive():
                return
            others = [p for p in session_pids(self.pid) if p != self.pid]
            if self.proc.returncode is None and not others:
                idle_since = idle_since or time.monotonic()
                if time.monotonic() - idle_since > 1.0:
                    break  # only the waiting parent is left
            time.sleep(0.1)
        if self.proc.poll() is None and [p for p in session_pids(self.pid) if p != self.pid]:
            self._signal_all(signal.SIGTERM)
            end = time.monotonic() + 2.0
            while time.monotonic() < end and self.alive():
                time.sleep(0.1)
                self.proc.poll()
        self._signal_all(signal.SIGKILL)
        end = time.monotonic() + 5.0
        while time.monotonic() < end and self.alive():  # killed processes take a moment to go
            self.proc.poll()
            time.sleep(0.05)


def wait_ready(url: str, child: ManagedProcess, timeout: float, what: str) -> float:
    """Poll ``url`` until it answers HTTP 200; seconds waited. Raises RuntimeError if the child exits and
    TimeoutError after ``timeout`` s. Shows a spinner with elapsed time when stderr is a terminal."""
    import urllib.request

    t0 = time.monotonic()
    status = None
    if sys.stderr.isatty():
        from rich.console import Console

        status = Console(stderr=True).status(f"starting {what} ...")
        status.start()
    else:
        print(f"waiting for {what} at {url} (up to {timeout:.0f} s) ...", file=sys.stderr, flush=True)
    try:
        while True:
            elapsed = time.monotonic() - t0
            code = child.proc.poll()
            if code is not None:
                raise RuntimeError(f"{what} exited with code {code} before answering at {url} (see its log above)")
            if elapsed > timeout:
                raise TimeoutError(f"{what} did not answer at {url} within {timeout:.0f} s; stopped it "
                                   f"(raise --ready-timeout if the machine is slow)")
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200:
                        return time.monotonic() - t0
            except OSError:
                pass
            if status is not None:
                status.update(f"starting {what} ... {elapsed:4.0f} s")
            time.sleep(0.25)
    finally:
        if status is not None:
            status.stop()


def run_managed(cmd: Sequence[str], *, ready_url: str, what: str, banner: str, timeout: float,
                env: dict[str, str] | None = None) -> int:
    """Start ``cmd`` as a managed child, wait until ``ready_url`` answers, print ``banner``, then wait for
    the child. Every exit path stops the child's whole process group. Returns the exit code."""
    child = ManagedProcess(cmd, env if env is not None else child_env())
    atexit.register(child.stop)

    def on_signal(signum, frame):  # noqa: ARG001 - signal handler signature
        child.stop()
        raise SystemExit(128 + signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        secs = wait_ready(ready_url, child, timeout, what)
        print(f"{banner}  (ready after {secs:.1f} s; Ctrl-C stops it)", flush=True)
        return child.proc.wait()
    except (RuntimeError, TimeoutError) as exc:
        raise ValueError(str(exc)) from None  # the CLI prints one line and exits 2
    finally:
        child.stop()
        for s, h in previous.items():
            signal.signal(s, h)
        atexit.unregister(child.stop)


def _check_port(host: str, port: int) -> None:
    if not 0 < port < 65536:
        raise ValueError(f"--port must be between 1 and 65535, got {port}")
    if port_in_use(host, port):
        raise ValueError(f"port {port} on {host} is already in use (another server?); pick another with --port")


def cmd_server(args: argparse.Namespace) -> int:
    from models.registry import default_tracking_uri

    _check_port(args.host, args.port)
    backend = args.backend_store_uri or default_tracking_uri()
    root = Path(os.getcwd()) / "mlruns" / "artifacts"
    if backend.startswith("sqlite:///"):
        Path(backend[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "mlflow", "server", "--host", args.host, "--port", str(args.port),
           "--backend-store-uri", backend, "--default-artifact-root", args.artifact_root or root.as_uri()]
    if args.workers:
        cmd += ["--workers", str(args.workers)]
    # MLflow's job runner (GenAI scorers / prompt optimisation) starts 7 huey consumers; schedcast uses none.
    env = child_env({"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": os.environ.get("MLFLOW_SERVER_ENABLE_JOB_EXECUTION",
                                                                           "false")})
    print("starting:", " ".join(cmd[2:]), flush=True)
    return run_managed(cmd, ready_url=f"http://{_url_host(args.host)}:{args.port}/health", what="MLflow server",
                       banner=f"UI at http://{_url_host(args.host)}:{args.port}", timeout=args.ready_timeout, env=env)


def cmd_serve(args: argparse.Namespace) -> int:
    from models.registry import UntrustedModelError, default_tracking_uri, is_store_uri, trust_local_from_env

    if not is_store_uri(args.model_uri) and not (args.trust_local_models or trust_local_from_env()):
        raise UntrustedModelError(
            f"refusing to serve {args.model_uri}: a model is a pickle and loading it runs its code; pass "
            "--trust-local-models or set SCHEDCAST_TRUST_LOCAL_MODELS=1 if you trust it")
    _check_port(args.host, args.port)
    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()
    cmd = [sys.executable, "-m", "mlflow", "models", "serve", "-m", args.model_uri, "--env-manager", "local",
           "-h", args.host, "-p", str(args.port)]
    if args.workers:
        cmd += ["-w", str(args.workers)]
    # An explicit --tracking-uri names the registry too; otherwise $MLFLOW_REGISTRY_URI may point elsewhere.
    registry = uri if args.tracking_uri else os.environ.get("MLFLOW_REGISTRY_URI", uri)
    _check_registered(args.model_uri, uri, registry)
    env = child_env({"MLFLOW_TRACKING_URI": uri, "MLFLOW_REGISTRY_URI": registry})
    print("starting:", " ".join(cmd[2:]), f"(tracking {uri})", flush=True)
    base = f"http://{_url_host(args.host)}:{args.port}"
    return run_managed(cmd, ready_url=f"{base}/ping", what=f"model server for {args.model_uri}",
                       banner=f"model {args.model_uri} at {base}/invocations", timeout=args.ready_timeout, env=env)


def _check_registered(model_uri: str, tracking_uri: str, registry_uri: str) -> None:
    """One clear line instead of mlflow's traceback when a models:/ URI names nothing."""
    if not model_uri.startswith("models:/"):
        return
    if registry_uri.startswith("sqlite:///") and not Path(registry_uri[len("sqlite:///"):]).exists():
        raise ValueError(f"no model registry at {registry_uri} (train a model first, or pass --tracking-uri)")
    import logging

    import mlflow
    from mlflow.exceptions import MlflowException

    logging.getLogger("mlflow").setLevel(logging.ERROR)  # no store-migration chatter for a look-up
    client = mlflow.MlflowClient(tracking_uri=tracking_uri, registry_uri=registry_uri)
    ref = model_uri[len("models:/"):]
    name, at, alias = ref.partition("@")
    try:
        if at:
            client.get_model_version_by_alias(name, alias)
        elif "/" in name:
            model, _, version = name.partition("/")
            if not version.isdigit() and version.lower() != "latest":
                return  # a stage name ('Production'): let mlflow resolve it
            if version.isdigit():
                client.get_model_version(model, version)
            else:
                client.get_registered_model(model)
        elif not name.startswith("m-"):  # models:/m-<id> is a logged model, not a registered one
            client.get_registered_model(name)
    except MlflowException as exc:
        reason = str(exc).splitlines()[0][:200]
        raise ValueError(f"model {model_uri} is not in the registry at {registry_uri} ({reason}); "
                         "see `schedcast models`") from None


def _url_host(host: str) -> str:
    return "127.0.0.1" if host in ("0.0.0.0", "") else (f"[{host}]" if ":" in host else host)


def add_parsers(sub) -> None:
    """Register `server` and `serve`."""
    p = sub.add_parser("server", help="start an MLflow tracking server and UI (127.0.0.1 by default)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--backend-store-uri", help="default: sqlite:///mlruns/mlflow.db in the working directory")
    p.add_argument("--artifact-root", help="default: mlruns/artifacts in the working directory")
    p.add_argument("--workers", type=int, default=1, help="server worker processes (default 1: ready about "
                   "twice as fast as mlflow's own default of 4 on a small machine)")
    p.add_argument("--ready-timeout", type=float, default=180.0, help="seconds to wait for the UI (default 180)")
    p.set_defaults(func=cmd_server)

    s = sub.add_parser("serve", help="serve a registered model over REST (mlflow models serve, local env)")
    s.add_argument("model_uri", metavar="MODEL_URI", help="models:/NAME@ALIAS, models:/NAME/VERSION or runs:/ID/model")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=int, default=5001)
    s.add_argument("--tracking-uri", help="where MODEL_URI is registered (default $MLFLOW_TRACKING_URI, "
                   "else sqlite:///mlruns/mlflow.db)")
    s.add_argument("--workers", type=int, help="scoring worker processes (mlflow's default: 1)")
    s.add_argument("--ready-timeout", type=float, default=180.0, help="seconds to wait for /ping (default 180)")
    s.add_argument("--trust-local-models", action="store_true", help="serve a model from a local path or "
                   "foreign URI (a model is a pickle: loading it runs its code)")
    s.set_defaults(func=cmd_serve)
