"""Corrupted and implausible trace inputs (issue 10 items 8-10, issue 9 items 5 and 13).

Every bad input either loads with the bad rows counted under a named reason (and a balanced report)
or stops with a one-line TraceError naming the file (the CLI prints it and exits 2). Fixtures are
written to tmp_path.
"""
import gzip
import json
import re

import pytest

from features.jobtable import MAX_DURATION_S, REASONS, TraceError
from features.traces import load_trace
from pipelines.cli import main

HELIOS_HEADER = "job_id,user,vc,jobname,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
PHILLY_HEADER = "timestamp,duration,num_gpus,gpu_time,cluster\n"
V2023_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"


def write(path, text):
    path.write_text(text)
    return path


def helios_row(job_id, gpus="8", submit="2020-04-01 00:00:41", duration="3600", node="1"):
    return (f"{job_id},uA,vc1,train,{gpus},16,{node},COMPLETED,{submit},2020-04-01 00:01:00,"
            f"2020-04-01 01:01:00,{duration},19\n")


def balanced(report, read, kept):
    report.check_balance()
    assert (report.rows_read, report.rows_kept) == (read, kept)
    return report.rejected


# --- item 8: PAI rows with an extra or missing field are rejected, never shifted --------------------------

def test_pai_row_with_extra_field_is_rejected_not_shifted(tmp_path):
    p = write(tmp_path / "pai_job_table.csv",
              "jA,i1,u1,Terminated,100,400\n"
              "jB,i2,EXTRA,u2,Terminated,100,400\n"   # 7 fields
              "jC,i3,u3,Terminated,200\n"             # 5 fields
              "jD,i4,u4,Failed,300,\n")                # 6 fields, empty end_time: still running
    t = load_trace(p, "pai", default_gpus=1)
    assert balanced(t.report, 4, 1) == {"wrong number of fields (expected 6)": 2,
                                        "missing end_time (job still running at trace end)": 1}
    assert t.frame["job_id"].tolist() == ["jA"] and t.frame["user"].tolist() == ["u1"]


def test_pai_extra_field_on_first_row_does_not_shift_every_row(tmp_path):
    # pandas used the extra leading field as an index: job_id became inst_id, user became status.
    p = write(tmp_path / "pai_job_table.csv", "jA,i1,u1,x,Terminated,100,400\njB,i2,u2,Terminated,50,80\n")
    t = load_trace(p, "pai", default_gpus=1)
    assert t.frame["job_id"].tolist() == ["jB"] and t.frame["user"].tolist() == ["u2"]
    assert t.frame["status"].tolist() == ["Terminated"]
    assert t.report.rejected == {"wrong number of fields (expected 6)": 1}


def test_header_csv_first_row_with_extra_field_is_rejected(tmp_path):
    p = write(tmp_path / "cluster_log.csv", HELIOS_HEADER + helios_row("1").rstrip("\n") + ",surplus\n"
              + helios_row("2"))
    t = load_trace(p)
    assert balanced(t.report, 2, 1) == {"wrong number of fields (expected 13)": 1}
    assert t.frame["job_id"].tolist() == ["2"] and t.frame["org"].tolist() == ["vc1"]


def test_pai_text_times_are_invalid_not_still_running(tmp_path):
    p = write(tmp_path / "pai_job_table.csv", "jA,i1,u1,Terminated,100,abc\njB,i2,u2,Terminated,xyz,400\n"
              "jC,i3,u3,Terminated,100,400\n")
    t = load_trace(p, "pai", default_gpus=2)
    assert balanced(t.report, 3, 1) == {"end_time not a number": 1, "start_time not a number": 1}


# --- item 9: one-line errors instead of tracebacks -------------------------------------------------------

PHILLY_OK = PHILLY_HEADER + "2017-10-09 07:01:55,66.0,1,66.0,a\n" * 3 + "2017-10-09 08:01:55,60.0,2,120.0,b\n"


def _gz(text):
    # mtime=0: the same bytes in every process, so pytest-xdist workers collect the same test ids
    return gzip.compress(text.encode(), mtime=0)


@pytest.mark.parametrize("name,content,message", [
    ("philly.csv.gz", _gz(PHILLY_OK * 50)[:-40], "truncated gzip file"),
    ("philly.csv.gz", PHILLY_OK.encode(), "named .gz but is not gzip-compressed"),
    ("philly.csv.gz", (lambda b: b[:30] + bytes(x ^ 0xFF for x in b[30:60]) + b[60:])(_gz(PHILLY_OK * 50)),
     "corrupt gzip file"),
    ("philly.csv", PHILLY_OK.encode().replace(b"cluster", b"clust\xe9r"), "not UTF-8 text: byte 0xe9 at line 1"),
    ("philly.csv", b"", "file is empty"),
    ("philly.csv.gz", b"", "file is empty"),
])
def test_broken_containers_are_one_line_errors(tmp_path, name, content, message):
    p = tmp_path / name
    p.write_bytes(content)
    with pytest.raises(TraceError, match=message) as err:
        load_trace(p)
    assert str(p) in str(err.value) and "\n" not in str(err.value)


def test_directory_and_missing_file(tmp_path):
    with pytest.raises(TraceError, match="is a directory"):
        load_trace(tmp_path)
    with pytest.raises(TraceError, match="file not found"):  # was "cannot guess the trace format"
        load_trace(tmp_path / "whatever.csv")


def test_gzip_trace_loads_by_content(tmp_path):
    p = tmp_path / "philly_jobs.csv.gz"
    p.write_bytes(_gz(PHILLY_OK))
    t = load_trace(p)
    assert (len(t), t.report.duplicates_found) == (2, 2)


def test_timezone_aware_value_among_naive_ones(tmp_path):
    p = write(tmp_path / "cluster_log.csv", HELIOS_HEADER + helios_row("1", submit="2020-04-01 08:00:00")
              + helios_row("2", submit="2020-04-01 01:00:00+00:00") + helios_row("3", submit="2020-04-01 09:00:00"))
    t = load_trace(p)
    assert balanced(t.report, 3, 3) == {}
    # Asia/Shanghai is UTC+8: 08:00 local == 00:00 UTC; the aware value is 01:00 UTC.
    assert t.frame["submit_ts"].dt.strftime("%H:%M").tolist() == ["00:00", "01:00", "01:00"]
    assert t.frame["submit_time"].tolist() == [0.0, 3600.0, 3600.0]
    assert any("carried their own UTC offset" in n for n in t.report.notes)


def philly_job(jobid, submitted, attempts=None, **extra):
    job = {"status": "Pass", "vc": "vc1", "jobid": jobid, "user": "u1", "submitted_time": submitted,
           "attempts": attempts if attempts is not None else
           [{"start_time": submitted, "end_time": "2017-12-01 00:00:00", "detail": [{"ip": "m1", "gpus": ["g0"]}]}]}
    job.update(extra)
    return job


def test_philly_json_dst_times_resolve_and_are_counted(tmp_path):
    # 2017-11-05 01:30 happens twice in US/Pacific (PDT then PST); 2018-03-11 02:30 never happens.
    jobs = [philly_job("a", "2017-11-05 00:30:00"),
            philly_job("b", "2017-11-05 01:30:00"),
            philly_job("c", "2018-03-11 02:30:00", attempts=[
                {"start_time": "2018-03-11 03:00:00", "end_time": "2018-03-11 04:00:00",
                 "detail": [{"ip": "m1", "gpus": ["g0"]}]}]),
            # an attempt across the repeated hour: its end is the second 01:10 (PST), 20 minutes later
            philly_job("d", "2017-11-05 01:40:00", attempts=[
                {"start_time": "2017-11-05 01:50:00", "end_time": "2017-11-05 01:10:00",
                 "detail": [{"ip": "m1", "gpus": ["g0", "g1"]}]}])]
    p = write(tmp_path / "cluster_job_log.json", json.dumps(jobs))
    t = load_trace(p)
    assert balanced(t.report, 4, 4) == {}
    f = t.frame.set_index("job_id")
    utc = f["submit_ts"].dt.strftime("%m-%d %H:%M")
    assert utc["a"] == "11-05 07:30" and utc["b"] == "11-05 08:30"  # first occurrence (PDT, UTC-7)
    assert utc["c"] == "03-11 10:00"  # moved forward to 03:00 PDT
    assert f.loc["d", "duration"] == 20 * 60  # 01:50 PDT -> 01:10 PST
    notes = " ".join(t.report.notes)
    assert "repeated hour" in notes and "skipped hour" in notes and "second occurrence" in notes


@pytest.mark.parametrize("job,field", [
    (philly_job(["x"], "2017-10-03 01:00:00"), "jobid"),
    (philly_job("x", 1507000000), "submitted_time"),
    (philly_job("x", "2017-10-03 01:00:00", attempts="none"), "attempts"),
    (philly_job("x", "2017-10-03 01:00:00", attempts=[5]), "attempts[0]"),
    (philly_job("x", "2017-10-03 01:00:00", attempts=[{"start_time": 1, "end_time": None}]),
     "attempts[0].start_time"),
    (philly_job("x", "2017-10-03 01:00:00", attempts=[{"start_time": None, "end_time": None, "detail": "m1"}]),
     "attempts[0].detail"),
    (philly_job("x", "2017-10-03 01:00:00", attempts=[{"detail": [{"gpus": 4}]}]), "attempts[0].detail[0].gpus"),
    (philly_job("x", "2017-10-03 01:00:00", user=7), "user"),
])
def test_philly_json_wrong_types_name_row_and_field(tmp_path, job, field):
    p = write(tmp_path / "log.json", json.dumps([philly_job("ok", "2017-10-03 00:00:00"), job]))
    with pytest.raises(TraceError, match=re.escape(f"row 1, field '{field}': expected")):
        load_trace(p)


def test_philly_json_not_utf8_names_the_file(tmp_path):
    p = tmp_path / "log.json"
    p.write_bytes(json.dumps([philly_job("\u00e9", "2017-10-03 00:00:00")]).replace("\\u00e9", "\u00e9")
                  .encode("latin-1"))
    with pytest.raises(TraceError, match=r"log\.json: not UTF-8 text"):
        load_trace(p)


# --- consistency between formats -------------------------------------------------------------------------

@pytest.mark.parametrize("name,fmt,text", [
    ("pai_job_table.csv", "pai", ""),
    ("philly.csv", "philly", ""),
    ("cluster_log.csv", "helios", ""),
    ("openb_pod_list.csv", "alibaba-v2023", ""),
    ("log.json", "philly-json", "[]"),
    ("philly.csv", "philly", PHILLY_HEADER),
    ("cluster_log.csv", "helios", HELIOS_HEADER),
    ("openb_pod_list.csv", "alibaba-v2023", V2023_HEADER),
])
def test_an_empty_trace_is_an_error_in_every_format(tmp_path, name, fmt, text):
    p = write(tmp_path / name, text)
    with pytest.raises(TraceError, match="file is empty|no job rows"):
        load_trace(p, fmt)


def test_a_trace_with_every_row_rejected_is_an_error_that_lists_reasons(tmp_path):
    p = write(tmp_path / "philly.csv", PHILLY_HEADER + "2017-10-09 07:01:55,66.0,0,0,a\n")
    with pytest.raises(TraceError, match=r"no usable job: all 1 row\(s\) rejected .*CPU-only job\): 1"):
        load_trace(p)


def test_alibaba_v2023_drops_and_counts_repeated_names(tmp_path):
    row = "openb-pod-0001,6000,0,1,1000,,LS,Running,{c},12902960,{c}\n"
    p = write(tmp_path / "openb_pod_list_default.csv", V2023_HEADER + row.format(c=10) + row.format(c=20)
              + "openb-pod-0002,6000,0,2,1000,,BE,Running,30,100,40\n")
    t = load_trace(p)
    r = t.report
    assert (r.duplicates_found, r.rows_kept) == (1, 2) and r.duplicates_action.startswith("dropped")
    r.check_balance()
    assert t.frame["submit_time"].tolist() == [0.0, 20.0]


GPU_CASES = {"": "missing GPU count", "NaN": "missing GPU count", "two": "GPU count not a number",
             "0.5": "fractional GPU count", "-4": "negative GPU count", "0": "no GPU requested (CPU-only job)",
             "1e20": "implausible GPU count (> 100000)", "inf": "implausible GPU count (> 100000)"}


def test_bad_gpu_counts_have_their_own_reasons_in_every_format(tmp_path):
    helios = write(tmp_path / "cluster_log.csv", HELIOS_HEADER + "".join(
        helios_row(str(i), gpus=g) for i, g in enumerate(list(GPU_CASES) + ["4"])))
    philly = write(tmp_path / "philly.csv", PHILLY_HEADER + "".join(
        f"2017-10-09 07:01:55,66.0,{g},{i},a\n" for i, g in enumerate(list(GPU_CASES) + ["4"])))
    v2023 = write(tmp_path / "openb_pod_list.csv", V2023_HEADER + "".join(
        f"p{i},6000,0,{g},1000,,LS,Running,10,100,20\n" for i, g in enumerate(list(GPU_CASES) + ["4"])))
    expected = {}
    for reason in GPU_CASES.values():
        expected[reason] = expected.get(reason, 0) + 1
    for path in (helios, philly, v2023):
        t = load_trace(path)
        assert balanced(t.report, len(GPU_CASES) + 1, 1) == expected, path.name
        assert t.frame["num_gpus"].tolist() == [4]


def test_negative_gpu_count_from_pai_task_table_is_not_cpu_only(tmp_path):
    jobs = write(tmp_path / "pai_job_table.csv", "jA,i1,u1,Terminated,100,400\njB,i2,u2,Terminated,100,400\n")
    tasks = write(tmp_path / "pai_task_table.csv", "jA,worker,1,Terminated,100,400,600,29,-400,V100\n"
                  "jB,worker,1,Terminated,100,400,600,29,100,V100\n")
    t = load_trace(jobs, "pai", task_table=tasks)
    assert balanced(t.report, 2, 1) == {"negative GPU count": 1}


# --- item 10: implausible values are rejected outside documented bounds ----------------------------------

def test_implausible_durations_and_times_are_rejected_by_reason(tmp_path):
    helios = write(tmp_path / "cluster_log.csv", HELIOS_HEADER
                   + helios_row("ok")
                   + helios_row("huge", duration="1e300")
                   + helios_row("inf", duration="inf")
                   + helios_row("year", duration=str(MAX_DURATION_S + 1))
                   + helios_row("text", duration="long")
                   + helios_row("neg", duration="-1")
                   + helios_row("old", submit="1970-01-01 00:00:00")
                   + helios_row("far", submit="9999-12-31 23:59:59")
                   + helios_row("future", submit="2150-01-01 00:00:00"))
    t = load_trace(helios)
    assert balanced(t.report, 9, 1) == {REASONS["duration_huge"]: 3, REASONS["duration_text"]: 1,
                                        REASONS["duration_missing"]: 1, REASONS["submit_range"]: 3}


def test_pai_clock_bounds(tmp_path):
    p = write(tmp_path / "pai_job_table.csv", "jA,i1,u1,Terminated,100,400\n"
              "jB,i2,u2,Terminated,-1e12,400\n"              # start before the clock's origin
              "jC,i3,u3,Terminated,100,253402300799\n"       # ends in year 9999 (Unix seconds)
              "jD,i4,u4,Terminated,1e300,1e300\n")
    t = load_trace(p, "pai", default_gpus=1)
    assert balanced(t.report, 4, 1) == {REASONS["clock_range"]: 2, REASONS["duration_huge"]: 1}


def test_philly_json_end_in_year_9999_is_out_of_bounds(tmp_path):
    jobs = [philly_job("a", "2017-10-03 00:00:00"),
            philly_job("b", "2017-10-03 00:00:00", attempts=[
                {"start_time": "2017-10-03 00:00:00", "end_time": "9999-01-01 00:00:00",
                 "detail": [{"ip": "m1", "gpus": ["g0"]}]}])]
    t = load_trace(write(tmp_path / "log.json", json.dumps(jobs)))
    assert balanced(t.report, 2, 1) == {"attempt time outside 2000-01-01..2100-01-01": 1}


# --- issue 9 item 13: Lucid's cluster_full_log.csv has no node_num -----------------------------------------

def test_lucid_full_log_without_node_num_derives_nodes(tmp_path):
    p = write(tmp_path / "cluster_full_log.csv",
              "job_id,user,vc,jobname,gpu_num,cpu_num,state,submit_time,duration,dataset,model,batchsize,amp,"
              "speed,gpu_util,gmem_util,gmem\n"
              "1,uA,vc1,train,1,6,COMPLETED,2020-09-01 00:00:10,100,ImageNet,ResNet-50,64,0,1.2,90,40,9000\n"
              "2,uB,vc2,train,8,48,COMPLETED,2020-09-01 00:01:10,200,CIFAR-10,VGG16,128,1,3.4,70,30,5000\n"
              "3,uB,vc2,train,12,48,FAILED,2020-09-01 00:02:10,300,CIFAR-10,VGG16,128,1,3.4,70,30,5000\n"
              "4,uC,vc2,prep,0,4,COMPLETED,2020-09-01 00:03:10,30,,,,,,,,\n")
    t = load_trace(p)
    assert balanced(t.report, 4, 3) == {"no GPU requested (CPU-only job)": 1}
    f = t.frame
    assert f["num_nodes"].tolist() == [1, 1, 2] and f["num_gpus"].tolist() == [1, 8, 12]
    assert f["model"].tolist() == ["ResNet-50", "VGG16", "VGG16"] and f["speed"].tolist() == [1.2, 3.4, 3.4]
    assert any("ceil(gpu_num / 8)" in n for n in t.report.notes)


# --- the CLI: exit 2 with one line on stderr --------------------------------------------------------------

def test_data_check_exits_2_with_one_line(tmp_path, capsys):
    cases = {
        "trunc.csv.gz": _gz(PHILLY_OK * 50)[:-40],
        "plain_philly.csv.gz": PHILLY_OK.encode(),
        "log.json": b"[" + json.dumps(philly_job("x", "2017-10-03 01:00:00", attempts="none")).encode() + b"]",
        "empty_pai_job_table.csv": b"",
    }
    for name, content in cases.items():
        p = tmp_path / name
        p.write_bytes(content)
        fmt = ["--format", "philly"] if "philly" in name or "trunc" in name else []
        assert main(["data", "check", str(p), *fmt]) == 2, name
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(p) in err and "please report" not in err, err
    assert main(["data", "check", str(tmp_path / "missing.csv")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_compressed_json_is_guessed_and_read(tmp_path):
    p = tmp_path / "cluster_job_log.json.gz"
    p.write_bytes(_gz(json.dumps([philly_job("a", "2017-10-03 00:00:00"), philly_job(7, "2017-10-03 00:00:00"),
                                  philly_job("7", "2017-10-03 00:00:00")])))
    t = load_trace(p)
    assert t.report.format == "philly-json" and t.frame["job_id"].tolist() == ["a", "7"]
    assert t.report.duplicates_found == 1  # 7 and "7" are the same job id


def test_a_last_line_without_line_break_is_noted(tmp_path):
    p = tmp_path / "philly.csv"
    p.write_bytes(PHILLY_OK.encode()[:-3])  # the last row loses its cluster field
    t = load_trace(p)
    assert any("no line break" in n for n in t.report.notes)
