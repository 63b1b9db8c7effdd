"""Loaders on hand-written fixtures (documented schemas) and on the real files in ../shared/data."""
import json

import pytest

from features.jobtable import REQUIRED_COLUMNS, TraceError
from features.traces import FORMATS, guess_format, load_trace


def write(path, text):
    path.write_text(text)
    return path


def test_philly_csv_fixture_counts_duplicates_and_rejects(tmp_path):
    p = write(tmp_path / "philly.csv", "timestamp,duration,num_gpus,gpu_time,cluster\n"
              "2017-10-09 07:01:55,66.0,1,66.0,a\n"
              "2017-10-09 06:13:03,2951.0,2,5902.0,b\n"
              "2017-10-09 06:13:03,2951.0,2,5902.0,b\n"     # exact duplicate
              "not-a-time,10,1,10,a\n"                        # bad timestamp
              "2017-10-09 08:00:00,-5,1,-5,a\n"               # negative duration
              "2017-10-09 09:00:00,5,0,0,a\n")                # no GPU
    t = load_trace(p, "philly")
    r = t.report
    assert (r.rows_read, r.rows_kept, r.duplicates_found) == (6, 2, 1)
    assert r.rejected == {"unparseable or missing timestamp": 1, "missing or negative duration": 1,
                          "no GPU requested (CPU-only job)": 1}
    f = t.frame
    assert list(f.columns[:5]) == list(REQUIRED_COLUMNS)
    assert f["submit_time"].tolist() == [0.0, 48 * 60 + 52.0]  # sorted, rebased
    assert f["org"].tolist() == ["b", "a"]


def test_missing_column_error_names_file_and_column(tmp_path):
    p = write(tmp_path / "philly.csv", "timestamp,duration,cluster\n2017-10-09 07:01:55,66.0,a\n")
    with pytest.raises(TraceError, match=r"philly\.csv: missing column\(s\) \['num_gpus'\]"):
        load_trace(p, "philly")


def test_philly_json_fixture(tmp_path):
    jobs = [
        {"status": "Pass", "vc": "vc1", "jobid": "a1", "user": "u1", "submitted_time": "2017-10-03 02:00:00",
         "attempts": [{"start_time": "2017-10-03 02:10:00", "end_time": "2017-10-03 02:20:00",
                       "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}]},
                      {"start_time": "2017-10-03 03:00:00", "end_time": "2017-10-03 03:05:00",
                       "detail": [{"ip": "m1", "gpus": ["gpu0", "gpu1"]}, {"ip": "m2", "gpus": ["gpu0", "gpu1"]}]}]},
        {"status": "Killed", "vc": "vc2", "jobid": "a2", "user": "u2", "submitted_time": "2017-10-03 01:00:00",
         "attempts": []},
        {"status": "Pass", "vc": "vc2", "jobid": "a1", "user": "u2", "submitted_time": "2017-10-03 01:00:00",
         "attempts": []},
    ]
    p = write(tmp_path / "cluster_job_log.json", json.dumps(jobs))
    t = load_trace(p)
    assert t.report.rejected == {"never ran (no attempt with start and end)": 1}
    assert t.report.duplicates_found == 1
    row = t.frame.iloc[0]
    assert (row["job_id"], row["duration"], row["num_gpus"], row["num_nodes"]) == ("a1", 900.0, 4, 2)


def test_philly_json_bad_attempt_names_row(tmp_path):
    jobs = [{"jobid": "x", "submitted_time": "2017-10-03 01:00:00",
             "attempts": [{"start_time": "2017-10-03 02:00:00", "end_time": "2017-10-03 01:00:00", "detail": []}]}]
    p = write(tmp_path / "log.json", json.dumps(jobs))
    with pytest.raises(TraceError, match="row 0, field 'attempts': attempt 0 ends before it starts"):
        load_trace(p)


def test_helios_fixture_rejects_cpu_jobs(tmp_path):
    p = write(tmp_path / "cluster_log.csv",
              "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
              "1,uA,vc1,train,8,16,1,COMPLETED,2020-04-01 00:00:41,2020-04-01 00:01:00,2020-04-01 01:01:00,3600,19\n"
              "2,uB,vc2,prep,0,4,1,COMPLETED,2020-04-01 00:02:00,2020-04-01 00:02:00,2020-04-01 00:03:00,60,0\n"
              "3,uA,vc1,train,16,32,2,FAILED,2020-04-01 00:05:41,2020-04-01 00:06:00,2020-04-01 00:07:00,60,19\n")
    t = load_trace(p)
    assert t.report.rejected == {"no GPU requested (CPU-only job)": 1}
    f = t.frame
    assert f["org"].tolist() == ["vc1", "vc1"] and f["submit_time"].tolist() == [0.0, 300.0]
    assert f["job_name"].tolist() == ["train", "train"] and f["num_nodes"].tolist() == [1, 2]
    assert str(f["submit_ts"].dt.tz) == "UTC"


def test_acme_fixture(tmp_path):
    p = write(tmp_path / "trace_seren.csv",
              "job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,start_time,end_time,duration,queue,gpu_time\n"
              "j1,u1,1,8,64,pretrain,COMPLETED,2023-03-01 00:00:00,2023-03-01 00:00:10,2023-03-01 01:00:10,3600,10,28800\n"
              "j2,u2,1,1,8,eval,FAILED,2023-03-01 00:01:00,2023-03-01 00:01:00,2023-03-01 00:02:00,60,0,60\n")
    t = load_trace(p)
    assert t.frame["workload_type"].tolist() == ["pretrain", "eval"]
    assert t.frame["status"].tolist() == ["COMPLETED", "FAILED"]


def test_pai_fixture_with_group_tag_and_tasks(tmp_path):
    jobs = write(tmp_path / "pai_job_table.csv", "jA,i1,u1,Terminated,100,400\njB,i2,u2,Failed,50,\njC,i3,u1,Terminated,200,260\n")
    tags = write(tmp_path / "pai_group_tag_table.csv", "i1,u1,V100,g1,bert\ni3,u1,T4,g1,bert\n")
    tasks = write(tmp_path / "pai_task_table.csv", "jA,worker,2,Terminated,100,400,600,29,100,V100\n"
                  "jC,worker,1,Terminated,200,260,600,29,50,T4\n")
    t = load_trace(jobs, "pai", group_tag=tags, task_table=tasks)
    assert t.report.rejected == {"missing end_time (job still running at trace end)": 1}
    f = t.frame
    assert f["job_id"].tolist() == ["jA", "jC"] and f["duration"].tolist() == [300.0, 60.0]
    assert f["num_gpus"].tolist() == [2, 1] and f["gpu_fraction"].tolist() == [2.0, 0.5]
    assert f["group_id"].tolist() == ["g1", "g1"] and f["workload"].tolist() == ["bert", "bert"]


def test_pai_without_gpu_counts_leaves_nulls(tmp_path):
    jobs = write(tmp_path / "pai_job_table.csv", "jA,i1,u1,Terminated,100,400\n")
    t = load_trace(jobs, "pai")
    assert t.frame["num_gpus"].isna().all()
    assert any("num_gpus is null" in n for n in t.report.notes)


def test_unknown_format_and_missing_file(tmp_path):
    with pytest.raises(TraceError, match="cannot guess"):
        guess_format(tmp_path / "x.csv")
    with pytest.raises(TraceError, match="file not found"):
        load_trace(tmp_path / "philly.csv", "philly")
    p = write(tmp_path / "philly.csv", "")
    with pytest.raises(TraceError, match="file is empty"):
        load_trace(p, "philly")


def test_real_philly_file(philly_file):
    t = load_trace(philly_file)
    r = t.report
    r.check_balance()
    assert r.rows_read == 74167
    assert r.duplicates_found == 57  # exact duplicate rows beyond the first copy
    assert r.rows_kept == 74110 and r.rows_rejected == 0
    f = t.frame
    assert f["submit_time"].is_monotonic_increasing and f["submit_time"].iloc[0] == 0
    assert f["num_gpus"].max() == 32 and f["org"].nunique() == 15


def test_real_alibaba_v2023(shared_data):
    t = load_trace(shared_data / "alibaba/gpu_v2023/openb_pod_list_default.csv")
    r = t.report
    assert r.rows_read == 8152 and r.rows_kept + r.rows_rejected == 8152
    assert set(t.frame["job_class"].unique()) == {"hp", "spot"}
    assert (t.frame["gpu_fraction"] <= 1).all()


def test_every_format_is_registered():
    assert set(FORMATS) == {"philly", "philly-json", "helios", "acme", "pai", "alibaba-v2023",  # built in
                            "gfs-spot", "alibaba-v2023-spot", "acme-failures"}  # plug-in modules
