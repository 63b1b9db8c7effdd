"""The CLI end to end, in-process (fast) and once as the installed console script."""
import os
import subprocess
import sys

import pandas as pd
import pytest

from pipelines.cli import main
from sim.policies import POLICIES


def test_policies_lists_every_registered_policy(capsys):
    assert main(["policies", "-v"]) == 0
    out = capsys.readouterr().out
    for name in POLICIES:
        assert name in out
    # typed parameters with defaults: one line each
    assert "thresholds  float | list[float] = 3600.0" in out and "interval  float = 60.0" in out
    assert main(["policies", "lazer"]) == 0
    out = capsys.readouterr().out
    assert "protect_loading" in out and "srtf " not in out
    assert main(["policies", "nope"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err


def test_demo_writes_results(tmp_path, capsys):
    assert main(["demo", "--jobs", "300", "--out", str(tmp_path / "demo")]) == 0
    tmp_path = tmp_path / "demo"
    out = capsys.readouterr().out
    assert "SYNTHETIC" in out and "tiresias" in out
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(summary) == 5 and (tmp_path / "jct_cdf.png").stat().st_size > 1000


EVERY_POLICY = sorted(POLICIES)
CHUNKS = 4  # every policy, in four CLI runs that pytest-xdist can spread over the cores
#: GFS's ablations run here with the persistence forecast: OrgLinear trained in the replay (the default,
#: kept for `gfs` itself) is ~26 s per policy on these 1,000 jobs and is what tests/test_gfs_* check; this
#: test checks that every registered policy completes a real trace through the CLI.
CHEAP_FORECAST = {"gfs-d", "gfs-p", "gfs-s", "gfs-sp"}


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_simulate_every_policy_on_real_philly(philly_file, tmp_path, capsys, chunk):
    """Every registered policy replays real Philly jobs through the CLI. 1,000 jobs, not 3,000: the run
    checks that each policy completes a real trace, not its figures (those have their own tests and the
    benchmarks), and the 3,000-job run took 197 s of the suite."""
    policies = EVERY_POLICY[chunk::CHUNKS]
    specs = [f"{p}:estimator=persistence" if p in CHEAP_FORECAST else p for p in policies]
    code = main(["simulate", "--trace", str(philly_file), "--cluster", "philly-pool", "--jobs", "1000",
                 "--policy", *specs, "--out", str(tmp_path), "--no-progress"])
    assert code == 0
    summary = pd.read_csv(tmp_path / "summary.csv")
    assert len(summary) == len(policies) and (summary["jobs"] == 1000).all()
    assert all(str(label).startswith(p) for label, p in zip(summary["policy"], policies))


def test_simulate_synthetic_preset_with_costs(shared_data, tmp_path, capsys):
    code = main(["simulate", "--synthetic", "earth", "--jobs", "1500", "--costs", "lazer", "--policy",
                 "srtf", "pollux-60", "--out", str(tmp_path), "--no-progress"])
    assert code == 0
    jobs = pd.read_parquet(tmp_path / "jobs_srtf.parquet")
    assert (jobs["load_s"] > 0).all() and jobs["model"].notna().all()


def test_data_check_and_clear_errors(philly_file, tmp_path, capsys):
    assert main(["data", "check", str(philly_file)]) == 0
    assert "duplicates: 57" in capsys.readouterr().out
    bad = tmp_path / "philly.csv"
    bad.write_text("timestamp,duration,num_gpus\n")
    assert main(["data", "check", str(bad)]) == 2
    assert "missing column(s) ['cluster']" in capsys.readouterr().err
    assert main(["simulate", "--synthetic", "demo", "--policy", "nope"]) == 2
    assert "unknown policy 'nope'" in capsys.readouterr().err
    assert main(["simulate", "--synthetic", "demo", "--policy", "tiresias:bogus=1"]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter 'bogus'" in err and "thresholds" in err and err.count("\n") == 1


def test_console_script_runs_fast(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "policies"], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0 and "srtf" in proc.stdout
    # Heavy ML libraries are never imported by a heuristic run.
    code = ("import sys; from pipelines.cli import main; main(['demo','--jobs','50','--out',%r]);"
            "print([m for m in ('torch','mlflow','botorch','gluonts','lightning') if m in sys.modules])") % str(tmp_path / "d")
    # a user's plain environment: no tracking store and no plug-ins (a module fixture of another test file
    # on the same xdist worker may have left MLFLOW_TRACKING_URI set, which turns tracking on by design)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MLFLOW_") and k != "SCHEDCAST_PLUGINS"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1] == "[]"
