"""The claims ledger: verdicts, claims files, and `schedcast reproduce` as a user runs it."""
from __future__ import annotations

import json
import math
import sys
import types
from pathlib import Path

import pytest

from evaluation.claims import (HOLDS, MISSES, UNTESTABLE, VERDICTS, ClaimsFile, Measurement, judge_all, load_claims,
                               write_ledger)
from pipelines import papers
from pipelines.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


C = "{id: a, source: s, statement: t, metric: m, comparator: b, measure: m, null: 0, values: [{value: 1, cite: 'x.txt:1'}]"


@pytest.mark.parametrize("text, needle", [
    ("paper: x\ntitle: X\nclaims: []\n", "claims"),
    ("paper: x\ntitle: X\nclaims:\n - " + C + ", holds_if: {op: '~', value: 1}}\n", "holds_if"),
    ("paper: x\ntitle: X\nclaims:\n - " + C + ", bogus: 1}\n", "bogus"),
    ("paper: x\ntitle: X\nclaims:\n - " + C + "}\n - " + C + "}\n", "unique"),
    ("paper: [x\n", "YAML"),
    ("!!python/object/apply:os.system ['true']\n", "YAML"),
])
def test_a_bad_claims_file_is_one_line_naming_the_file(tmp_path, text, needle):
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as err:
        load_claims(path)
    message = str(err.value)
    assert str(path) in message and needle in message and "\n" not in message


@pytest.mark.parametrize("paper", sorted(papers.RUNNERS))
def test_every_registered_paper_has_a_valid_claims_file_and_runner(paper):
    cf = load_claims(papers.paper_dir(paper) / "claims.yaml")
    assert cf.paper == paper and cf.claims
    assert callable(papers.runner(paper))


def test_the_ledger_pages_show_every_claim_setting_and_the_smoke_label(tmp_path):
    base = {"source": "T1", "metric": "reduction", "comparator": "best-baseline", "direction": "higher", "null": 0.0}
    cf = ClaimsFile.model_validate({"paper": "x", "title": "X <paper>", "claims": [
        {**base, "id": "a", "statement": "s <b>", "measure": "m", "unit": "fraction",
         "values": [{"setting": "low", "value": 0.44, "cite": "x.txt:3"}, {"setting": "high", "value": 0.5, "cite": "x.txt:4"}]},
        {**base, "id": "b", "statement": "t", "measure": "n", "values": [{"value": None, "cite": "x.txt:5"}]}]})
    verdicts = judge_all(cf, {"m@low": Measurement(samples=[-0.1, -0.12, -0.09], causes={"off": 0.2})})
    meta = {"quick": True, "seeds": [0], "wall_s": 1.0,
            "settings": {"low": {"trace": "t", "cluster": "c", "seeds": [0, 1, 2], "tables": ["low/policies.csv"],
                                 "calibration": [{"target": "wait", "paper": 0.2, "cite": "x.txt:9", "reached": 0.3}]}}}
    paths = write_ledger(tmp_path, cf, verdicts, meta)
    doc = json.loads(paths["json"].read_text())
    assert list(doc)[0] == "smoke_test" and doc["counts"][MISSES] == 1 and doc["counts"][UNTESTABLE] == 1
    html, md = paths["html"].read_text(), paths["md"].read_text()
    assert md.startswith("**SMOKE TEST") and "SMOKE TEST" in html
    assert "X &lt;paper&gt;" in html and "s &lt;b&gt;" in html and "44.0 % [x.txt:3]" in html and "-10.3 %" in html
    assert "off: 20.0 %" in md and "[low/policies.csv](low/policies.csv)" in md and "x.txt:9" in md
    assert "href='low/policies.csv'" in html


# -- the command -----------------------------------------------------------------------------------
@pytest.fixture
def fake_paper(tmp_path, monkeypatch):
    """A registered paper 'toy' whose runner returns fixed measurements (or raises when told to)."""
    folder = tmp_path / "papers" / "toy"
    folder.mkdir(parents=True)
    (folder / "claims.yaml").write_text(
        "paper: toy\ntitle: Toy paper\nclaims:\n"
        " - {id: faster, source: Table 1, statement: A is faster, metric: speedup, comparator: B, measure: speedup,"
        " null: 1.0, values: [{value: 2.0, cite: 'toy.txt:1'}], causes: [rule-off]}\n"
        " - {id: tail, source: Fig. 2, statement: tail is lower, metric: tail, comparator: B, measure: tail,"
        " direction: lower, null: 1.0, values: [{value: 0.5, cite: 'toy.txt:2'}]}\n"
        " - {id: absent, source: Fig. 3, statement: not measurable here, metric: x, comparator: B, measure: nothing,"
        " null: 0, values: [{value: null, cite: 'toy.txt:3'}]}\n")
    module = types.ModuleType("toy_runner")
    module.calls = []

    def run(ctx):
        module.calls.append(ctx)
        (ctx.out / "table.csv").write_text("a,b\n1,2\n")
        if getattr(module, "fail", False):
            raise RuntimeError("replay failed")
        n = max(2, len(ctx.seeds))
        ctx.settings["toy"] = {"trace": "toy", "seeds": list(ctx.seeds), "tables": ["table.csv"]}
        return {"speedup": Measurement(samples=[0.8 + 0.01 * i for i in range(n)], causes={"rule-off": 1.3}),
                "tail": Measurement(samples=[0.5 - 0.01 * i for i in range(n)])}

    module.run = run
    monkeypatch.setitem(sys.modules, "toy_runner", module)
    monkeypatch.setitem(papers.RUNNERS, "toy", "toy_runner")
    monkeypatch.setattr(papers, "PAPERS_DIR", tmp_path / "papers")
    monkeypatch.chdir(tmp_path)
    return module


def test_reproduce_writes_the_ledger_and_exits_0_when_claims_miss(fake_paper, tmp_path, capsys):
    assert main(["reproduce", "toy", "--out", "ledger", "--data-dir", str(tmp_path)]) == 0
    doc = json.loads((tmp_path / "ledger" / "claims.json").read_text())
    verdicts = {c["claim"]: c for c in doc["claims"]}
    assert verdicts["faster"]["verdict"] == MISSES and verdicts["faster"]["causes"] == {"rule-off": 1.3}
    assert verdicts["tail"]["verdict"] == HOLDS and verdicts["absent"]["verdict"] == UNTESTABLE
    assert (tmp_path / "ledger" / "table.csv").is_file() and (tmp_path / "ledger" / "claims.html").is_file()
    out = capsys.readouterr().out
    assert "1 hold, 0 hold in direction, 1 do not hold, 1 not testable" in " ".join(out.split())


def test_reproduce_replaces_only_its_own_ledger(fake_paper, tmp_path, capsys):
    assert main(["reproduce", "toy", "--out", "ledger", "--data-dir", str(tmp_path)]) == 0
    assert main(["reproduce", "toy", "--out", "ledger", "--data-dir", str(tmp_path)]) == 2  # no --force
    assert main(["reproduce", "toy", "--out", "ledger", "--force", "--data-dir", str(tmp_path)]) == 0
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("precious")
    capsys.readouterr()
    assert main(["reproduce", "toy", "--out", "mine", "--force", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "not a folder schedcast wrote" in err
    assert (mine / "thesis.tex").read_text() == "precious" and sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]


def test_a_failing_runner_leaves_nothing_behind(fake_paper, tmp_path, capsys):
    fake_paper.fail = True
    assert main(["reproduce", "toy", "--out", "ledger", "--data-dir", str(tmp_path)]) != 0
    assert not (tmp_path / "ledger").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


def test_an_unknown_paper_is_refused_in_one_line(fake_paper, capsys):
    assert main(["reproduce", "nopaper"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown paper" in err and "toy" in err


def test_reproduce_list_and_seed_arguments(fake_paper, tmp_path, capsys):
    assert main(["reproduce", "--list"]) == 0
    assert "toy" in capsys.readouterr().out.split()
    with pytest.raises(SystemExit) as exc:
        main(["reproduce", "toy", "--seeds", "-1"])
    assert exc.value.code == 2
    assert main(["reproduce", "toy", "--quick", "--seeds", "3", "4", "--out", "q", "--data-dir", str(tmp_path)]) == 0
    ctx = fake_paper.calls[-1]
    assert ctx.quick and ctx.seeds == [3, 4] and ctx.seeds_given


@pytest.mark.slow
@pytest.mark.skipif(not (DATA / "philly").is_dir(), reason="needs ../shared/data")
def test_reproduce_lazer_quick_gives_every_claim_a_verdict(tmp_path, monkeypatch):
    """The documented command's whole path (CLI, runner, experiment cells, replays, judge, ledger) on the
    quick spec's six policies and costs, over the first 10,000 Philly jobs: ~7 s of CPU instead of ~32 s for
    six replays of all 74,110. The full trace's ledger (SRTF futile 0.71 h > 0.5 h, every claim a verdict)
    is checked by `python benchmarks/bench_reproduce.py lazer`."""
    import yaml

    import pipelines.papers.lazer as lazer

    spec = yaml.safe_load(papers.spec_path("lazer", "spec-quick").read_text())
    assert [w["name"] for w in spec["workloads"]] == ["philly"]
    spec["workloads"][0]["jobs"] = 10_000
    (tmp_path / "spec-quick.yaml").write_text(yaml.safe_dump(spec))
    asked = []
    monkeypatch.setattr(lazer, "spec_path", lambda paper, name: asked.append((paper, name)) or tmp_path / f"{name}.yaml")
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "lazer", "--quick", "--out", "lz", "--data-dir", str(DATA)]) == 0
    assert asked == [("lazer", "spec-quick")]
    doc = json.loads((tmp_path / "lz" / "claims.json").read_text())
    verdicts = {c["claim"]: c for c in doc["claims"]}
    assert set(verdicts) == {c.id for c in load_claims(papers.paper_dir("lazer") / "claims.yaml").claims}
    # SRTF's futile preemptions on these 10,000 Philly jobs are real (0.20 h; 0.71 h on the whole trace)
    assert verdicts["f4-srtf-futile"]["verdict"] == HOLDS and verdicts["f4-srtf-futile"]["measured"] > 0.1
    assert all(c["verdict"] in VERDICTS for c in doc["claims"])
    assert all(c["measured"] is None or math.isfinite(c["measured"]) for c in doc["claims"])
