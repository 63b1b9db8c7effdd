"""Job states and event kinds of the replay: a leaf module policies and placements import without the engine."""
from __future__ import annotations

import math

# Job states. RESTARTING: failed, waiting out the restart delay; FAILED: terminal.
PENDING, QUEUED, LOADING, RUNNING, SAVING, DONE, RESTARTING, FAILED = range(8)
STATE_NAMES = ("pending", "queued", "loading", "running", "saving", "done", "restarting", "failed")
# Event kinds double as same-time priorities (lower first); arrivals (3) come from a sorted list.
EV_FINISH, EV_SAVED, EV_LOADED, EV_ARRIVAL, EV_TIMER, EV_REPAIR, EV_FAILURE, EV_RESTART = range(8)
INF = math.inf
