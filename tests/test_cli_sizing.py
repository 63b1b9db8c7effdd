"""Offered load: printed for every run, and --offered-load sizes the cluster so that examples contend."""
import json

import numpy as np
import pandas as pd
import pytest

from pipelines.cli import main
from sim.cluster import Cluster, Partition
from sim.sizing import offered_load, sized_for_load


def frame(n=1000, gpus=4, duration=3600.0, gap=60.0, orgs=None):
    return pd.DataFrame({"submit_time": np.arange(n) * gap, "duration": np.full(n, duration),
                         "num_gpus": np.full(n, gpus), "org": orgs if orgs is not None else ["a"] * n})


def test_offered_load_is_work_over_span_and_gpus():
    f = frame()  # 4 GPUs x 3600 s every 60 s = 240 GPUs busy on average
    assert offered_load(f, 240) == pytest.approx(1000 / 999)
    assert offered_load(f, 480) == pytest.approx(0.5 * 1000 / 999)


def test_sized_pool_reaches_the_target_and_fits_the_largest_job():
    pool = Cluster("pool", [Partition("default", [8] * 200, ["V100"] * 200)], "V100")
    sized = sized_for_load(frame(), pool, 0.8)
    assert offered_load(frame(), sized.gpus) == pytest.approx(0.8, rel=0.03)
    assert sized.name == "pool@load0.8" and len(sized.partitions) == 1
    tiny = sized_for_load(frame(n=10, gpus=64, duration=1.0), pool, 0.9)
    assert tiny.partitions[0].gpus >= 64  # never smaller than the largest job


def test_partitions_are_sized_by_their_own_jobs():
    vcs = Cluster("vcs", [Partition("a", [8] * 10, ["V100"] * 10), Partition("b", [8] * 10, ["V100"] * 10)])
    orgs = ["a"] * 750 + ["b"] * 250
    sized = sized_for_load(frame(orgs=orgs), vcs, 1.0)
    a, b = (p.gpus for p in sized.partitions)
    assert a == pytest.approx(3 * b, rel=0.1)
    assert [p.name for p in sized.partitions] == ["a", "b"]


def test_bad_target():
    with pytest.raises(ValueError):
        sized_for_load(frame(), Cluster("p", [Partition("default", [8], ["x"])]), 0.0)


def test_cli_prints_offered_load_and_resizes(tmp_path, capsys, shared_data):
    out = tmp_path / "o"
    code = main(["simulate", "--synthetic", "saturn", "--jobs", "3000", "--policy", "sjf", "srtf",
                 "--offered-load", "0.9", "--out", str(out), "--no-progress", "--no-plots"])
    text = capsys.readouterr().out
    assert code == 0
    assert "resized from 260 nodes for offered load 0.9" in text and "offered load 0.9" in text
    summary = pd.read_csv(out / "summary.csv")
    assert (summary["wait_mean_s"] > 60).all()  # contention: jobs queue
    meta = json.loads((out / "meta.json").read_text())
    assert meta["offered_load"] == pytest.approx(0.9, rel=0.05)
    assert meta["workload"]["sizing"]["nodes_before"] == 260


def test_idle_preset_gets_a_hint(tmp_path, capsys, shared_data):
    code = main(["simulate", "--synthetic", "saturn", "--jobs", "1000", "--policy", "fifo",
                 "--out", str(tmp_path / "o"), "--no-progress", "--no-plots"])
    text = capsys.readouterr().out
    assert code == 0 and "--offered-load 0.9" in text
    line = next(ln for ln in text.splitlines() if ln.startswith("workload:"))
    assert float(line.rsplit("offered load ", 1)[1]) < 0.2
