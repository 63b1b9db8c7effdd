"""The loaders' vectorised checks (issue 23, loading a 1.75 M-row trace in <= 3 s) answer exactly what the
general paths answer: job-id uniqueness from numbered ids, plain calendar times through pyarrow's cast,
whole numbers through pyarrow's integer cast. Each fast path is compared with the path it replaces on
valid, invalid and edge-case values; a whole trace loads to the same table with the fast paths off.
"""
from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import features.jobtable as jobtable
import features.traces._io as trace_io
from features.traces import load_trace


def _text(values, chunks: int = 2) -> pd.Series:
    step = max(1, -(-len(values) // chunks))
    parts = [pa.array(values[i:i + step], pa.large_string()) for i in range(0, len(values), step)] or \
        [pa.array([], pa.large_string())]
    return pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array(parts, pa.large_string())))


def test_numbered_ids_answer_as_hashing_does():
    rng = random.Random(7)
    answered = 0
    for _ in range(1500):
        prefix = rng.choice(["", "ref-", "job_", "a1b", "é-"])
        values, clean = [], rng.random() < 0.6
        for _ in range(rng.randint(2, 25)):
            v = rng.randint(0, 30) if rng.random() < 0.7 else rng.randint(0, 10**7)
            kind = "n" if clean else rng.choice(["n", "n", "n", "zero", "sign", "text", "big", "null"])
            values.append({"n": f"{prefix}{v}", "zero": f"{prefix}0{v}", "sign": f"{prefix}-{v}",
                           "text": f"{prefix}x{v}", "big": f"{prefix}{rng.randint(10**17, 10**19)}",
                           "null": None if rng.random() < 0.3 else f"{prefix}{v}"}[kind])
        arr = _text(values).array.__arrow_array__()
        got = jobtable._distinct_numbered(arr)
        if got is not None:
            answered += 1
            assert got == (len(pc.unique(arr)) == len(arr)), values
    assert answered > 300  # the fast path was taken often, both ways
    wide = _text(["id9", "id100000000000", "id5", "id9"]).array.__arrow_array__()  # sparse: the sort path
    assert jobtable._distinct_numbered(wide) is False
    assert jobtable.all_distinct(_text(["ref-1", "ref-2", "ref-10"])) is True
    assert jobtable.all_distinct(_text(["ref-1", "ref-2", "ref-1"])) is False


@pytest.mark.parametrize("values", [
    ["2020-01-01 00:00:00", "2017-10-03 23:59:59", "2020-02-29 12:00:01", "2020-03-08T02:30:00"],
    ["2262-01-01 00:00:00"], ["1677-12-31 23:59:59"], ["2020-02-30 00:00:00"], ["2019-02-29 00:00:00"],
    ["2020-01-01 24:00:00"], ["2020-01-01 23:59:60"], ["2020-1-01 00:00:00"], ["2020-01-01 00:00:00.5"],
    ["2020-01-01 00:00"], ["2020-01-01"], [" 2020-01-01 00:00:00"], ["2020-01-01 00:00:00+08:00"],
    ["9999-01-01 00:00:00"], ["1600-01-01 00:00:00"], ["2020-01-01 00:00:00", "junk"],
])
def test_plain_datetimes_through_arrow_equal_pandas(values):
    text = _text(values)
    fast = trace_io._arrow_datetimes(text)
    if fast is None:  # not every value is a valid plain time: pandas decides, as before
        assert len(values) == 1 or "junk" in values
        return
    slow = pd.to_datetime(text.astype(object), errors="coerce", format="ISO8601")
    pd.testing.assert_series_equal(fast, slow)


def test_arrow_datetimes_refuses_what_it_must():
    refused = ["2020-02-30 00:00:00", "2020-01-01 24:00:00", "2020-01-01 23:59:60", "2020-1-01 00:00:00",
               "2020-01-01 00:00:00.5", "2020-01-01", "9999-01-01 00:00:00", "1600-01-01 00:00:00",
               "2262-06-01 00:00:00", "2020-01-01 00:00:00Z"]
    for bad in refused:
        assert trace_io._arrow_datetimes(_text(["2020-01-01 00:00:00", bad])) is None, bad
    assert trace_io._arrow_datetimes(_text(["2020-01-01 00:00:00", None])) is None  # gaps: the general path
    assert trace_io._arrow_datetimes(pd.Series(["2020-01-01 00:00:00"], dtype=object)) is None


@pytest.mark.parametrize("values", [["1", "-2", "05", "-0", "123456789012345"], ["0x1F", "2"], ["0X1F"],
                                    ["+5", "6"], ["1.5", "2"], ["1", None, "3"], ["1e3"], ["٣"]])
def test_integer_cast_reads_only_plain_integers(values):
    arr = _text(values).array.__arrow_array__()
    ints = jobtable._int_cast(arr)
    if ints is None:
        return
    present = [v for v in values if v is not None]
    assert all(pd.Series(present).str.fullmatch(r"[+-]?[0-9]+")), values
    assert ints.to_pylist() == [None if v is None else int(v) for v in values]
    assert jobtable._int_cast(_text(["0x1F", "2"]).array.__arrow_array__()) is None


def test_helios_trace_loads_the_same_with_the_fast_paths_off(monkeypatch, tmp_path):
    rng = np.random.default_rng(3)
    n = 3000
    ts = pd.Timestamp("2020-03-01") + pd.to_timedelta(np.sort(rng.integers(0, 40 * 86400, n)), unit="s")
    frame = pd.DataFrame({"job_id": [f"j-{i}" for i in rng.permutation(n)], "user": "u1", "vc": rng.choice(["a", "b"], n),
                          "gpu_num": rng.choice([0, 1, 2, 8, 16], n), "cpu_num": 4, "node_num": 1, "state": "COMPLETED",
                          "submit_time": ts.strftime("%Y-%m-%d %H:%M:%S"), "duration": rng.integers(0, 9000, n)})
    frame.loc[5, "job_id"] = frame.loc[9, "job_id"]  # a repeated id: dropped and counted either way
    path = tmp_path / "cluster_log.csv"
    frame.to_csv(path, index=False)
    fast = load_trace(path, "helios", cache=False)
    monkeypatch.setattr(jobtable, "_distinct_numbered", lambda arr: None)
    monkeypatch.setattr(jobtable, "_int_cast", lambda arr: None)
    monkeypatch.setattr(trace_io, "_arrow_datetimes", lambda text: None)
    jobtable._DISTINCT.clear()
    jobtable._PLAIN.clear()
    slow = load_trace(path, "helios", cache=False)
    pd.testing.assert_frame_equal(fast.frame, slow.frame)
    assert fast.report.as_dict() == slow.report.as_dict()
    assert fast.report.duplicates_found == 1


def test_fast_reader_columns_are_large_string_text(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("a,b\nx,1\ny,\n")
    frame = trace_io.read_csv(path, fast=True)
    for col in frame:
        assert jobtable.is_arrow_text(frame[col])
        assert frame[col].array.__arrow_array__().type == pa.large_string()
    assert frame["b"].isna().tolist() == [False, True]
