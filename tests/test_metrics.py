import numpy as np
import pytest

from evaluation.metrics import evaluate, in_window, job_table, summarize, utilisation
from sim import simulate
from tests.helpers import workload


def test_summary_on_a_known_schedule():
    # FIFO on 4 GPUs (see test_golden): JCT 10, 14, 9, 10; waits 0, 9, 8, 8.
    result = simulate(workload([(0, 10, 4), (1, 5, 2), (2, 1, 2), (3, 2, 1)]), "fifo")
    s = summarize(job_table(result))
    assert s["jct_mean"] == pytest.approx(43 / 4)
    assert s["jct_p50"] == pytest.approx(10)
    assert s["wait_mean"] == pytest.approx(25 / 4)
    assert s["makespan"] == pytest.approx(15)
    assert s["total_flow_time"] == pytest.approx(43)
    # GPU-seconds used: 40 + 10 + 2 + 2 = 54 over a 15 s span of 4 GPUs.
    assert utilisation(result) == pytest.approx(54 / 60)


def test_window_and_breakdowns():
    result = simulate(workload([(0, 10, 4), (1, 5, 2), (2, 1, 2), (3, 2, 1)]), "fifo")
    jobs = job_table(result)
    assert in_window(jobs, (1, 3))["job_id"].tolist() == ["j1", "j2"]
    ev = evaluate(result, window=(1, None))
    assert ev["summary"]["jobs"] == 3
    assert set(ev["by_size"]["size"]) == {"<=8 GPUs"}
    assert np.isclose(ev["by_partition"]["jct_mean"].iloc[0], ev["summary"]["jct_mean"])
