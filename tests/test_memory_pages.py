"""pipelines.memory_pages: numpy's huge-page marking is turned off only where faults would stall."""
from __future__ import annotations

import numpy as np
import pytest

from pipelines import memory_pages


def _thp(tmp_path, enabled: str, defrag: str):
    (tmp_path / "enabled").write_text(enabled + "\n")
    (tmp_path / "defrag").write_text(defrag + "\n")
    return tmp_path


@pytest.mark.parametrize(("enabled", "defrag", "stalls"), [
    ("always [madvise] never", "always defer defer+madvise [madvise] never", True),  # the usual default
    ("[always] madvise never", "always defer [defer+madvise] madvise never", True),
    ("[always] madvise never", "[always] defer defer+madvise madvise never", True),
    ("always [madvise] never", "always [defer] defer+madvise madvise never", False),  # kcompactd, no stall
    ("always [madvise] never", "always defer defer+madvise madvise [never]", False),
    ("always madvise [never]", "always defer defer+madvise [madvise] never", False),  # no huge pages at all
])
def test_which_settings_stall(tmp_path, enabled, defrag, stalls):
    assert memory_pages.huge_page_faults_stall(_thp(tmp_path, enabled, defrag)) is stalls


def test_no_such_settings_do_not_stall(tmp_path):
    assert not memory_pages.huge_page_faults_stall(tmp_path / "missing")  # not Linux, or no THP support
    (tmp_path / "enabled").write_text("garbled")
    (tmp_path / "defrag").write_text("madvise")
    assert not memory_pages.huge_page_faults_stall(tmp_path)


def test_small_pages_are_chosen_where_huge_ones_stall_unless_the_user_chose(tmp_path, monkeypatch):
    import os

    import pyarrow as pa

    setter = np._core.multiarray._set_madvise_hugepage
    numpy_before, pool_before = np._core.multiarray._get_madvise_hugepage(), pa.default_memory_pool()
    backend = pool_before.backend_name
    stalling = _thp(tmp_path, "always [madvise] never", "always defer defer+madvise [madvise] never")
    try:
        setter(True)
        monkeypatch.setenv("NUMPY_MADVISE_HUGEPAGE", "1")  # the user's choices are left alone
        monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
        assert memory_pages.avoid_huge_page_stalls(stalling) == []
        assert np._core.multiarray._get_madvise_hugepage() and pa.default_memory_pool().backend_name == backend
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE")
        monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL")
        assert memory_pages.avoid_huge_page_stalls(stalling) == ["numpy", "pyarrow"]
        assert not np._core.multiarray._get_madvise_hugepage()
        assert pa.default_memory_pool().backend_name == "system"
        # the plot worker and Dask workers inherit both
        assert os.environ["NUMPY_MADVISE_HUGEPAGE"] == "0" and os.environ["ARROW_DEFAULT_MEMORY_POOL"] == "system"
        monkeypatch.delenv("NUMPY_MADVISE_HUGEPAGE")
        monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL")
        setter(True)
        pa.set_memory_pool(pool_before)
        (tmp_path / "calm").mkdir()
        calm = _thp(tmp_path / "calm", "always [madvise] never", "always [defer] defer+madvise madvise never")
        assert memory_pages.avoid_huge_page_stalls(calm) == []
        assert np._core.multiarray._get_madvise_hugepage() and pa.default_memory_pool().backend_name == backend
        assert "NUMPY_MADVISE_HUGEPAGE" not in os.environ and "ARROW_DEFAULT_MEMORY_POOL" not in os.environ
    finally:
        setter(numpy_before)
        pa.set_memory_pool(pool_before)


def test_the_console_script_decides_before_the_command(monkeypatch):
    from pipelines import cli

    order = []
    monkeypatch.setattr(memory_pages, "avoid_huge_page_stalls", lambda: order.append("pages") or [])
    monkeypatch.setattr(cli, "main", lambda argv: order.append("main") or 0)
    monkeypatch.setattr("sys.argv", ["schedcast", "policies"])
    monkeypatch.setattr(cli, "_FAST_EXIT", [False])
    with pytest.raises(SystemExit) as stop:
        cli.entry()
    assert stop.value.code == 0 and order == ["pages", "main"]
