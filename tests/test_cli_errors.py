"""Bad input to `schedcast simulate` stops before any replay, on one line, with exit status 2."""
import json
import socket

import pandas as pd
import pytest

from pipelines.cli import main


def run(capsys, *args):
    """Exit status and (stdout, stderr) of one CLI call; argparse errors count like any other."""
    try:
        code = main(list(args))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def one_line_error(code, err, *fragments):
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith("schedcast"), err
    assert "Traceback" not in err
    for f in fragments:
        assert f in err, err


DEMO = ["simulate", "--synthetic", "demo", "--jobs", "300", "--no-progress"]


@pytest.mark.parametrize("window, fragment", [
    (["2d", "1d"], "must be after START"),             # reversed
    (["1d", "1d"], "must be after START"),             # empty
    (["100d", "200d"], "holds no job"),                # beyond the last submission
    (["foo", "bar"], "invalid time 'foo'"),           # not a time
    (["-1d", "2d"], "--window"),                      # negative (argparse reads an option)
])
def test_bad_windows_are_refused(window, fragment, tmp_path, capsys):
    code, out, err = run(capsys, *DEMO, "--policy", "fifo", "--out", str(tmp_path / "o"), "--window", *window)
    one_line_error(code, err, fragment)
    assert "events in" not in out and not (tmp_path / "o").exists()


def test_window_header_plots_and_files_agree(tmp_path, capsys):
    out_dir = tmp_path / "o"
    code, out, err = run(capsys, "simulate", "--synthetic", "demo", "--no-progress", "--policy", "fifo", "sjf",
                         "--window", "6h", "18h", "--out", str(out_dir))
    assert code == 0, err
    summary = pd.read_csv(out_dir / "summary.csv")
    measured = int(summary["jobs"].iloc[0])
    assert 0 < measured < 2000
    assert f"{measured:,} of 2,000 jobs measured" in out
    jobs = pd.read_parquet(out_dir / "jobs_sjf.parquet")
    assert len(jobs) == 2000 and int(jobs["in_window"].sum()) == measured
    inside = jobs[jobs["in_window"]]
    assert inside["submit_s"].min() >= 6 * 3600 and inside["submit_s"].max() < 18 * 3600
    meta = json.loads((out_dir / "meta.json").read_text())
    assert meta["window"] == [6 * 3600, 18 * 3600] and meta["measured_jobs"] == measured
    by_size = pd.read_csv(out_dir / "by_size_sjf.csv")
    assert by_size["jobs"].sum() == measured


@pytest.mark.parametrize("jobs", ["-5", "0", "1.5", "x"])
def test_jobs_must_be_a_positive_whole_number(jobs, tmp_path, capsys):
    # The trace does not exist: the argument is refused before anything is read.
    code, out, err = run(capsys, "simulate", "--trace", str(tmp_path / "none.csv"), "--cluster", "demo",
                         "--jobs", jobs)
    one_line_error(code, err, "--jobs")
    assert out == ""


def test_out_is_checked_before_the_replay(tmp_path, capsys):
    target = tmp_path / "file.txt"
    target.write_text("keep me")
    code, out, err = run(capsys, *DEMO, "--out", str(target))
    one_line_error(code, err, "is a file")
    assert out == "" and target.read_text() == "keep me"
    code, out, err = run(capsys, *DEMO, "--out", str(target / "sub"))
    one_line_error(code, err, "cannot create")
    assert out == ""


def test_missing_trace_says_not_found(tmp_path, capsys):
    code, out, err = run(capsys, "simulate", "--trace", str(tmp_path / "nope.csv"), "--cluster", "demo",
                         "--out", str(tmp_path / "o"))
    one_line_error(code, err, "not found", "nope.csv")


def test_missing_cluster_is_one_line(tmp_path, capsys):
    (tmp_path / "t.csv").write_text("timestamp,duration,num_gpus,cluster\n2017-10-01 00:00:00,60,1,vc\n")
    code, out, err = run(capsys, "simulate", "--trace", str(tmp_path / "t.csv"), "--format", "philly",
                         "--out", str(tmp_path / "o"))
    one_line_error(code, err, "--cluster")


@pytest.mark.parametrize("spec, fragment", [("noisy:abc", "noisy:SIGMA needs a number"),
                                            ("noisy:-1", "noisy:SIGMA needs a number"),
                                            ("models:/duration", "bad model URI"),
                                            ("bogus", "unknown predictor")])
def test_bad_predictor_specs(spec, fragment, tmp_path, capsys):
    code, out, err = run(capsys, *DEMO, "--policy", "spjf", "--predictor", spec, "--out", str(tmp_path / "o"))
    one_line_error(code, err, fragment)
    assert out == ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_model_server_stops_before_any_replay(tmp_path, capsys):
    url = f"http://127.0.0.1:{_free_port()}"
    code, out, err = run(capsys, *DEMO, "--policy", "fifo", "spjf", "--predictor", url, "--out", str(tmp_path / "o"))
    one_line_error(code, err, "cannot reach the model server", "127.0.0.1")
    assert "events in" not in out  # not even fifo ran
    assert not (tmp_path / "o").exists()


def test_unregistered_model_is_one_line(tmp_path, capsys):
    uri = f"sqlite:///{tmp_path / 'nothing-here.db'}"
    code, out, err = run(capsys, *DEMO, "--policy", "spjf", "--predictor", "models:/duration@champion",
                         "--tracking-uri", uri, "--out", str(tmp_path / "o"))
    one_line_error(code, err, "models:/duration@champion", "no model registry")
    assert not (tmp_path / "nothing-here.db").exists()  # the lookup created no store


def test_unknown_policy_parameter_lists_the_valid_ones(tmp_path, capsys):
    code, out, err = run(capsys, *DEMO, "--policy", "periodic-srtf:intervl=60", "--out", str(tmp_path / "o"))
    one_line_error(code, err, "intervl", "interval")
    assert out == ""


def test_internal_errors_are_one_line_and_debug_shows_the_traceback(tmp_path, capsys, monkeypatch):
    import evaluation.metrics

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(evaluation.metrics, "evaluate", broken)
    code, out, err = run(capsys, *DEMO, "--policy", "fifo", "--out", str(tmp_path / "o"))
    assert code == 1 and err.count("\n") == 1 and "internal error: KeyError" in err and "--debug" in err
    with pytest.raises(KeyError):
        main(["--debug", *DEMO, "--policy", "fifo", "--out", str(tmp_path / "o2")])
    monkeypatch.setenv("SCHEDCAST_DEBUG", "1")
    with pytest.raises(KeyError):
        main([*DEMO, "--policy", "fifo", "--out", str(tmp_path / "o3")])


@pytest.mark.parametrize("command", [["simulate"], ["demo"], ["policies"], ["clusters"], ["data", "check"],
                                     ["data", "formats"]])
def test_help_is_complete(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([*command, "--help"])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    # every option has a help text (argparse prints the option alone on its line otherwise)
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("-")]
    for ln in lines:
        assert len(ln.split("  ")) > 1 and ln.split("  ", 1)[1].strip() or ln.strip().startswith(("-h",)), ln


def test_unknown_placement_stops_before_loading(tmp_path, capsys):
    code, out, err = run(capsys, *DEMO, "--placement", "nope", "--out", str(tmp_path / "o"))
    one_line_error(code, err, "unknown placement 'nope'", "consolidate")
    assert out == ""
