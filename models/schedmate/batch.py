"""Calls a scheduler can afford: the Failure Handler and the Metric Tracker in batch and served modes.

The `schedcast` command imports the whole product (pandas among it) before it reads one log; a scheduler
that asks per job pays that every time. This module needs the standard library and the two readers only:

- batch: ``python -m models.schedmate.batch diagnose LOG...`` / ``... track LOG...`` (``-`` reads the
  paths from stdin, one per line): one process, one JSON line per log, in input order.
- advise: ``python -m models.schedmate.batch advise REQUESTS.jsonl`` (``-``: stdin), one request per line,
  ``{"repo": "<folder>", "command": "<launch command>"}``; a repository is read once and kept.
- served: ``python -m models.schedmate.batch serve --port 8321`` answers ``POST /diagnose`` and
  ``POST /track`` with a JSON body ``{"lines": [...]}`` (or ``{"text": "..."}``, or ``{"path": "..."}``
  when started with ``--allow-paths``) and ``GET /health``; it binds 127.0.0.1 unless told otherwise.

Logs are read as UTF-8 (a UTF-16 / UTF-8 BOM decides first); undecodable bytes are replaced. A log longer
than ``max_lines`` (default 200,000) is read as its head and tail (the readers look at both ends only).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

TOOLS = ("diagnose", "track")
#: advise reads {"repo": folder, "command": "..."} requests (JSON lines in batch mode, a JSON body served)
ALL_TOOLS = (*TOOLS, "advise")
MAX_BODY = 64 * 1024 * 1024  # bytes a served request may carry


def decode(data: bytes) -> str:
    """Log bytes as text: a BOM decides UTF-16 / UTF-8-sig, else UTF-8 with replacement."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        return data.decode("utf-16", errors="replace")
    if data[:3] == b"\xef\xbb\xbf":
        return data[3:].decode("utf-8", errors="replace")
    return data.decode("utf-8", errors="replace")


def read_log(path: str | Path, max_lines: int = 200_000) -> list[str]:
    lines = decode(Path(path).read_bytes()).splitlines()
    if len(lines) > max_lines:
        half = max_lines // 2
        lines = lines[:half] + lines[-half:]
    return lines


class Readers:
    """One Failure Handler and one Metric Tracker, made once and kept (their caches stay warm)."""

    def __init__(self) -> None:
        from models.schedmate.failures import FailureHandler
        from models.schedmate.tracker import MetricTracker

        self.fh, self.tr = FailureHandler(), MetricTracker()

    def diagnose(self, lines: Sequence[str]) -> dict[str, Any]:
        d = self.fh.diagnose(lines)
        return {"line": None if d.line_index is None else d.line_index + 1, "kind": d.kind,
                "component": d.component, "text": d.line, "cause": d.cause, "note": d.note}

    def track(self, lines: Sequence[str]) -> dict[str, Any]:
        p = self.tr.track(lines)
        loss = p.loss
        return {"step": p.step, "total_steps": p.total_steps, "step_time": p.step_time,
                "loss": None if loss is None else (loss if loss == loss else "nan"), "epoch": p.epoch,
                "diverged": p.diverged, "decided_by": p.decided_by}

    def advise(self, repo: str, command: str) -> dict[str, Any]:
        """The job's metadata from its repository and launch command (repositories read once and kept)."""
        from features.schedmate_text.extract import extract_metadata, read_repository

        cache = self.__dict__.setdefault("_repos", {})
        if repo not in cache:
            cache[repo] = read_repository(repo)
        from features.schedmate_text.evidence import MIN_CONFIDENCE

        # every field with its evidence (file:line or the argument) and confidence; below the Advisor's
        # threshold a field is None and `unknown` says why
        import os

        md = extract_metadata(command, cache[repo], min_confidence=MIN_CONFIDENCE,
                              repo_name=os.path.basename(os.path.abspath(repo)))  # the folder names the repository
        return {k: v for k, v in md.to_dict().items()}

    def run(self, tool: str, lines: Sequence[str]) -> dict[str, Any]:
        if tool not in TOOLS:
            raise ValueError(f"unknown tool {tool!r}; known: {', '.join(TOOLS)}")
        return self.diagnose(lines) if tool == "diagnose" else self.track(lines)


def run_batch(tool: str, paths: Iterable[str], write: Callable[[str], Any], readers: Readers | None = None) -> int:
    """One JSON line per log, in input order; a log that cannot be read gives {"path", "error"}.
    Returns the number of logs that could not be read."""
    readers = readers or Readers()
    bad = 0
    for path in paths:
        path = path.strip()
        if not path:
            continue
        t0 = time.perf_counter()
        try:
            out: dict[str, Any] = {"path": path, **readers.run(tool, read_log(path))}
        except OSError as exc:
            bad += 1
            out = {"path": path, "error": f"cannot read: {exc.strerror or exc}"}
        out["ms"] = round((time.perf_counter() - t0) * 1000, 3)
        write(json.dumps(out, ensure_ascii=False) + "\n")
    return bad


def run_advise(requests: Iterable[str], write: Callable[[str], Any], readers: Readers | None = None) -> int:
    """advise over JSON lines {"repo": ..., "command": ...}: one JSON line out per request, in order;
    a bad request gives {"error"} (counted in the return value)."""
    readers = readers or Readers()
    bad = 0
    for n, raw in enumerate(requests, 1):
        if not raw.strip():
            continue
        t0 = time.perf_counter()
        try:
            req = json.loads(raw)
            if not (isinstance(req, dict) and isinstance(req.get("repo"), str) and isinstance(req.get("command"), str)):
                raise ValueError('each line is {"repo": "<folder>", "command": "<launch command>"}')
            out: dict[str, Any] = {"request": n, **readers.advise(req["repo"], req["command"])}
        except (ValueError, OSError) as exc:
            bad += 1
            out = {"request": n, "error": str(exc)}
        out["ms"] = round((time.perf_counter() - t0) * 1000, 3)
        write(json.dumps(out, ensure_ascii=False) + "\n")
    return bad


def make_server(host: str = "127.0.0.1", port: int = 0, allow_paths: bool = False,
                readers: Readers | None = None) -> ThreadingHTTPServer:
    """A loopback HTTP server for the two readers (``server.serve_forever()`` to run it)."""
    readers = readers or Readers()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # quiet: a scheduler calls it per job
            pass

        def _send(self, code: int, body: dict) -> None:
            data = json.dumps(body, ensure_ascii=False).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802
            if self.path.rstrip("/") == "/health":
                self._send(200, {"status": "ok", "tools": list(TOOLS)})
            else:
                self._send(404, {"error": f"unknown path {self.path}; POST /diagnose or /track, GET /health"})

        def do_POST(self) -> None:  # noqa: N802
            tool = self.path.strip("/")
            if tool not in ALL_TOOLS:
                self._send(404, {"error": f"unknown path {self.path}; POST /diagnose or /track"})
                return
            size = int(self.headers.get("Content-Length") or 0)
            if size <= 0 or size > MAX_BODY:
                self._send(400 if size <= 0 else 413, {"error": f"a JSON body of 1 to {MAX_BODY} bytes is needed"})
                return
            try:
                body = json.loads(decode(self.rfile.read(size)))
                if not isinstance(body, dict):
                    raise ValueError("the body must be a JSON object")
                if tool == "advise":
                    if not (isinstance(body.get("repo"), str) and isinstance(body.get("command"), str)) \
                            or not allow_paths:
                        raise ValueError('advise needs {"repo", "command"} and a server started with --allow-paths')
                    t0 = time.perf_counter()
                    out = readers.advise(body["repo"], body["command"])
                    out["ms"] = round((time.perf_counter() - t0) * 1000, 3)
                    self._send(200, out)
                    return
                if isinstance(body.get("lines"), list):
                    lines = [str(x) for x in body["lines"]]
                elif isinstance(body.get("text"), str):
                    lines = body["text"].splitlines()
                elif isinstance(body.get("path"), str) and allow_paths:
                    lines = read_log(body["path"])
                else:
                    raise ValueError('give "lines" (a list of strings) or "text"'
                                     + (' or "path"' if allow_paths else ""))
            except (ValueError, OSError) as exc:
                self._send(400, {"error": str(exc)})
                return
            t0 = time.perf_counter()
            out = readers.run(tool, lines)
            out["ms"] = round((time.perf_counter() - t0) * 1000, 3)
            self._send(200, out)

    return ThreadingHTTPServer((host, port), Handler)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m models.schedmate.batch",
                                 description="SchedMate's Failure Handler / Metric Tracker over many logs in one "
                                             "process (JSON lines), or served on a loopback HTTP port")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for tool in TOOLS:
        p = sub.add_parser(tool, help=f"{tool} each log given (- : paths from stdin, one per line)")
        p.add_argument("logs", nargs="+")
    p = sub.add_parser("advise", help='job metadata per request: JSON lines {"repo", "command"} from FILE or - (stdin)')
    p.add_argument("requests")
    p = sub.add_parser("serve", help="POST /diagnose, POST /track (POST /advise with --allow-paths), GET /health")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8321)
    p.add_argument("--allow-paths", action="store_true", help='accept {"path": ...} bodies (files this host can read)')
    args = ap.parse_args(argv)
    if args.cmd == "serve":
        if not 0 <= args.port <= 65535:
            print(f"error: --port must be 0-65535, got {args.port}", file=sys.stderr)
            return 2
        try:
            server = make_server(args.host, args.port, args.allow_paths)
        except OSError as exc:
            print(f"error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"serving on http://{server.server_address[0]}:{server.server_address[1]} (Ctrl-C stops)",
              file=sys.stderr, flush=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        return 0
    if args.cmd == "advise":
        if args.requests == "-":
            return 1 if run_advise(sys.stdin, sys.stdout.write) else 0
        try:
            with open(args.requests, encoding="utf-8") as fh:
                return 1 if run_advise(fh, sys.stdout.write) else 0
        except OSError as exc:
            print(f"error: {args.requests}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    paths = sys.stdin if args.logs == ["-"] else args.logs
    bad = run_batch(args.cmd, paths, sys.stdout.write)
    return 1 if bad else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
