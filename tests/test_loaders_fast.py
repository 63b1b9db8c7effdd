"""The fast CSV path (pyarrow text, vectorised numbers) gives the JobTable the pandas reader gives.

Each case loads the same file twice: as shipped (plain files go through pyarrow) and with the fast
reader switched off (every file through pandas' parser, the path all loaders took before), and compares
the frames field by field, dtypes included, and the load reports.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pandas as pd
import pytest

import features.traces._io as trace_io
from features.jobtable import as_number, to_numeric
from features.traces import load_trace


_REAL_READ_ARROW = trace_io._read_arrow


def _both(monkeypatch, path: Path, fmt: str, **options):
    calls = []
    real = _REAL_READ_ARROW

    def spy(data, width):
        frame = real(data, width)
        calls.append(frame is not None)
        return frame

    monkeypatch.setattr(trace_io, "_read_arrow", spy)
    fast = load_trace(path, fmt, cache=False, **options)
    monkeypatch.setattr(trace_io, "_read_arrow", lambda data, width: None)
    slow = load_trace(path, fmt, cache=False, **options)
    return fast, slow, calls


def _same(fast, slow) -> None:
    assert list(fast.frame.columns) == list(slow.frame.columns)
    assert list(fast.frame.dtypes) == list(slow.frame.dtypes)
    pd.testing.assert_frame_equal(fast.frame, slow.frame, check_exact=True)
    assert fast.report.as_dict() == slow.report.as_dict()


def test_real_philly_trace_fast_equals_pandas_reader(monkeypatch, philly_file, tmp_path):
    """The whole real Philly trace (CRLF, exact duplicate rows, unsorted) and a 5,000-row slice of it."""
    fast, slow, calls = _both(monkeypatch, philly_file, "philly")
    assert calls == [True]  # the fast reader did read it
    _same(fast, slow)
    assert fast.report.duplicates_found > 0 and len(fast.frame) > 70_000
    lines = gzip.decompress(philly_file.read_bytes()).splitlines(keepends=True)
    part = tmp_path / "philly_slice.csv"
    part.write_bytes(b"".join(lines[:5001]))
    fast, slow, calls = _both(monkeypatch, part, "philly")
    assert calls == [True]
    _same(fast, slow)


HELIOS_HEAD = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,duration\n"


@pytest.mark.parametrize("rows", [
    # plain rows: integers and decimals
    ["a,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:00,60",
     "b,u2,vc2,8,16,1,FAILED,2020-05-01 10:00:05,3600.5",
     "c,u1,vc1,16,4,2,COMPLETED,2020-05-01 09:00:00,0.25"],
    # what pyarrow parses but pandas does not (hex, spaces), or parses otherwise (-0.0, 16+ characters)
    ["a,u1,vc1,0x10,4,1,COMPLETED,2020-05-01 10:00:00,60",
     "b,u2,vc2, 8,4,1,COMPLETED,2020-05-01 10:00:01,1e3",
     "c,u2,vc2,2,4,1,COMPLETED,2020-05-01 10:00:02,-0.0",
     "d,u2,vc2,2,4,1,COMPLETED,2020-05-01 10:00:03,1234567.890123456789",
     "e,u2,vc2,2,4,1,COMPLETED,2020-05-01 10:00:04,12345678901234567890",
     "f,u2,vc2,2,4,1,COMPLETED,2020-05-01 10:00:05,inf",
     "g,u2,vc2,2,4,1,COMPLETED,2020-05-01 10:00:06,+7"],
    # missing values, text, zero / fractional GPUs, repeated ids, exact duplicates, a null id
    ["a,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:00,60",
     "a,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:00,60",
     "a,u9,vc1,2,4,1,COMPLETED,2020-05-01 10:00:01,61",
     ",u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:02,62",
     "b,NA,vc1,two,4,,COMPLETED,2020-05-01 10:00:03,63",
     "c,u1,null,0,4,1,,2020-05-01 10:00:04,",
     "d,u1,vc1,1.5,x,1,COMPLETED,not a time,64",
     "e,u1,vc1,4,4,0,COMPLETED,2020-05-01 10:00:05,65",
     "f,u1,vc1,4,4,1,COMPLETED,2020-05-01T10:00:06+08:00,66"],
])
def test_helios_fast_equals_pandas_reader(monkeypatch, tmp_path, rows):
    path = tmp_path / "cluster_log.csv"
    path.write_text(HELIOS_HEAD + "\n".join(rows) + "\n")
    fast, slow, calls = _both(monkeypatch, path, "helios")
    assert calls == [True]
    _same(fast, slow)


def test_lucid_format_fast_equals_pandas_reader(monkeypatch, tmp_path):
    """Lucid's cluster_full_log.csv: no node_num, profile columns kept (dataset as text, the others as
    numbers), a queue column."""
    path = tmp_path / "cluster_full_log.csv"
    path.write_text("job_id,user,vc,jobname,gpu_num,cpu_num,state,submit_time,duration,dataset,model,batchsize,"
                    "amp,speed,gpu_util,gmem_util,gmem,queue\n"
                    "1,u1,vcA,train,1,4,COMPLETED,2020-05-01 10:00:00,60,imagenet,resnet50,64,0,1.5,0.9,0.5,8000,3\n"
                    "2,u2,vcB,,2,8,COMPLETED,2020-05-01 10:00:01,61,,bert,,1,2.25,,0.4,NA,\n"
                    "3,u2,vcB,ft,4,8,COMPLETED,2020-05-01 10:00:02,62,cifar,vgg16,32,x,3,1,0.3,100,7\n")
    fast, slow, calls = _both(monkeypatch, path, "helios")
    assert calls == [True]
    _same(fast, slow)
    assert fast.frame["dataset"].dtype == object


def test_acme_fast_equals_pandas_reader(monkeypatch, tmp_path):
    path = tmp_path / "trace_seren.csv"
    path.write_text("job_id,user,node_num,gpu_num,cpu_num,type,state,submit_time,duration\n"
                    "j1,u1,1,8,64,pretrain,COMPLETED,2023-03-01 00:00:00,100\n"
                    "j2,u2,2,16,64,,FAILED,2023-03-01 00:00:10,200.5\n"
                    "j1,u3,1,8,64,eval,COMPLETED,2023-03-01 00:00:20,300\n")
    fast, slow, calls = _both(monkeypatch, path, "acme")
    assert calls == [True]
    _same(fast, slow)
    assert list(fast.frame["workload_type"].astype(object).where(fast.frame["workload_type"].notna(), None)) == \
        ["pretrain", None]


@pytest.mark.parametrize("text", [
    HELIOS_HEAD + 'a,u1,vc1,1,4,1,COMPLETED,"2020-05-01 10:00:00",60\n',  # quotes: pandas' rules
    HELIOS_HEAD + "a,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:00,60\n\nb,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:01,1\n",
    HELIOS_HEAD + "a,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:00,60,extra\nb,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:01,1\n",
    HELIOS_HEAD + "a,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:00,60\n   \nb,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:01,1",
    HELIOS_HEAD + "a,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:00,60\rb,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:01,1\n",
])
def test_files_the_fast_reader_leaves_to_pandas_load_as_before(monkeypatch, tmp_path, text):
    """Quotes, blank lines, rows of another width, a lone CR: read by pandas (or refused by pyarrow and
    then read by pandas), with the same table and report either way."""
    path = tmp_path / "cluster_log.csv"
    path.write_bytes(text.encode())
    fast, slow, calls = _both(monkeypatch, path, "helios")
    assert calls in ([], [False])
    _same(fast, slow)


def test_na_values_are_pandas_defaults():
    from pandas._libs.parsers import STR_NA_VALUES

    assert sorted(trace_io.NA_VALUES) == sorted(STR_NA_VALUES)


def test_vectorised_numbers_equal_pandas_parse():
    """to_numeric / as_number on pyarrow text give pandas' values and dtypes, text mask included."""
    cases = [["1", "2", None], ["1", "2", "3"], ["0.1", "-2.5", None, "1234567.12345"], ["0x10", "1"],
             [" 5", "6"], ["-0.0", "1.5"], ["-0", "3"], ["1e3", "2"], ["99999999999999999999", "1"], ["a", "1.5"],
             [None, None]]
    for values in cases:
        obj = pd.Series(values, dtype=object).where(pd.Series(values).notna(), float("nan"))
        arrow = pd.Series(values, dtype=pd.StringDtype("pyarrow"))
        expected = pd.to_numeric(obj, errors="coerce")
        got = to_numeric(arrow)
        assert got.dtype == expected.dtype, values
        pd.testing.assert_series_equal(got, expected, check_names=False, check_exact=True)
        num_a, text_a = as_number(arrow)
        num_o, text_o = as_number(obj)
        pd.testing.assert_series_equal(num_a, num_o, check_exact=True)
        pd.testing.assert_series_equal(text_a, text_o)
        assert (num_a.to_numpy().view("int64") == num_o.to_numpy().view("int64")).all(), values  # -0.0 too


def test_workload_arrays_without_per_job_python_keep_their_values():
    """build_workload's vectorised columns (partition names, model, stages, GPU demand) hold what the
    per-job code gave: names per partition, tuples of ints for stages, ints for whole-GPU demand."""
    from sim.workload import _stages_list, build_workload
    from tests.helpers import cluster, table

    w = build_workload(table([(0, 10, 1), (1, 10, 2), (2, 10, 4)], org=["a", "b", "a"]),
                       cluster(gpus=8, partitions={"a": 2, "b": 1}))
    assert list(w.frame["partition"]) == ["a", "b", "a"] and w.frame["partition"].dtype == object
    assert w.frame["model"].dtype == "string" and w.frame["model"].isna().all()
    assert w.gpu_demand == [1, 2, 4] and all(type(g) is int for g in w.gpu_demand)
    assert w.gpu_demand is not w.gpus and w.simple
    staged = build_workload(table([(0, 10, 4), (1, 10, 2)], stages=[2, None], replicas=[2, None]), cluster(gpus=8))
    assert staged.stages == [(2, 2), None] and all(type(v) is int for v in staged.stages[0])
    assert _stages_list(__import__("numpy").full(3, None, dtype=object)) == [None, None, None]
    frac = build_workload(table([(0, 10, 1), (1, 10, 2)], gpu_fraction=[0.5, None]), cluster(gpus=8))
    assert frac.gpu_demand == [0.5, 2]
