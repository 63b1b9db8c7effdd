"""Issue 44, "hardening, round two": code from the working folder, user files under --out, a scoring server
one request can stall, stale resumed cells, reads outside what the user named, late validation,
cache-dependent metrics. Each test reproduces one defect of the issue."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _capture(monkeypatch, command: list[str]) -> tuple[list[str], dict]:
    """The child command line and environment `schedcast server` / `serve` would start (nothing starts)."""
    from pipelines import server

    seen = {}

    def fake_run(cmd, **kw):
        seen["cmd"], seen["env"] = list(cmd), kw.get("env")
        return 0

    monkeypatch.setattr(server, "run_managed", fake_run)
    monkeypatch.setattr(server, "_check_port", lambda host, port: None)
    monkeypatch.setattr(server, "_check_registered", lambda *a: None)
    parser = argparse.ArgumentParser()
    server.add_parsers(parser.add_subparsers())
    args = parser.parse_args(command)
    args.func(args)
    return seen["cmd"], seen["env"]


@pytest.fixture()
def hostile_cwd(tmp_path):
    """A working folder whose pipelines/server.py, orjson.py and mlflow/__main__.py write a marker."""
    marker = tmp_path / "PWNED"
    code = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "__init__.py").write_text(code)
    (tmp_path / "pipelines" / "server.py").write_text(code)
    (tmp_path / "orjson.py").write_text(code)
    (tmp_path / "mlflow").mkdir()
    (tmp_path / "mlflow" / "__init__.py").write_text(code)
    (tmp_path / "mlflow" / "__main__.py").write_text(code)
    return tmp_path, marker


def test_children_never_import_from_the_working_folder(monkeypatch, hostile_cwd):
    """Issue 44.1: `serve` (schedcast engine and mlflow engine) and `server` start their child Python with the
    working folder off sys.path; the hostile modules there are not executed."""
    cwd, marker = hostile_cwd
    monkeypatch.chdir(cwd)
    score_cmd, env = _capture(monkeypatch, ["serve", "models:/m@a", "--engine", "schedcast"])
    assert score_cmd[:2] == [sys.executable, "-P"] and env["PYTHONSAFEPATH"] == "1"
    # the real child's first steps: its module, then orjson (the JSON codec) and mlflow
    probe = score_cmd[:score_cmd.index("-m")] + ["-c", "import pipelines.server, orjson, mlflow; "
                                                       "print(pipelines.server.__file__)"]
    out = subprocess.run(probe, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert str(REPO) in out.stdout
    usage = subprocess.run(score_cmd[:score_cmd.index("score")], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=60)
    assert "usage: python -m pipelines.server score" in usage.stderr  # schedcast's module ran, not the folder's
    for command in (["serve", "models:/m@a", "--engine", "mlflow"], ["server"]):
        cmd, env = _capture(monkeypatch, command)
        assert cmd[:4] == [sys.executable, "-P", "-m", "mlflow"]
        out = subprocess.run(cmd[:4] + ["--version"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
    assert not marker.exists(), marker.read_text()
