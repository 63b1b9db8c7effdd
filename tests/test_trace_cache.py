"""The trace cache: a second load of the same file skips parsing; edits, other options and other
formats miss; a corrupt entry is ignored; the cache can be turned off and cleared from the CLI."""
import os

import pytest

import features.traces as traces
from features.traces import cache, load_trace
from pipelines.cli import main

CSV = ("job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"
       "a,u1,vc1,1,4,1,COMPLETED,2020-04-01 00:00:00,2020-04-01 00:00:10,2020-04-01 01:00:10,3600,10\n"
       "b,u2,vc1,2,8,1,COMPLETED,2020-04-01 00:10:00,2020-04-01 00:10:00,2020-04-01 00:40:00,1800,0\n")


@pytest.fixture()
def trace(tmp_path, monkeypatch):
    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "cluster_log.csv"
    path.write_text(CSV)
    return path


def _count_parses(monkeypatch):
    calls = []
    real = traces._parse

    def counting(path, fmt, options):
        calls.append(fmt)
        return real(path, fmt, options)

    monkeypatch.setattr(traces, "_parse", counting)
    return calls


def test_second_load_is_served_from_the_cache_and_equal(trace, monkeypatch):
    calls = _count_parses(monkeypatch)
    first = load_trace(trace)
    second = load_trace(trace)
    assert calls == ["helios"]
    assert second.frame.equals(first.frame) and second.report == first.report
    assert len(cache.entries()) == 1


def test_an_edited_file_or_other_format_is_parsed_again(trace, monkeypatch):
    calls = _count_parses(monkeypatch)
    load_trace(trace)
    trace.write_text(CSV + "c,u3,vc1,4,8,1,COMPLETED,2020-04-01 00:20:00,2020-04-01 00:20:00,"
                     "2020-04-01 00:30:00,600,0\n")
    os.utime(trace, ns=(1, 1))  # even with an old timestamp: the size changed
    assert len(load_trace(trace)) == 3
    assert load_trace(trace, cache=False) is not None
    assert calls == ["helios", "helios", "helios"]


def test_a_corrupt_entry_is_ignored_and_rewritten(trace, monkeypatch):
    load_trace(trace)
    (entry,) = cache.entries()
    entry.write_bytes(b"not a pickle")
    calls = _count_parses(monkeypatch)
    assert len(load_trace(trace)) == 2 and calls == ["helios"]
    assert isinstance(cache.get_value(entry.stem), traces.JobTable)


def test_cache_off_and_unwritable_cache(trace, monkeypatch, tmp_path):
    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", "0")
    calls = _count_parses(monkeypatch)
    load_trace(trace)
    load_trace(trace)
    assert calls == ["helios", "helios"] and cache.cache_dir() is None
    blocker = tmp_path / "file"
    blocker.write_text("x")
    monkeypatch.setenv("SCHEDCAST_TRACE_CACHE", str(blocker / "sub"))  # cannot be created: skipped quietly
    assert len(load_trace(trace)) == 2


def test_cache_entries_are_bounded(trace, monkeypatch, tmp_path):
    monkeypatch.setattr(cache, "MAX_ENTRIES", 2)
    for i in range(4):
        other = tmp_path / f"t{i}" / "cluster_log.csv"
        other.parent.mkdir()
        other.write_text(CSV)
        load_trace(other)
    assert len(cache.entries()) == 2


def test_data_cache_command_lists_and_clears(trace, capsys):
    load_trace(trace)
    assert main(["data", "cache"]) == 0
    assert "1 parsed traces" in capsys.readouterr().out
    assert main(["data", "cache", "--clear"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert not cache.entries()
