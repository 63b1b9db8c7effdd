"""New workload shapes, trace formats and replay extras plug in without CLI edits: a preset naming its
own ``generator:``, and `simulate --predict KIND=SPEC` parsing (wiring of pipelines/simulate.py)."""
import json
import shutil

import pytest

from features.paths import REPO_ROOT
from features.traces.synthetic import build_preset, load_preset
from pipelines.cli import main
from pipelines.simulate import build_source, predict_arg
from tests.helpers import table


def tiny_generator(params, seed, jobs):
    """A preset generator for the tests: ``jobs`` jobs of ``gpus`` GPUs, one every ``gap`` s."""
    n = jobs or params["jobs"]
    gpus = params["gpus"] * params.get("cluster_gpus", 16) // 16  # load sized for the cluster, as GFS's preset
    return table([(i * params["gap"], 100.0 + seed, gpus) for i in range(n)])


@pytest.fixture()
def configs(tmp_path, monkeypatch):
    from features.traces import synthetic

    monkeypatch.setitem(synthetic._REGISTERED, "tiny-test", tiny_generator)  # a generator is registered by code
    root = tmp_path / "configs"
    (root / "workloads").mkdir(parents=True)
    shutil.copytree(REPO_ROOT / "configs" / "clusters", root / "clusters")
    (root / "workloads" / "tiny.yaml").write_text(
        'name: tiny\ngenerator: tiny-test\ncluster: demo\n'
        "source: a test\njobs: 7\ngap: 10\ngpus: 2\n")
    (root / "workloads" / "sized.yaml").write_text(
        'name: sized\ngenerator: tiny-test\ncluster: demo\n'
        "jobs: 3\ngap: 10\ngpus: 2\ncluster_gpus: 16\n")
    (root / "workloads" / "broken.yaml").write_text('generator: nowhere\ncluster: demo\n')
    shutil.copy(REPO_ROOT / "configs" / "workloads" / "demo.yaml", root / "workloads" / "demo.yaml")
    monkeypatch.setenv("SCHEDCAST_CONFIGS", str(root))
    return root


def test_a_generator_preset_builds_its_table_and_names_its_cluster(configs):
    tab, cluster = build_preset("tiny", seed=3)
    assert cluster == "demo" and len(tab.frame) == 7
    assert tab.frame["duration"].tolist() == [103.0] * 7 and tab.frame.attrs["synthetic"]
    assert len(build_preset("tiny", jobs=3)[0].frame) == 3
    with pytest.raises(ValueError, match="use build_preset"):
        load_preset("tiny")
    # the Helios-like presets go through the same door
    tab, cluster = build_preset("demo", jobs=20)
    assert len(tab.frame) == 20 and cluster


def test_a_broken_generator_reference_is_one_line(configs):
    with pytest.raises(ValueError, match="unknown generator 'nowhere'"):
        build_preset("broken")


def test_build_source_is_what_simulate_replays(configs):
    tab, workload = build_source(synthetic="tiny", jobs=4, seed=1)
    assert len(workload) == 4 and workload.cluster.name


def test_a_preset_sized_for_its_cluster_is_sized_for_the_chosen_one(configs):
    cluster = (configs / "clusters" / "eight.yaml")
    cluster.write_text("name: eight\ndescription: 4 nodes x 8 GPUs\ngpus_per_node: 8\nnodes: 4\n")
    _, own = build_source(synthetic="sized")
    _, chosen = build_source(synthetic="sized", cluster=str(cluster))
    assert own.cluster.name == "demo" and chosen.cluster.name == "eight"
    assert set(own.frame["num_gpus"]) == {2} and set(chosen.frame["num_gpus"]) == {4}  # 32 GPUs: x2
    # presets without a cluster_gpus key are left as they are
    _, tiny = build_source(synthetic="tiny", cluster=str(cluster))
    assert set(tiny.frame["num_gpus"]) == {2}


def test_simulate_runs_a_generator_preset_and_records_extras(configs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["simulate", "--synthetic", "tiny", "--policy", "fifo", "--no-plots", "--no-progress",
                 "--out", str(out)]) == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["jobs"] == 7 and meta["failures"] == "none" and meta["predict"] == {}


def test_predict_flag_needs_kind_and_spec(capsys):
    assert predict_arg("iterations=models:/it@champion") == ("iterations", "models:/it@champion")
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--synthetic", "demo", "--predict", "iterations", "--out", "/tmp/never"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "KIND=SPEC" in err[0]
