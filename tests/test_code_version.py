"""One code_version for model runs and replay runs: a clean checkout is its commit, and two different
uncommitted edits never share a version (the registry's old copy called both just ``-dirty``)."""
from __future__ import annotations

import subprocess

import pytest


def _git(root, *args) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True,
                          env={"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org", "GIT_COMMITTER_NAME": "t",
                               "GIT_COMMITTER_EMAIL": "t@example.org", "HOME": str(root), "PATH": "/usr/bin:/bin"},
                          ).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    _git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    _git(tmp_path, "add", "a.py")
    _git(tmp_path, "commit", "-q", "-m", "one")
    return tmp_path


def test_clean_and_dirty_checkouts(repo, tmp_path_factory):
    from models.provenance import code_version

    sha = _git(repo, "rev-parse", "--short", "HEAD")
    assert code_version(repo) == sha
    (repo / "a.py").write_text("x = 2\n")
    first = code_version(repo)
    (repo / "a.py").write_text("x = 3\n")
    second = code_version(repo)
    assert first.startswith(f"{sha}-dirty.") and second.startswith(f"{sha}-dirty.") and first != second
    (repo / "a.py").write_text("x = 2\n")
    assert code_version(repo) == first  # the same edit, the same version
    (repo / "a.py").write_text("x = 1\n")
    (repo / "untracked.py").write_text("y = 1\n")
    assert code_version(repo) == sha  # untracked files are not code the run used
    assert code_version(tmp_path_factory.mktemp("not-a-repo")) == "unknown"


def test_models_and_replays_use_the_same_function():
    import models.registry
    import pipelines.tracking
    from models.provenance import code_version

    assert models.registry.code_version is code_version and pipelines.tracking.code_version is code_version
