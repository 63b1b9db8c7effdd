"""The generated job corpus (repositories, commands, runtime, labelled and failed logs) is the same in every
process: a set iterated while drawing random values made the noise lines of the logs, and so SchedMate's
Failure Handler replays, differ with Python's per-process hash salt."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

DIGEST = r"""
import hashlib, json
from features.jobcorpus.material import iter_corpus
h = hashlib.sha256()
for m in iter_corpus(24, seed=5):
    h.update(m.command.encode()); h.update(json.dumps(m.files, sort_keys=True).encode())
    for noisy in (False, True):
        h.update("\n".join(m.runtime_log(noisy=noisy)[0]).encode())
        h.update("\n".join(m.labelled_log(noisy=noisy)[0]).encode())
        h.update("\n".join(m.failure_log(noisy=noisy)[0]).encode())
print(h.hexdigest())
"""


def _digest(hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", DIGEST], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=True)
    return done.stdout.strip()


def test_corpus_is_the_same_under_every_hash_seed():
    assert _digest("1") == _digest("2") == _digest("97")
