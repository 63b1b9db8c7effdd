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


def test_a_failing_git_call_still_names_the_commit(repo, monkeypatch):
    """A git that cannot run (missing, timed out, failed fork on a loaded machine) once made a real checkout's
    ledger say ``code unknown``: the commit is read from .git, and a tree git could not diff is not 'clean'."""
    import subprocess as sp

    from models import provenance

    sha = _git(repo, "rev-parse", "--short", "HEAD")
    real = sp.run

    def no_git(args, *a, **k):
        raise OSError("git not runnable")

    monkeypatch.setattr(provenance.subprocess, "run", no_git)
    assert provenance.code_version(repo) == f"{sha}-dirty.unknown"

    def slow_diff(args, *a, **k):
        if "diff" in args:
            raise sp.TimeoutExpired(args, 1)
        return real(args, *a, **k)

    monkeypatch.setattr(provenance.subprocess, "run", slow_diff)
    assert provenance.code_version(repo) == f"{sha}-dirty.unknown"
    _git(repo, "pack-refs", "--all")  # the branch only in packed-refs
    monkeypatch.setattr(provenance.subprocess, "run", no_git)
    assert provenance.code_version(repo) == f"{sha}-dirty.unknown"


def test_reproduce_records_the_code_version_of_the_checkout(tmp_path, monkeypatch):
    """The ledger's header names the checkout's commit (issue 24: 'code unknown' in the GFS ledger)."""
    import pipelines.reproduce as rp
    from models.provenance import code_version

    seen = {}

    def fake_runner(paper):
        def run(ctx):
            return {}
        return run

    def fake_write(tmp, claims, verdicts, meta):
        seen.update(meta)
        (tmp / "claims.md").write_text("x")

    monkeypatch.setattr("pipelines.papers.runner", fake_runner)
    monkeypatch.setattr("evaluation.claims.write_ledger", fake_write)
    monkeypatch.setattr("evaluation.claims.judge_all", lambda claims, m, quick=False: [])
    rp.reproduce("gfs", quick=True, out=tmp_path / "out", data_dir=None)
    assert seen["code_version"] == code_version() != "unknown"
