"""`schedcast server` (MLflow tracking server and UI) and `schedcast serve` (a model behind a REST
endpoint), both run as managed children of this process.

`schedcast serve` runs schedcast's own scoring server by default (``--engine schedcast``: this module's
``score`` command, one process, a thread per connection, HTTP parsed by h11 with a 16 MiB body limit, a
30 s read timeout and at most 256 connections: see MAX_BODY_BYTES and the limits beside it): it speaks
MLflow's ``/invocations`` JSON
(``dataframe_records`` / ``dataframe_split``, the same answers and error bodies) and hands raw job records
straight to models.serving's fast path. Why not ``mlflow models serve`` for everything: its request
handling alone (parsing into pandas, schema enforcement) takes ~9 ms on a trivial model here, where a
scheduler asking on its decision path needs a few. ``--engine mlflow`` keeps MLflow's server (other
input formats, several workers).

Why managed: `mlflow server` and `mlflow models serve` start further processes (uvicorn / gunicorn
workers, huey job consumers). Run naively, killing schedcast leaves them all holding the port. Here
the child runs in its own session (process group), and every way out of schedcast (Ctrl-C, SIGTERM,
SIGHUP, an exception, normal exit) stops the whole group: SIGTERM, a grace period, then SIGKILL.

The child is started with the running interpreter (``sys.executable -P -m mlflow``: ``-P`` and
PYTHONSAFEPATH=1 keep the working folder off its import path, so a ``mlflow/`` or ``orjson.py`` there is never
run) and that interpreter's
bin directory first on its PATH, so a virtual environment works without being activated (mlflow itself
starts ``uvicorn`` by name). "UI at ..." is printed only once the endpoint answers; until then a spinner
shows the elapsed time (in a terminal), and a readiness timeout stops the child with a clear error.
"""
from __future__ import annotations

import argparse
import atexit
import errno
import gc
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

#: Seconds a stopped child gets between SIGTERM and SIGKILL.
GRACE_S = 10.0


#: schedcast's own source root (the folder holding pipelines/, models/, ...), put on a child's PYTHONPATH so
#: the child imports the same schedcast as this process.
PACKAGE_ROOT = str(Path(__file__).resolve().parents[1])


def python_cmd(*args: str) -> list[str]:
    """A child Python command line that never imports from the working folder: ``-P`` (Python 3.11+)
    keeps the current directory off ``sys.path`` for ``-m`` / ``-c``, so a ``pipelines/server.py``,
    ``orjson.py`` or ``mlflow/__main__.py`` in the folder a user runs schedcast from is not executed.
    :func:`child_env` also sets PYTHONSAFEPATH=1, which does the same for every Python the child starts."""
    return [sys.executable, "-P", *args]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the interpreter's bin directory first on PATH (not resolved:
    a venv's python is a symlink, and the venv's bin is what holds its console scripts), PYTHONSAFEPATH=1
    (no Python the child starts puts the working folder on its import path) and schedcast's own source
    root first on PYTHONPATH (the child imports the schedcast this process runs)."""
    env = dict(os.environ)
    bindir = os.path.dirname(sys.executable)
    env["PATH"] = os.pathsep.join([bindir] + [p for p in env.get("PATH", "").split(os.pathsep) if p and p != bindir])
    # third-party deprecation notices are for MLflow's developers, not the user (Starlette's is a UserWarning)
    quiet = ",".join(QUIET_WARNINGS)
    env["PYTHONWARNINGS"] = ",".join(w for w in (env.get("PYTHONWARNINGS", ""), quiet) if w)
    env["PYTHONSAFEPATH"] = "1"
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p not in (".", PACKAGE_ROOT)]
    env["PYTHONPATH"] = os.pathsep.join([PACKAGE_ROOT] + paths)
    env.update(extra or {})
    return env


#: Warnings the server children (mlflow server / models serve and their uvicorn workers) do not print:
#: -W filters (action:message-start:category), the category a built-in so no module is imported for it.
QUIET_WARNINGS = ("ignore:starlette.middleware.wsgi is deprecated:UserWarning",
                  "ignore::DeprecationWarning")


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

    def __init__(self, cmd: Sequence[str], env: dict[str, str], *, hold_output: bool = False):
        """``hold_output``: the child's stdout and stderr go through a pipe and are held back until
        :meth:`release` (then written to stderr, and passed through from there on), so a start-up
        spinner is never interleaved with the child's logs and warnings."""
        self.cmd = list(cmd)
        self._held: list[str] | None = [] if hold_output else None
        self._out_lock = threading.Lock()
        pipe = subprocess.PIPE if hold_output else None
        self.proc = subprocess.Popen(self.cmd, env=env, start_new_session=True, stdout=pipe,
                                     stderr=subprocess.STDOUT if hold_output else None)
        self.pid = self.proc.pid
        if hold_output:
            threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for raw in iter(self.proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace")
            with self._out_lock:
                if self._held is not None:
                    self._held.append(line)
                    continue
            sys.stderr.write(line)
            sys.stderr.flush()

    def release(self) -> None:
        """Write what the child printed so far and pass the rest through (idempotent)."""
        with self._out_lock:
            held, self._held = self._held, None
            if held:
                sys.stderr.write("".join(held))
                sys.stderr.flush()

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
    child = ManagedProcess(cmd, env if env is not None else child_env(), hold_output=True)
    atexit.register(child.stop)

    def on_signal(signum, frame):  # noqa: ARG001 - signal handler signature
        child.stop()
        raise SystemExit(128 + signum)

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        try:
            secs = wait_ready(ready_url, child, timeout, what)
        finally:
            if child.proc.poll() is not None:
                time.sleep(0.2)  # let the pipe drain: the child's last words explain its exit
            child.release()  # the spinner has stopped: the child's start-up output, then the banner
        print(f"{banner}  (ready after {secs:.1f} s; Ctrl-C stops it)", flush=True)
        return child.proc.wait()
    except (RuntimeError, TimeoutError) as exc:
        raise ValueError(str(exc)) from None  # the CLI prints one line and exits 2
    finally:
        child.stop()
        child.release()
        for s, h in previous.items():
            signal.signal(s, h)
        atexit.unregister(child.stop)


def _check_port(host: str, port: int) -> None:
    """--port in range, --host an address of this machine, the port free: checked before any child
    starts (a bad host used to end in the child's traceback and an "internal error"). A host other than
    a loopback address gets a warning: the servers have no authentication."""
    if not 0 < port < 65536:
        raise ValueError(f"--port must be between 1 and 65535, got {port}")
    if not host or any(ch.isspace() or ch in "/\\@" for ch in host):
        raise ValueError(f"--host {host!r} is not a host name or IP address")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise ValueError(f"--host {host!r} is not a host name or IP address of this machine "
                         f"({getattr(exc, 'strerror', None) or exc})") from None
    family, _, _, _, addr = infos[0]
    in_use = f"port {port} on {host} is already in use (another server?); pick another with --port"
    try:  # binding first: an address of another machine is refused here, never connected to
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(addr)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            raise ValueError(in_use) from None
        raise ValueError(f"cannot listen on --host {host!r} port {port}: {exc.strerror or exc}") from None
    if port_in_use(host, port):  # an address of this machine (the bind above succeeded)
        raise ValueError(in_use)
    import ipaddress

    try:
        loopback = all(ipaddress.ip_address(info[4][0]).is_loopback for info in infos)
    except ValueError:
        loopback = False
    if not loopback:
        print(f"schedcast: warning: --host {host} listens beyond this machine ({addr[0]}"
              f"{': every network interface' if addr[0] in ('0.0.0.0', '::') else ''}); the server has no "
              "authentication: anyone who can reach it can use it. Use 127.0.0.1 unless you mean it, and a "
              "firewall or a reverse proxy with authentication if you do.", file=sys.stderr, flush=True)


def _workers(text: str) -> int:
    """--workers: a whole number >= 1 (0 used to fall through to mlflow's default of 4)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}")
    return value


def cmd_server(args: argparse.Namespace) -> int:
    from models.registry import default_tracking_uri

    _check_port(args.host, args.port)
    backend = args.backend_store_uri or default_tracking_uri()
    root = Path(os.getcwd()) / "mlruns" / "artifacts"
    if backend.startswith("sqlite:///"):
        Path(backend[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    cmd = python_cmd("-m", "mlflow", "server", "--host", args.host, "--port", str(args.port),
           "--backend-store-uri", backend, "--default-artifact-root", args.artifact_root or root.as_uri())
    cmd += ["--workers", str(args.workers)]
    # MLflow's job runner (GenAI scorers / prompt optimisation) starts 7 huey consumers; schedcast uses none.
    env = child_env({"MLFLOW_SERVER_ENABLE_JOB_EXECUTION": os.environ.get("MLFLOW_SERVER_ENABLE_JOB_EXECUTION",
                                                                           "false")})
    print("starting:", " ".join(cmd[3:]), flush=True)
    from pipelines.tracking import UI_RUNS_QUERY

    return run_managed(cmd, ready_url=f"http://{_url_host(args.host)}:{args.port}/health", what="MLflow server",
                       banner=f"UI at http://{_url_host(args.host)}:{args.port}/#/experiments?{UI_RUNS_QUERY} "
                       "(the runs view; MLflow 3 opens GenAI traces on the bare address)",
                       timeout=args.ready_timeout, env=env)


def cmd_serve(args: argparse.Namespace) -> int:
    from models.registry import UntrustedModelError, default_tracking_uri, is_store_uri, trust_local_from_env

    if not is_store_uri(args.model_uri) and not (args.trust_local_models or trust_local_from_env()):
        raise UntrustedModelError(
            f"refusing to serve {args.model_uri}: a model is a pickle and loading it runs its code; pass "
            "--trust-local-models or set SCHEDCAST_TRUST_LOCAL_MODELS=1 if you trust it")
    _check_port(args.host, args.port)
    uri = args.tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()
    if args.engine == "mlflow":
        cmd = python_cmd("-m", "mlflow", "models", "serve", "-m", args.model_uri, "--env-manager", "local",
                         "-h", args.host, "-p", str(args.port))
        if args.workers is not None:
            cmd += ["-w", str(args.workers)]
    else:
        if args.workers not in (None, 1):
            raise ValueError("--workers N > 1 needs --engine mlflow (schedcast's scoring server is one process, "
                             "so the finished jobs a client reports are seen by every later request)")
        cmd = python_cmd("-m", "pipelines.server", "score", args.model_uri, "--host", args.host,
                         "--port", str(args.port))
    # An explicit --tracking-uri names the registry too; otherwise $MLFLOW_REGISTRY_URI may point elsewhere.
    registry = uri if args.tracking_uri else os.environ.get("MLFLOW_REGISTRY_URI", uri)
    _check_registered(args.model_uri, uri, registry)
    env = child_env({"MLFLOW_TRACKING_URI": uri, "MLFLOW_REGISTRY_URI": registry})
    print("starting:", " ".join(cmd[3:]), f"(tracking {uri})", flush=True)
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
    p.add_argument("--workers", type=_workers, default=1, help="server worker processes (default 1: ready about "
                   "twice as fast as mlflow's own default of 4 on a small machine)")
    p.add_argument("--ready-timeout", type=float, default=180.0, help="seconds to wait for the UI (default 180)")
    p.set_defaults(func=cmd_server)

    s = sub.add_parser("serve", help="serve a registered model over REST: schedcast's scoring server, or "
                       "`mlflow models serve` with --engine mlflow")
    s.add_argument("model_uri", metavar="MODEL_URI", help="models:/NAME@ALIAS, models:/NAME/VERSION or runs:/ID/model")
    s.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    s.add_argument("--port", type=int, default=5001)
    s.add_argument("--tracking-uri", help="where MODEL_URI is registered (default $MLFLOW_TRACKING_URI, "
                   "else sqlite:///mlruns/mlflow.db)")
    s.add_argument("--engine", choices=("schedcast", "mlflow"), default="schedcast",
                   help="schedcast (default): schedcast's scoring server, one process, raw job records in well "
                   "under a millisecond; mlflow: `mlflow models serve` (every MLflow input format, --workers)")
    s.add_argument("--workers", type=_workers, help="scoring worker processes (--engine mlflow; its default: 1)")
    s.add_argument("--ready-timeout", type=float, default=180.0, help="seconds to wait for /ping (default 180)")
    s.add_argument("--trust-local-models", action="store_true", help="serve a model from a local path or "
                   "foreign URI (a model is a pickle: loading it runs its code)")
    s.set_defaults(func=cmd_serve)


# -- schedcast's scoring server (`schedcast serve --engine schedcast`, run as this module's `score`) -------
class Scorer:
    """A loaded pyfunc model answering MLflow's ``/invocations`` JSON. Raw job records go to
    models.serving's fast path (no pandas); feature frames and other models go through the pyfunc's own
    ``predict`` (MLflow's schema enforcement included). Answers are (HTTP status, JSON body): 200
    ``{"predictions": [...]}``, or MLflow's error body ``{"error_code": ..., "message": ...}`` — 400 for a
    bad request (one line per bad record), 500 with one line (never a stack trace) for anything else."""

    def __init__(self, model_uri: str):
        import mlflow.pyfunc

        from models.serving import RawRecordModel

        self.pyfunc = mlflow.pyfunc.load_model(model_uri)
        try:
            inner = self.pyfunc.unwrap_python_model()
        except Exception:  # noqa: BLE001 - not a python_model flavour: the generic path
            inner = None
        self.raw = inner if isinstance(inner, RawRecordModel) else None

    def in_progress(self):
        """A context for one request from its head to its answer: with a raw-record model, queries go before
        requests applying finished records (models.serving._Gate), the parsing and the answer included."""
        import contextlib

        return self.raw._gate.request() if self.raw is not None else contextlib.nullcontext()

    @staticmethod
    def _error(status: int, message: str, code: str = "INVALID_PARAMETER_VALUE") -> tuple[int, bytes]:
        import json

        return status, json.dumps({"error_code": code, "message": message}).encode()

    def _is_raw(self, records: list) -> bool:
        if self.raw is None or not records or not all(isinstance(r, dict) for r in records):
            return self.raw is not None and isinstance(records, list) and not records
        first = records[0]
        return "submit_ts" in first or "submit_time" in first or not all(c in first for c in self.raw.columns)

    def score(self, body: bytes) -> tuple[int, bytes]:
        import json

        import numpy as np

        try:
            payload = _loads(body)
        except RecursionError:
            return self._error(400, "the request body is JSON nested too deeply")
        except (ValueError, UnicodeDecodeError) as exc:
            return self._error(400, f"the request body is not JSON: {(str(exc).splitlines() or [''])[0][:300]}")
        if not isinstance(payload, dict) or not ({"dataframe_records", "dataframe_split"} & set(payload)):
            return self._error(400, 'send {"dataframe_records": [...]} or {"dataframe_split": {...}} '
                                    "(other MLflow input formats: schedcast serve --engine mlflow)")
        records = payload.get("dataframe_records")
        try:
            if records is not None and self._is_raw(records):
                from models.serving import RecordError

                try:
                    preds = self.raw.predict_records(records)
                except RecordError as exc:
                    return self._error(400, str(exc))
            else:
                preds = self.pyfunc.predict(self._frame(payload))
        except _BadRequest as exc:
            return self._error(400, str(exc))
        except Exception as exc:  # noqa: BLE001 - one line, no stack trace in the body
            from mlflow.exceptions import MlflowException

            if isinstance(exc, MlflowException):
                return self._error(400, exc.message.strip().splitlines()[-1][:2000], exc.error_code)
            if isinstance(exc, (RecursionError, OverflowError, UnicodeError)):  # the request's values
                return self._error(400, f"a value of the request cannot be used: {type(exc).__name__}")
            first = (str(exc).strip().splitlines() or [""])[0][:500]
            return self._error(500, f"internal error: {type(exc).__name__}: {first}", "INTERNAL_ERROR")
        fast = _orjson()
        if (fast is not None and isinstance(preds, np.ndarray) and preds.ndim == 1 and preds.dtype == np.float64
                and bool(np.isfinite(preds).all())):
            return 200, fast.dumps({"predictions": preds}, option=fast.OPT_SERIALIZE_NUMPY)
        values = preds.tolist() if hasattr(preds, "tolist") else list(preds)
        if values and isinstance(values[0], list):  # a one-column frame
            values = [v[0] if len(v) == 1 else v for v in values]
        return 200, json.dumps({"predictions": values}).encode()

    @staticmethod
    def _frame(payload: dict):
        import pandas as pd

        if "dataframe_records" in payload:
            records = payload["dataframe_records"]
            if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
                raise _BadRequest("dataframe_records must be a list of JSON objects")
            return pd.DataFrame(records)
        split = payload["dataframe_split"]
        if not isinstance(split, dict) or not isinstance(split.get("data"), list):
            raise _BadRequest('dataframe_split must be {"columns": [...], "data": [[...], ...]}')
        try:
            return pd.DataFrame(split["data"], columns=split.get("columns"), index=split.get("index"))
        except (ValueError, TypeError) as exc:
            raise _BadRequest(f"dataframe_split: {exc}") from None


def _orjson():
    """orjson when installed (the ``ml`` extra; about ten times faster than json on a 1,000-job batch),
    else None: the standard library then does the work, with the same values."""
    try:
        import orjson
    except ImportError:
        return None
    return orjson


#: A run of 19+ digits: a number orjson might not read as Python's json does (an integer beyond 64 bits
#: becomes a float there); such bodies go to the standard library.
_LONG_NUMBER = re.compile(rb"[0-9]{19}")
#: A \\uD800-\\uDFFF escape: json.loads reads a lone one as a str that cannot be encoded.
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")


def _loads(body: bytes):
    """The request's JSON, with orjson where it gives exactly what ``json.loads`` gives; NaN / Infinity
    literals, surrogate escapes and very long numbers (orjson refuses or reads them differently) and a
    body orjson refuses for any other reason go to ``json.loads``, which words the error if there is one;
    a lone surrogate is refused (ValueError)."""
    import json

    fast = _orjson()
    if fast is not None and not _LONG_NUMBER.search(body):
        try:
            return fast.loads(body)
        except fast.JSONDecodeError:
            pass
    value = json.loads(body)
    if _SURROGATE.search(body):
        try:  # a lone surrogate (\\ud800) is no text: refused here, not a 500 when a name is encoded
            json.dumps(value, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("a string holds a lone surrogate (\\ud800-\\udfff without its pair)") from None
    return value


class _BadRequest(ValueError):
    pass


#: The scoring server's limits (``schedcast serve --engine schedcast``), documented in docs/security.md:
#: a request body over MAX_BODY_BYTES is answered 413 before it is read (about 60,000 job records fit);
#: a request (head and body) must arrive whole within READ_TIMEOUT_S of its first byte (else 408, closed);
#: a keep-alive connection idle for IDLE_TIMEOUT_S is closed; a request head over MAX_HEAD_BYTES is 431;
#: at most MAX_CONNECTIONS connections are served at once (others get 503 and are closed).
MAX_BODY_BYTES = 16 * 1024 * 1024
READ_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 120.0
MAX_HEAD_BYTES = 16 * 1024
MAX_CONNECTIONS = 256


class _ReadTimeout(Exception):
    pass


def _error_body(code: str, message: str) -> bytes:
    import json

    return json.dumps({"error_code": code, "message": message}).encode()


def make_scoring_server(scorer: "Scorer", host: str, port: int, *, max_body: int = MAX_BODY_BYTES,
                        read_timeout: float = READ_TIMEOUT_S, idle_timeout: float = IDLE_TIMEOUT_S):
    """A threading TCP server (a thread per connection; keep-alive) with MLflow's scoring routes: GET
    /ping, /health, /version; POST /invocations. HTTP is parsed by h11 (the HTTP/1.1 state machine
    uvicorn itself runs on; a dependency of MLflow's server stack): Content-Length and chunked bodies,
    pipelining and malformed requests handled by the protocol's rules, never by hand. Limits: see
    MAX_BODY_BYTES and the others above. Each answer is one write (no Nagle / delayed-ACK stall; TCP_NODELAY
    on every connection); every error is a one-line JSON body, never a traceback. A request is in progress
    (Scorer.in_progress) from its head to its answer: requests applying finished records pause between
    their slices meanwhile (models.serving._Gate), so a one-job query does not share the interpreter with them."""
    import socketserver

    import h11

    slots = threading.BoundedSemaphore(MAX_CONNECTIONS)

    def receive(conn, sock, state: dict):
        """The next h11 event, reading from the socket as needed within the request's deadline."""
        while True:
            event = conn.next_event()
            if event is not h11.NEED_DATA:
                return event
            now = time.monotonic()
            deadline = state.get("deadline")
            wait = (deadline - now) if deadline is not None else idle_timeout
            if wait <= 0:
                raise _ReadTimeout
            sock.settimeout(wait)
            try:
                data = sock.recv(65536)
            except socket.timeout:
                raise _ReadTimeout from None
            if data and deadline is None:
                state["deadline"] = now + read_timeout  # the request's first byte: its clock starts
            conn.receive_data(data)

    def respond(conn, sock, status: int, body: bytes, ctype: str = "application/json", close: bool = False) -> None:
        headers = [("Content-Type", ctype), ("Content-Length", str(len(body)))]
        if close:
            headers.append(("Connection", "close"))
        out = conn.send(h11.Response(status_code=status, headers=headers, reason=_REASONS.get(status, "")))
        out += conn.send(h11.Data(data=body)) + conn.send(h11.EndOfMessage())
        sock.sendall(out)

    def route(method: bytes, target: bytes, body: bytes) -> tuple[int, bytes, str]:
        path = target.split(b"?", 1)[0]
        if method in (b"GET", b"HEAD"):
            if path in (b"/ping", b"/health"):
                return 200, b"\n", "text/plain"
            if path == b"/version":
                import mlflow

                return 200, mlflow.__version__.encode(), "text/plain"
            return 404, _error_body("NOT_FOUND", "no such route"), "application/json"
        if method == b"POST":
            if path != b"/invocations":
                return 404, _error_body("NOT_FOUND", "POST /invocations"), "application/json"
            status, answer = scorer.score(body)
            return status, answer, "application/json"
        return 405, _error_body("BAD_REQUEST", "GET /ping, /health, /version or POST /invocations"), \
            "application/json"

    class Handler(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            sock = self.request
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            conn = h11.Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)
            if not slots.acquire(blocking=False):
                try:
                    respond(conn, sock, 503, _error_body("TEMPORARILY_UNAVAILABLE", "too many connections"),
                            close=True)
                except OSError:
                    pass
                return
            try:
                self._serve(conn, sock)
            finally:
                slots.release()

        def _serve(self, conn, sock) -> None:
            while True:
                state: dict = {}
                try:
                    event = receive(conn, sock, state)
                    if not isinstance(event, h11.Request):
                        return  # ConnectionClosed (or a peer that closed mid-way)
                    length = dict(event.headers).get(b"content-length")
                    if length is not None and int(length) > max_body:
                        respond(conn, sock, 413, _error_body(
                            "REQUEST_TOO_LARGE", f"the request body is over the limit of {max_body} bytes "
                            f"(Content-Length: {int(length) if len(length) < 30 else 'over 10^29'})"), close=True)
                        return
                    with scorer.in_progress():  # from the head to the answer (queries first: Scorer)
                        if conn.they_are_waiting_for_100_continue:
                            sock.sendall(conn.send(h11.InformationalResponse(status_code=100, headers=[])))
                        chunks, size = [], 0
                        while True:
                            part = receive(conn, sock, state)
                            if isinstance(part, h11.Data):
                                size += len(part.data)
                                if size > max_body:
                                    respond(conn, sock, 413, _error_body(
                                        "REQUEST_TOO_LARGE", f"the request body is over the limit of {max_body} "
                                        "bytes"), close=True)
                                    return
                                chunks.append(part.data)
                            elif isinstance(part, h11.EndOfMessage):
                                break
                            else:
                                return
                        status, body, ctype = route(event.method, event.target, b"".join(chunks))
                        if event.method == b"HEAD":
                            body = b""
                        respond(conn, sock, status, body, ctype)
                except _ReadTimeout:
                    if state.get("deadline") is not None and conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                        try:
                            respond(conn, sock, 408, _error_body(
                                "REQUEST_TIMEOUT", f"the request did not arrive within {read_timeout:g} s"),
                                close=True)
                        except (OSError, h11.LocalProtocolError):
                            pass
                    return
                except h11.RemoteProtocolError as exc:
                    if conn.our_state in (h11.IDLE, h11.SEND_RESPONSE):
                        code = 431 if "too long" in str(exc).lower() or "exceeds" in str(exc).lower() else \
                            exc.error_status_hint
                        reason = (str(exc).splitlines() or ["malformed request"])[0][:200]
                        try:
                            respond(conn, sock, code, _error_body("BAD_REQUEST", f"malformed HTTP request: {reason}"),
                                    close=True)
                        except (OSError, h11.LocalProtocolError):
                            pass
                    return
                except OSError:
                    return  # the peer went away
                if conn.our_state is h11.MUST_CLOSE or conn.their_state is h11.MUST_CLOSE:
                    return
                try:
                    conn.start_next_cycle()
                except h11.LocalProtocolError:
                    return

    class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
        daemon_threads = True
        allow_reuse_address = True
        request_queue_size = 128

        def handle_error(self, request, client_address) -> None:
            """One line, never a traceback (socketserver prints one by default)."""
            exc = sys.exc_info()[1]
            print(f"schedcast scoring server: connection from {client_address[0]} ended: "
                  f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:200]}", file=sys.stderr, flush=True)

    Server.address_family = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0][0]
    return Server((host, port), Handler)


_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout",
            411: "Length Required", 413: "Content Too Large", 431: "Request Header Fields Too Large",
            500: "Internal Server Error", 503: "Service Unavailable"}


def _exit_on_signal(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
    raise SystemExit(0)


def _score_main(argv: Sequence[str]) -> int:
    """`python -m pipelines.server score MODEL_URI --host H --port P` (started by `schedcast serve`)."""
    parser = argparse.ArgumentParser(prog="schedcast-score")
    parser.add_argument("model_uri")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=5001)
    args = parser.parse_args(argv)
    sys.setswitchinterval(0.001)  # a one-job query's thread gets the interpreter within a millisecond
    scorer = Scorer(args.model_uri)
    # The loaded model (a trained history's per-key state: ~350,000 objects for Philly) lives as long as the
    # process: out of the cyclic collector's sight, a full collection that a stream of finished records
    # triggers takes microseconds instead of stopping every thread for 60-100 ms (measured: issue 44).
    gc.collect()
    gc.freeze()
    kind = "raw job records (fast path) and feature frames" if scorer.raw is not None else "pyfunc input"
    server = make_scoring_server(scorer, args.host, args.port)
    print(f"schedcast scoring server: {args.model_uri} ({kind}) on {args.host}:{args.port}", file=sys.stderr,
          flush=True)
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        server.serve_forever(poll_interval=0.5)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.server_close()
    sys.stderr.flush()
    os._exit(0)  # nothing to save; the interpreter's teardown (mlflow, lightgbm) took ~3 s per stop


if __name__ == "__main__":
    if sys.argv[1:2] != ["score"]:
        sys.exit("usage: python -m pipelines.server score MODEL_URI [--host H] [--port P]")
    sys.exit(_score_main(sys.argv[2:]))
