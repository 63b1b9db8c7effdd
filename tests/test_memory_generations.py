"""sim.memory.age_tracked_objects: a built workload's per-job lists leave the young generations without a
collection; a process's own freeze is left alone; nothing happens with the collector disabled."""
from __future__ import annotations

import gc

import pytest

import sim.memory as memory
from tests.helpers import workload


def _in(generation: int, obj) -> bool:
    return any(o is obj for o in gc.get_objects(generation=generation))


@pytest.fixture
def small_threshold(monkeypatch):
    monkeypatch.setattr(memory, "MIN_JOBS", 3)


def test_workload_lists_go_to_the_oldest_generation(small_threshold):
    w = workload([(0, 100, 1), (1, 50, 2), (2, 10, 1), (3, 5, 1)])
    for values in (w.submit, w.duration, w.gpus, w.job_id):
        assert gc.is_tracked(values) and not _in(0, values) and not _in(1, values) and _in(2, values)
    assert gc.get_freeze_count() == 0  # unfrozen again: still collected with the oldest generation


@pytest.fixture
def no_automatic_collection():
    """Collection enabled, but no automatic collection moves objects between generations meanwhile."""
    before = gc.get_threshold()
    gc.set_threshold(10**9, 10**9, 10**9)
    yield
    gc.set_threshold(*before)


def test_small_workloads_and_a_frozen_process_are_left_alone(monkeypatch, no_automatic_collection):
    gc.collect()
    w = workload([(0, 100, 1), (1, 50, 2)])  # under MIN_JOBS (100,000)
    assert _in(0, w.submit)
    monkeypatch.setattr(memory, "MIN_JOBS", 1)
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        young = [0.0] * 5
        memory.age_tracked_objects(10)
        # The process's freeze is not undone (an unfreeze empties the permanent generation; a few of its
        # objects may be freed meanwhile by other threads, so the count is not compared exactly).
        assert gc.get_freeze_count() > frozen // 2 and _in(0, young)
    finally:
        gc.unfreeze()
    gc.disable()
    try:
        young = [0.0] * 5
        memory.age_tracked_objects(10)
        assert _in(0, young)
    finally:
        gc.enable()
    memory.age_tracked_objects(10)
    assert _in(2, young) and not _in(0, young)
