"""SchedMate's claims (``schedcast reproduce schedmate``), measured on schedcast's replays and on real logs.

- Fig. 10d (Lucid vs Lucid + SchedMate, schedmate.txt:298) and Fig. 13c (the slowdown-detection sweep,
  schedmate.txt:360): replays of the failure-shaped synthetic presets (acme-failures, helios-failures;
  offered load 0.9) in which Lucid's profiler reads each job during its warm-up (Lucid's ``warmup_error``:
  the profiler's mean relative error on SM utilisation, 19.3 %, schedmate.txt:329), so some packings
  fall below the slowdown threshold theta; Lucid (as SchedMate describes it, schedmate.txt:210) has no
  runtime check of a packing (``unstable_speed=0``); SchedMate's Metric Tracker detects a slowdown with
  the rate it MEASURES on real progress logs (benchmarks/realsets/, the held-out batches with committed
  excerpts), not a constant. Preconditions: packings below theta occur, mis-packings occur.
- Table 4 (the Failure Handler as an infrastructure-failure detector, schedmate.txt:334): scored on the
  real failure logs of benchmarks/realsets/ that are held out and whose excerpts are committed (split
  `held-out` in the manifests: batches 17, 21 and 22; batch 20 was held out at first sight but is `tuned`
  since it exposed a defect of the handler that was fixed; batches 16, 18 and 19 were tuned), in the
  paper's taxonomy (infrastructure / framework / script, adapted from Acme, schedmate.txt:198); the
  generated-log scores are a cause. The replay's handler is a coin with the per-type rates measured
  there (recall on infrastructure, false alarms on framework and script failures).
- Fig. 11 (standalone SchedMate vs QSSF 25.7 % and Tiresias 16 %, the Failure Handler's further 12.5 %,
  schedmate.txt:320) on the same presets, >= 3 seeds (workload and policy randomness) in a full run.
- Not testable here, with the reason: Sia + SchedMate (schedmate.txt:315: no Sia policy in schedcast),
  the physical cluster's 23.2 % (schedmate.txt:292: a testbed), the Advisor vs GA2M on real material
  (Fig. 12: no public trace carries job code or launch commands; the generated-corpus figure is given
  in the detail).

One value per seed goes into each replay measure's samples; the text-tool measures (one held-out set of
logs, no seeds) give an interval of their own: Wilson for a proportion, a percentile bootstrap for F1.
"""
from __future__ import annotations

import csv
import math
import time
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.claims import Measurement, ReproduceContext

FAILURES = "trace,reaction=1800"
LOAD = 0.9  # offered load the presets are sized to
WARMUP = 0.193  # Lucid's profiler: mean relative SM-utilisation error (schedmate.txt:329)
LUCID = f"lucid:initial=history,unstable_speed=0,warmup_error={WARMUP}"
SM = "schedmate-sjf:host=history"
BASELINES = {"qssf": "qssf", "tiresias": "tiresias", "fifo": "fifo", "horus": "horus"}
REALSETS = Path(__file__).resolve().parents[2] / "benchmarks" / "realsets"
EXCERPTS = REALSETS / "excerpts"

# settings of the Lucid case study: (workload, theta); 0.5 is the paper's (schedmate.txt:292, 360), 0.65
# the "35 % slowdown" of schedmate.txt:223
# (workload, theta, offered load); the paper states no load: 0.9 (the presets' default sizing) barely queues,
# 1.5 queues (a named setting, not the paper's)
LUCID_SETTINGS = {"acme": ("acme-failures", 0.5, LOAD), "helios": ("helios-failures", 0.5, LOAD),
                  "acme-t65": ("acme-failures", 0.65, LOAD), "acme-t65-l1.5": ("acme-failures", 0.65, 1.5)}
F11_SETTINGS = {"acme": ("acme-failures", LOAD), "helios": ("helios-failures", LOAD), "acme-l1.5": ("acme-failures", 1.5)}
QUICK = {"jobs": 300, "lucid": ("acme", "acme-t65"), "f11": ("acme",), "sweep": (0.0, 0.5, 1.0), "folds": 3}
# full: 2,000 jobs, >= 3 seeds, Acme settings only (the paper's Fig. 11 / 13c numbers are Acme's): the helios
# settings above stay defined for a user's own run but are left out to keep the ledger within minutes on a
# shared 2-core machine
FULL = {"jobs": 2000, "lucid": ("acme", "acme-t65", "acme-t65-l1.5"), "f11": ("acme", "acme-l1.5"),
        "sweep": (0.0, 0.5, 1.0), "folds": 3}


def _m(**kw: Any) -> Measurement:
    return Measurement(**kw)


# -- real material ---------------------------------------------------------------------------------------
def _held_out(manifest: str, kind: str) -> list[dict]:
    """The manifest's items marked `held-out` whose excerpts are committed: no rule was changed for them
    (a batch that exposed a defect which was then fixed is marked `tuned` and leaves this set whole)."""
    import yaml

    items = yaml.safe_load((REALSETS / manifest).read_text()) or []
    return [it for it in items if it.get("split") == "held-out" and (EXCERPTS / kind / f"{it['id']}.log").exists()]


def _batches(items: list[dict]) -> str:
    """The batches a held-out set comes from, for the detail ("batches 17, 21, 22")."""
    b = sorted({int(it["batch"]) for it in items if it.get("batch") is not None})
    return ("batch " if len(b) == 1 else "batches ") + ", ".join(map(str, b)) if b else "unnumbered batches"


def _lines(kind: str, ident: str) -> list[str]:
    return (EXCERPTS / kind / f"{ident}.log").read_text(encoding="utf-8", errors="replace").splitlines()


def real_failures() -> list[dict]:
    """The Failure Handler on the held-out real failure logs with committed excerpts: per log the
    truth and the answer (kind in the Acme taxonomy, root line)."""
    from models.schedmate.failures import FailureHandler

    fh = FailureHandler()
    rows = []
    for it in _held_out("failures.yaml", "failures"):
        lines = _lines("failures", it["id"])
        d = fh.diagnose(lines)
        tail = fh.diagnose(lines[-500:])  # the paper's baseline: the last 500 lines only
        rows.append({"id": it["id"], "batch": it.get("batch"), "truth": it["kind"], "kind": d.kind,
                     "tail_kind": tail.kind,
                     "line_ok": d.line_index is not None and d.line_index + 1 == it["line"]})
    return rows


def real_progress() -> list[dict]:
    """The Metric Tracker on the held-out real progress logs with committed excerpts."""
    from models.schedmate.evaluate import loss_read_right
    from models.schedmate.tracker import MetricTracker

    tr = MetricTracker()
    rows = []
    for it in _held_out("progress.yaml", "progress"):
        p = tr.track(_lines("progress", it["id"]))
        rows.append({"id": it["id"], "batch": it.get("batch"), "step_ok": p.step == it["step"],
                     "loss_ok": loss_read_right(it.get("loss"), p.loss)})
    return rows


def _prf(rows: list[dict], key: str = "kind") -> tuple[float, float, float, float]:
    tp = sum(r[key] == "infrastructure" and r["truth"] == "infrastructure" for r in rows)
    fp = sum(r[key] == "infrastructure" and r["truth"] != "infrastructure" for r in rows)
    fn = sum(r[key] != "infrastructure" and r["truth"] == "infrastructure" for r in rows)
    p = tp / (tp + fp) if tp + fp else float("nan")
    r = tp / (tp + fn) if tp + fn else float("nan")
    f1 = 2 * p * r / (p + r) if tp else 0.0
    acc = sum((x[key] == "infrastructure") == (x["truth"] == "infrastructure") for x in rows) / len(rows)
    return p, r, f1, acc


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95 % Wilson interval of a proportion (the spread of a text tool's score over its logs)."""
    if n == 0:
        return (math.nan, math.nan)
    p = successes / n
    den = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / den
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / den
    return (max(0.0, mid - half), min(1.0, mid + half))


def _boot_f1(rows: list[dict], reps: int = 2000, seed: int = 0) -> tuple[float, float]:
    """95 % percentile-bootstrap interval of the infrastructure F1 over the logs (seeded)."""
    rng = np.random.default_rng(seed)
    vals = [_prf([rows[i] for i in rng.integers(0, len(rows), len(rows))])[2] for _ in range(reps)]
    return (float(np.percentile(vals, 2.5)), float(np.percentile(vals, 97.5)))


def table4(cfg: dict) -> tuple[dict[str, Measurement], dict[str, float]]:
    """Table 4 on real held-out logs; returns the measures and the per-type rates the replay's handler uses."""
    from models.schedmate.evaluate import failure_handler_scores

    rows = real_failures()
    if not rows:
        why = "no held-out real failure log with a committed excerpt under benchmarks/realsets/excerpts/failures"
        return {k: _m(not_testable=why) for k in ("t4_f1@real", "t4_precision@real", "t4_accuracy@real",
                                                  "t4_locator_minus_tail_f1@real")}, {}
    p, r, f1, acc = _prf(rows)
    tp_, tr_, tf1, tacc = _prf(rows, "tail_kind")
    by = {t: [x for x in rows if x["truth"] == t] for t in ("infrastructure", "framework", "script")}
    rates = {"recall": r,
             "false_alarm_framework": (sum(x["kind"] == "infrastructure" for x in by["framework"]) / len(by["framework"])
                                       if by["framework"] else 0.0),
             "false_alarm_script": (sum(x["kind"] == "infrastructure" for x in by["script"]) / len(by["script"])
                                    if by["script"] else 0.0)}
    gen = failure_handler_scores(60 if cfg["jobs"] < 1000 else 300, 0, method="locator")
    n = {t: len(v) for t, v in by.items()}
    detail = (f"{len(rows)} held-out real logs ({_batches(rows)}, committed excerpts; {n['infrastructure']} infrastructure, "
              f"{n['framework']} framework, {n['script']} script): precision {p:.3f}, recall {r:.3f}, F1 {f1:.3f}, "
              f"accuracy {acc:.3f}, root line {np.mean([x['line_ok'] for x in rows]):.3f}; unanswered "
              f"{sum(x['kind'] is None for x in rows)}")
    causes = {"generated logs (same project wrote the logs and the classifier): F1": round(gen["f1"], 4),
              "generated logs: precision": round(gen["precision"], 4),
              "recall on real infrastructure logs": round(r, 4),
              "real logs the handler did not answer": f"{sum(x['kind'] is None for x in rows)} of {len(rows)}"}
    called = [x for x in rows if x["kind"] == "infrastructure"]
    right = sum((x["kind"] == "infrastructure") == (x["truth"] == "infrastructure") for x in rows)
    tps = sum(x["truth"] == "infrastructure" for x in called)
    cav = [f"held-out real logs ({_batches(rows)}; public issue threads), labelled by us from the excerpts "
           "before the handler ran on them"]
    out = {
        "t4_f1@real": _m(value=f1, interval=_boot_f1(rows), n=len(rows), detail=detail, causes=causes, caveats=cav),
        "t4_precision@real": _m(value=p, interval=wilson(tps, len(called)), n=len(called), detail=detail,
                                causes=causes, caveats=cav),
        "t4_recall@real": _m(value=r, interval=wilson(tps, len(by["infrastructure"])), n=len(by["infrastructure"]),
                             detail=detail, causes=causes, caveats=cav),
        "t4_accuracy@real": _m(value=acc, interval=wilson(right, len(rows)), n=len(rows), detail=detail,
                               causes=causes, caveats=cav),
        "t4_locator_minus_tail_f1@real": _m(
            not_testable="the real excerpts are short (<= 15 lines): the last 500 lines ARE the excerpt, so the "
                         f"paper's baseline reads the same text (tail F1 {tf1:.3f} = locator F1 {f1:.3f})")}
    return out, rates


def tracker(cfg: dict) -> tuple[dict[str, Measurement], float | None]:
    rows = real_progress()
    if not rows:
        why = "no held-out real progress log with a committed excerpt under benchmarks/realsets/excerpts/progress"
        return {"f13_tracker_success@real": _m(not_testable=why)}, None
    step = [float(r["step_ok"]) for r in rows]
    rate = float(np.mean(step))
    detail = (f"{len(rows)} held-out real progress logs ({_batches(rows)}): step read right {rate:.3f}, loss within 1 % "
              f"{np.mean([r['loss_ok'] for r in rows]):.3f}; misses: "
              + ", ".join(r["id"] for r in rows if not r["step_ok"]))
    return {"f13_tracker_success@real": _m(value=rate, interval=wilson(int(sum(step)), len(step)), n=len(step),
                                           detail=detail)}, rate


# -- replays ---------------------------------------------------------------------------------------------
def _workload(name: str, jobs: int, seed: int, data_dir: Any, load: float = LOAD) -> Any:
    from pipelines.replay import build_source

    return build_source(synthetic=name, jobs=jobs, seed=seed, offered_load=load, data_dir=str(data_dir))[1]


def group_profiles(workload: Any, seed: int) -> Any:
    """A copy of the workload whose jobs of one group (same template: the same code and model) share one
    Lucid workload profile, drawn as Lucid draws a job's (by GPU-time, seeded) for the group's first job.
    SchedMate's bypass averages the utilisation of similar jobs (schedmate.txt:175); that means something
    only when similar jobs run similar workloads, which per-job profile draws (Lucid's default, independent
    of the job's text) do not give."""
    from dataclasses import replace

    from sim.interference import InterferenceModel
    from sim.policies.lucid.workload import PROFILE_COLUMNS, draw_profiles
    from sim.policies.schedmate_material import group_keys

    interference = InterferenceModel.load()
    work = np.asarray(workload.duration, dtype=float) * np.asarray(workload.gpus, dtype=float)
    keys = draw_profiles(work, interference, np.random.default_rng([seed, 41]))
    first: dict[str, str] = {}
    shared = [first.setdefault(g, k) for g, k in zip(group_keys(workload.frame), keys)]
    frame = workload.frame.copy()
    frame["profile_key"] = shared
    for col in PROFILE_COLUMNS:
        frame[f"profile_{col}"] = interference.solo.loc[shared, col].to_numpy()
    out = replace(workload, partition=list(workload.partition))
    out.frame = frame
    return out


class _Replays:
    """Replays kept per (workload, policy, seed); the workload and its failures are drawn per seed."""

    def __init__(self, ctx: ReproduceContext, jobs: int) -> None:
        self.ctx, self.jobs, self.done, self.works, self.failures = ctx, jobs, {}, {}, {}

    def work(self, name: str, seed: int) -> Any:
        """``name``: a preset, ``preset@load``, and ``#group`` for Lucid profiles shared by a job group."""
        if (name, seed) not in self.works:
            base, _, tag = name.partition("#")
            preset, _, load = base.partition("@")
            w = _workload(preset, self.jobs, seed, self.ctx.data_dir, float(load) if load else LOAD)
            self.works[(name, seed)] = group_profiles(w, seed) if tag == "group" else w
        return self.works[(name, seed)]

    def run(self, name: str, policy: str, seed: int, oracle: bool = False) -> dict[str, Any]:
        key = (name, policy, seed, oracle)
        if key not in self.done:
            from pipelines.replay import PreparedReplay, ReplaySpec, run_replay
            from sim.failures import failures_from_spec

            w = self.work(name, seed)
            if (name, seed) not in self.failures:
                self.failures[(name, seed)] = failures_from_spec(FAILURES, w, seed)
            failures, rule = self.failures[(name, seed)]
            extras = {"failures": failures, "restart": rule}
            if oracle:
                extras["predictions"] = list(w.duration)
            t0 = time.perf_counter()
            prepared = PreparedReplay(table=None, workload=w, extras=extras, predictor=None, failures=FAILURES,
                                      has_spot=False)
            r = run_replay(ReplaySpec(policy=policy, seed=seed, failures=FAILURES), prepared).result
            end, submit = np.asarray(r.end, dtype=float), np.asarray(w.submit, dtype=float)
            start = np.asarray(r.first_start, dtype=float)
            ok = np.isfinite(end)
            jct = end[ok] - submit[ok]
            self.done[key] = {"jct": float(np.mean(jct)), "wait": float(np.mean(start[ok] - submit[ok])),
                              "stats": dict(r.policy_stats), "wall_s": time.perf_counter() - t0}
            self.ctx.progress(f"schedmate: {name} seed {seed} {policy}: avg JCT {self.done[key]['jct']:.0f} s "
                              f"({self.done[key]['wall_s']:.1f} s)")
        return self.done[key]

    def jcts(self, name: str, policy: str, seeds: list[int], oracle: bool = False) -> list[float]:
        return [self.run(name, policy, s, oracle)["jct"] for s in seeds]

    def stat(self, name: str, policy: str, seeds: list[int], key: str) -> list[float]:
        return [float(self.run(name, policy, s)["stats"].get(key, float("nan"))) for s in seeds]


def _mean(x: list[float]) -> float:
    return float(np.mean(x)) if x else float("nan")


def _lsm(theta: float, det: float | None, extra: str = "") -> str:
    d = "" if det is None else f",detection={det:.4g}"
    # SchedMate's Lucid integration is the bypass, the durations and the cancellation (schedmate.txt:212-218):
    # no Failure Handler there (the failures still happen; both sides restart after the human's reaction)
    return f"lucid-schedmate:initial=history,failure_handler=false,warmup_error={WARMUP},theta={theta:g}{d}{extra}"


def lucid_case(rep: _Replays, cfg: dict, seeds: list[int], det: float | None) -> dict[str, Measurement]:
    """Fig. 10d and Fig. 13c per setting, with their preconditions and causes."""
    out: dict[str, Measurement] = {}
    for setting in cfg["lucid"]:
        preset, theta, load = LUCID_SETTINGS[setting]
        name = f"{preset}@{load:g}#group"
        ours = _lsm(theta, det)
        base = rep.jcts(name, LUCID, seeds)
        sm = rep.jcts(name, ours, seeds)
        ratios = [b / o for b, o in zip(base, sm)]
        below = rep.stat(name, ours, seeds, "schedmate_packs_below_theta")
        mis = rep.stat(name, ours, seeds, "schedmate_mispacks")
        packs = rep.stat(name, ours, seeds, "lucid_packs")
        cancelled = rep.stat(name, ours, seeds, "schedmate_cancelled_packings")
        out[f"f10d_packs_below_theta@{setting}"] = _m(value=_mean(below), samples=below)
        out[f"f10d_mispacks@{setting}"] = _m(value=_mean(mis), samples=mis)
        variants = {"Lucid with its own oracle split of unstable pairs (unstable_speed=0.5)":
                        ("base", LUCID.replace("unstable_speed=0", "unstable_speed=0.5")),
                    "exact profiles on both sides (warmup_error=0)": ("both", None),
                    "every slowdown detected (detection=1)": ("ours", _lsm(theta, 1.0)),
                    "no packing cancelled (theta=0)": ("ours", _lsm(0.0, 0.0)),
                    "profiling kept (skip_profiling=false)": ("ours", _lsm(theta, det, ",skip_profiling=false"))}
        causes: dict[str, float | str] = {}
        for label, (side, pol) in variants.items():
            if side == "base":
                v = [b / o for b, o in zip(rep.jcts(name, pol, seeds), sm)]
            elif side == "both":
                v = [b / o for b, o in zip(rep.jcts(name, LUCID.replace(f"warmup_error={WARMUP}", "warmup_error=0"), seeds),
                                           rep.jcts(name, ours.replace(f"warmup_error={WARMUP}", "warmup_error=0"), seeds))]
            else:
                v = [b / o for b, o in zip(base, rep.jcts(name, pol, seeds))]
            causes[label] = round(_mean(v), 4)
        per_job = name.replace("#group", "")
        causes["profiles drawn per job, independent of the job's text (Lucid's default draw)"] = round(_mean(
            [b / o for b, o in zip(rep.jcts(per_job, LUCID, seeds), rep.jcts(per_job, ours, seeds))]), 4)
        causes["packings below theta / mis-packings / packings / cancelled (mean per seed)"] = \
            f"{_mean(below):.1f} / {_mean(mis):.1f} / {_mean(packs):.1f} / {_mean(cancelled):.1f}"
        causes["detection rate used (measured on real progress logs)"] = "n/a" if det is None else round(det, 3)
        detail = (f"{name}, theta {theta:g}, {len(seeds)} seeds: Lucid {_mean(base):.0f} s, Lucid+SchedMate "
                  f"{_mean(sm):.0f} s; packings below theta {_mean(below):.1f}, mis-packings {_mean(mis):.1f} of "
                  f"{_mean(packs):.1f} packings per seed")
        out[f"f10d_lucid_over_lucid_sm@{setting}"] = _m(samples=ratios, detail=detail, causes=causes)
        # Fig. 13c: the detection-rate sweep (a true slowdown detected with that probability)
        sweep = {r: rep.jcts(name, _lsm(theta, r), seeds) for r in cfg["sweep"]}
        half = [1.0 - a / z for a, z in zip(sweep[0.5], sweep[0.0])]
        full = [1.0 - a / z for a, z in zip(sweep[1.0], sweep[0.0])]
        sd = f"{name}, theta {theta:g}: " + ", ".join(f"detection {r:g}: {_mean(v):.0f} s" for r, v in sweep.items())
        out[f"f13c_gain_at_half@{setting}"] = _m(samples=half, detail=sd)
        out[f"f13c_gain_full@{setting}"] = _m(samples=full, detail=sd)
        if setting == "acme":
            err = rep.stat(name, ours, seeds, "schedmate_util_rel_error")
            capped = rep.stat(name, ours, seeds, "schedmate_util_rel_error_capped")
            prof = rep.stat(name, ours, seeds, "lucid_profile_util_rel_error")
            out["f12b_sm_util_error@acme"] = _m(
                samples=err, detail=f"{name}: SchedMate (matches' mean) {_mean(err):.3f}, Lucid's warm-up profiler "
                                    f"{_mean(prof):.3f} (an input here: warmup_error={WARMUP})",
                causes={"errors capped at 100 % (the paper truncates its Fig. 12b plot)": round(_mean(capped), 4),
                        "profiles drawn per job, independent of the job's text (Lucid's default draw)": round(_mean(
                            rep.stat(name.replace("#group", ""), ours, seeds, "schedmate_util_rel_error")), 4)})
    return out


def fig11(rep: _Replays, cfg: dict, seeds: list[int], rates: dict[str, float]) -> dict[str, Measurement]:
    out: dict[str, Measurement] = {}
    fh_real = (f"schedmate-sjf-fh:host=history,recall={rates['recall']:.4g},"
               f"false_alarm_framework={rates['false_alarm_framework']:.4g},"
               f"false_alarm_script={rates['false_alarm_script']:.4g}") if rates else "schedmate-sjf-fh:host=history"
    for setting in cfg["f11"]:
        preset, load = F11_SETTINGS[setting]
        name = f"{preset}@{load:g}"
        sm = rep.jcts(name, SM, seeds)
        oracle = rep.jcts(name, "spjf", seeds, oracle=True)
        waits = [rep.run(name, "qssf", s)["wait"] / rep.run(name, "qssf", s)["jct"] for s in seeds]
        out[f"f11_qssf_wait_share@{setting}"] = _m(samples=waits)
        cov = rep.stat(name, SM, seeds, "schedmate_coverage")
        for label, pol in BASELINES.items():
            theirs = rep.jcts(name, pol, seeds)
            gains = [1.0 - a / b for a, b in zip(sm, theirs)]
            causes = {f"SJF on the true durations vs {label} (the room an estimate can use)":
                          round(_mean([1.0 - a / b for a, b in zip(oracle, theirs)]), 4),
                      "advisor coverage": round(_mean(cov), 3),
                      "QSSF's order: GPUs x duration (priority=service)":
                          round(_mean([1.0 - a / b for a, b in zip(rep.jcts(name, SM + ",priority=service", seeds),
                                                                   theirs)]), 4)}
            out[f"f11_sm_vs_{label}@{setting}"] = _m(
                samples=gains, causes=causes,
                detail=f"{name}: {label} {_mean(theirs):.0f} s, SchedMate {_mean(sm):.0f} s ({len(seeds)} seeds)")
        fh = rep.jcts(name, fh_real, seeds)
        gains = [1.0 - a / b for a, b in zip(fh, sm)]
        st = rep.run(name, fh_real, seeds[0])["stats"]
        infra = rep.stat(name, fh_real, seeds, "schedmate_fh_infrastructure")
        out[f"f11_infra_failures@{setting}"] = _m(samples=infra)
        causes = {
            "the generated-log classifier instead of the real-log rates (seed 0)":
                round(1.0 - rep.jcts(name, "schedmate-sjf-fh:host=history", seeds[:1])[0] / sm[0], 4),
            "perfect handler (recall=1, no false alarm)":
                round(_mean([1.0 - a / b for a, b in zip(rep.jcts(name, "schedmate-sjf-fh:host=history,recall=1,precision=1",
                                                                  seeds), sm)]), 4),
            "no node cordoned after a recognised failure (repair=0)":
                round(_mean([1.0 - a / b for a, b in zip(rep.jcts(name, fh_real + ",repair=0", seeds), sm)]), 4),
            "cordon 2 h instead of 30 min (repair=7200)":
                round(_mean([1.0 - a / b for a, b in zip(rep.jcts(name, fh_real + ",repair=7200", seeds), sm)]), 4),
            "real-log rates used: recall / false alarms framework / script":
                ("n/a" if not rates else f"{rates['recall']:.3f} / {rates['false_alarm_framework']:.3f} / "
                                         f"{rates['false_alarm_script']:.3f}"),
            "failures / infrastructure (seed 0)": f"{st.get('schedmate_fh_failures')} / {st.get('schedmate_fh_infrastructure')}",
            "restart without the handler": "the restart rule's human reaction time (reaction=1800 s)"}
        out[f"f11_fh_gain@{setting}"] = _m(
            samples=gains, causes=causes,
            detail=f"{name}: SchedMate {_mean(sm):.0f} s, + Failure Handler (real-log rates) {_mean(fh):.0f} s")
    return out


def fig12_generated(rep: _Replays, seed: int) -> str:
    """The Advisor vs Lucid's GA2M on the GENERATED corpus (acme-failures), for the detail only."""
    from features.duration import duration_features
    from models.schedmate.advisor import SchedulingAdvisor
    from models.tabular import make_duration_model
    from sim.policies.schedmate import JobTexts

    w = rep.work("acme-failures", seed)
    f = w.frame
    submit, dur = np.asarray(w.submit, dtype=float), np.asarray(w.duration, dtype=float)
    cut = float(np.median(submit))
    hist, test = np.flatnonzero(submit + dur <= cut), np.flatnonzero(submit > cut)
    X = duration_features(f)
    X = X.loc[:, X.notna().any()]
    lucid = np.asarray(make_duration_model("ebm", fast=True).fit(X.iloc[hist], dur[hist]).predict(X.iloc[test]))
    texts = JobTexts(f, list(w.gpus), "corpus", 0)
    adv = SchedulingAdvisor(t_score=0.9, k=3, embedder="hash")
    for j in hist:
        adv.observe(str(j), texts.text(int(j)), float(dur[j]), float(submit[j] + dur[j]))
    advice = [adv.advise(texts.text(int(j)), cut) for j in test]
    sm = np.array([a.duration if a is not None else g for a, g in zip(advice, lucid)])
    truth = np.maximum(dur[test], 1.0)
    return (f"generated corpus (acme-failures, seed {seed}): Advisor+GA2M within 100 % "
            f"{np.mean(np.abs(sm - dur[test]) / truth < 1):.3f}, GA2M {np.mean(np.abs(lucid - dur[test]) / truth < 1):.3f}")


# -- run -------------------------------------------------------------------------------------------------
def run(ctx: ReproduceContext) -> dict[str, Measurement]:
    cfg = QUICK if ctx.quick else FULL
    seeds = (list(ctx.seeds)[:1] if ctx.quick else list(ctx.seeds)) or [0]
    t0 = time.perf_counter()
    out: dict[str, Measurement] = {}
    wants = getattr(ctx, "wants", lambda *ids: True)
    t4, rates = table4(cfg)
    out.update(t4)
    tr, det = tracker(cfg)
    out.update(tr)
    rep = _Replays(ctx, cfg["jobs"])
    if wants("f10d-lucid-schedmate-jct", "f13c-detection-half", "f13c-detection-full", "f12b-sm-util-error"):
        out.update(lucid_case(rep, cfg, seeds, det))
    if wants("f11-sm-vs-qssf", "f11-sm-vs-tiresias", "f11-sm-vs-fifo", "f11-sm-vs-horus", "f11-failure-handler-gain"):
        out.update(fig11(rep, cfg, seeds, rates))
    gen = fig12_generated(rep, seeds[0]) if wants("f12-advisor-beats-ga2m") else "not run (--claim)"
    why12 = ("no public trace carries a job's code or launch command with its duration (the job-level traces in "
             "../shared/data give a VC and a GPU count only), so the Advisor cannot be run on real material")
    out["f12_advisor_within_100"] = _m(not_testable=why12, detail=gen)
    out["f12_advisor_minus_ga2m"] = _m(not_testable=why12, detail=gen)
    out["f12_ga2m_within_100"] = _m(not_testable=why12, detail=gen)
    out["t3_sia_jct_cut"] = _m(not_testable="schedcast has no Sia policy (elastic, heterogeneity-aware, "
                                            "profile-as-you-go), so Sia + SchedMate cannot be replayed")
    out["t1_physical_jct_cut"] = _m(not_testable="a physical 128-GPU A800 testbed run (Ray, Qwen-2.5-7B)")
    _settings(ctx, cfg, seeds, det, rates)
    _write(ctx, rep, out, time.perf_counter() - t0)
    return out


def _settings(ctx: ReproduceContext, cfg: dict, seeds: list[int], det: float | None, rates: dict) -> None:
    settings = getattr(ctx, "settings", None)
    if not isinstance(settings, dict):
        return
    for s in cfg["lucid"]:
        name, theta, load = LUCID_SETTINGS[s]
        settings[s] = {"trace": f"{name} (synthetic preset)", "cluster": f"preset's, sized to offered load {load:g}",
                       "offered_load": load, "seeds": seeds, "jobs": cfg["jobs"], "theta": theta,
                       "lucid_warmup_error": WARMUP, "detection": det, "tables": ["schedmate_replays.csv"]}
    for s in cfg["f11"]:
        name, load = F11_SETTINGS[s]
        settings.setdefault(s, {"trace": f"{name} (synthetic preset)", "offered_load": load, "seeds": seeds,
                                "jobs": cfg["jobs"], "tables": ["schedmate_replays.csv"]})
    settings["real"] = {"trace": "benchmarks/realsets held-out batch (committed excerpts)", "handler_rates": rates}


def _write(ctx: ReproduceContext, rep: _Replays, out: dict[str, Measurement], wall: float) -> None:
    """schedmate_replays.csv (every replay) and schedmate_replays.md (the measures with their details)."""
    try:
        ctx.out.mkdir(parents=True, exist_ok=True)
        with open(ctx.out / "schedmate_replays.csv", "w", newline="") as fh:
            wr = csv.writer(fh)
            wr.writerow(["workload", "policy", "seed", "true_durations", "avg_jct_s", "avg_wait_s", "wall_s"])
            for (name, policy, seed, oracle), r in sorted(rep.done.items()):
                wr.writerow([name, policy, seed, oracle, f"{r['jct']:.1f}", f"{r['wait']:.1f}", f"{r['wall_s']:.2f}"])
        L = ["# SchedMate replays", "", f"{'quick (smoke test)' if ctx.quick else 'full'} mode, {wall:.0f} s; "
             f"failures `{FAILURES}`; job material SYNTHETIC (features.jobcorpus) except the real logs.", "",
             "| measure | value | detail |", "|---|---|---|"]
        for k, m in out.items():
            v = "n/a" if m.value is None or not math.isfinite(m.value) else f"{m.value:.4f}"
            L.append(f"| {k} | {v} | {(m.detail or m.not_testable or '').replace('|', '/')} |")
        (ctx.out / "schedmate_replays.md").write_text("\n".join(L) + "\n")
    except OSError:
        pass
