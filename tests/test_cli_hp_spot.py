"""`schedcast simulate` on a workload with spot tasks prints and writes the HP / spot metrics (GFS's)."""
import pandas as pd

from pipelines.cli import main

HEADER = "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type\n"


def _fixture(tmp_path):
    # A 2-pod spot gang fills both nodes; an HP task arrives at 5,000 s and must evict it (YARN-CS).
    trace = tmp_path / "job_info_df.csv"
    trace.write_text(HEADER + "s1,orgB,A100-SXM4-80GB,4,8,2,0,20000,Spot\n"
                     "h1,orgA,A100-SXM4-80GB,8,8,1,5000,3600,HP\n"
                     "h2,orgA,A100-SXM4-80GB,8,4,1,6000,600,HP\n")
    cluster = tmp_path / "two.yaml"
    cluster.write_text("name: two-nodes\ndescription: two nodes of 8 A100s\ngpu_type: A100-SXM4-80GB\n"
                       "gpus_per_node: 8\nnodes: 2\n")
    return trace, cluster


def test_hp_spot_table_and_columns(tmp_path, capsys):
    trace, cluster = _fixture(tmp_path)
    out = tmp_path / "out"
    assert main(["simulate", "--trace", str(trace), "--format", "gfs-spot", "--cluster", str(cluster),
                 "--policy", "yarn-cs", "--no-plots", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "HP / spot tasks (all tasks;" in printed and "evict/run %" in printed
    row = pd.read_csv(out / "summary.csv").iloc[0]
    assert row["hp_jobs"] == 2 and row["spot_jobs"] == 1
    assert row["hp_jqt_mean_s"] == 0.0  # h1 evicts the spot gang, h2 fits beside h1
    assert row["evictions"] == 1 and row["evict_rate_runs"] == 0.5  # one eviction, two runs of s1
    # the spot gang ran 5,000 s with a checkpoint at 3,600 s: 1,400 s lost of 20,000 + 1,400 s run
    assert abs(row["evict_rate_hours"] - 1400 / 21400) < 1e-6
    jobs = pd.read_parquet(out / "jobs_yarn-cs.parquet").set_index("job_id")
    assert row["spot_jqt_mean_s"] == jobs.loc["s1", "wait_s"] > 0


def test_no_hp_spot_table_without_spot_tasks(tmp_path, capsys):
    assert main(["simulate", "--synthetic", "demo", "--jobs", "50", "--policy", "fifo", "--no-plots",
                 "--out", str(tmp_path / "o")]) == 0
    assert "HP / spot" not in capsys.readouterr().out
    assert "hp_jobs" not in pd.read_csv(tmp_path / "o" / "summary.csv").columns
