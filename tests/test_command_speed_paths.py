"""Fast paths of the whole `simulate` command (issue 23's 1.75 M-job target), each against its general path.

- The CSV fast reader looks for empty lines only when pyarrow's first column has a missing value (an
  empty line is read as such a record): files with empty lines still go to pandas, files without them
  (a missing first field included) stay on the fast path, with the same table either way.
"""
from __future__ import annotations

import numpy as np
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


def test_allocation_file_frame_writes_the_bytes_rename_wrote(tmp_path):
    """The allocation file is the renamed frame's, byte for byte; the scored frame keeps its names."""
    import numpy as np

    from evaluation.report import allocation_file_frame, write_parquet

    rng = np.random.default_rng(3)
    alloc = pd.DataFrame({"time": np.cumsum(rng.random(1000)), "gpus_used": rng.integers(0, 64, 1000) * 1.0,
                          "gpus_held": rng.integers(0, 64, 1000) * 1.0})
    write_parquet(alloc.rename(columns={"time": "time_s"}), tmp_path / "a.parquet")
    write_parquet(allocation_file_frame(alloc), tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    assert list(alloc.columns) == ["time", "gpus_used", "gpus_held"]
    assert list(allocation_file_frame(alloc).columns) == ["time_s", "gpus_used", "gpus_held"]


def _frames():
    import numpy as np

    n = 5_000
    rng = np.random.default_rng(7)
    mask = rng.random(n) < 0.2
    two = np.array(["done", "failed"], dtype=object)[mask.astype(np.intp)]
    one = np.empty(n, dtype=object)
    one.fill("pool")
    none = np.empty(n, dtype=object)
    none.fill(None)
    mixed = two.copy()
    mixed[::7] = None
    copies = two.copy()
    copies[::3] = "".join(["do", "ne"])  # an equal string in another object
    ids = np.array([f"job-{i}" for i in range(n)], dtype=object)
    base = {"job_id": ids, "submit": rng.random(n) * 1e6, "gpus": rng.integers(1, 9, n), "status": two,
            "partition": one, "model": none, "job_class": mixed, "size": copies,
            "in_window": rng.random(n) < 0.5, "nan": np.where(mask, np.nan, 1.0)}
    yield pd.DataFrame(base, copy=False)
    yield pd.DataFrame({**base, "model": np.array([None] * (n - 1) + ["m"], dtype=object)})
    yield pd.DataFrame({**base, "odd": np.array([b"x", None] * (n // 2), dtype=object)})  # bytes: pyarrow's own
    yield pd.DataFrame({"ids": np.array([None] + [f"x{i}" for i in range(n - 1)], dtype=object), "status": two})
    yield pd.DataFrame({"status": two[:0], "x": np.zeros(0)})
    yield pd.DataFrame({"nan_labels": np.array([float("nan"), "a"] * 10, dtype=object)})


@pytest.mark.parametrize("k", range(6))
def test_write_parquet_writes_to_parquets_table(tmp_path, k):
    """The same schema, pandas metadata and values as to_parquet; the bytes are to_parquet's with the
    dictionary encoding limited to the columns repeating_columns names."""
    import pyarrow.parquet as pq

    from evaluation.report import arrow_table, repeating_columns, write_parquet

    frame = list(_frames())[k]
    frame.to_parquet(tmp_path / "pandas.parquet", index=False)
    write_parquet(frame, tmp_path / "fast.parquet")
    fast, slow = pq.read_table(tmp_path / "fast.parquet"), pq.read_table(tmp_path / "pandas.parquet")
    assert fast.equals(slow, check_metadata=True)
    pq.write_table(arrow_table(frame), tmp_path / "same.parquet", compression="snappy",
                   use_dictionary=repeating_columns(arrow_table(frame)))
    assert (tmp_path / "fast.parquet").read_bytes() == (tmp_path / "same.parquet").read_bytes()
    # read back exactly as pandas' own file reads back (a missing label comes back as None either way)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "fast.parquet"), pd.read_parquet(tmp_path / "pandas.parquet"))
    assert len(pd.read_parquet(tmp_path / "fast.parquet")) == len(frame)


def test_only_repeating_columns_are_dictionary_encoded(tmp_path):
    import numpy as np
    import pyarrow.parquet as pq

    from evaluation.report import write_parquet

    n = 10_000
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"job_id": np.array([f"j{i}" for i in range(n)], dtype=object), "submit": rng.random(n),
                          "jct": rng.integers(1, 100, n) * 60.0, "gpus": rng.integers(1, 9, n),
                          "status": np.array(["done", "failed"], dtype=object)[rng.integers(0, 2, n)],
                          "model": np.array([None] * n, dtype=object)})  # no distinct count for nulls: the default
    write_parquet(frame, tmp_path / "f.parquet")
    meta = pq.ParquetFile(tmp_path / "f.parquet").metadata.row_group(0)
    dictionary = {meta.column(i).path_in_schema: meta.column(i).has_dictionary_page for i in range(meta.num_columns)}
    assert dictionary == {"job_id": False, "submit": False, "jct": True, "gpus": True, "status": True,
                          "model": True}
    frame.to_parquet(tmp_path / "default.parquet", index=False)
    assert (tmp_path / "f.parquet").stat().st_size < (tmp_path / "default.parquet").stat().st_size


def test_label_codes():
    import numpy as np

    from evaluation.metrics import label_codes

    values = np.array(["b", "a", None, "b", "".join(["a"])] * 3, dtype=object)
    codes, labels = label_codes(values)
    assert labels == ["b", "a", None] and [labels[c] for c in codes] == list(values)
    assert label_codes(values[::2])[1] == ["b", None, "a"]
    assert label_codes(np.array(["a", 1], dtype=object)) is None
    assert label_codes(np.array(["a", float("nan")], dtype=object)) is None
    assert label_codes(np.array([str(i) for i in range(9)], dtype=object)) is None
    assert label_codes(np.array([str(i) for i in range(8)], dtype=object))[1] == [str(i) for i in range(8)]
    assert label_codes(np.arange(3)) is None


def _summary_jobs(rng: np.random.Generator, n: int, failed_share: float) -> pd.DataFrame:
    """A job table of the columns summarize reads: random waits, training and submissions, a ``failed_share``
    of failed jobs, and load, save, futile time, preemptions, failures and lost work all zero (a test sets
    the ones it varies)."""
    wait, train = rng.exponential(300, n), rng.lognormal(6, 1.5, n)
    submit = np.sort(rng.uniform(0, 1e5, n))
    jobs = pd.DataFrame({"submit": submit, "wait": wait, "load": np.zeros(n), "train": train, "save": np.zeros(n),
                         "futile": np.zeros(n), "preemptions": np.zeros(n, dtype=np.int64),
                         "failures": np.zeros(n, dtype=int), "lost_work": np.zeros(n), "duration": train,
                         "end": submit + wait + train, "jct": wait + train})
    jobs["slowdown"] = jobs["jct"] / np.maximum(jobs["duration"], 1.0)
    jobs["status"] = _two_labels(rng, n, "done", "failed", failed_share)
    return jobs


def _two_labels(rng: np.random.Generator, n: int, first: str, second: str, second_share: float) -> pd.Series:
    return pd.Series(np.array([first, second], dtype=object)[(rng.random(n) < second_share).astype(int)], dtype=object)


def _groupby_breakdown(jobs: pd.DataFrame, by: str) -> pd.DataFrame:
    """The breakdown as pandas' groupby makes it: summarize over each group's frame."""
    from evaluation import metrics

    slim = jobs[[c for c in metrics.SUMMARY_COLUMNS if c in jobs] + [by]]
    return pd.DataFrame([{by: k, **metrics.summarize(g)} for k, g in slim.groupby(by, sort=True)])


@pytest.mark.parametrize("kind", ["copies", "none", "many", "one_and_none"])
def test_breakdown_over_label_codes_equals_groupby(kind):
    """breakdown's groups from label_codes are groupby's (sorted labels, missing ones left out)."""
    from evaluation import metrics

    n = 3000
    rng = np.random.default_rng(11)
    jobs = _summary_jobs(rng, n, failed_share=0.1)
    jobs["futile"], jobs["preemptions"] = rng.choice([0.0, 40.0], n), rng.integers(0, 3, n)
    if kind == "copies":  # equal strings in distinct objects
        keys = np.array(["b", "a"], dtype=object)[rng.integers(0, 2, n)]
        keys[1::3] = "".join(["a"])
        keys[0] = "b"  # first seen is not first sorted
    elif kind == "none":
        keys = np.array([None] * n, dtype=object)
    elif kind == "many":  # more labels than label_codes takes: the hash pass
        keys = np.array([f"g{i}" for i in range(12)], dtype=object)[rng.integers(0, 12, n)]
    else:
        keys = np.array(["x", None], dtype=object)[rng.integers(0, 2, n)]
    jobs["key"] = pd.Series(keys, dtype=object)
    pd.testing.assert_frame_equal(metrics.breakdown(jobs, "key"), _groupby_breakdown(jobs, "key"), check_exact=True)
    assert metrics._failed(jobs).tolist() == (jobs["status"] == "failed").tolist()


@pytest.mark.parametrize("zero", [0.0, -0.0, np.nan, 0])
def test_breakdown_zero_columns_are_views_with_groupbys_figures(zero):
    """A column of +0 only (futile time, load, ... of a replay without preemption) is one zero viewed per
    group, not gathered; -0.0 or NaN among the values keeps the gathered copy; the figures are groupby's."""
    from evaluation import metrics

    n = 2000
    rng = np.random.default_rng(5)
    jobs = _summary_jobs(rng, n, failed_share=0.05)
    lost = np.zeros(n) if isinstance(zero, float) else np.zeros(n, dtype=int)
    lost[7] = zero
    jobs["lost_work"] = lost
    jobs["size"] = _two_labels(rng, n, "<=8 GPUs", ">8 GPUs", 0.2)
    assert metrics._all_plus_zero(jobs["lost_work"].to_numpy()) is (zero == 0 and not np.signbit(zero))
    assert metrics._all_plus_zero(jobs["futile"].to_numpy()) and not metrics._all_plus_zero(jobs["jct"].to_numpy())
    got, ref = metrics.breakdown(jobs, "size"), _groupby_breakdown(jobs, "size")
    pd.testing.assert_frame_equal(got, ref, check_exact=True)
    assert [np.signbit(v) for v in got["lost_work_total"]] == [np.signbit(v) for v in ref["lost_work_total"]]


def test_cdf_data_quantiles_are_numpys():
    import numpy as np

    from evaluation.report import cdf_data

    rng = np.random.default_rng(5)
    for jct in (rng.lognormal(8, 2, 10_001), np.r_[rng.random(99) * 1e4, [np.nan]], np.array([5.0]), np.zeros(0)):
        data = cdf_data({"p": pd.DataFrame({"jct": jct})})
        if not len(jct):
            assert data["curves"] == {}
            continue
        x, q = data["curves"]["p"]
        expected = np.maximum(np.quantile(jct / 3600.0, q), 1e-4)
        assert np.array_equal(x, expected, equal_nan=True)


def test_fingerprint_in_background_is_the_fingerprint(philly_file):
    """The fingerprint computed beside the replay is the workload's, and meta.json records it."""
    import dataclasses

    from pipelines.replay import ReplaySpec, fingerprint_in_background, prepare_replay, run_replay
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    w = build_workload(load_trace(philly_file), load_cluster("philly-pool"), limit=2_000)
    assert w.simple
    assert fingerprint_in_background(w)() == w.fingerprint
    other = dataclasses.replace(w, duration=[d + 1.0 for d in w.duration])
    assert fingerprint_in_background(other)() == other.fingerprint != w.fingerprint
    prepared = prepare_replay(ReplaySpec(policy="fifo"), built=(None, w))
    assert prepared.fingerprint is not None
    assert run_replay(ReplaySpec(policy="fifo"), prepared).meta["workload_fingerprint"] == w.fingerprint

    class Broken:
        simple = True

        @property
        def fingerprint(self):
            raise RuntimeError("no arrays")

    with pytest.raises(RuntimeError, match="no arrays"):
        fingerprint_in_background(Broken())()


def _helios_file(tmp_path, rows=200, name="cluster_log.csv", delta=0):
    lines = [HEAD] + [f"j{i},u{i % 3},vc1,{1 + i % 4},4,1,COMPLETED,2020-05-01 10:{(i // 60) % 60:02d}:{i % 60:02d},"
                      f"{60 + i + delta}" for i in range(rows)]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_read_ahead_gives_the_table_read_csv_reads(monkeypatch, tmp_path):
    """A trace read ahead is the one read_csv would read: same table and report, the file read once."""
    path = _helios_file(tmp_path)
    plain = load_trace(path, "helios", cache=False)
    reads = []
    real_read = trace_io.read_bytes
    monkeypatch.setattr(trace_io, "read_bytes", lambda p: reads.append(p) or real_read(p))
    assert trace_io.read_ahead(path)
    ahead = load_trace(path, "helios", cache=False)
    assert len(reads) == 1 and not trace_io._AHEAD  # read by the thread only, and taken
    pd.testing.assert_frame_equal(ahead.frame, plain.frame, check_exact=True)
    assert ahead.report.as_dict() == plain.report.as_dict()


def test_a_trace_changed_after_its_read_ahead_is_read_again(tmp_path):
    import os

    path = _helios_file(tmp_path)
    assert trace_io.read_ahead(path)
    trace_io._AHEAD[str(path)][1]()  # wait for the read
    _helios_file(tmp_path, rows=150, delta=7)  # other rows, another size
    os.utime(path, ns=(1, 1))
    table = load_trace(path, "helios", cache=False)
    assert len(table.frame) == 150 and table.frame["duration"].iloc[0] == 67


def test_which_traces_are_read_ahead(tmp_path, monkeypatch):
    from features.traces import read_trace_ahead

    path = _helios_file(tmp_path)
    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", "0")
    assert read_trace_ahead(path, "helios") and read_trace_ahead(path)  # named or guessed format
    assert not read_trace_ahead(path, "philly-json")  # a loader that does not read CSV text
    assert not read_trace_ahead(tmp_path / "missing.csv", "helios")
    assert not read_trace_ahead(tmp_path, "helios")  # a folder
    assert not read_trace_ahead(path, "no-such-format")
    with monkeypatch.context() as m:  # whatever goes wrong, the command itself goes on
        m.setattr("features.traces.guess_format", lambda path: 1 / 0)
        assert not read_trace_ahead(path)
    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", str(tmp_path / "cache"))
    assert read_trace_ahead(path, "helios")  # not in the cache yet
    load_trace(path, "helios")  # parsed and cached
    assert not read_trace_ahead(path, "helios")  # the cache serves it: nothing to read
    trace_io._AHEAD.clear()


def test_simulate_reads_its_trace_ahead(tmp_path, monkeypatch):
    from pipelines.simulate import read_trace_ahead

    started = []
    monkeypatch.setattr("features.traces.read_trace_ahead", lambda path, fmt=None: started.append((path, fmt)) or True)
    assert read_trace_ahead(["simulate", "--trace", "t.csv", "--policy", "sjf"])
    assert read_trace_ahead(["--debug", "simulate", "--format=helios", "--trace=u.csv"])
    assert not read_trace_ahead(["simulate", "--synthetic", "demo"])
    assert not read_trace_ahead(["simulate", "--trace"])
    assert started == [("t.csv", None), ("u.csv", "helios")]


@pytest.mark.parametrize("n, held_too", [(0, True), (1, True), (2, True), (5000, True), (5000, False)])
def test_allocation_scores_are_the_separate_areas(n, held_too):
    """utilisation and sharing_factor from one set of time steps equal the areas computed one by one."""
    from array import array
    from types import SimpleNamespace

    import numpy as np

    from evaluation import metrics

    rng = np.random.default_rng(n)
    t = np.cumsum(rng.exponential(10, n))
    used = rng.integers(0, 80, n).astype(float)
    held = np.minimum(used, rng.integers(0, 64, n)).astype(float)
    result = SimpleNamespace(alloc_times=array("d", t), alloc_used=array("d", used),
                             alloc_held=array("d", held if held_too else []),
                             workload=SimpleNamespace(cluster=SimpleNamespace(gpus=64)))
    hv = held if held_too else used

    def area(v):
        return float(np.sum(v[:-1] * np.diff(t)))

    util = 0.0 if n < 2 else (area(hv) / ((t[-1] - t[0]) * 64) if t[-1] > t[0] else 0.0)
    share = 1.0 if n < 2 else (area(used) / area(hv) if area(hv) > 0 else 1.0)
    assert metrics.utilisation(result) == util and metrics.sharing_factor(result) == share
    assert metrics._allocation_scores(result) == (util, share)


def test_write_results_writes_the_job_file_last_and_lists_files_as_before(tmp_path):
    """The allocation file and breakdowns are written before the job file is waited for; the list of
    files write_results returns keeps its order (jobs, allocation, breakdowns per policy)."""
    from evaluation.report import JobsParquet, write_results
    from pipelines.replay import ReplaySpec, WorkloadSource, run_replay

    runs, encoded, order = {}, {}, []
    for policy in ("fifo", "sjf"):
        rr = run_replay(ReplaySpec(workload=WorkloadSource(synthetic="demo", jobs=200), policy=policy),
                        on_jobs=lambda jobs, p=policy: encoded.__setitem__(p, JobsParquet(jobs, None)))
        runs[policy] = rr.evaluation
        real = encoded[policy].write_to
        encoded[policy].write_to = lambda path, real=real: order.append(
            (path.name, (path.parent / path.name.replace("jobs_", "allocation_")).is_file())) or real(path)
    files = write_results(tmp_path / "out", runs, {"window": None, **rr.meta}, plots=False, encoded=encoded)
    assert [f.name for f in files] == ["summary.csv"] + [
        name for p in ("fifo", "sjf") for name in (f"jobs_{p}.parquet", f"allocation_{p}.parquet",
                                                    f"by_partition_{p}.csv", f"by_size_{p}.csv", f"by_class_{p}.csv")
    ] + ["meta.json"]
    assert order == [("jobs_fifo.parquet", True), ("jobs_sjf.parquet", True)]  # the allocation file was there
    assert all((tmp_path / "out" / f.name).is_file() for f in files)


@pytest.mark.parametrize("window", [(0.0, 1e9), (500.0, 20_000.0), (-5.0, 3.0), (1e12, 2e12)])
def test_load_reached_is_the_overlap_formula(window):
    """utilisation_between computed in one buffer gives the value of the temporaries it replaced."""
    from array import array
    from types import SimpleNamespace

    import numpy as np

    from evaluation import metrics

    rng = np.random.default_rng(17)
    t = np.cumsum(rng.exponential(10, 4000))
    held = rng.integers(0, 64, 4000).astype(float)
    result = SimpleNamespace(alloc_times=array("d", t), alloc_used=array("d", held), alloc_held=array("d", held),
                             workload=SimpleNamespace(cluster=SimpleNamespace(gpus=64)))
    start, end = window
    right = np.r_[t[1:], max(end, t[-1])]
    overlap = np.clip(np.minimum(right, end) - np.maximum(t, start), 0.0, None)
    assert metrics.utilisation_between(result, start, end) == float(np.sum(held * overlap) / ((end - start) * 64))


def test_identities_and_spot_checks():
    import numpy as np

    from evaluation.metrics import check_identities
    from pipelines.replay import has_spot_jobs

    jobs = pd.DataFrame({"job_id": ["a", "b"], "jct": [10.0, 7.5], "wait": [1.0, 0.5], "load": [2.0, 0.0],
                         "train": [7.0, 7.0], "save": [0.0, 0.0]})
    check_identities(jobs)
    jobs.loc[1, "train"] = 6.0
    with pytest.raises(AssertionError, match="job b"):
        check_identities(jobs)
    check_identities(jobs.iloc[:1])
    for labels, spot in (([None] * 3, False), ([None, "hp", None], False), ([None, "spot", "hp"], True),
                         (np.array([None, "Spot"], dtype=object), True)):
        assert has_spot_jobs(type("W", (), {"job_class": labels})()) is spot


def _large_helios_file(tmp_path, rows: int = 300_000):
    """A plain Helios CSV of ``rows`` jobs (about 20 MB), written with numpy: big enough that pyarrow is
    still parsing it some tens of milliseconds after the read began."""
    import numpy as np

    i = np.arange(rows)
    body = "\n".join(f"j{k},u{k % 3},vc1,{1 + k % 4},4,1,COMPLETED,2020-05-01 10:{(k // 60) % 60:02d}:{k % 60:02d},"
                     f"{60 + k}" for k in i.tolist())
    path = tmp_path / "cluster_log.csv"
    path.write_text(HEAD + "\n" + body + "\n")
    return path


@pytest.mark.parametrize("delay", [0.0, 0.02, 0.05, 0.1])
def test_a_process_that_exits_during_a_read_ahead_exits(tmp_path, delay):
    """Regression: pyarrow read the bytes through a Python file object, whose reads take the GIL; a process
    that exited while a read-ahead was parsing (a command with a bad flag) hung for ever in its exit."""
    import subprocess
    import sys

    path = _large_helios_file(tmp_path)
    code = ("import time, features.traces._io as io; assert io.read_ahead(%r); time.sleep(%r); raise SystemExit(2)"
            % (str(path), delay))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr


def test_simulate_with_a_bad_out_exits_while_its_trace_is_read(tmp_path):
    """The same through the command a user types: the error comes before the trace is needed."""
    import subprocess
    import sys

    path = _large_helios_file(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("a user's file")
    proc = subprocess.run([sys.executable, "-m", "pipelines.cli", "simulate", "--trace", str(path), "--format",
                           "helios", "--policy", "fifo", "--out", str(out), "--no-progress"],
                          capture_output=True, text=True, timeout=60, env={**__import__("os").environ,
                                                                           "SCHEDCAST_TRACE_CACHE": "0"})
    assert proc.returncode == 2 and "exists and is not empty" in proc.stderr
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
