"""`schedcast server`: an MLflow tracking server and UI."""
from __future__ import annotations

import argparse


def cmd_server(args: argparse.Namespace) -> int:
    import os
    import subprocess
    from pathlib import Path as P

    from models.registry import default_tracking_uri

    backend = args.backend_store_uri or default_tracking_uri()
    root = P(os.getcwd()) / "mlruns" / "artifacts"
    cmd = ["mlflow", "server", "--host", args.host, "--port", str(args.port), "--backend-store-uri", backend,
           "--default-artifact-root", args.artifact_root or root.as_uri()]
    if backend.startswith("sqlite:///"):
        P(backend[len("sqlite:///"):]).parent.mkdir(parents=True, exist_ok=True)
    print("starting:", " ".join(cmd), f"\nUI at http://{args.host}:{args.port}", flush=True)
    return subprocess.call(cmd)


def add_parsers(sub) -> None:
    """Register `server`."""
    p = sub.add_parser("server", help="start an MLflow tracking server and UI (127.0.0.1 by default)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=5000)
    p.add_argument("--backend-store-uri")
    p.add_argument("--artifact-root")
    p.set_defaults(func=cmd_server)
