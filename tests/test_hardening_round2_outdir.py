"""Issue 44.2: user files under --out. A folder is schedcast's only when it holds the marker schedcast wrote,
with a random id also recorded in its meta.json / run.json; --force never deletes a user's file inside
without naming it; `experiment run` never writes over a user's results.csv / leaderboard.html / run.json /
spec.yaml; hidden .partial folders of killed runs are removed by the next run."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from features.paths import REPO_ROOT
from tests.helpers import run_main

ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1",
       "PYTHONPATH": str(REPO_ROOT)}


def _tree(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump({"name": "t", "workloads": [{"name": "d", "synthetic": "demo", "jobs": 40}],
                                    "policies": ["fifo"]}))
    return path


def test_experiment_run_never_writes_over_a_users_folder(tmp_path, capsys):
    user = tmp_path / "mine"
    user.mkdir()
    for name in ("results.csv", "leaderboard.html", "run.json", "spec.yaml", "thesis.tex"):
        (user / name).write_text(f"the user's {name}")
    before = _tree(user)
    spec = _spec(tmp_path)
    rc, err = run_main(["experiment", "run", str(spec), "--out", str(user), "--executor", "serial", "--no-track"], capsys)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "results.csv" in err, err
    assert _tree(user) == before
    # a folder of our own resumes; its run.json records the marker's id
    ours = tmp_path / "ours"
    assert run_main(["experiment", "run", str(spec), "--out", str(ours), "--executor", "serial", "--no-track"],
                capsys)[0] == 0
    marker = json.loads((ours / ".schedcast-output").read_text())
    assert json.loads((ours / "run.json").read_text())["output_id"] == marker["id"]
    assert run_main(["experiment", "run", str(spec), "--out", str(ours), "--executor", "serial", "--no-track"],
                capsys)[0] == 0
    # `experiment report` into a user's folder that happens to have cells/ is refused too
    (user / "cells").mkdir()
    rc, err = run_main(["experiment", "report", str(user)], capsys)
    assert rc == 2 and "not empty and is not a experiment folder" in err.replace("an experiment", "a experiment")
    assert (user / "results.csv").read_text() == "the user's results.csv"


def test_force_needs_our_marker_and_names_a_users_file_inside(tmp_path, capsys):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "meta.json").write_text(json.dumps({"complete": True, "kind": "demo"}))
    (fake / "thesis.tex").write_text("precious")
    args = ["simulate", "--synthetic", "demo", "--jobs", "30", "--policy", "fifo", "--force", "--out"]
    rc, err = run_main(args + [str(fake)], capsys)
    assert rc == 2 and "not a folder schedcast wrote" in err and "thesis.tex" in err, err
    assert (fake / "thesis.tex").read_text() == "precious"
    real = tmp_path / "real"
    assert run_main(args + [str(real)], capsys)[0] == 0
    marker = json.loads((real / ".schedcast-output").read_text())
    assert json.loads((real / "meta.json").read_text())["output_id"] == marker["id"]
    assert run_main(args + [str(real)], capsys)[0] == 0  # ours, nothing added: replaced
    (real / "notes.txt").write_text("mine")
    rc, err = run_main(args + [str(real)], capsys)
    assert rc == 2 and "notes.txt" in err and len(err.strip().splitlines()) == 1, err
    assert (real / "notes.txt").read_text() == "mine"
    # a marker copied into a user's folder does not make it ours: its files are not listed
    (fake / ".schedcast-output").write_text((real / ".schedcast-output").read_text())
    rc, err = run_main(args + [str(fake)], capsys)
    assert rc == 2 and "thesis.tex" in err
    assert (fake / "thesis.tex").read_text() == "precious"


def test_demo_replaces_only_its_own_folder(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    demo = tmp_path / "results" / "demo"
    demo.mkdir(parents=True)
    (demo / "meta.json").write_text(json.dumps({"kind": "demo", "complete": True}))
    (demo / "thesis.tex").write_text("precious")
    rc, err = run_main(["demo", "--jobs", "30"], capsys)
    assert rc == 2 and "thesis.tex" in err, err
    assert (demo / "thesis.tex").read_text() == "precious"
    (demo / "thesis.tex").unlink()
    (demo / "meta.json").unlink()
    assert run_main(["demo", "--jobs", "30"], capsys)[0] == 0
    assert run_main(["demo", "--jobs", "30"], capsys)[0] == 0  # its own folder: replaced
    (demo / "notes.txt").write_text("mine")
    rc, err = run_main(["demo", "--jobs", "30"], capsys)
    assert rc == 2 and "notes.txt" in err
    assert (demo / "notes.txt").read_text() == "mine"


#: The child: a real `schedcast` whose first hidden folder stops it (printed, then a long sleep) to be killed
#: with -9 there; a toy paper for `reproduce` (no replays).
CHILD = r"""
import sys, time, types
from pathlib import Path
import evaluation.outdir as outdir
stop = sys.argv[1] == "stop"
mark = outdir._mark_partial
def marked(folder):
    mark(folder)
    if stop:
        print("PARTIAL", folder, flush=True)
        time.sleep(300)
outdir._mark_partial = marked
args = sys.argv[2:]
if args[0] == "reproduce":
    from pipelines import papers
    root = Path(args[-1])
    (root / "papers" / "toy").mkdir(parents=True, exist_ok=True)
    (root / "papers" / "toy" / "claims.yaml").write_text(
        "paper: toy\ntitle: Toy\nclaims:\n - {id: a, source: T1, statement: s, metric: m, comparator: none, kind: threshold,"
        " measure: m, values: [{value: null, cite: 'toy.txt:1'}], holds_if: {op: '>', value: 0}}\n")
    module = types.ModuleType("toy_runner")
    module.run = lambda ctx: {}
    sys.modules["toy_runner"] = module
    papers.RUNNERS["toy"] = "toy_runner"
    papers.PAPERS_DIR = root / "papers"
    args = args[:-1]
from pipelines.cli import main
sys.exit(main(args))
"""


def _partials(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob(".*") if p.name.endswith((".partial", ".old")))


@pytest.mark.parametrize("command", ["simulate", "experiment", "corpus", "reproduce"])
def test_kill_9_mid_run_then_the_rerun_leaves_no_partial_and_no_user_file_touched(tmp_path, command):
    work = tmp_path / "work"
    work.mkdir()
    (work / "thesis.tex").write_text("precious")
    out = work / "out"
    args = {"simulate": ["simulate", "--synthetic", "demo", "--jobs", "30", "--policy", "fifo", "--out", str(out)],
            "experiment": ["experiment", "run", str(_spec(tmp_path)), "--out", str(out), "--executor", "serial",
                           "--no-track"],
            "corpus": ["corpus", "--out", str(out), "--jobs", "3", "--seed", "1"],
            "reproduce": ["reproduce", "toy", "--out", str(out), "--no-track", "--data-dir", str(tmp_path),
                          str(tmp_path)]}[command]
    child = subprocess.Popen([sys.executable, "-c", CHILD, "stop", *args], cwd=work, env=ENV,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        lines = []
        for line in child.stdout:  # the command's own output, then the stop
            lines.append(line)
            if line.startswith("PARTIAL"):
                break
        assert lines and lines[-1].startswith("PARTIAL"), (lines, child.stderr.read() if child.poll() is not None else "")
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert _partials(work), "the kill left no hidden folder: nothing was tested"
    rerun = subprocess.run([sys.executable, "-c", CHILD, "go", *args], cwd=work, env=ENV, capture_output=True,
                           text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert _partials(work) == []
    assert (work / "thesis.tex").read_text() == "precious" and out.is_dir()
