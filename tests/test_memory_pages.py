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
        pool = memory_pages.small_page_pool()
        assert pool in ("jemalloc", "system") and pa.default_memory_pool().backend_name == pool
        # the plot worker and Dask workers inherit both
        assert os.environ["NUMPY_MADVISE_HUGEPAGE"] == "0" and os.environ["ARROW_DEFAULT_MEMORY_POOL"] == pool
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

    for command, arrow in (("policies", True), ("diagnose", False)):  # the text tools never touch Arrow memory
        order = []
        monkeypatch.setattr(memory_pages, "avoid_huge_page_stalls",
                            lambda arrow=True: order.append(("pages", arrow)) or [])
        monkeypatch.setattr(cli, "main", lambda argv: order.append("main") or 0)
        monkeypatch.setattr("sys.argv", ["schedcast", command])
        monkeypatch.setattr(cli, "_FAST_EXIT", [False])
        with pytest.raises(SystemExit) as stop:
            cli.entry()
        assert stop.value.code == 0 and order == [("pages", arrow), "main"]


def test_the_small_page_pool_is_jemalloc_where_pyarrow_has_it(monkeypatch):
    import pyarrow as pa

    assert memory_pages.small_page_pool() == ("jemalloc" if _has_jemalloc() else "system")

    def missing():
        raise NotImplementedError("built without jemalloc")

    monkeypatch.setattr(pa, "jemalloc_memory_pool", missing)
    assert memory_pages.small_page_pool() == "system"


def _has_jemalloc() -> bool:
    import pyarrow as pa

    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        return False
    return True


def test_a_batch_command_keeps_freed_memory_in_its_own_process_only(monkeypatch):
    """keep_freed_memory (and numba's load without SciPy's BLAS probe) runs for a fast-exit command of the
    console script, never for main() in a caller's process (tests, a library user) nor for a long-lived
    command."""
    from pipelines import cli
    from sim import kernel_compiled

    calls = []
    monkeypatch.setattr(memory_pages, "keep_freed_memory", lambda: calls.append(1) or True)
    skips = []
    monkeypatch.setattr(kernel_compiled, "skip_blas_probe", lambda: skips.append(1))
    monkeypatch.setattr(cli, "_CONSOLE", [False])
    assert cli.main(["clusters"]) == 0 and calls == []
    monkeypatch.setattr(cli, "_CONSOLE", [True])
    assert cli.main(["clusters"]) == 0 and calls == []  # not a batch command
    monkeypatch.setattr(cli, "_FAST_EXIT", [False])
    assert cli.main(["simulate", "--synthetic", "demo", "--policy", "nope"]) == 2  # parsed, then refused
    assert calls == [1] and skips == [1]
    monkeypatch.setattr(cli, "_CONSOLE", [False])
    assert cli.main(["simulate", "--synthetic", "demo", "--policy", "nope"]) == 2 and calls == [1] and skips == [1]


def test_keep_freed_memory_sets_glibcs_thresholds_in_a_process_of_its_own():
    import platform
    import subprocess
    import sys

    code = ("from pipelines.memory_pages import keep_freed_memory; print(keep_freed_memory())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == str(platform.system() == "Linux" and platform.libc_ver()[0] == "glibc")
