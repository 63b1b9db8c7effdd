"""GFS loaders on hand-made fixtures (bad rows counted), the v2023 HP / spot reading, the generator, the CLI."""
import numpy as np
import pandas as pd
import pytest

from features.jobtable import TraceError
from features.traces import FORMATS, load_trace
from features.traces.gfs import GfsSpec, generate, generate_from_preset, load_gfs_spot, load_v2023_hp_spot

HEADER = "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type\n"


def test_gfs_spot_loader_counts_bad_rows(tmp_path):
    rows = [
        "j1,orgA,A100-SXM4-80GB,8,8,2,100,3600,HP",        # gang: 2 pods x 8 GPUs
        "j2,orgB,A100-SXM4-80GB,4,1,1,50,600,Spot",         # spot, 1 GPU
        "j3,orgB,A10,4,0.5,1,60,600,Spot",                  # fractional pod
        "j4,orgB,A10,4,1,1,70,600,Batch",                   # unknown job_type
        "j5,orgB,A10,4,two,1,80,600,HP",                    # gpu_request text
        "j6,orgB,A10,4,1,0,90,600,HP",                      # worker_num 0
        "j7,orgB,A10,4,1,1,95,-5,HP",                       # negative duration
        "j8,orgB,A10,4,1,1,96,600",                         # missing field
        "j9,orgB,A10,4,1.5,1,97,600,HP",                    # 1.5 GPUs per pod
        "j2,orgB,A100-SXM4-80GB,4,1,1,50,600,Spot",         # exact duplicate
        "j10,orgC,A10,4,1,1,99,600,",                       # missing job_type
    ]
    path = tmp_path / "job_info_df.csv"
    path.write_text(HEADER + "\n".join(rows) + "\n")
    t = load_gfs_spot(path)
    r = t.report
    assert r.rows_read == 11 and r.rows_kept == 3 and r.duplicates_found == 1
    assert r.rejected == {"wrong number of fields (expected 9)": 1, "unknown job_type (expected HP or Spot)": 1,
                          "gpu_request not a number": 1, "worker_num not a whole number >= 1": 1,
                          "missing or negative duration": 1, "gpu_request above 1 and not whole": 1,
                          "missing job_type": 1}
    f = t.frame.set_index("job_id")
    assert f.loc["j1", "num_gpus"] == 16 and f.loc["j1", "num_pods"] == 2 and f.loc["j1", "gpus_per_pod"] == 8
    assert f.loc["j1", "job_class"] == "hp" and np.isnan(f.loc["j1", "checkpoint_interval"])
    assert f.loc["j2", "job_class"] == "spot" and f.loc["j2", "checkpoint_interval"] == 3600.0
    assert f.loc["j3", "gpu_fraction"] == 0.5 and f.loc["j3", "num_gpus"] == 1
    assert f.loc["j2", "org"] == "orgB" and f.loc["j3", "gpu_type"] == "A10"
    assert f["submit_time"].min() == 0.0
    assert load_gfs_spot(path, checkpoint_interval=600).frame.set_index("job_id").loc["j2", "checkpoint_interval"] == 600


def test_gfs_spot_loader_whole_file_errors(tmp_path):
    path = tmp_path / "job_info_df.csv"
    path.write_text("job_name,organization\nj1,a\n")
    with pytest.raises(TraceError, match="missing column"):
        load_gfs_spot(path)
    path.write_text(HEADER + "j1,a,A10,4,1,1,0,60,Other\n")
    with pytest.raises(TraceError, match="no usable job"):
        load_gfs_spot(path)
    assert "gfs-spot" in FORMATS and "alibaba-v2023-spot" in FORMATS
    path.write_text(HEADER + "j1,a,A10,4,1,1,0,60,HP\n")
    assert len(load_trace(path, "gfs-spot")) == 1


def test_v2023_pods_as_hp_and_spot(tmp_path):
    path = tmp_path / "pods.csv"
    path.write_text("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
                    "deletion_time,scheduled_time\n"
                    "p0,1000,1,1,1000,,LS,Running,0,500,0\n"
                    "p1,1000,1,1,500,V100M16,BE,Running,10,400,20\n"
                    "p2,1000,1,0,0,,BE,Running,10,400,20\n"            # CPU-only: rejected
                    "p3,1000,1,1,300,,Odd,Running,10,400,20\n"         # unknown qos: rejected
                    "p4,1000,1,1,300,,Burstable,Pending,10,400,\n")    # never scheduled: rejected
    t = load_v2023_hp_spot(path)
    f = t.frame.set_index("job_id")
    assert t.report.rows_rejected == 3 and len(f) == 2
    assert f.loc["p0", "job_class"] == "hp" and np.isnan(f.loc["p0", "gpu_fraction"])
    assert f.loc["p1", "job_class"] == "spot" and f.loc["p1", "gpu_fraction"] == 0.5
    assert f.loc["p1", "checkpoint_interval"] == 3600.0 and np.isnan(f.loc["p0", "checkpoint_interval"])


def _series(tmp_path, minutes=600):
    t = pd.date_range("2020-05-01", periods=minutes, freq="1min")
    a = np.where(np.arange(minutes) < minutes // 2, 40, 80)  # org a doubles half way
    frame = pd.concat([pd.DataFrame({"vc": "a", "time": t, "running_gpu_num": a}),
                       pd.DataFrame({"vc": "b", "time": t, "running_gpu_num": 20})])
    path = tmp_path / "series.csv"
    frame.to_csv(path, index=False)
    return path


def test_generator_follows_the_series_and_is_seeded(tmp_path):
    path = _series(tmp_path)
    params = dict(series=str(path), days=4 / 24, warmup_hours=6, cluster_gpus=100, hp_peak_share=1.0,
                  spot_base_load=0.1, spot_multiplier=2, hp_mean_duration=36000.0, hp_sigma=0.0,
                  spot_mean_duration=1800.0)
    a = generate_from_preset(params, seed=1, jobs=None).frame
    b = generate_from_preset(params, seed=1, jobs=None).frame
    c = generate_from_preset(params, seed=2, jobs=None).frame
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    hp = a[a["job_class"] == "hp"]
    # Long HP tasks (10 h): running HP GPUs of org a step from 40 to 80 GPUs half way, b stays at 20.
    assert hp[hp["org"] == "b"]["num_gpus"].sum() == 20
    assert hp[hp["org"] == "a"]["num_gpus"].sum() == 80
    assert hp[(hp["org"] == "a") & (hp["submit_time"] >= 300 * 60 - 60)]["num_gpus"].sum() == 40
    spot = a[a["job_class"] == "spot"]
    assert len(spot) > 0 and spot["warmup"].sum() == 0 and (spot["checkpoint_interval"] == 3600).all()
    assert a[a["warmup"]]["job_class"].eq("hp").all()
    # x2 spot rate = twice the x1 count on average (same seed: the Poisson draw differs only by its rate).
    one = generate_from_preset({**params, "spot_multiplier": 1}, seed=1, jobs=None).frame
    assert 1.4 < (a["job_class"] == "spot").sum() / max(1, (one["job_class"] == "spot").sum()) < 2.8
    # jobs=N: the warm-up whole and the first N measured tasks (the first N overall would all be warm-up HP)
    quick = generate_from_preset(params, seed=1, jobs=7)
    warm = int(a["warmup"].sum())
    assert warm > 7 and len(quick.frame) == warm + 7 and (~quick.frame["warmup"]).sum() == 7
    assert a["warmup"].iloc[:warm].all()  # sorted by submission: the warm-up comes first
    pd.testing.assert_frame_equal(quick.frame, a.iloc[:warm + 7].reset_index(drop=True))
    assert any("warm-up whole" in n for n in quick.report.notes)
    quick.report.check_balance()
    with pytest.raises(ValueError):
        GfsSpec(hp_pod_mix={0: 1.0})


def test_cli_simulates_the_gfs_preset(shared_data, tmp_path, capsys):
    import json

    from pipelines.cli import main

    out = tmp_path / "out"
    code = main(["simulate", "--synthetic", "gfs-low", "--jobs", "300", "--policy", "gfs", "yarn-cs",
                 "--no-plots", "--no-track", "--out", str(out)])
    assert code == 0
    assert any(out.rglob("*.csv")) or any(out.rglob("*.parquet"))
    # meta.json and the terminal name the forecaster that drove GFS's quotas (OrgLinear, trained in the replay)
    meta = json.loads((out / "meta.json").read_text())
    fc = meta["forecasters"]
    assert list(fc) == ["gfs"] and fc["gfs"]["estimator"] == "orglinear"
    assert fc["gfs"]["model_fits"] > 0 and fc["gfs"]["model_forecasts"] > 0 and fc["gfs"]["model_version"] is None
    printed = capsys.readouterr().out
    assert "gfs: " in printed and "quotas from orglinear (trained in the replay:" in printed


def test_mlflow_params_name_the_forecaster():
    from pipelines.tracking import replay_params

    meta = {"forecasters": {"gfs": {"estimator": "models:/demand@champion", "model_version": "3", "model_fits": 0}}}
    params, tags, _ = replay_params("gfs", meta, "abc")
    assert params["forecaster"] == "models:/demand@champion" and params["forecaster.model_version"] == "3"
    assert tags["schedcast.forecaster"] == "models:/demand@champion/3"
    params, tags, _ = replay_params("yarn-cs", meta, "abc")
    assert "forecaster" not in params and "schedcast.forecaster" not in tags
