"""The README's install and test commands are what `.ci/run` runs; the default install depends on no host
beyond PyPI (PyTorch's CPU index is an optional, documented line), and the test environment is set by the
tests themselves, not by CI."""
from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    block = re.search(r"## Set up[^\n]*\n.*?```bash\n(.*?)```", text, re.S)
    assert block, "README has no Set up code block"
    return [ln.strip() for ln in block.group(1).splitlines() if ln.strip()]


def test_ci_runs_exactly_the_readme_commands():
    commands = _readme_commands()
    assert commands == ['python -m pip install -e ".[ml,test]"', "python -m pytest"]
    ci = (ROOT / ".ci" / "run").read_text()
    python_lines = [ln.strip() for ln in ci.splitlines() if ln.strip().startswith("python")]
    assert python_lines == commands
    assert "extra-index-url" not in ci  # a host some machines cannot reach makes pip retry for minutes
    assert "export" not in ci and "OMP_NUM_THREADS" not in ci.split("# Headless")[1]  # the tests set it
    assert "apt-get update" in ci and "|| echo" in ci  # chromium is best effort


def test_readme_says_how_to_get_cpu_or_cuda_torch():
    text = (ROOT / "README.md").read_text()
    assert 'python -m pip install -e ".[ml,test]" --extra-index-url https://download.pytorch.org/whl/cpu' in text
    assert "download.pytorch.org/whl/cu" in text


def test_the_tests_set_their_own_environment():
    assert os.environ["OMP_NUM_THREADS"] == "1" and os.environ["MPLBACKEND"] == "Agg"
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
    conftest = (ROOT / "tests" / "conftest.py").read_text()
    assert 'os.environ["OMP_NUM_THREADS"] = "1"' in conftest and 'os.environ["MPLBACKEND"] = "Agg"' in conftest
