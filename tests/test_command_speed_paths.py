"""Fast paths of the whole `simulate` command (issue 23's 1.75 M-job target), each against its general path.

- The CSV fast reader looks for empty lines only when pyarrow's first column has a missing value (an
  empty line is read as such a record): files with empty lines still go to pandas, files without them
  (a missing first field included) stay on the fast path, with the same table either way.
"""
from __future__ import annotations

import pandas as pd
import pytest

import features.traces._io as trace_io
from features.traces import load_trace

HEAD = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,duration"
ROW_A = "a,u1,vc1,1,4,1,COMPLETED,2020-05-01 10:00:00,60"
ROW_B = "b,u1,vc1,2,4,1,COMPLETED,2020-05-01 10:00:01,1"
ROW_NULL_ID = ",u2,vc1,2,4,1,COMPLETED,2020-05-01 10:00:02,5"
_REAL_READ_ARROW = trace_io._read_arrow


def _load_both(monkeypatch, path):
    calls = []

    def spy(data, width):
        frame = _REAL_READ_ARROW(data, width)
        calls.append(frame is not None)
        return frame

    monkeypatch.setattr(trace_io, "_read_arrow", spy)
    fast = load_trace(path, "helios", cache=False)
    monkeypatch.setattr(trace_io, "_read_arrow", lambda data, width: None)
    slow = load_trace(path, "helios", cache=False)
    pd.testing.assert_frame_equal(fast.frame, slow.frame, check_exact=True)
    assert fast.report.as_dict() == slow.report.as_dict()
    return calls, fast


@pytest.mark.parametrize("text, fast_path", [
    ("\n".join([HEAD, ROW_A, "", ROW_B]) + "\n", False),              # an empty line inside
    ("\n".join([HEAD, ROW_A, ROW_B]) + "\n\n", False),                # an empty last line
    ("\r\n".join([HEAD, ROW_A, "", ROW_B]) + "\r\n", False),          # CRLF with an empty line
    ("\n".join([HEAD, ROW_NULL_ID, "", ROW_B]) + "\n", False),        # an empty line and a missing id
    ("\n".join([HEAD, ROW_A, ROW_NULL_ID, ROW_B]) + "\n", True),       # a missing id, no empty line
    ("\r\n".join([HEAD, ROW_A, ROW_B]) + "\r\n", True),               # CRLF, no empty line
    ("\n".join([HEAD, ROW_A, ROW_B]) + "\n", True),                   # plain
])
def test_empty_lines_leave_the_fast_reader(monkeypatch, tmp_path, text, fast_path):
    path = tmp_path / "cluster_log.csv"
    path.write_bytes(text.encode())
    calls, table = _load_both(monkeypatch, path)
    assert calls == [fast_path]
    assert set(table.frame["job_id"].dropna()) <= {"a", "b"} and "b" in set(table.frame["job_id"])


def test_has_empty_line():
    assert trace_io._has_empty_line(b"h,i\n1,2\n\n3,4\n")
    assert trace_io._has_empty_line(b"h,i\r\n1,2\r\n\r\n3,4\r\n")
    assert not trace_io._has_empty_line(b"h,i\n1,2\n3,4\n")
    assert not trace_io._has_empty_line(b"h,i\r\n1,2\r\n3,4\r\n")
