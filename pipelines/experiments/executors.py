"""Executors: where cells run. ``serial`` (this process), ``dask`` (a LocalCluster of worker processes on
127.0.0.1, or the user's scheduler) and ``ray``. Called "executors" (``--executor``) so that "engine" names
only the simulator's event loop; the old ``--engine`` flag and the ``*Engine`` names remain as aliases."""
from __future__ import annotations

import json
import os
import time
from dataclasses import asdict
from typing import Any, Callable, Iterator

from pipelines.experiments.cells import Cell, run_cell, seed_matters
from pipelines.experiments.spec import one_line


Submit = Callable[[Cell, str], Any]


class SerialExecutor:
    """Cells one after the other in this process (debugging; the reference for parallel runs)."""

    name = "serial"
    workers = 1

    def __init__(self, **_: Any) -> None:
        pass

    def run(self, jobs: list[tuple[Cell, dict[str, Any]]]) -> Iterator[tuple[Cell, dict[str, Any]]]:
        for cell, kwargs in jobs:
            yield cell, run_cell(cell, **kwargs)

    def close(self) -> None:
        pass


class DaskExecutor:
    """A Dask LocalCluster on 127.0.0.1 (worker processes, one thread each, no dashboard) or the user's
    scheduler. Cells of one workload are routed to one worker (loosely: idle workers may steal), so
    the workload is built once per worker, not once per cell."""

    name = "dask"

    def __init__(self, workers: int | None = None, scheduler: str | None = None, connect_timeout: float = 20.0,
                 **_: Any) -> None:
        import logging

        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ValueError("--executor dask needs dask[distributed] (pip install 'schedcast[ml]' or "
                             "'dask[distributed]'); --executor serial runs without it") from None
        self.cluster = None
        if scheduler:
            try:
                self.client = Client(scheduler, timeout=f"{connect_timeout}s")
            except (OSError, TimeoutError) as exc:
                raise ValueError(f"cannot reach the Dask scheduler at {scheduler}: {one_line(exc)}") from None
        else:
            n = workers or os.cpu_count() or 1
            os.environ.setdefault("OMP_NUM_THREADS", "1")
            os.environ.setdefault("MPLBACKEND", "Agg")
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                        dashboard_address=None, silence_logs=logging.ERROR)
            self.client = Client(self.cluster)
        self.workers = len(self.client.scheduler_info()["workers"]) or (workers or 1)

    def run(self, jobs: list[tuple[Cell, dict[str, Any]]]) -> Iterator[tuple[Cell, dict[str, Any]]]:
        from distributed import as_completed

        addresses = sorted(self.client.scheduler_info()["workers"])
        slot: dict[str, str] = {}
        futures = {}
        for cell, kwargs in jobs:
            group = json.dumps(cell.source, sort_keys=True, default=str) + (
                f"#{cell.seed}" if seed_matters(cell.source) else "")
            if addresses and group not in slot:
                slot[group] = addresses[len(slot) % len(addresses)]
            fut = self.client.submit(run_cell, cell, pure=False, key=f"cell-{cell.id}-{time.time_ns()}",
                                     workers=[slot[group]] if addresses else None, allow_other_workers=True,
                                     **kwargs)
            futures[fut] = cell
        for fut in as_completed(futures):
            cell = futures[fut]
            try:
                record = fut.result()
            except Exception as exc:  # noqa: BLE001 - a worker died (KilledWorker) or could not unpickle
                record = {"id": cell.id, "key": cell.key(), "cell": asdict(cell), "status": "failed",
                          "stage": "worker", "error": f"{type(exc).__name__}: {one_line(exc)[:500]}",
                          "wall_s": float("nan"), "cpu_s": float("nan"), "finished": time.time()}
            fut.release()
            yield cell, record

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


class RayExecutor:
    """Ray tasks (``--ray-address auto`` or ray://HOST:10001 for an existing cluster; without an address
    Ray starts a local one, which opens ports beyond loopback). Needs ray installed everywhere."""

    name = "ray"

    def __init__(self, workers: int | None = None, address: str | None = None, **_: Any) -> None:
        try:
            import ray
        except ImportError:
            raise ValueError("--executor ray needs Ray (pip install 'ray[default]' on this machine and every "
                             "node of the Ray cluster); --executor dask needs no extra package") from None
        self.ray = ray
        ray.init(address=address, ignore_reinit_error=True, include_dashboard=False, log_to_driver=False,
                 **({"num_cpus": workers} if workers and not address else {}))
        self.remote = ray.remote(num_cpus=1)(run_cell)
        self.workers = int(ray.cluster_resources().get("CPU", workers or 1))

    def run(self, jobs: list[tuple[Cell, dict[str, Any]]]) -> Iterator[tuple[Cell, dict[str, Any]]]:
        pending = {self.remote.remote(cell, **kwargs): cell for cell, kwargs in jobs}
        while pending:
            ready, _ = self.ray.wait(list(pending), num_returns=1)
            for ref in ready:
                cell = pending.pop(ref)
                try:
                    record = self.ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - a worker died
                    record = {"id": cell.id, "key": cell.key(), "cell": asdict(cell), "status": "failed",
                              "stage": "worker", "error": f"{type(exc).__name__}: {one_line(exc)[:500]}",
                              "wall_s": float("nan"), "cpu_s": float("nan"), "finished": time.time()}
                yield cell, record

    def close(self) -> None:
        self.ray.shutdown()


def make_executor(executor: str, workers: int | None = None, scheduler: str | None = None,
                ray_address: str | None = None):
    """The executor named ``executor`` (serial, dask, ray); a one-line ValueError for another name."""
    engine = executor
    if engine == "serial":
        return SerialExecutor()
    if engine == "dask":
        return DaskExecutor(workers=workers, scheduler=scheduler)
    if engine == "ray":
        return RayExecutor(workers=workers, address=ray_address)
    raise ValueError(f"unknown executor {engine!r}; use dask, ray or serial")


#: The old names (before "engine" was kept for the simulator's event loop).


SerialEngine, DaskEngine, RayEngine, make_engine = SerialExecutor, DaskExecutor, RayExecutor, make_executor
