"""Issue 41 item 5 (a cold command <= 0.6 s): `schedcast advise / diagnose / track` and
`python -m models.schedmate.batch` run as whole processes import neither the simulator nor the data stack
(pandas, numpy, pyarrow, pydantic, MLflow, scikit-learn, ...): what such a process has imported when it
is done is checked here in a subprocess, not its timing (README gives the measured medians)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Top-level modules a text tool's process must not import (each is 0.05-0.5 s of a cold start).
HEAVY = ("pandas", "numpy", "pyarrow", "pydantic", "mlflow", "sklearn", "scipy", "lightgbm", "numba", "torch",
         "sqlalchemy", "h11", "dask", "matplotlib", "yaml", "sim", "evaluation", "features.jobtable", "models.registry",
         "pipelines.modelops", "pipelines.server", "pipelines.info", "pipelines.experiment")

RUNNER = r"""
import json, sys
entry, argv = sys.argv[1], sys.argv[2:]
sys.argv = [entry, *argv]
code = 0
try:
    if entry == "schedcast":
        from pipelines.cli import entry as main
        main()
    else:
        import runpy
        runpy.run_module(entry, run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code or 0
sys.stdout.flush()
sys.stderr.write("\nMODULES " + json.dumps({"code": code, "modules": sorted(sys.modules)}) + "\n")
"""


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    base = tmp_path_factory.mktemp("cold")
    repo = base / "repo"
    repo.mkdir()
    (repo / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\n"
                                   "p.add_argument('--model', default='resnet50')\n"
                                   "p.add_argument('--epochs', type=int, default=90)\n"
                                   "p.add_argument('--batch-size', type=int, default=256)\nargs = p.parse_args()\n")
    (base / "fail.log").write_text("step 10 loss 2.3\nTraceback (most recent call last):\n"
                                   '  File "train.py", line 3, in <module>\n    out = model(x)\n'
                                   "RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    (base / "prog.log").write_text("".join(f"Epoch 2/10 step {i * 10}/500 loss {2 - i / 100:.3f} time 0.25s\n"
                                           for i in range(1, 40)))
    (base / "requests.jsonl").write_text(json.dumps({"repo": str(repo), "command": "python train.py --epochs 5"}) + "\n")
    return base


def _imported(entry: str, *argv: str) -> tuple[int, set[str], str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SCHEDCAST_PLUGINS", "PYTHONSAFEPATH")}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run([sys.executable, "-c", RUNNER, entry, *argv], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)
    line = [x for x in proc.stderr.splitlines() if x.startswith("MODULES ")]
    assert line, proc.stderr[-2000:]
    info = json.loads(line[-1][len("MODULES "):])
    return info["code"], set(info["modules"]), proc.stdout


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


@pytest.mark.parametrize("tool", ["diagnose", "track", "advise"])
def test_schedcast_text_tools_import_nothing_heavy(inputs, tool):
    argv = {"diagnose": [str(inputs / "fail.log")], "track": [str(inputs / "prog.log")],
            "advise": ["--repo", str(inputs / "repo"), "--command", "python train.py --epochs 5"]}[tool]
    code, modules, out = _imported("schedcast", tool, *argv, "--json")
    assert code == 0, out
    assert json.loads(out)  # it did its work
    assert "pipelines.semantics" in modules  # the command's own module (the check would pass vacuously otherwise)
    assert _heavy(modules) == []


@pytest.mark.parametrize("tool", ["diagnose", "track", "advise"])
def test_batch_mode_imports_nothing_heavy(inputs, tool):
    argv = {"diagnose": [str(inputs / "fail.log")], "track": [str(inputs / "prog.log")],
            "advise": [str(inputs / "requests.jsonl")]}[tool]
    code, modules, out = _imported("models.schedmate.batch", tool, *argv)
    assert code == 0, out
    assert len(out.strip().splitlines()) == 1 and json.loads(out.strip())
    assert _heavy(modules) == []


def test_the_check_sees_a_heavy_import():
    """The same check flags a command that does import the data stack (`schedcast policies` builds the
    simulator's tables): the test above could fail."""
    code, modules, _ = _imported("schedcast", "policies")
    assert code == 0 and "numpy" in _heavy(modules)
