"""Keeping the cyclic garbage collector off the replay's big per-job lists."""
from __future__ import annotations

import gc

#: Lists of at least this many jobs are worth it (a 1.75 M-job workload: ~0.5 s of collections saved).
MIN_JOBS = 100_000


def age_tracked_objects(jobs: int) -> None:
    """Move every object the collector tracks to its oldest generation, without a collection
    (``gc.freeze()`` then ``gc.unfreeze()``), when ``jobs`` reaches :data:`MIN_JOBS`.

    Why: a workload or a finished replay holds about twenty lists of one item per job. Left in the young
    generation, the next young collections walk every item of every list (0.3-0.5 s for 1.75 M jobs,
    measured with gc.callbacks), although lists of numbers and labels never become cyclic garbage. Nothing
    is hidden from the collector: the oldest generation is still collected, on its own schedule. Skipped
    when the process has frozen objects of its own (``gc.get_freeze_count()``; a pre-fork server, say), whose
    freeze this must not undo, and when collection is disabled."""
    if jobs >= MIN_JOBS and gc.isenabled() and not gc.get_freeze_count():
        gc.freeze()
        gc.unfreeze()
