"""Issue 44, "hardening, round two": code from the working folder, user files under --out, a scoring server
one request can stall, stale resumed cells, reads outside what the user named, late validation,
cache-dependent metrics. Each test reproduces one defect of the issue."""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from tests.helpers import assert_one_line_error, run_main

REPO = Path(__file__).resolve().parents[1]


def _capture(monkeypatch, command: list[str]) -> tuple[list[str], dict]:
    """The child command line and environment `schedcast server` / `serve` would start (nothing starts)."""
    from pipelines import server

    seen = {}

    def fake_run(cmd, **kw):
        seen["cmd"], seen["env"] = list(cmd), kw.get("env")
        return 0

    monkeypatch.setattr(server, "run_managed", fake_run)
    monkeypatch.setattr(server, "_check_port", lambda host, port: None)
    monkeypatch.setattr(server, "_check_registered", lambda *a: None)
    parser = argparse.ArgumentParser()
    server.add_parsers(parser.add_subparsers())
    args = parser.parse_args(command)
    args.func(args)
    return seen["cmd"], seen["env"]


@pytest.fixture()
def hostile_cwd(tmp_path):
    """A working folder whose pipelines/server.py, orjson.py and mlflow/__main__.py write a marker."""
    marker = tmp_path / "PWNED"
    code = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "__init__.py").write_text(code)
    (tmp_path / "pipelines" / "server.py").write_text(code)
    (tmp_path / "orjson.py").write_text(code)
    (tmp_path / "mlflow").mkdir()
    (tmp_path / "mlflow" / "__init__.py").write_text(code)
    (tmp_path / "mlflow" / "__main__.py").write_text(code)
    return tmp_path, marker


def test_children_never_import_from_the_working_folder(monkeypatch, hostile_cwd):
    """Issue 44.1: `serve` (schedcast engine and mlflow engine) and `server` start their child Python with the
    working folder off sys.path; the hostile modules there are not executed."""
    cwd, marker = hostile_cwd
    monkeypatch.chdir(cwd)
    score_cmd, env = _capture(monkeypatch, ["serve", "models:/m@a", "--engine", "schedcast"])
    assert score_cmd[:2] == [sys.executable, "-P"] and env["PYTHONSAFEPATH"] == "1"
    # the real child's first steps: its module, then orjson (the JSON codec) and mlflow
    probe = score_cmd[:score_cmd.index("-m")] + ["-c", "import pipelines.server, orjson, mlflow; "
                                                       "print(pipelines.server.__file__)"]
    out = subprocess.run(probe, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert str(REPO) in out.stdout
    usage = subprocess.run(score_cmd[:score_cmd.index("score")], cwd=cwd, env=env, capture_output=True,
                           text=True, timeout=60)
    assert "usage: python -m pipelines.server score" in usage.stderr  # schedcast's module ran, not the folder's
    for command in (["serve", "models:/m@a", "--engine", "mlflow"], ["server"]):
        cmd, env = _capture(monkeypatch, command)
        assert cmd[:4] == [sys.executable, "-P", "-m", "mlflow"]
        out = subprocess.run(cmd[:4] + ["--version"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, out.stderr
    assert not marker.exists(), marker.read_text()


# -- 44.4: a cell's key holds the content hash of every input it reads ----------------------------------
def _helios(path: Path, seed: int = 1, jobs: int = 60) -> Path:
    import pandas as pd

    from features.traces.synthetic import generate_preset

    f = generate_preset("demo", seed=seed, jobs=jobs).frame
    pd.DataFrame({"job_id": f["job_id"], "user": f["user"], "vc": f["org"], "gpu_num": f["num_gpus"],
                  "submit_time": f["submit_ts"].dt.tz_convert("Asia/Shanghai").dt.strftime("%Y-%m-%d %H:%M:%S"),
                  "duration": f["duration"]}).to_csv(path, index=False)
    return path


def _cluster(folder: Path, csv: str = "nodes.csv", rows: int = 4, **fields) -> Path:
    import yaml

    (folder / "nodes.csv").write_text("gpus\n" + "8\n" * rows)
    path = folder / "mine.yaml"
    path.write_text(yaml.safe_dump({"name": "mine", "nodes_from_csv": {"file": csv, "gpus_column": "gpus"},
                                    **fields}))
    return path


def test_a_changed_input_changes_the_cell_key(tmp_path):
    from pipelines.experiment import parse_spec
    from pipelines.experiments.cells import expand

    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir(), two.mkdir()
    _helios(one / "t.csv", seed=1)
    _helios(two / "t.csv", seed=2)
    spec = parse_spec({"name": "t", "workloads": [{"name": "w", "trace": "t.csv", "format": "helios",
                                                   "cluster": "demo"}], "policies": ["fifo"]})
    a, b = expand(spec, str(one))[0], expand(spec, str(two))[0]
    assert a.key() != b.key()  # another --data-dir with other content: another cell
    (two / "t.csv").write_bytes((one / "t.csv").read_bytes())
    assert expand(spec, str(two))[0].key() == a.key()  # the same content elsewhere: the same cell
    with open(one / "t.csv", "a") as fh:  # a trace edited in place
        fh.write("extra,u,vc,1,2020-01-01 00:00:00,10\n")
    assert expand(spec, str(one))[0].key() != a.key()
    cluster = _cluster(tmp_path)
    spec2 = parse_spec({"name": "t", "workloads": [{"name": "w", "synthetic": "demo", "jobs": 30,
                                                    "cluster": str(cluster)}], "policies": ["fifo"]})
    k1 = expand(spec2, str(one))[0].key()
    (tmp_path / "nodes.csv").write_text("gpus\n" + "8\n" * 6)  # the cluster's node list changed
    assert expand(spec2, str(one))[0].key() != k1


def test_resume_reruns_the_cells_of_an_edited_trace(tmp_path):
    from pipelines.experiment import parse_spec, run_experiment

    data = tmp_path / "data"
    data.mkdir()
    _helios(data / "t.csv", seed=1)
    spec = parse_spec({"name": "t", "workloads": [{"name": "w", "trace": "t.csv", "format": "helios",
                                                   "cluster": "demo"}], "policies": ["fifo"]})
    out = tmp_path / "run"
    first = run_experiment(spec, out, engine="serial", data_dir=str(data), report=False)
    assert first.ok == 1 and first.reused == 0
    assert run_experiment(spec, out, engine="serial", data_dir=str(data), report=False).reused == 1
    _helios(data / "t.csv", seed=3, jobs=90)  # edited in place
    again = run_experiment(spec, out, engine="serial", data_dir=str(data), report=False)
    assert again.reused == 0 and again.ok == 1


# -- 44.5 (cluster part) and 44.8 (nodes: true): cluster configs ------------------------------------------
@pytest.mark.parametrize("csv", ["/etc/passwd", "../../../../etc/passwd", "../outside.csv"])
def test_a_cluster_csv_outside_the_data_dir_and_config_folder_is_refused(tmp_path, csv):
    from sim.cluster import load_cluster

    folder = tmp_path / "cfg"
    folder.mkdir()
    (tmp_path / "outside.csv").write_text("gpus\n8\n")
    path = _cluster(folder, csv=csv)
    with pytest.raises(ValueError) as err:
        load_cluster(str(path), tmp_path / "data")
    text = str(err.value)
    assert "nodes_from_csv.file" in text and csv in text and "outside" in text and "\n" not in text
    assert load_cluster(str(_cluster(folder)), tmp_path / "data").gpus == 32  # beside the config: fine


def test_an_unreadable_cluster_csv_names_file_and_field(tmp_path):
    from sim.cluster import load_cluster

    path = _cluster(tmp_path)
    (tmp_path / "nodes.csv").write_bytes(b"\xff\xfe\x00garbage\x00\n\x00")
    with pytest.raises(ValueError) as err:
        load_cluster(str(path), tmp_path)
    assert "nodes_from_csv.file" in str(err.value) and "nodes.csv" in str(err.value)


@pytest.mark.parametrize("fields", [{"nodes": True}, {"gpus_per_node": True, "nodes": 2},
                                    {"node_groups": [{"count": True, "gpus_per_node": 8, "gpu_type": "a"}]}])
def test_a_boolean_is_not_a_node_count(tmp_path, fields):
    import yaml

    from sim.cluster import load_cluster_config

    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({"name": "c", **fields}))
    with pytest.raises(ValueError, match="whole number"):
        load_cluster_config(str(path))


# -- 44.7: byte-identical outputs whatever the cache holds -----------------------------------------------
def test_schedmate_logs_read_does_not_depend_on_the_cache(tmp_path):
    """`simulate --synthetic helios-failures --policy schedmate-sjf-fh` twice on a fresh cache: the same
    summary.csv (schedmate_logs_read was 41, then 0)."""
    env = {**os.environ, "PYTHONPATH": str(REPO), "SCHEDCAST_TRACE_CACHE": str(tmp_path / "cache"),
           "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    outs = []
    for name in ("a", "b"):
        out = tmp_path / name
        done = subprocess.run([sys.executable, "-m", "pipelines.cli", "simulate", "--synthetic", "helios-failures",
                               "--jobs", "120", "--policy", "schedmate-sjf-fh", "--seed", "1", "--out", str(out)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        outs.append((out / "summary.csv").read_bytes())
    assert outs[0] == outs[1]
    import csv
    import io

    row = next(csv.DictReader(io.StringIO(outs[0].decode())))
    assert int(row["schedmate_logs_read"]) > 0


# -- 44.6: the user's mistakes are exit 2, one line, before any work ------------------------------------


@pytest.mark.parametrize("text, words", [
    ("name: t\nname: u\nworkloads: [{name: w, synthetic: demo, jobs: 30}]\npolicies: [fifo]\n",
     ("line 2", "duplicate key 'name'")),
    ("name: t\nworkloads: [{name: w, synthetic: demo, jobs: 30, jobs: 40}]\npolicies: [fifo]\n", ("duplicate key 'jobs'",)),
    ("name: t\nworkloads: [{name: w, synthetic: demo, jobs: 30}]\npolicies: [fifo]\nmetrics: [jct_mean, nosuch]\n",
     ("metrics[1]", "unknown metric 'nosuch'")),
    ("name: t\nworkloads: [{name: w, generator: venus-shaped, params: {nosuch: 3}, jobs: 30, cluster: demo}]\npolicies: [fifo]\n",
     ("workloads[0].params", "nosuch")),
    ("name: t\nworkloads: [{name: w, generator: gfs, params: {spot_multiplyer: 2}, cluster: demo}]\npolicies: [fifo]\n",
     ("workloads[0].params", "spot_multiplyer")),
    ("name: t\nworkloads: [{name: w, synthetic: demo, jobs: 30, costs: lazr}]\npolicies: [fifo]\n",
     ("workloads[0].costs", "lazr")),
    ("name: t\nworkloads: [{name: w, synthetic: demo, jobs: 30}]\npolicies: [fifo]\npredict: {durration: oracle}\n",
     ("predict", "durration", "duration")),
    ("name: t\nworkloads: [{name: w, synthetic: demo, jobs: 30}]\npolicies: [{name: fifo, label: " + "x" * 300 + "}]\n",
     ("label", "255")),
    ('name: t\nworkloads: [{name: w, synthetic: demo, jobs: 30}]\npolicies: [{name: fifo, label: "a\\0b"}]\n',
     ("label", "control")),
    ("name: t\nworkloads: [{name: w, trace: /etc/passwd, format: helios, cluster: demo}]\npolicies: [fifo]\n",
     ("workloads[0].trace", "not a trace")),
])
def test_spec_mistakes_are_refused_before_any_work(tmp_path, capsys, text, words):
    spec = tmp_path / "s.yaml"
    spec.write_text(text)
    out = tmp_path / "out"
    rc, err = run_main(["experiment", "run", str(spec), "--out", str(out), "--executor", "serial", "--no-track"], capsys)
    assert_one_line_error(rc, err, *words)
    assert not out.exists()
    assert "root:" not in err


def test_a_guessed_trace_that_is_not_one_is_refused(tmp_path, capsys):
    spec = tmp_path / "s.yaml"
    spec.write_text("name: t\nworkloads: [{name: w, trace: /etc/passwd, cluster: demo}]\npolicies: [fifo]\n")
    rc, err = run_main(["experiment", "run", str(spec), "--out", str(tmp_path / "o"), "--dry-run"], capsys)
    assert_one_line_error(rc, err, "workloads[0].trace", "not a trace")


@pytest.mark.parametrize("args, words", [
    (["simulate", "--synthetic", "demo", "--jobs", "30", "--policy", "fifo", "--tracking-uri", "notascheme://x"],
     ("--tracking-uri", "notascheme")),
    (["simulate", "--synthetic", "demo", "--jobs", "30", "--policy", "x" * 300], ("--policy", "255")),
    (["simulate", "--synthetic", "demo", "--jobs", "30", "--policy", "fifo\x00"], ("--policy", "control")),
    (["train", "duration", "--synthetic", "demo", "--jobs", "300", "--param", "num_leaves=abc"],
     ("num_leaves", "int")),
    (["train", "duration", "--synthetic", "demo", "--jobs", "300", "--alias", "latest"], ("--alias", "reserved")),
    (["train", "duration", "--synthetic", "demo", "--jobs", "300", "--alias", "../x"], ("--alias", "not an alias")),
    (["models", "--tracking-uri", "notascheme://x"], ("--tracking-uri",)),
])
def test_flags_are_refused_before_any_work(tmp_path, capsys, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    out = ["--out", str(tmp_path / "o")] if args[0] == "simulate" else []
    rc, err = run_main(args + out, capsys)
    assert_one_line_error(rc, err, *words)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no results, no store, no model trained


# -- 44.5 (advise) and 44.8: minor ---------------------------------------------------------------------
def test_advise_does_not_follow_a_link_out_of_the_repository(tmp_path):
    from features.schedmate_text.extract import read_repository

    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-TOKEN")
    repo = tmp_path / "repo"
    (repo / "conf").mkdir(parents=True)
    (repo / "train.py").write_text("print('hi')\n")
    (repo / "notes.txt").symlink_to(secret)
    (repo / "conf" / "inside.txt").symlink_to(repo / "train.py")  # a link within the repository is fine
    (repo / "outside").symlink_to(tmp_path, target_is_directory=True)
    files = read_repository(str(repo))
    assert "train.py" in files and "conf/inside.txt" in files
    assert not any("SECRET-TOKEN" in text for text in files.values()), sorted(files)


def test_a_packing_model_lookup_creates_no_store(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    rc, err = run_main(["simulate", "--synthetic", "demo", "--jobs", "30", "--policy",
                     "lucid:packing_model=models:/packing@champion", "--out", str(tmp_path / "o")], capsys)
    assert_one_line_error(rc, err, "no model registry")
    assert not (tmp_path / "mlruns").exists() and not (tmp_path / "o").exists()


def test_utf16_logs_are_decoded_by_their_byte_order_mark(tmp_path, capsys):
    from pipelines.cli import main

    text = ("epoch 1 step 10 loss 0.5\n"
            "RuntimeError: CUDA error: an illegal memory access was encountered\n"
            "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n")
    outs = []
    for name, encoding in (("a.log", "utf-8"), ("b.log", "utf-16"), ("c.log", "utf-8-sig")):
        path = tmp_path / name
        path.write_bytes(text.encode(encoding))
        assert main(["diagnose", str(path)]) == 0
        outs.append(capsys.readouterr().out.replace(str(path), "LOG"))
    assert outs[0] == outs[1] == outs[2]
    assert "illegal memory access" in outs[0]  # found in the text (UTF-16 read as UTF-8 was garbage)


@pytest.mark.parametrize("answer", [[-1000.0], [1e308], ["NaN"]])
def test_an_http_predictor_answer_that_is_no_duration_is_refused(answer):
    import http.server
    import json
    import threading

    import pandas as pd

    from sim.predictors import RestPredictor

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"predictions": answer}).replace('"NaN"', "NaN").encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        from features.traces.synthetic import generate_preset

        jobs = generate_preset("demo", seed=0, jobs=1).frame
        with pytest.raises(ValueError, match="no duration"):
            RestPredictor(f"http://127.0.0.1:{server.server_address[1]}").predict(jobs)
    finally:
        server.shutdown()
        server.server_close()


def test_a_host_beyond_loopback_is_warned_about(capsys):
    import socket

    from pipelines.server import _check_port

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    _check_port("127.0.0.1", port)
    assert capsys.readouterr().err == ""
    _check_port("0.0.0.0", port)
    err = capsys.readouterr().err
    assert "warning" in err and "0.0.0.0" in err and "authentication" in err and len(err.strip().splitlines()) == 1
