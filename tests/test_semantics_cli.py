"""`schedcast advise / track / diagnose / corpus` through pipelines.cli.main (and once as a process)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from features.jobcorpus import material_for_job
from pipelines.cli import main

ROOT = Path(__file__).resolve().parents[1]


def _job(tmp_path: Path, key: str = "alice/bert", index: int = 0, seed: int = 2):
    m = material_for_job(key, index, seed)
    folder = m.write(tmp_path / f"job{index}")
    return m, folder


def test_corpus_writes_and_refuses_a_non_empty_folder(tmp_path, capsys):
    out = tmp_path / "corpus"
    assert main(["corpus", "--out", str(out), "--jobs", "4", "--seed", "3"]) == 0
    index = json.loads((out / "index.json").read_text())
    assert len(index["jobs"]) == 4 and index["seed"] == 3
    first = out / index["jobs"][0]["folder"]
    assert (first / "truth.json").exists() and (first / "logs" / "run_noisy.log").exists()
    assert main(["corpus", "--out", str(out), "--jobs", "2"]) == 2
    assert "not empty" in capsys.readouterr().err
    assert main(["corpus", "--out", str(out), "--jobs", "2", "--no-logs", "--force"]) == 0
    assert len(json.loads((out / "index.json").read_text())["jobs"]) == 2
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".corpus")]  # no temporary left


def test_advise_prints_metadata_and_advice_from_history(tmp_path, capsys):
    m, folder = _job(tmp_path)
    cmd = m.command
    rows = []
    for i in range(4):
        o = material_for_job("alice/bert", i + 1, 2)
        from models.schedmate.extract import extract_metadata

        text = extract_metadata(o.command, o.files).canonical_text()
        rows.append({"key": f"past{i}", "text": text, "duration": 1000.0 * (i + 1), "finished_at": 100.0 * i,
                     "gpu_util": 80})
    rows.append({"key": "other", "model": "dcgan", "task": "image-generation", "dataset": "celeba",
                 "iterations": 25, "iteration_unit": "epochs", "batch_size": 64, "gpus": 1, "nodes": 1,
                 "duration": 5.0, "finished_at": 1.0})
    hist = tmp_path / "history.jsonl"
    hist.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    assert main(["advise", "--repo", str(folder / "repo"), "--command", cmd, "--history", str(hist),
                 "--t-score", "0.8", "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    # (a model named by a config was right 7 times in 20 at first sight on real batches 18-25: below the threshold,
    # so the Advisor keeps it as a guess with the reason)
    model = res["metadata"]["model"] or (res["evidence"]["model"]["guess"] if "model" in res["unknown"] else None)
    assert model == m.truth.model and res["metadata"]["gpus"] == m.truth.gpus
    assert res["advice"] is not None and "other" not in res["advice"]["matches"]
    assert res["advice"]["gpu_util"] == 80
    # the past as of t=150 holds only past0 and past1 (and the unrelated one)
    assert main(["advise", "--repo", str(folder / "repo"), "--command", cmd, "--history", str(hist),
                 "--t-score", "0.8", "--now", "150"]) == 0
    out = capsys.readouterr().out
    assert "model" in out and "advice: duration" in out and "past2" not in out and "past1" in out


def test_advise_errors_are_one_line_exit_2(tmp_path, capsys):
    m, folder = _job(tmp_path)
    assert main(["advise", "--repo", str(tmp_path / "missing"), "--command", "python t.py"]) == 2
    err = capsys.readouterr().err
    assert "no such repository" in err and len(err.strip().splitlines()) == 1
    bad = tmp_path / "h.csv"
    bad.write_text("key,duration\nx,10\n")
    assert main(["advise", "--repo", str(folder / "repo"), "--command", m.command, "--history", str(bad)]) == 2
    assert "finished_at" in capsys.readouterr().err
    bad.write_text("key,duration,finished_at,model\nx,ten,3,resnet50\n")
    assert main(["advise", "--repo", str(folder / "repo"), "--command", m.command, "--history", str(bad)]) == 2
    assert "record 1" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:  # argparse: usage error
        main(["advise", "--repo", str(folder / "repo"), "--command", m.command, "--t-score", "3"])
    assert exc.value.code == 2 and "cosine" in capsys.readouterr().err


def test_track_reads_a_log(tmp_path, capsys):
    m, folder = _job(tmp_path, "bob/vit", 0, 5)
    truth = json.loads((folder / "truth.json").read_text())["logs"]["run_noisy.log"]
    assert main(["track", str(folder / "logs" / "run_noisy.log"), "--repo", str(folder / "repo"),
                 "--command", m.command, "--json"]) == 0
    p = json.loads(capsys.readouterr().out)
    assert p["step"] == truth["step"] and p["total_steps"] == truth["total_steps"]
    assert p["step_time"] == pytest.approx(truth["step_time"], rel=0.1)
    assert main(["track", str(folder / "logs" / "run.log")]) == 0
    assert "step time" in capsys.readouterr().out
    empty = tmp_path / "empty.log"
    empty.write_text("hello\n")
    assert main(["track", str(empty)]) == 0 and "no training progress" in capsys.readouterr().out
    assert main(["track", str(tmp_path)]) == 2 and "folder" in capsys.readouterr().err
    assert main(["track", str(empty), "--repo", str(folder / "repo")]) == 2


def test_diagnose_locator_vs_tail_and_llm_fallback(tmp_path, capsys):
    m = material_for_job("carol/gpt", 0, 1)
    lines, truth = m.failure_log("nvlink", noisy=True)
    log = tmp_path / "failed.log"
    log.write_text("\n".join(lines) + "\n")
    assert main(["diagnose", str(log), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["line_index"] == truth.line_index and d["component"] == "NVLink"
    assert main(["diagnose", str(log), "--tail-only", "--tail", "50", "--json"]) == 0  # shorter than the cascade
    assert json.loads(capsys.readouterr().out)["line_index"] != truth.line_index
    # an endpoint nobody answers: the rules' answer stands, exit 0
    assert main(["diagnose", str(log), "--llm-endpoint", "http://127.0.0.1:9/v1", "--llm-timeout", "2"]) == 0
    out = capsys.readouterr().out
    assert f"line {truth.line_index + 1}:" in out and "llm unavailable" in out
    assert main(["diagnose", str(tmp_path / "none.log")]) == 2
    assert main(["diagnose", str(log), "--llm-endpoint", "not-a-url"]) == 2


def test_diagnose_runs_as_a_process(tmp_path):
    m = material_for_job("dan/resnet", 0, 3)
    lines, truth = m.failure_log("storage")
    log = tmp_path / "f.log"
    log.write_text("\n".join(lines))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "pipelines.cli", "diagnose", str(log)], capture_output=True, text=True,
                       cwd=str(tmp_path), env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "infrastructure" in r.stdout and "storage" in r.stdout
    r = subprocess.run([sys.executable, "-m", "pipelines.cli", "track", str(tmp_path / "missing.log")],
                       capture_output=True, text=True, cwd=str(tmp_path), env=env, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0 and "no such log file" in r.stderr
