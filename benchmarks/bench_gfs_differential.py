"""Differential check of our GFS, Lyra and YARN-CS against GFS's released simulator (issue 40, item 3).

    python benchmarks/bench_gfs_differential.py                                # ours only (says how to add theirs)
    python benchmarks/bench_gfs_differential.py --spot-dir /tmp/spot_gfs --spot-python /tmp/spotenv/bin/python

The released simulator (github.com/Sjtucitlab/Spot, GPL-3.0) is optional and is never copied into this
repository: check it out anywhere (``git clone https://github.com/Sjtucitlab/Spot /tmp/spot_gfs``) and give
``--spot-dir``; its Python needs torch, pandas, scipy, scikit-learn and ``chinesecalendar`` (``python -m venv
--system-site-packages /tmp/spotenv && /tmp/spotenv/bin/pip install chinesecalendar``), given as
``--spot-python`` (default: this interpreter).

Traces: ``features.traces.gfs.generate_contended`` (HP demand in [0.6, 0.8] of 40 x 8 A100 GPUs, a daily cycle,
wander and bursts; GFS Table 3 pod mixes, Table 5 durations), written in the released simulator's input format
(``job_info_df.csv`` + ``node_info_df.csv``, :func:`write_released_input`). Both simulators read the same files:
ours through ``load_gfs_spot``. The HP-only warm-up is 10 days because the released forecaster cannot train
earlier (see RULES["warm-up"]); the measured window is the ``--days`` after it, for both.

Pairs: our ``gfs`` / released ``spot_scheduler``, ``lyra`` / ``lyra``, ``yarn-cs`` / ``fifo_spot`` (FIFO with
preemption: the released code's YARN-CS-like baseline). Metrics over the spot / HP tasks submitted in the window:
spot JCT and JQT (sum of all waits), evictions per spot run (evictions / (evictions + tasks)), HP JQT. The
released simulator steps one second at a time and retrains its forecaster daily; how we run it (no edit of its
files; the driver sets what its command line cannot) is in :data:`DRIVER_CHANGES` and docs/gfs_differential.md.
Every difference above 15 % is printed with the named rule difference (:data:`RULES`) that explains it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

#: ours -> the released simulator's policy name (utils.simulate_vc)
PAIRS = {"gfs": "spot_scheduler", "lyra": "lyra", "yarn-cs": "fifo_spot"}
#: our GFS under the released simulator's two behaviours that differ most (RULES eta-dead and order): the
#: differential check of the simulators themselves, with the rule differences taken out
RELEASED_RULES = "gfs:adapt_eta=false,queue_order=large-first"
#: our GFS with the previous default reading of Eq. 11's e (evictions / spot starts in the window, sqa.py)
OLD_E = "gfs:e_runs=starts"
#: our GFS with the released simulator's queue order only (RULES order)
LARGE_FIRST = "gfs:queue_order=large-first"
#: our GFS with the released simulator's quota count only (RULES gang-count, its spot half): a running spot gang
#: uses up one pod's GPUs of the quota
GANG_AS_POD = "gfs:quota_count=gang-as-pod"
#: RELEASED_RULES plus the released quota count
RELEASED_QUOTA = RELEASED_RULES + ",quota_count=gang-as-pod"
#: RELEASED_QUOTA plus the rest of the released quota arithmetic: HP demand one pod per HP gang (RULES gang-count,
#: its forecaster half) and Q = f eta (RULES eq10)
RELEASED_ARITH = RELEASED_QUOTA + ",hp_count=gang-as-pod,eq10=released"
VARIANTS = {OLD_E: "spot_scheduler", LARGE_FIRST: "spot_scheduler", RELEASED_RULES: "spot_scheduler",
            GANG_AS_POD: "spot_scheduler", RELEASED_QUOTA: "spot_scheduler", RELEASED_ARITH: "spot_scheduler"}
#: the released baselines with their HP-demand leak fixed by the driver (RULES["demand-leak"]): our policy -> run
LEAK_FIXED = {"lyra": "lyra+leakfix", "yarn-cs": "fifo_spot+leakfix"}
START = "2024-03-01 00:00:00"  # the released simulator's trace_range start (its clock's zero)
NODES, GPUS_PER_NODE = 40, 8
WARMUP_DAYS = 10  # >= 7 d validation + 20 h recorder offset + (seq_len + pred_len) h: its first training
TOLERANCE = 0.15

#: What the driver sets that the released simulator's command line does not (none of its files is edited).
DRIVER_CHANGES = {
    "ranges": "trace_range / log_range are hard-coded to 2024-03 .. 2024-08 with August measured "
              "(simulator.py main); the driver sets them to our warm-up + window (log start on a day boundary, "
              "where the forecaster first trains)",
    "lyra": "lyra is not among the command line's --scheduler choices (utils.get_available_schedulers); the "
            "driver calls utils.simulate_vc(..., 'lyra') directly",
    "embed": "estimator.data_provider reads args.embed, which simulator.py does not define; the driver sets it "
             "(its value is unused: timeenc is not read)",
    "seq_len": "the forecaster's input is --seq_len 672 h (28 days) by default, which needs 36 days of HP-only "
               "history at one-second steps before the first quota; the driver passes --seq_len 24",
    "learning_rate": "--learning_rate 4e-5 (its default, for months of training data) leaves the forecaster at its "
                     "initialisation after the days a short run has: sigma ~ the demand level (measured: mu 231, "
                     "sigma 104 GPUs at 227 GPUs of HP demand), so the 0.9 quantile is above the cluster, f = 0 and "
                     "no spot task starts in the window under any of its policies (all three share the quota); "
                     "the driver passes 1e-3 (measured: mu 225, sigma 5-7, f 87-89 GPUs)",
    "num_workers": "--num_workers 10 DataLoader processes on a 2-core machine; the driver passes 0 (same batches)",
    "leakfix": "only for the rows marked +leakfix: the released Lyra and FIFO never subtract a finished HP task's "
               "GPUs from the per-organisation demand their forecaster reads (lyra.py / fifo_spot.py; spot.py "
               "does); the driver subtracts them when the task's GPUs are released, as spot.py does",
    "recorder": "Recorder.process_seq_data converts every recorded minute to a timestamp with a Python apply "
                "every 300 s (quadratic in the run's length); the driver swaps in a vectorised conversion with "
                "the same output (speed only)",
}

#: Named rule differences between the released simulator and ours: key -> (what, which rows it explains).
RULES = {
    "eta-dead": "released GFS: Eq. 11's eviction feedback never runs: VC.get_eviction_rate builds its frame with "
                "columns time/node/count, dropping 'succeed', so succeed = failed = 0 and eta stays 1; the node "
                "eviction score (Score3) stays 10,000 for the same reason. Ours cuts eta on new evictions.",
    "baseline-quota": "released Lyra and FIFO admit a spot task only while spot GPUs in use + its GPUs <= the "
                      "same forecast quota as GFS (capacity - floor(q0.9 HP)); ours (paper §6 baselines) admit "
                      "spot tasks whenever GPUs are free.",
    "gang-count": "released GFS counts a spot gang's GPUs in use as gpu_request (one pod), not gpu_request x "
                  "worker_num, so gangs overshoot its quota, and its forecaster's HP demand counts one pod of an HP "
                  "gang; ours counts every pod (the released counts: gfs:quota_count=gang-as-pod, hp_count=gang-as-pod).",
    "order": "released GFS and Lyra sort both queues large-first (GPUs per pod descending); ours: PTS small-first "
             "(GPU request, pods, submission), Lyra FIFO.",
    "forecaster": "released forecaster: OrgLinear trained daily on 24 h inputs (--seq_len 24, --learning_rate 1e-3: "
                  "see DRIVER_CHANGES) "
                  "with a 4 h horizon, quota from the 0.9 quantile of the summed Gaussians of the next hour; ours: "
                  "OrgLinear on hourly maxima trained in the replay (1 h horizon, H = 1).",
    "eq10": "released quota = floor(free) x eta with no S_a term (spot held >= H h); ours (eq10=additive): "
            "f eta + S_a, so spot tasks past their guarantee do not use up the quota (the released form: "
            "gfs:eq10=released).",
    "hp-preempt-window": "released GFS and Lyra let HP tasks evict spot tasks only inside log_range; HP tasks "
                         "queue before it. Ours always (no spot runs in the warm-up, so only the tail differs).",
    "fifo-blocking": "released FIFO breaks its spot pass at the first task that does not fit (head-of-line "
                     "blocking), as does its HP pass; re-queued evicted tasks go to the back.",
    "tick": "released: one-second steps, a task starts at the first whole second >= its submission; "
            "ours: event-driven, exact times.",
    "drain": "released: after log_range, spot tasks run without any quota until the trace is empty; ours keeps "
             "the quota (gfs) to the end.",
    "demand-leak": "released Lyra and FIFO never subtract a finished HP task's GPUs from the per-organisation HP "
                   "demand their forecaster reads, so the demand it sees only grows, the forecast passes the "
                   "cluster, the quota is 0 and no spot task starts in the window (they start in the drain); "
                   "the +leakfix rows remove this (DRIVER_CHANGES['leakfix']).",
    "fifo-victims": "released FIFO evicts every task on the first HP-free GPUs of the first node with the fewest "
                    "HP-free GPUs (no cost), and its evicted tasks re-queue at the back; ours (YARN-CS): the "
                    "newest-started spot tasks on the node needing the fewest victims.",
    "lyra-victims": "released Lyra picks victim GPUs by 1 / (pods x GPUs) of the tasks on them (fewest GPUs of "
                    "large tasks); ours: least work at risk (GPUs x run time since start).",
}
#: Which rules explain a difference, per (pair, metric).
EXPLAINS = {
    ("gfs", "spot_jct"): ["eta-dead", "gang-count", "eq10", "order", "forecaster"],
    ("gfs", "spot_jqt"): ["eta-dead", "gang-count", "eq10", "order", "forecaster"],
    ("gfs", "evict"): ["eta-dead", "gang-count", "eq10"],
    ("gfs", "hp_jqt"): ["hp-preempt-window", "tick", "order"],
    ("lyra", "spot_jct"): ["demand-leak", "drain", "baseline-quota", "forecaster", "order"],
    ("lyra", "spot_jqt"): ["demand-leak", "drain", "baseline-quota", "forecaster", "order"],
    ("lyra", "evict"): ["demand-leak", "baseline-quota", "lyra-victims"],
    ("lyra", "hp_jqt"): ["hp-preempt-window", "tick", "order"],
    ("yarn-cs", "spot_jct"): ["demand-leak", "drain", "baseline-quota", "forecaster", "fifo-blocking", "fifo-victims"],
    ("yarn-cs", "spot_jqt"): ["demand-leak", "drain", "baseline-quota", "forecaster", "fifo-blocking", "fifo-victims"],
    ("yarn-cs", "evict"): ["demand-leak", "baseline-quota", "fifo-victims"],
    ("yarn-cs", "hp_jqt"): ["fifo-blocking", "tick"],
    (OLD_E, "spot_jct"): ["eta-dead", "gang-count", "eq10", "order", "forecaster"],
    (OLD_E, "spot_jqt"): ["eta-dead", "gang-count", "eq10", "order", "forecaster"],
    (OLD_E, "evict"): ["eta-dead", "gang-count", "eq10"],
    (OLD_E, "hp_jqt"): ["hp-preempt-window", "tick", "order"],
    (LARGE_FIRST, "spot_jct"): ["eta-dead", "gang-count", "eq10", "forecaster"],
    (LARGE_FIRST, "spot_jqt"): ["eta-dead", "gang-count", "eq10", "forecaster"],
    (LARGE_FIRST, "evict"): ["eta-dead", "gang-count", "eq10"],
    (LARGE_FIRST, "hp_jqt"): ["hp-preempt-window", "tick"],
    (RELEASED_RULES, "spot_jct"): ["gang-count", "eq10", "forecaster"],
    (RELEASED_RULES, "spot_jqt"): ["gang-count", "eq10", "forecaster"],
    (RELEASED_RULES, "evict"): ["gang-count", "eq10", "forecaster"],
    (RELEASED_RULES, "hp_jqt"): ["hp-preempt-window", "tick"],
    (GANG_AS_POD, "spot_jct"): ["eta-dead", "gang-count", "eq10", "order", "forecaster"],
    (GANG_AS_POD, "spot_jqt"): ["eta-dead", "gang-count", "eq10", "order", "forecaster"],
    (GANG_AS_POD, "evict"): ["eta-dead", "gang-count", "eq10"],
    (GANG_AS_POD, "hp_jqt"): ["hp-preempt-window", "tick", "order"],
    (RELEASED_QUOTA, "spot_jct"): ["gang-count", "eq10", "forecaster"],
    (RELEASED_QUOTA, "spot_jqt"): ["gang-count", "eq10", "forecaster"],
    (RELEASED_QUOTA, "evict"): ["gang-count", "eq10", "forecaster"],
    (RELEASED_QUOTA, "hp_jqt"): ["hp-preempt-window", "tick"],
    (RELEASED_ARITH, "spot_jct"): ["forecaster", "tick"],
    (RELEASED_ARITH, "spot_jqt"): ["forecaster", "tick"],
    (RELEASED_ARITH, "evict"): ["forecaster", "tick"],
    (RELEASED_ARITH, "hp_jqt"): ["hp-preempt-window", "tick"],
}
for (_p, _k), _rules in list(EXPLAINS.items()):  # the +leakfix rows: the same rules less the leak and the drain
    if _p in LEAK_FIXED:
        EXPLAINS[(LEAK_FIXED[_p], _k)] = [r for r in _rules if r not in ("demand-leak", "drain")]
METRICS = [("spot_jct", "spot JCT h", 3600.0), ("spot_jqt", "spot JQT h", 3600.0), ("evict", "evict/run %", 0.01),
           ("hp_jqt", "HP JQT s", 1.0)]


# ------------------------------------------------------------------------------------------------ traces


def make_trace(seed: int, days: float, orgs: int = 6):
    """A contended GFS-shaped trace on 40 x 8 A100 GPUs with a WARMUP_DAYS HP-only warm-up."""
    from features.traces.gfs import ContendedSpec, generate_contended

    spec = ContendedSpec(cluster_gpus=NODES * GPUS_PER_NODE, orgs=orgs, days=days, warmup_hours=24.0 * WARMUP_DAYS)
    return generate_contended(spec, seed=seed)


def released_ranges(days: float) -> dict:
    """The released simulator's trace_range / log_range (dates) and our measured window (seconds)."""
    import pandas as pd

    start = pd.Timestamp(START)
    log0 = start + pd.Timedelta(days=WARMUP_DAYS)
    log1 = log0 + pd.Timedelta(seconds=int(days * 86400) - 1)
    fmt = "%Y-%m-%d %H:%M:%S"
    return {"trace_range": [start.strftime(fmt), log1.strftime(fmt)], "log_range": [log0.strftime(fmt), log1.strftime(fmt)],
            "window_s": [float(WARMUP_DAYS * 86400), float(WARMUP_DAYS * 86400 + int(days * 86400))]}


def write_released_input(table, folder: str | Path, days: float) -> Path:
    """Write ``table`` as the released simulator reads it: job_info_df.csv (submit_time in whole seconds from
    START, HP / Spot, gpu_request per pod, worker_num pods), node_info_df.csv (40 x 8 GPUs of the trace's model)
    and ranges.json (trace_range, log_range, our window). Whole-second submissions: the released simulator
    starts a task at the first whole second after it, so both simulators see the same times."""
    import pandas as pd

    from features.traces.gfs import write_gfs_csv

    folder = Path(folder)
    write_gfs_csv(table, folder, nodes=NODES, gpus_per_node=GPUS_PER_NODE)
    jobs = pd.read_csv(folder / "job_info_df.csv")
    jobs["submit_time"] = jobs["submit_time"].apply(lambda s: float(int(-(-s // 1))))  # ceil to whole seconds
    ranges = released_ranges(days)
    end = ranges["window_s"][1]
    jobs = jobs[jobs["submit_time"] < end]  # the released trace_range ends with the window
    jobs.to_csv(folder / "job_info_df.csv", index=False)
    (folder / "ranges.json").write_text(json.dumps(ranges, indent=1))
    return folder


# ------------------------------------------------------------------------------------------------ ours


def run_ours(folder: Path, policy: str, seed: int = 0) -> dict:
    """Our replay of the written trace (read back with load_gfs_spot) on gfs-a100-40."""
    from evaluation.gfs_metrics import gfs_summary
    from features.traces.gfs import load_gfs_spot
    from pipelines.replay import ReplaySpec, prepare_replay, run_replay
    from sim.cluster import load_cluster
    from sim.workload import build_workload

    ranges = json.loads((folder / "ranges.json").read_text())
    table = load_gfs_spot(folder / "job_info_df.csv")
    w = build_workload(table, load_cluster("gfs-a100-40"))
    prep = prepare_replay(ReplaySpec(failures="none", seed=seed), built=(table, w))
    t0, c0 = time.perf_counter(), time.process_time()
    r = run_replay(ReplaySpec(policy=policy, failures="none", seed=seed), prep).result
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    s = gfs_summary(r, window=tuple(ranges["window_s"]))
    return {"spot_jct": s.get("spot_jct_mean", float("nan")), "spot_jqt": s.get("spot_jqt_mean", float("nan")),
            "evict": s["evict_rate_runs"], "hp_jqt": s.get("hp_jqt_mean", float("nan")),
            "spot_tasks": s.get("spot_jobs", 0), "wall_s": wall, "cpu_s": cpu}


# ------------------------------------------------------------------------------------------------ released


def released_metrics(log_csv: Path, window: tuple[float, float]) -> dict:
    """Our metrics from the released simulator's per-job log (``{policy}_log.csv``)."""
    import pandas as pd

    df = pd.read_csv(log_csv)
    m = df[(df["submit_time"] >= window[0]) & (df["submit_time"] < window[1])]
    spot, hp = m[m["type"] == "Spot"], m[m["type"] == "HP"]
    evictions = float(spot["preempt_times"].sum())
    runs = evictions + len(spot)
    return {"spot_jct": float((spot["end_time"] - spot["submit_time"]).mean()), "spot_jqt": float(spot["queue"].mean()),
            "evict": evictions / runs if runs else 0.0, "hp_jqt": float(hp["queue"].mean()), "spot_tasks": int(len(spot))}


def trace_digest(folder: Path) -> str:
    """sha256 of the written trace (jobs, nodes, ranges): a released run is reused only on the same trace."""
    import hashlib

    h = hashlib.sha256()
    for name in ("job_info_df.csv", "node_info_df.csv", "ranges.json"):
        h.update((folder / name).read_bytes())
    return h.hexdigest()


def reusable(work: Path, policy: str, folder: Path, torch_seed: int | None = None) -> bool:
    """Is there a record of a released run of ``policy`` in ``work`` made on this trace (same digest) with the
    same torch seed (None: torch's own default generator state)?"""
    record = work / f"{policy}.json"
    if not record.is_file():
        return False
    info = json.loads(record.read_text())
    return (info.get("trace_sha256") == trace_digest(folder) and info.get("torch_seed") == torch_seed
            and Path(info["log_csv"]).is_file())


def run_released(spot_dir: Path, python: str, folder: Path, policy: str, work: Path, timeout: float,
                 reuse: bool = False, torch_seed: int | None = None) -> dict:
    """Run one released policy in a child process (this file with ``--released-child``); ``policy`` may end in
    ``+leakfix`` (DRIVER_CHANGES['leakfix']). With ``reuse``, take the record of an earlier run in ``work`` when
    it was made on the same trace (same digest)."""
    work.mkdir(parents=True, exist_ok=True)
    ranges = json.loads((folder / "ranges.json").read_text())
    record = work / f"{policy}.json"
    if reuse and reusable(work, policy, folder, torch_seed):
        info = json.loads(record.read_text())
        out = released_metrics(Path(info["log_csv"]), tuple(ranges["window_s"]))
        out.update(wall_s=info["simulate_s"], cpu_s=info["cpu_s"], process_s=float("nan"), reused=True)
        return out
    cmd = [python, str(Path(__file__).resolve()), "--released-child", "--spot-dir", str(spot_dir),
           "--trace", str(folder), "--policy", policy, "--work", str(work)]
    if torch_seed is not None:
        cmd += ["--torch-seed", str(torch_seed)]
    t0 = time.perf_counter()
    with open(work / f"{policy}.stdout", "w") as out:
        proc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, cwd=work, timeout=timeout)
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        tail = (work / f"{policy}.stdout").read_text()[-2000:]
        raise RuntimeError(f"the released simulator's {policy} failed (exit {proc.returncode}):\n{tail}")
    info = json.loads(record.read_text())
    out = released_metrics(Path(info["log_csv"]), tuple(ranges["window_s"]))
    out.update(wall_s=info["simulate_s"], cpu_s=info["cpu_s"], process_s=total)
    return out


def released_child(spot_dir: Path, trace: Path, run_name: str, work: Path, torch_seed: int | None = None) -> int:
    """Run the released simulator's policy ``run_name`` (``+leakfix``: DRIVER_CHANGES['leakfix']) on ``trace``
    (in its own process; cwd = ``work``)."""
    policy, _, fix = run_name.partition("+")
    sys.path.insert(0, str(spot_dir))
    os.chdir(work)
    import numpy as np
    import pandas as pd
    import torch

    import cluster as spot_cluster  # the released simulator's modules (not part of this repository)
    import utils as spot_utils
    from policy.recorder import recorder as spot_recorder

    def process_seq_data(self, org_request_df):  # same output as the released one, vectorised
        data = org_request_df.copy()
        data["gpu_request"] = data["gpu_request"].astype(float)
        data["time"] = self.train_start_timestamp + pd.to_timedelta(data["time"].astype(np.int64), unit="s")
        wide = data.pivot_table(index="time", columns="org_key", values="gpu_request", aggfunc="last")
        order = list(dict.fromkeys(data["org_key"]))
        return wide.reindex(index=list(dict.fromkeys(data["time"])), columns=order).fillna(0.0)

    spot_recorder.Recorder.process_seq_data = process_seq_data
    if fix == "leakfix":
        from policy import policy as spot_policy

        made = []
        init, release = spot_policy.Policy.__init__, spot_cluster.VC.release_resource

        def init_kept(self, *a, **k):
            init(self, *a, **k)
            made.append(self)

        def release_and_forget(self, job):  # an HP task ends: its GPUs leave its organisation's demand
            ok = release(self, job)
            if job["type"] == "HP" and job["status"] == "end" and made:
                made[-1].guar_request_dict[job["org_key"]] -= job["gpu_request"]
            return ok

        spot_policy.Policy.__init__ = init_kept
        spot_cluster.VC.release_resource = release_and_forget
    torch.set_num_threads(1)
    if torch_seed is not None:  # its forecaster's initialisation and batch order (None: torch's default state)
        torch.manual_seed(torch_seed)
    ranges = json.loads((trace / "ranges.json").read_text())
    args = argparse.Namespace(
        experiment_name=f"diff_{run_name}", trace_dir=str(trace), log_dir=str(work / "log"), scheduler=policy,
        colocate=1, sweep=False, guarantee_hour=[1], guarantee_rate=0.9, ckpt_interval=3600, freq="h",
        checkpoints=str(work / "checkpoints"), seq_len=24, label_len=24, pred_len=4, inverse=True, scaling=False,
        enc_in=7, moving_avg=25, num_covariates=3, num_class=3, class_input_dim=[6, 1, 84], class_output_dim=8,
        attn_hidden_dim=16, num_workers=0, train_epochs=10, batch_size=32, patience=3, learning_rate=1e-3,
        des="test", loss="MSE", lradj="type1", use_gpu=False, gpu=0, use_multi_gpu=False, devices="0", embed="timeF")
    log_dir = f"{args.log_dir}/{args.experiment_name}"
    os.makedirs(log_dir + "/logfile", exist_ok=True)
    cl = spot_cluster.Cluster(str(trace / "node_info_df.csv"))
    trace_range = tuple(ranges["trace_range"])
    log_range = tuple((pd.Timestamp(x) - pd.Timestamp(trace_range[0])).total_seconds() for x in ranges["log_range"])
    df = spot_utils.trace_process(str(trace), trace_range, log_range)
    jobs = spot_utils.trace_parser(df)
    args.trace_range, args.log_range = trace_range, log_range
    t0, c0 = time.perf_counter(), time.process_time()
    spot_utils.simulate_vc(jobs, cl, args, log_dir, policy)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    log_csv = Path(log_dir) / cl.cluster_name / f"{policy}_log.csv"
    (work / f"{run_name}.json").write_text(json.dumps({"simulate_s": wall, "cpu_s": cpu, "log_csv": str(log_csv),
                                                       "trace_sha256": trace_digest(trace),
                                                       "torch_seed": torch_seed}))
    return 0


# ------------------------------------------------------------------------------------------------ report


def rel_diff(ours: float, theirs: float) -> float:
    """(ours - theirs) / |theirs|; nan when theirs is 0 or missing."""
    import math

    if theirs is None or ours is None or not math.isfinite(theirs) or not math.isfinite(ours) or theirs == 0:
        return float("nan")
    return (ours - theirs) / abs(theirs)


def table_lines(rows: dict, theirs: dict | None) -> list[str]:
    """The differential table (one row per policy and metric)."""
    pairs = [(p, r) for p, r in [*PAIRS.items(), *VARIANTS.items(), *LEAK_FIXED.items()]
             if p in rows and (theirs is None and r not in LEAK_FIXED.values() or theirs is not None and r in theirs)]
    lines = ["| policy (ours / released) | metric | ours | released | diff | explained by |", "|---|---|---|---|---|---|"]
    for pol, rel in pairs:
        for key, label, unit in METRICS:
            o = rows[pol][key] / unit
            if theirs is None:
                lines.append(f"| {pol} / {rel} | {label} | {o:.2f} | - | - | - |")
                continue
            t = theirs[rel][key] / unit
            d = rel_diff(o, t)
            rules = EXPLAINS[(rel, key)] if rel in LEAK_FIXED.values() else EXPLAINS[(pol, key)]
            if o == 0 and t == 0:  # both zero: nothing differs
                why, ds = "", "equal (0)"
            else:  # x / 0 (no ratio) or a relative difference above the tolerance: named rules
                why = ", ".join(rules) if not (abs(d) <= TOLERANCE) else ""
                ds = "x / 0" if d != d else f"{100 * d:+.0f} %"
            lines.append(f"| {pol} / {rel} | {label} | {o:.2f} | {t:.2f} | {ds} | {why} |")
    lines += ["", "| policy (ours / released) | spot tasks | ours wall s | ours CPU s | released wall s | released CPU s "
                  "| speed ratio (wall) | speed ratio (CPU) |", "|---|---|---|---|---|---|---|---|"]
    for pol, rel in pairs:
        o = rows[pol]
        if theirs is None:
            lines.append(f"| {pol} / {rel} | {o['spot_tasks']} | {o['wall_s']:.2f} | {o.get('cpu_s', float('nan')):.2f} "
                         f"| - | - | - | - |")
        else:
            t = theirs[rel]
            lines.append(f"| {pol} / {rel} | {o['spot_tasks']} / {t['spot_tasks']} | {o['wall_s']:.2f} | "
                         f"{o.get('cpu_s', float('nan')):.2f} | {t['wall_s']:.1f} | {t.get('cpu_s', float('nan')):.1f} | "
                         f"{t['wall_s'] / o['wall_s']:.0f}x | {t.get('cpu_s', float('nan')) / o.get('cpu_s', float('nan')):.0f}x |")
    return lines


def summary_lines(per_seed: dict[int, tuple[dict, dict | None]]) -> list[str]:
    """One row per seed and GFS run against the released GFS: spot JCT, JQT, evictions, speed ratio; and the
    mean over the seeds that have a released run (what "at least as well" is judged on)."""
    gfs_runs = [p for p in ["gfs", *VARIANTS] if any(p in ours for ours, _ in per_seed.values())]
    lines = ["| seed | ours | spot JCT h ours / released | spot JQT h ours / released | evictions % ours / released "
             "| speed (wall) |", "|---|---|---|---|---|---|"]
    sums: dict[str, list[float]] = {}
    for seed, (ours, theirs) in sorted(per_seed.items()):
        t = (theirs or {}).get("spot_scheduler")
        for pol in gfs_runs:
            o = ours.get(pol)
            if o is None:
                continue
            if t is None:
                lines.append(f"| {seed} | {pol} | {o['spot_jct'] / 3600:.2f} / - | {o['spot_jqt'] / 3600:.2f} / - | "
                             f"{100 * o['evict']:.1f} / - | - |")
                continue
            d = rel_diff(o["spot_jct"], t["spot_jct"])
            lines.append(f"| {seed} | {pol} | {o['spot_jct'] / 3600:.2f} / {t['spot_jct'] / 3600:.2f} ({100 * d:+.1f} %) | "
                         f"{o['spot_jqt'] / 3600:.2f} / {t['spot_jqt'] / 3600:.2f} | {100 * o['evict']:.1f} / "
                         f"{100 * t['evict']:.1f} | {t['wall_s'] / o['wall_s']:.0f}x |")
            acc = sums.setdefault(pol, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0])
            for k, v in enumerate((o["spot_jct"], t["spot_jct"], o["spot_jqt"], t["spot_jqt"], o["evict"], t["evict"])):
                acc[k] += v
            acc[6] += 1
    for pol, acc in sums.items():
        n = acc[6]
        if n > 1:
            d = rel_diff(acc[0], acc[1])
            lines.append(f"| mean of {n} | {pol} | {acc[0] / n / 3600:.2f} / {acc[1] / n / 3600:.2f} ({100 * d:+.1f} %) | "
                         f"{acc[2] / n / 3600:.2f} / {acc[3] / n / 3600:.2f} | {100 * acc[4] / n:.1f} / "
                         f"{100 * acc[5] / n:.1f} | |")
    return lines


def run_seed(args, seed: int, out: Path) -> tuple[dict, dict | None, list[str]]:
    """Write one seed's trace, replay ours (and the released simulator with --spot-dir); its table lines."""
    trace_dir = out / f"trace_seed{seed}_{args.days:g}d"
    table = make_trace(seed, args.days, args.orgs)
    write_released_input(table, trace_dir, args.days)
    hp_share = table.frame.attrs.get("hp_series_mean_share", float("nan"))
    print(f"trace: {trace_dir} (seed {seed}, {args.days:g} measured days after {WARMUP_DAYS} d warm-up, "
          f"HP series mean share {hp_share:.3f})", flush=True)
    ours = {}
    for pol in [*args.policies, *(v for v in VARIANTS if "gfs" in args.policies)]:
        ours[pol] = run_ours(trace_dir, pol, seed)
        print(f"ours {pol:8s}: " + ", ".join(f"{k} {v:.4g}" for k, v in ours[pol].items()), flush=True)
    theirs = None
    if args.spot_dir is not None:
        theirs = {}
        work = out / f"released_seed{seed}_{args.days:g}d"
        runs = [PAIRS[p] for p in args.policies] + [LEAK_FIXED[p] for p in args.policies if args.leakfix and p in LEAK_FIXED]
        for rel in runs:
            if args.reuse_only and not reusable(work, rel, trace_dir, args.torch_seed):
                print(f"released {rel}: no earlier run on this trace in {work} (--reuse-only): left out", flush=True)
                continue
            theirs[rel] = run_released(args.spot_dir.resolve(), args.spot_python, trace_dir, rel, work, args.timeout,
                                       reuse=args.reuse_released, torch_seed=args.torch_seed)
            print(f"released {rel:14s}: " + ", ".join(f"{k} {v:.4g}" for k, v in theirs[rel].items()), flush=True)
    theirs = theirs or None
    lines = table_lines(ours, theirs)
    (out / f"report_seed{seed}_{args.days:g}d.md").write_text("\n".join(lines) + "\n")
    (out / f"results_seed{seed}_{args.days:g}d.json").write_text(json.dumps({"ours": ours, "released": theirs}, indent=1))
    return ours, theirs, lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=None, help="one seed (default 0; --seeds for several)")
    ap.add_argument("--seeds", type=int, nargs="+", default=None,
                    help="several seeds, one trace each; ends with a per-seed summary of the GFS runs and their mean")
    ap.add_argument("--days", type=float, default=1.0, help="measured days after the 10-day HP-only warm-up")
    ap.add_argument("--orgs", type=int, default=6)
    ap.add_argument("--spot-dir", type=Path, default=None, help="a checkout of github.com/Sjtucitlab/Spot")
    ap.add_argument("--spot-python", default=sys.executable, help="the Python that runs the released simulator")
    ap.add_argument("--policies", nargs="+", default=list(PAIRS), choices=list(PAIRS))
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per released run")
    ap.add_argument("--leakfix", action="store_true",
                    help="also run the released Lyra and FIFO with their HP-demand leak fixed (rows +leakfix)")
    ap.add_argument("--reuse-released", action="store_true",
                    help="reuse released runs already in --out/released_seed*_*d that were made on the same trace")
    ap.add_argument("--reuse-only", action="store_true",
                    help="with --spot-dir: never start the released simulator, take only runs --reuse-released finds")
    ap.add_argument("--torch-seed", type=int, default=None,
                    help="seed torch in the released simulator's process (its forecaster's initialisation and batch "
                         "order); default: torch's own default state, which repeats run to run")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "gfs_differential")
    ap.add_argument("--released-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--trace", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--policy", help=argparse.SUPPRESS)
    ap.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.released_child:
        return released_child(args.spot_dir, args.trace, args.policy, args.work, args.torch_seed)
    if args.spot_dir is not None and not (args.spot_dir / "simulator.py").is_file():
        print(f"error: --spot-dir {args.spot_dir}: no simulator.py there (a checkout of github.com/Sjtucitlab/Spot)",
              file=sys.stderr)
        return 2
    if not args.days > 0:
        print(f"error: --days must be > 0, got {args.days}", file=sys.stderr)
        return 2
    if args.seed is not None and args.seeds is not None:
        print("error: give --seed or --seeds, not both", file=sys.stderr)
        return 2
    args.reuse_released = args.reuse_released or args.reuse_only
    seeds = args.seeds if args.seeds is not None else [0 if args.seed is None else args.seed]
    out = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    per_seed: dict[int, tuple[dict, dict | None]] = {}
    for seed in seeds:
        ours, theirs, lines = run_seed(args, seed, out)
        per_seed[seed] = (ours, theirs)
        print(f"\nseed {seed}:")
        print("\n".join(lines))
        if theirs is not None:
            print("\nNamed rule differences:")
            used = sorted({r for ln in lines for r in RULES if f" {r}" in ln or f"| {r}" in ln})
            for r in used:
                print(f"- {r}: {RULES[r]}")
    if args.spot_dir is None:
        print("\nThe released simulator was not run. To add it: git clone https://github.com/Sjtucitlab/Spot "
              "/tmp/spot_gfs; python -m venv --system-site-packages /tmp/spotenv; /tmp/spotenv/bin/pip install "
              "chinesecalendar torch; then rerun with --spot-dir /tmp/spot_gfs --spot-python /tmp/spotenv/bin/python")
    if "gfs" in args.policies:
        summary = summary_lines(per_seed)
        tag = "_".join(str(s) for s in seeds)
        (out / f"summary_seeds{tag}_{args.days:g}d.md").write_text("\n".join(summary) + "\n")
        print("\nGFS against the released GFS, per seed:")
        print("\n".join(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
