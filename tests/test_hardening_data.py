"""Issue 20 (data loss, caches, retrain gate, reproducible output) and issue 22 item 10.

CLI cases run the real entry point (``python -m pipelines.cli``) in a subprocess where the process is the
point (its exit code and stderr, identical output across processes); cases that need a monkeypatch (a failure
half-way, a full disk) or check what is written to folders call ``main`` in this process (a subprocess costs
~1.5 s of imports).
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
from tests.test_mlflow import store  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg", "HF_HUB_OFFLINE": "1",
       "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


def cli(*args: str, cwd: Path, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """`schedcast ARGS` through the console entry point, in ``cwd``."""
    return subprocess.run([sys.executable, "-m", "pipelines.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env={**ENV, **(env or {})}, timeout=timeout)


def main_error(capsys, *args: str) -> str:
    """`schedcast ARGS` in this process (pipelines.cli.main, as the console script calls it): exit 2 and
    one line on stderr, returned."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse's usage errors
        code = exc.code
    captured = capsys.readouterr()
    return one_line_error(subprocess.CompletedProcess(args, code, captured.out, captured.err))


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
def test_corpus_force_never_deletes_the_working_folder(tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    files = user_files(work)
    monkeypatch.chdir(work)  # in this process: the folder is the point here, not the process
    line = main_error(capsys, "corpus", "--out", ".", "--force", "--jobs", "2", "--no-logs")
    assert "--out ." in line
    assert_untouched(work, files)
    assert sorted(p.name for p in work.iterdir()) == ["notes.txt", "thesis"]


def test_corpus_force_never_unlinks_a_file_or_a_foreign_folder(tmp_path, monkeypatch, capsys):
    target = tmp_path / "important.csv"
    target.write_text("a,b\n1,2\n")
    monkeypatch.chdir(tmp_path)
    line = main_error(capsys, "corpus", "--out", str(target), "--force", "--jobs", "2", "--no-logs")
    assert "is a file" in line and target.read_text() == "a,b\n1,2\n"
    foreign = tmp_path / "papers"
    files = user_files(foreign)
    line = main_error(capsys, "corpus", "--out", str(foreign), "--force", "--jobs", "2", "--no-logs")
    assert "not a folder schedcast wrote" in line
    assert_untouched(foreign, files)


def test_corpus_force_replaces_its_own_corpus(tmp_path, monkeypatch, capsys):
    out = tmp_path / "corpus"
    monkeypatch.chdir(tmp_path)
    assert main(["corpus", "--out", str(out), "--jobs", "3", "--no-logs"]) == 0
    assert (out / ".schedcast-output").is_file()
    code = main(["corpus", "--out", str(out), "--force", "--jobs", "2", "--seed", "4", "--no-logs"])
    assert code == 0, capsys.readouterr().err
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
@pytest.mark.slow
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


# -- 20.12 / 20.13: wrong input to train is exit 2 with the reason, nothing written ---------------------------
SYN = ["--synthetic", "demo", "--jobs", "1500", "--test-days", "0.3"]


def first_champion(*args: str) -> None:
    """Train duration version 1 and make it champion directly in the store (a small first model may lose
    to the group-history baseline; where that is not the point, it leads anyway)."""
    from models.registry import configure, set_alias

    assert main(["train", "duration", *args]) == 0
    configure(None)  # the store fixture's $MLFLOW_TRACKING_URI
    set_alias("duration", "champion", "1")


def test_an_unknown_param_is_exit_2_through_the_console_entry_point(tmp_path):
    line = one_line_error(cli("train", "duration", *SYN, "--param", "bogus=1", cwd=tmp_path))
    assert "--param bogus: not a hyper-parameter of the duration model" in line and "n_estimators" in line
    assert list(tmp_path.iterdir()) == []  # refused before any data or store


@pytest.mark.parametrize("extra, expected", [
    (["--param", "bogus=1"], "--param bogus: not a hyper-parameter of the duration model"),
    (["--param", "n_estimators"], "--param 'n_estimators': an estimator hyper-parameter is KEY=VALUE"),
    (["--tracking-uri", "bogus://x"], "unsupported scheme 'bogus'"),
])
def test_train_input_errors_are_exit_2_and_write_nothing(tmp_path, monkeypatch, capsys, extra, expected):
    monkeypatch.chdir(tmp_path)
    line = main_error(capsys, "train", "duration", *SYN, *extra)
    assert expected in line and "policy parameter" not in line
    assert list(tmp_path.iterdir()) == []  # no store created


def test_a_sqlite_uri_at_a_non_database_is_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n")
    line = main_error(capsys, "train", "duration", *SYN, "--tracking-uri", f"sqlite:///{notes}")
    assert "is not an SQLite database" in line
    monkeypatch.setenv("MLFLOW_TRACKING_URI", f"sqlite:///{notes}")
    assert "is not an SQLite database" in main_error(capsys, "models")
    assert notes.read_text() == "not a database\n" and sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("command", ["train", "corpus"])
@pytest.mark.parametrize("seed", ["-1", "nan"])
def test_seeds_must_be_whole_numbers_ge_0(tmp_path, monkeypatch, capsys, command, seed):
    monkeypatch.chdir(tmp_path)
    args = ["train", "duration", *SYN] if command == "train" else ["corpus", "--out", str(tmp_path / "c")]
    line = main_error(capsys, *args, "--seed", seed)
    assert "--seed" in line and list(tmp_path.iterdir()) == []


def test_test_days_message_names_days_not_an_improvement(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    line = main_error(capsys, "train", "duration", *SYN[:-1], "-2")
    assert "--test-days" in line and "days" in line and "relative improvement" not in line


@pytest.mark.slow
def test_full_disk_during_train_is_exit_2_and_registers_nothing(store, monkeypatch, capsys):
    import mlflow
    from mlflow.exceptions import MlflowException

    def full(*args, **kwargs):
        raise MlflowException("(sqlite3.OperationalError) database or disk is full [SQL: INSERT INTO metrics]")

    monkeypatch.setattr(mlflow, "log_metrics", full)
    assert main(["train", "duration", *SYN, "--param", "n_estimators=5"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "database or disk is full" in err[0] and "internal error" not in err[0]
    from models.registry import list_models

    assert list_models(store) == []  # no half-registered version
    monkeypatch.undo()
    (run,) = mlflow.search_runs(search_all_experiments=True, output_format="list")
    assert run.info.status == "FAILED"


# -- 22.10 / 20.8: the champion alias moves only to a checked model -----------------------------------------
@pytest.mark.slow
def test_first_version_worse_than_baseline_is_not_champion_and_models_says_so(store, capsys):
    from models.registry import alias_version, configure, list_models

    # A-SRPT's paper variant predicts 0 for unseen groups: far worse than the group-median baseline.
    assert main(["train", "iterations", *SYN, "--algo", "zero", "--param", "n_estimators=10"]) == 0
    out = capsys.readouterr().out
    assert "is not champion" in out and "worse than the baseline" in out
    configure(store)
    assert alias_version("iterations", "champion") is None
    assert main(["models", "--all"]) == 0
    assert "WORSE THAN BASELINE" in capsys.readouterr().out
    # asked for explicitly: refused (exit 2), nothing registered; with the flag it is champion
    assert main(["train", "iterations", *SYN, "--algo", "zero", "--param", "n_estimators=10", "--alias",
                 "champion"]) == 2
    assert "--allow-worse-than-baseline" in capsys.readouterr().err
    assert len(list_models(store)) == 1
    assert main(["train", "iterations", *SYN, "--algo", "zero", "--param", "n_estimators=10",
                 "--allow-worse-than-baseline"]) == 0
    assert alias_version("iterations", "champion") == "2"


@pytest.mark.slow
def test_alias_champion_never_replaces_a_champion_unchecked(store, capsys):
    from models.registry import alias_version, configure, list_models

    first_champion(*SYN, "--param", "n_estimators=20")
    configure(store)
    assert alias_version("duration", "champion") == "1"
    capsys.readouterr()
    # a deliberately bad model asked to be champion: refused before training, nothing registered
    assert main(["train", "duration", *SYN, "--param", "n_estimators=1", "learning_rate=0.001",
                 "--alias", "champion"]) == 2
    err = capsys.readouterr().err
    assert "schedcast retrain" in err and "version 1" in err and err.count("\n") == 1
    assert alias_version("duration", "champion") == "1" and len(list_models(store)) == 1
    # a version number beyond any store's integers is "not registered" (exit 2), not an internal error
    assert main(["evaluate", "duration", *SYN, "--model", "models:/duration/99999999999999999999"]) == 2
    err = capsys.readouterr().err
    assert "not registered" in err and "internal error" not in err


def _write_trace(path, scale: float = 1.0, jobs: int = 1500):
    from tests.test_retrain_gate import write_helios

    write_helios(path, jobs=jobs)
    if scale != 1.0:
        frame = pd.read_csv(path)
        frame["duration"] = frame["duration"] * scale
        frame.to_csv(path, index=False)
    return path


@pytest.mark.slow
def test_a_trace_rewritten_in_place_is_other_data_for_the_gate(store, tmp_path, capsys):
    from models.registry import alias_version, configure

    trace = _write_trace(tmp_path / "cluster_log.csv")
    args = ["--trace", str(trace), "--format", "helios", "--test-days", "0.3"]
    first_champion(*args, "--param", "n_estimators=20")
    capsys.readouterr()
    _write_trace(trace, scale=3.0)  # same path, every duration x3
    code = main(["retrain", "duration", *args, "--param", "n_estimators=20"])
    out = capsys.readouterr().out
    assert code == 4, out  # refused: the champion's data cannot be reloaded unchanged
    assert "has changed since" in out
    configure(store)
    assert alias_version("duration", "champion") == "1"


@pytest.mark.slow
def test_rows_appended_to_the_champions_trace_are_the_same_source_by_content(store, tmp_path, capsys):
    trace = _write_trace(tmp_path / "cluster_log.csv")
    args = ["--trace", str(trace), "--format", "helios", "--test-days", "0.3"]
    first_champion(*args, "--param", "n_estimators=20")
    last = pd.to_datetime(pd.read_csv(trace)["submit_time"]).max() + pd.Timedelta(minutes=1)
    with open(trace, "a") as fh:  # one more job a minute after the last: the champion's bytes stay a prefix
        fh.write(f"late-job,u9,vc9,1,{last:%Y-%m-%d %H:%M:%S},100\n")
    capsys.readouterr()
    code = main(["retrain", "duration", *args, "--param", "n_estimators=20"])
    out = capsys.readouterr().out
    assert code in (0, 3), out
    assert "byte prefix of the challenger's" in out


@pytest.mark.slow
def test_the_lost_race_names_the_champion_that_is_there_now(store, capsys):
    from models.registry import alias_version, configure, set_alias
    from pipelines.retrain import FAILED, retrain
    from pipelines.train import TASKS, DataSource

    first_champion(*SYN, "--param", "n_estimators=20")
    configure(store)
    data = TASKS["duration"].load(DataSource("synthetic", preset="demo", seed=0, jobs=1500))

    def other_process_moves_the_champion(who, score):
        if who == "challenger":
            set_alias("duration", "champion", "2")  # e.g. another retrain promoted its challenger meanwhile

    decision = retrain("duration", lambda: TASKS["duration"].train(data, algo="lightgbm", test_days=0.3,
                                                                    n_estimators=20),
                       margin=0.0, score_hook=other_process_moves_the_champion)
    assert decision.exit_code == FAILED and not decision.promoted
    assert decision.champion_version_before == "1" and decision.champion_version_after == "2"
    assert "moved from version 1 to 2" in decision.reason
    assert alias_version("duration", "champion") == "2"
