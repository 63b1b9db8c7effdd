"""Plug-ins (issue 23, item 3): one Registry and one ``name:key=value`` grammar (features.plugins) for every
kind; an installed distribution adds a policy, a trace format and a score through entry points, used by
`simulate` and by `experiment run` on a Dask LocalCluster; ``--plugin MODULE`` / SCHEDCAST_PLUGINS import a
local module, in the workers too; a typo in any kind's name is a one-line exit 2 listing the known names."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from features import plugins
from features.paths import REPO_ROOT
from pipelines.cli import main

ENV = {k: v for k, v in os.environ.items() if k != plugins.ENV_VAR}
ENV.update(OMP_NUM_THREADS="1", MPLBACKEND="Agg", HF_HUB_OFFLINE="1")

PLUGIN_CODE = '''
"""A third-party package: a policy, a trace format and a score, found through entry points."""
import os

import pandas as pd

from features.jobtable import LoadReport, finalize
from sim.policies.queueing import Sjf


def _mark(what):
    path = os.environ.get("DEMO_PLUGIN_MARKS")
    if path:
        with open(path, "a") as f:
            f.write(f"{what} {os.getpid()}\\n")


class LongestFirst(Sjf):
    """Longest job first (a demo plug-in policy)."""

    name = "demo-ljf"
    summary = "demo plug-in: longest job first"
    citation = "schedcast's plug-in test"

    def __init__(self, tag: str = "plain"):
        super().__init__()
        self.tag = tag
        _mark(f"policy:{tag}")

    def key(self, job):
        return -self.ctx.jobs.duration[job]


def load_demo(path, **options):
    """Demo CSV (id, t, secs, gpus)."""
    raw = pd.read_csv(path)
    frame = pd.DataFrame({"job_id": raw["id"].astype(str), "submit_time": raw["t"].astype(float),
                          "submit_ts": pd.Timestamp("2024-01-01", tz="UTC") + pd.to_timedelta(raw["t"], unit="s"),
                          "duration": raw["secs"].astype(float), "num_gpus": raw["gpus"].astype(int)})
    _mark("format")
    return finalize(frame, LoadReport(source=str(path), format="demo-csv", rows_read=len(raw)), path=path,
                    require_jobs=True)


def spread(node, gpus, milli, job_class):
    _mark("score")
    return 0.5
'''

ENTRY_POINTS = """\
[schedcast.policies]
demo-ljf = schedcast_demo_plugin:LongestFirst

[schedcast.trace_formats]
demo-csv = schedcast_demo_plugin:load_demo

[schedcast.scores]
demo_spread = schedcast_demo_plugin:spread
"""

LOCAL_MODULE = '''
"""A local module for --plugin: registers a policy by code."""
from sim.policies import register
from sim.policies.queueing import Fifo


class LocalFifo(Fifo):
    name = "local-fifo"
    summary = "FIFO registered by a --plugin module"
    citation = "schedcast's plug-in test"


register(LocalFifo)
'''


def _distribution(root: Path) -> Path:
    """A tiny installed distribution (package + dist-info with entry_points.txt) in ``root/site``."""
    site = root / "site"
    (site / "schedcast_demo_plugin").mkdir(parents=True)
    (site / "schedcast_demo_plugin" / "__init__.py").write_text(PLUGIN_CODE)
    info = site / "schedcast_demo_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: schedcast-demo-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    (info / "RECORD").write_text("")
    return site


def _trace(path: Path, n: int = 40) -> Path:
    rows = [{"id": f"j{i}", "t": 30.0 * i, "secs": 600.0 + 97.0 * ((i * 7) % 13), "gpus": (1, 2, 4, 8)[i % 4]}
            for i in range(n)]
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _cli(args: list[str], cwd: Path, env: dict, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", "from pipelines.cli import entry; entry()", *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)


def _marks(path: Path) -> list[tuple[str, int]]:
    return [(w, int(p)) for w, p in (line.split() for line in path.read_text().splitlines())] if path.exists() else []


# -- the grammar and the registry ------------------------------------------------------------------------
def test_one_grammar():
    assert plugins.parse_spec("lazer") == ("lazer", {})
    assert plugins.parse_spec("tiresias:thresholds=[600,3600],respect_wq=FALSE,tag=abc") == (
        "tiresias", {"thresholds": [600, 3600], "respect_wq": False, "tag": "abc"})
    assert plugins.parse_spec("noisy:0.5", positional="sigma") == ("noisy", {"sigma": 0.5})
    assert plugins.parse_spec("asrpt:inter_gbps=25", raw=True) == ("asrpt", {"inter_gbps": "25"})
    with pytest.raises(ValueError, match="given twice"):
        plugins.parse_spec("scored:best_fit=1,best_fit=2")
    with pytest.raises(ValueError, match="not key=value"):
        plugins.parse_spec("lazer:oops")
    name, params = plugins.parse_spec("x:a=[1,2],b='c,d'")
    assert plugins.parse_spec(plugins.format_spec(name, params)) == (name, params)


def test_registry_loads_entry_points_only_when_asked(tmp_path, monkeypatch):
    registry = plugins.Registry("scores", noun="score function")
    registry.register("own", len)

    loaded = []

    class FakeEntryPoint:
        name, value = "third", "pkg:fn"

        def load(self):
            loaded.append(self.name)
            return abs

    monkeypatch.setattr(plugins, "entry_points_of", lambda group: {"third": FakeEntryPoint()}
                        if group == "schedcast.scores" else {})
    assert registry["own"] is len and not loaded  # a registered name never looks at entry points
    assert registry.names() == ["own", "third"] and not loaded  # listing names imports nothing
    assert registry.lookup("third") is abs and loaded == ["third"]
    with pytest.raises(plugins.UnknownName, match=r"unknown score function 'thrid'; known: own, third"):
        registry.lookup("thrid")
    with pytest.raises(plugins.PluginError, match="registered twice"):
        registry.register("own", abs)
    with pytest.raises(plugins.PluginError, match="name"):
        registry.register("a/b", abs)
    registry["tmp"] = min  # the dict habits of the tables it replaced
    assert registry.pop("tmp") is min and "tmp" not in registry.names()


def test_every_kind_is_one_registry():
    import features.traces  # noqa: F401
    import features.traces.synthetic  # noqa: F401
    import pipelines.train  # noqa: F401
    import sim.failures  # noqa: F401
    import sim.performance  # noqa: F401
    import sim.placement.scored  # noqa: F401
    import sim.policies  # noqa: F401
    import sim.predictors  # noqa: F401

    assert set(plugins.REGISTRIES) == set(plugins.KINDS)
    for kind, registry in plugins.REGISTRIES.items():
        assert isinstance(registry, plugins.Registry) and registry.group == f"schedcast.{kind}"
        assert registry.names(), kind


# -- a typo in any kind: one line, exit 2, the known names ------------------------------------------------
SIM = ["simulate", "--synthetic", "demo", "--jobs", "30", "--no-plots", "--no-progress"]


@pytest.mark.parametrize("args, words", [
    (["--policy", "lazr"], ["unknown policy 'lazr'", "lazer", "fifo"]),
    (["--policy", "fifo", "--placement", "scord"], ["unknown placement 'scord'", "consolidate", "scored"]),
    (["--policy", "fifo", "--placement", "scored:bst_fit=1"], ["bst_fit", "best_fit", "least_allocated"]),
    (["--policy", "fifo", "--performance", "asrp"], ["unknown performance model 'asrp'", "asrpt", "constant"]),
    (["--policy", "fifo", "--predictor", "orcle"], ["unknown predictor 'orcle'", "oracle", "noisy"]),
    (["--policy", "fifo", "--failures", "trce"], ["unknown failure model 'trce'", "trace", "rate"]),
])
def test_a_typo_in_a_name_is_one_line_listing_the_known_names(args, words, tmp_path, capsys):
    out = tmp_path / "out"
    try:
        rc = main([*SIM, *args, "--out", str(out)])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    lines = [line for line in err.strip().splitlines() if line.strip()]
    assert rc == 2 and len(lines) == 1, err
    for word in words:
        assert word in lines[0], lines[0]
    assert not out.exists()


def test_a_typo_in_a_trace_format_generator_or_task(tmp_path, capsys):
    trace = _trace(tmp_path / "jobs.csv")
    assert main(["simulate", "--trace", str(trace), "--format", "phily", "--policy", "fifo", "--no-plots",
                 "--no-progress", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "unknown format 'phily'" in err and "philly-json" in err
    from features.traces.synthetic import check_generator_name
    from pipelines.train import TASKS

    with pytest.raises(ValueError, match=r"unknown generator 'gfz'; registered: .*gfs"):
        check_generator_name("gfz")
    with pytest.raises(ValueError, match=r"unknown task 'duraton'; known: demand, duration"):
        TASKS.lookup("duraton")


def test_a_bad_plugin_module_is_one_line_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["--plugin", "no_such_plugin_module", "policies"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "no_such_plugin_module" in err and "not found" in err
    assert main(["--plugin", "../evil", "policies"]) == 2  # a path is looked up as a file, not imported by name
    assert "plug-in '../evil': no such file or package folder" in capsys.readouterr().err
    assert main(["--plugin", "my-policies", "policies"]) == 2
    assert "not a module name" in capsys.readouterr().err


# -- an installed distribution, in simulate and on Dask workers --------------------------------------------
def test_an_installed_plugin_runs_in_simulate(tmp_path):
    site = _distribution(tmp_path)
    marks = tmp_path / "marks.txt"
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT)]), "DEMO_PLUGIN_MARKS": str(marks)}
    trace = _trace(tmp_path / "jobs.csv")
    out = tmp_path / "out"
    done = _cli(["simulate", "--trace", str(trace), "--format", "demo-csv", "--cluster", "demo",
                 "--policy", "demo-ljf:tag=cli", "sjf", "--placement", "scored:demo_spread=1,best_fit=1",
                 "--no-plots", "--no-progress", "--out", str(out)], tmp_path, env)
    assert done.returncode == 0, done.stderr
    summary = pd.read_csv(out / "summary.csv")
    assert any(str(p).startswith("demo-ljf") for p in summary["policy"]), summary["policy"].tolist()
    kinds = {w for w, _ in _marks(marks)}
    assert {"policy:cli", "format", "score"} <= kinds, kinds
    # the listings name the plug-ins
    listed = _cli(["policies"], tmp_path, env)
    assert listed.returncode == 0 and "demo-ljf" in listed.stdout
    formats = _cli(["data", "formats"], tmp_path, env)
    assert formats.returncode == 0 and "demo-csv" in formats.stdout and "Demo CSV" in formats.stdout
    helped = _cli(["simulate", "--help"], tmp_path, env)
    assert "demo_spread" in " ".join(helped.stdout.split()), helped.stdout


@pytest.mark.slow
def test_plugins_reach_dask_workers_in_experiment_run(tmp_path):
    site = _distribution(tmp_path)
    (tmp_path / "local_policies.py").write_text(LOCAL_MODULE)  # --plugin: found in the current directory
    marks = tmp_path / "marks.txt"
    env = {**ENV, "PYTHONPATH": os.pathsep.join([str(site), str(REPO_ROOT)]), "DEMO_PLUGIN_MARKS": str(marks)}
    trace = _trace(tmp_path / "jobs.csv")
    spec = tmp_path / "spec.yaml"
    spec.write_text(textwrap.dedent(f"""\
        name: plug
        workloads:
          - name: demo-trace
            trace: {trace}
            format: demo-csv
            cluster: demo
        policies: [demo-ljf, local-fifo]
        seeds: 1
        """))
    out = tmp_path / "run"
    done = _cli(["--plugin", "local_policies", "experiment", "run", str(spec), "--executor", "dask", "--workers", "1",
                 "--out", str(out), "--no-progress", "--no-track"], tmp_path, env, timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    results = pd.read_csv(out / "results.csv")
    assert (results["status"] == "ok").all(), results.to_dict("records")
    assert {"demo-ljf", "local-fifo"} <= {str(p).split(":")[0] for p in results["policy"]}, results["policy"]
    records = [json.loads(p.read_text()) for p in (out / "cells").glob("*.json")]
    worker_pids = {r["pid"] for r in records}
    assert worker_pids and os.getpid() not in worker_pids
    # the plug-in policy was built inside the worker process, not only in the driver
    assert any(w.startswith("policy:") and pid in worker_pids for w, pid in _marks(marks)), _marks(marks)
