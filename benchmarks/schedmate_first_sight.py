"""The Advisor's FIRST-SIGHT answers on the recent command batches, and the calibration they support (issue 41).

Each batch of benchmarks/realsets/commands.yaml was labelled and committed before the Advisor ran on it; the code
as it stood at that commit is what a new user met. `records` rebuilds those first-sight answers: for each batch it
extracts the tree of the commit that added the batch's labels (`git archive`), runs that code's extractor on the
batch's commands and keeps, per scored field, the value, whether it was right, the evidence kind and the confidence.
The records are committed (benchmarks/realsets/first_sight_commands.json): they are the only honest measure of how
often each kind of evidence is right on material nobody had tuned for.

`calibrate` fits the per-kind table that features/schedmate_text/evidence.py uses (FIRST_SIGHT_COUNTS: how often
each (field, kind) was right at first sight; a kind right less often than CALIBRATION_FLOOR is capped below the
threshold) and estimates what it does on fresh material with a leave-one-batch-out rotation: fit the table on all
batches but one, apply it to the one left out batch's first-sight answers, score, rotate.

    python benchmarks/schedmate_first_sight.py records --real /tmp/realsets        # ~1 min; needs git history
    python benchmarks/schedmate_first_sight.py records --real /tmp/realsets --batch 24 --batch 25   # those only
    python benchmarks/schedmate_first_sight.py calibrate                            # seconds
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's features/, not an installed copy's
    sys.path.insert(0, str(ROOT))
RECORDS = ROOT / "benchmarks" / "realsets" / "first_sight_commands.json"
#: batch -> the commit whose code first ran on it: for batches 18-23 the commit that committed the labels (nobody had
#: run the tools between labelling and scoring); batches 24-25 were labelled at d1acabf and scored once, by the lead, at
#: cbd93ac (a descendant of d1acabf, so its tree holds the labels too) after other Advisor work had merged: the code
#: a new user met on them is cbd93ac's; batch 26 likewise at bb9b796, batches 27-28 at 1e70be6 (the code of 73b59ac with
#: one fix: a README search that looped for ever on an absolute entry path, found when batch 27 first ran; no answer had
#: been read); batch 29 at b3445f8 (its labels on top of cb3ef4f, the code after the round that followed 27-28 and the
#: calibration refit over 18-28); batches 30 and 31 at the commits that added their labels (the code of d6f6468; the
#: round after it was merged before either was scored again). A batch's commit must hold its labels (checked).
FIRST_SIGHT_COMMITS = {18: "3cc7f91", 19: "0b6e330", 20: "eb17e44", 21: "b0955db", 22: "da4c893", 23: "0d6ca1d",
                       24: "cbd93ac", 25: "cbd93ac", 26: "bb9b796", 27: "1e70be6", 28: "1e70be6",
                       29: "b3445f8", 30: "074dfef", 31: "5b21324"}
#: batch -> the commit that added its labels, where it differs from the code commit above
LABEL_COMMITS = {24: "d1acabf", 25: "d1acabf", 26: "1010524", 27: "ec2ecc5", 28: "73b59ac", 29: "b3445f8", 30: "074dfef",
                 31: "5b21324"}

_DUMP = r'''
import json, sys
from pathlib import Path
code, batch, real = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, code)
import benchmarks.bench_schedmate_text as B
from models.schedmate.extract import extract_metadata, read_repository
assert B.__file__.startswith(code), B.__file__
batches, out = B.command_batches(), []
for item in B._manifest("commands.yaml"):
    if str(item.get("batch") or batches.get(item["id"], "1")) != batch:
        continue
    md = extract_metadata(item["command"], read_repository(str(Path(real) / "repos" / item["repo"].replace("/", "+"))))
    for f in B.COMMAND_FIELDS:
        if item.get(f) is None:
            continue
        ev, v = md.evidence.get(f) or {}, getattr(md, f)
        out.append({"id": item["id"], "batch": int(batch), "field": f, "value": v, "truth": item[f],
                    "right": None if v is None else bool(B._field_right(f, v, item[f])), "kind": ev.get("kind"),
                    "rule": ev.get("rule") or md.sources.get(f), "confidence": ev.get("confidence")})
print(json.dumps(out, default=str))
'''


def records(real: str, batches: list[int]) -> list[dict]:
    """First-sight records of `batches`, each run with the code of the commit that added its labels."""
    out = []
    for b in batches:
        commit = FIRST_SIGHT_COMMITS[b]
        label = LABEL_COMMITS.get(b, commit)
        if subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", label, commit]).returncode:
            raise SystemExit(f"error: batch {b}: code commit {commit} does not hold its labels ({label})")
        with tempfile.TemporaryDirectory() as tmp:
            archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "features", "models", "benchmarks"],
                                     check=True, capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=archive, check=True)
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            res = subprocess.run([sys.executable, "-c", _DUMP, tmp, str(b), real], cwd=tmp, env=env, check=True,
                                 capture_output=True, text=True)
            out.extend(json.loads(res.stdout))
        print(f"batch {b} at {commit}: {sum(r['batch'] == b for r in out)} scored fields", file=sys.stderr)
    return out


def group(r: dict) -> tuple[str, str]:
    """The calibration group of a record (features.schedmate_text.evidence.calibration_group): its field and evidence
    kind as the rule text is classified today, whatever the code of that commit called it; models and datasets by the
    value's shape."""
    from features.schedmate_text.evidence import calibration_group

    return calibration_group(r["field"], r.get("kind") or "none", r["value"], str(r.get("rule") or ""))


def fit(recs: list[dict]) -> dict[tuple[str, str], tuple[int, int]]:
    """(field, kind) -> (answers, right) over the records that were answered."""
    counts: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0])
    for r in recs:
        if r["value"] is None:
            continue
        c = counts[group(r)]
        c[0] += 1
        c[1] += bool(r["right"])
    return {k: (n, ok) for k, (n, ok) in counts.items()}


def score(recs: list[dict], counts: dict, floor: float) -> dict:
    """Answered / wrong shares of the records after the calibration caps of `counts` (the records keep the
    confidence their code gave; a capped group's answers fall below the threshold)."""
    from features.schedmate_text.evidence import MIN_CONFIDENCE, calibration_cap

    n, ans, wrong = len(recs), 0, 0
    for r in recs:
        if r["value"] is None:
            continue
        conf = r["confidence"] or 0.0
        cap = calibration_cap(*group(r), counts=counts, floor=floor)
        if cap is not None:
            conf = min(conf, cap)
        if conf >= MIN_CONFIDENCE:
            ans += 1
            wrong += not r["right"]
    return {"fields": n, "answered": ans, "wrong": wrong}


def leave_one_batch_out(recs: list[dict], floor: float) -> dict:
    batches = sorted({r["batch"] for r in recs})
    per, tot = {}, {"fields": 0, "answered": 0, "wrong": 0}
    for b in batches:
        s = score([r for r in recs if r["batch"] == b], fit([r for r in recs if r["batch"] != b]), floor)
        per[b] = s
        for k in tot:
            tot[k] += s[k]
    return {"per_batch": per, "pooled": tot}


def _pct(a: int, n: int) -> str:
    return f"{100 * a / n:.1f} %" if n else "-"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("records", help="rebuild the first-sight records from git history")
    r.add_argument("--real", required=True, metavar="DIR", help="the folder with repos/<owner+name>/")
    r.add_argument("--batch", type=int, action="append", help="batches (default: all of FIRST_SIGHT_COMMITS)")
    c = sub.add_parser("calibrate", help="the per-kind table and its leave-one-batch-out estimate")
    c.add_argument("--floor", type=float, action="append", help="calibration floors to compare (default: the "
                   "documented CALIBRATION_FLOOR, and 0, 0.75, 0.8, 0.9 beside it)")
    args = ap.parse_args(argv)
    if args.cmd == "records":
        bad = [b for b in (args.batch or []) if b not in FIRST_SIGHT_COMMITS]
        if bad:
            print(f"error: no first-sight commit known for batch {bad[0]}", file=sys.stderr)
            return 2
        if not (Path(args.real) / "repos").is_dir():
            print(f"error: {args.real}: no repos/ folder", file=sys.stderr)
            return 2
        todo = sorted(args.batch or FIRST_SIGHT_COMMITS)
        kept = [x for x in json.loads(RECORDS.read_text()) if x["batch"] not in todo] if RECORDS.exists() else []
        recs = sorted(kept + records(args.real, todo), key=lambda x: x["batch"])  # other batches' records kept
        RECORDS.write_text("[\n" + ",\n".join(json.dumps(x, default=str) for x in recs) + "\n]\n")  # a record a line
        print(f"wrote {RECORDS} ({len(recs)} scored fields)")
        return 0
    from features.schedmate_text.evidence import CALIBRATION_FLOOR, FIRST_SIGHT_COUNTS, calibration_cap

    recs = json.loads(RECORDS.read_text())
    counts = fit(recs)
    print("# first-sight precision per (field, kind), batches " + ", ".join(map(str, sorted({x["batch"] for x in recs}))))
    for k, (n, ok) in sorted(counts.items()):
        flag = " (capped)" if calibration_cap(*k, counts=counts) is not None else ""
        print(f"{k[0]:>15} {k[1]:<10} {ok:>3}/{n:<3} = {_pct(ok, n)}{flag}")
    same = {k: tuple(v) for k, v in FIRST_SIGHT_COUNTS.items()} == counts
    print(f"\nevidence.FIRST_SIGHT_COUNTS {'matches' if same else 'DIFFERS FROM'} these records")
    floors = args.floor or sorted({0.0, 0.75, 0.8, CALIBRATION_FLOOR, 0.9})
    print("\n| floor | leave-one-batch-out: answered | wrong | per batch (answered / wrong) |\n|---|---|---|---|")
    for fl in floors:
        res = leave_one_batch_out(recs, fl)
        p = res["pooled"]
        per = ", ".join(f"{b}: {_pct(s['answered'], s['fields'])} / {_pct(s['wrong'], s['fields'])}"
                        for b, s in res["per_batch"].items())
        mark = " (documented)" if fl == CALIBRATION_FLOOR else ""
        print(f"| {fl}{mark} | {_pct(p['answered'], p['fields'])} | {_pct(p['wrong'], p['fields'])} | {per} |")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
