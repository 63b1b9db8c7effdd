import numpy as np
import pytest

from sim.cluster import ClusterConfig, build_cluster, load_cluster
from sim.profiles import CostModel, ProfileCatalog
from sim.workload import build_workload
from tests.helpers import cluster, table


def test_unknown_org_and_too_big_jobs_rejected_at_build_time():
    t = table([(0, 10, 4), (1, 10, 16), (2, 10, 2)], org=["a", "a", "zz"])
    w = build_workload(t, cluster(gpus=8, partitions={"a": 1, "b": 2}))
    assert w.report["rejected"] == {"org names no partition of the cluster": 1,
                                    "needs more GPUs than its partition has": 1}
    assert w.job_id == ["j0"] and w.partition == [0]


def test_unknown_org_to_largest_partition():
    c = cluster(gpus=8, partitions={"a": 1, "b": 2})
    c.unknown_org = "largest"
    w = build_workload(table([(0, 10, 4)], org=["zz"]), c)
    assert w.partition == [1]


def test_builtin_clusters(shared_data):
    assert load_cluster("philly-pool").gpus == 864
    vc = load_cluster("philly-vc", shared_data)
    assert len(vc.partitions) == 11 and vc.partitioned
    assert load_cluster("venus", shared_data).partitions[0].capacities[0] == 8
    assert load_cluster("saturn", shared_data).gpus == 2080
    assert load_cluster("alibaba-spot-2026", shared_data).gpus == 10412


def test_cluster_config_validation():
    with pytest.raises(ValueError, match="exactly one"):
        ClusterConfig(name="x", nodes=2, partitions=[{"name": "a", "nodes": 1}])
    assert build_cluster(ClusterConfig(name="x", nodes=3, gpus_per_node=4)).gpus == 12


def test_catalog_costs_seeded_and_size_weighted(shared_data):
    cat = ProfileCatalog.build("lazer", shared_data)
    assert {p.name for p in cat.profiles} == {"ConvNeXt", "EfficientNet", "VGG19", "ViT", "SwinTransformer",
                                              "Conformer", "TNT"}
    rng = np.random.default_rng(0)
    work = rng.lognormal(8, 2, size=20000)
    a, b = cat.assign(work, seed=1), cat.assign(work, seed=1)
    assert (a == b).all()
    size = np.array([p.param_bytes for p in cat.profiles])[a]
    big = work > np.quantile(work, 0.8)
    small = work < np.quantile(work, 0.2)
    assert size[big].mean() > 1.3 * size[small].mean()
    uniform = cat.assign(work, seed=1, strength=0.0)
    assert abs(np.bincount(uniform) / len(work) - 1 / 7).max() < 0.02
    costs = CostModel(read_bandwidth_mb_s=100, write_bandwidth_mb_s=50, startup_s=10, optimizer_copies=2)
    assert costs.load_time(np.array([1e9]))[0] == pytest.approx(10 + 30)
    assert costs.save_time(np.array([1e9]))[0] == pytest.approx(60)


def test_measured_profiles_used_where_available(shared_data):
    cat = ProfileCatalog.build("lucid", shared_data)
    resnet = cat.by_name["ResNet50"]
    assert resnet.param_source.startswith("measured") and resnet.gpu_util > 90
    assert cat.by_name["BERT"].param_source.startswith("estimate")


@pytest.mark.parametrize("text, message", [
    ("name: x\nnodes: [1\n", r"bad\.yaml: YAML syntax error at line 3, column 1"),
    ("- a\n- b\n", r"bad\.yaml: expected a mapping of fields .* got a list"),
    ("name: !!python/object/apply:os.system ['echo hi']\nnodes: 2\n", r"bad\.yaml \(line 1\): YAML tags"),
    ("name: x\nnodes: 2\ngpus_per_node: two\n", r"bad\.yaml: field 'gpus_per_node': Input should be a valid integer"),
    ("name: x\nnodes: 0\n", r"bad\.yaml: field 'nodes': Input should be greater than or equal to 1"),
    ("name: x\nnodes: 2\ncolour: blue\n", r"bad\.yaml: field 'colour': Extra inputs are not permitted"),
    ("nodes: 2\n", r"bad\.yaml: field 'name': Field required"),
])
def test_bad_cluster_yaml_is_one_line_naming_file_and_field(tmp_path, text, message):
    from sim.cluster import load_cluster_config

    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        load_cluster_config(path)
    assert "\n" not in str(info.value)


def test_missing_cluster_yaml(tmp_path):
    from sim.cluster import load_cluster_config

    with pytest.raises(ValueError, match="not found"):
        load_cluster_config(tmp_path / "nope.yaml")


def test_cli_maps_bad_cluster_yaml_to_exit_2(tmp_path, capsys):
    from pipelines.cli import main

    path = tmp_path / "bad.yaml"
    path.write_text("- just\n- a list\n")
    code = main(["simulate", "--synthetic", "demo", "--jobs", "20", "--cluster", str(path), "--policy", "fifo",
                 "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "bad.yaml: expected a mapping" in err and "Traceback" not in err


def test_job_ids_stay_arrow_text_until_a_string_is_asked_for():
    import pickle

    from evaluation.metrics import job_table
    from sim import simulate
    from sim.workload import JobIds

    w = build_workload(table([(0, 10, 4), (1, 10, 2), (2, 5, 1)]), cluster(gpus=8))
    ids = w.job_id
    assert isinstance(ids, JobIds) and ids._strings is None and len(ids) == 3
    jobs = job_table(simulate(w, "fifo"))
    assert ids._strings is None  # the job table took the Arrow data itself
    assert str(jobs["job_id"].dtype) == "string" and jobs["job_id"].tolist() == ["j0", "j1", "j2"]
    assert ids == ["j0", "j1", "j2"] and ids[1] == "j1" and ids[-1:] == ["j2"] and list(ids) == ["j0", "j1", "j2"]
    assert ids.index("j2") == 2 and "j1" in ids and ids != ["j0"]
    again = pickle.loads(pickle.dumps(ids))
    assert isinstance(again, JobIds) and again._strings is None and again == ids
