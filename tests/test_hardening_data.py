"""Issue 20 (data loss, caches, retrain gate, reproducible output) and issue 22 item 10.

CLI cases run the real entry point (``python -m pipelines.cli``) in a subprocess where the exit code and
stderr are the point; cases that need a monkeypatch (a failure half-way, a full disk) call ``main``.
"""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipelines.cli import main

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1",
       "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def cli(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`schedcast ARGS` through the console entry point, in ``cwd``."""
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=timeout)


def one_line_error(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stdout, proc.stderr)
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, proc.stderr
    assert "internal error" not in lines[0] and "Traceback" not in proc.stderr
    return lines[0]


def user_files(folder: Path) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {"notes.txt": b"my notes\n", "thesis/chapter1.tex": b"\\chapter{One}\n"}
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return files


def assert_untouched(folder: Path, files: dict[str, bytes]) -> None:
    for name, data in files.items():
        assert (folder / name).read_bytes() == data, name
    hidden = [p.name for p in folder.parent.iterdir() if p.name.endswith((".partial", ".old"))]
    assert not hidden, hidden


# -- 20.4: --force replaces only schedcast's own output, whole-or-nothing ------------------------------------
def test_corpus_force_never_deletes_the_working_folder(tmp_path):
    work = tmp_path / "work"
    files = user_files(work)
    line = one_line_error(cli("corpus", "--out", ".", "--force", "--jobs", "2", "--no-logs", cwd=work))
    assert "--out ." in line
    assert_untouched(work, files)
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt", "thesis"]


def test_corpus_force_never_unlinks_a_file_or_a_foreign_folder(tmp_path):
    target = tmp_path / "important.csv"
    target.write_text("a,b\n1,2\n")
    line = one_line_error(cli("corpus", "--out", str(target), "--force", "--jobs", "2", "--no-logs", cwd=tmp_path))
    assert "is a file" in line and target.read_text() == "a,b\n1,2\n"
    foreign = tmp_path / "papers"
    files = user_files(foreign)
    line = one_line_error(cli("corpus", "--out", str(foreign), "--force", "--jobs", "2", "--no-logs", cwd=tmp_path))
    assert "not a folder schedcast wrote" in line
    assert_untouched(foreign, files)


def test_corpus_force_replaces_its_own_corpus(tmp_path):
    out = tmp_path / "corpus"
    assert cli("corpus", "--out", str(out), "--jobs", "3", "--no-logs", cwd=tmp_path).returncode == 0
    assert (out / ".schedcast-output").is_file()
    proc = cli("corpus", "--out", str(out), "--force", "--jobs", "2", "--seed", "4", "--no-logs", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert json.loads((out / "index.json").read_text())["seed"] == 4
    assert len(json.loads((out / "index.json").read_text())["jobs"]) == 2


def test_simulate_force_refuses_a_foreign_folder(tmp_path):
    foreign = tmp_path / "data"
    files = user_files(foreign)
    line = one_line_error(cli("simulate", "--synthetic", "demo", "--jobs", "50", "--policy", "fifo", "--no-plots",
                              "--out", str(foreign), "--force", cwd=tmp_path))
    assert "not a folder schedcast wrote" in line
    assert_untouched(foreign, files)


def test_corpus_is_written_whole_or_not_at_all(tmp_path, monkeypatch, capsys):
    import features.jobcorpus as jobcorpus

    out = tmp_path / "corpus"
    assert main(["corpus", "--out", str(out), "--jobs", "2", "--no-logs"]) == 0
    before = sorted(p.relative_to(out).as_posix() for p in out.rglob("*"))
    real = jobcorpus.write_corpus

    def half_then_full_disk(folder, n, seed, logs=True):
        real(folder, 1, seed, logs=logs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(jobcorpus, "write_corpus", half_then_full_disk)
    assert main(["corpus", "--out", str(out), "--force", "--jobs", "5", "--no-logs"]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == before  # the previous corpus, whole
    assert [p.name for p in tmp_path.iterdir()] == ["corpus"]  # no hidden half-written folder


# -- 20.5 / 20.6: the trace cache touches only its own entries and checks them --------------------------------
CSV = ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
       "a,u1,vc1,1,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 01:00:10,3600,10\n"
       "b,u2,vc1,2,8,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:10:00,2020-04-01 00:40:00,1800,0\n")


def test_the_trace_cache_keeps_unrelated_pickles(tmp_path, monkeypatch, capsys):
    from features.traces import cache, load_trace

    folder = tmp_path / "shared-folder"
    folder.mkdir()
    mine = {}
    # Unrelated pickles, some even named like cache keys: none may be touched.
    for i in range(40):
        name = f"{i:040x}.pkl" if i % 2 else f"experiment-{i}.pkl"
        mine[name] = pickle.dumps({"result": i})
        (folder / name).write_bytes(mine[name])
    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", str(folder))
    monkeypatch.setattr(cache, "MAX_ENTRIES", 2)
    for i in range(4):  # more traces than entries: pruning runs
        trace = tmp_path / f"t{i}" / "cluster_log.csv"
        trace.parent.mkdir()
        trace.write_text(CSV)
        load_trace(trace)
    assert len(cache.entries()) == 2
    assert main(["data", "cache", "--clear"]) == 0
    assert "removed 2 entries" in capsys.readouterr().out
    assert {p.name: p.read_bytes() for p in folder.glob("*.pkl")} == mine


def _flip(path: Path, offset_from_end: int = 10) -> None:
    data = bytearray(path.read_bytes())
    data[-offset_from_end] ^= 0x55
    path.write_bytes(bytes(data))


def test_a_corrupt_trace_entry_is_discarded_and_reparsed_with_a_note(tmp_path, monkeypatch, capsys):
    import features.traces as traces
    from features.traces import cache, load_trace

    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", str(tmp_path / "cache"))
    trace = tmp_path / "cluster_log.csv"
    trace.write_text(CSV)
    first = load_trace(trace)
    (entry,) = cache.entries()
    _flip(entry)
    calls = []
    real = traces._parse
    monkeypatch.setattr(traces, "_parse", lambda *a: calls.append(a[1]) or real(*a))
    again = load_trace(trace)
    assert calls == ["helios"] and again.frame.equals(first.frame)
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "corrupt" in err[0] and entry.name in err[0]
    assert isinstance(cache.get_value(entry.stem), traces.JobTable)  # rewritten intact


def test_a_corrupt_schedmate_value_is_discarded_with_a_note(tmp_path, monkeypatch, capsys):
    from features.traces import cache

    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", str(tmp_path / "cache"))
    key = cache.value_key("schedmate-fh", 100, 0, "digest")
    cache.put_value(key, {"rates": [0.1, 0.2, 0.3]})
    assert cache.get_value(key) == {"rates": [0.1, 0.2, 0.3]}
    (entry,) = cache.entries()
    _flip(entry, 3)
    assert cache.get_value(key) is None
    assert "corrupt" in capsys.readouterr().err
    assert not entry.exists()


# -- 20.10: summary.csv is byte-identical between identical runs -------------------------------------------
def test_summary_csv_is_byte_identical_between_identical_runs(tmp_path):
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        proc = cli("simulate", "--synthetic", "demo", "--jobs", "200", "--policy", "fifo", "srtf", "--seed", "3",
                   "--no-plots", "--out", str(out), cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        outs.append(out)
    a, b = ((o / "summary.csv").read_bytes() for o in outs)
    assert a == b
    columns = pd.read_csv(outs[0] / "summary.csv").columns
    assert not {"sim_seconds", "events_per_second"} & set(columns)
    timings = json.loads((outs[0] / "meta.json").read_text())["timings"]
    assert set(timings) == {"fifo", "srtf"} and timings["fifo"]["sim_seconds"] > 0
