"""Issue 41 items 4-5: the text readers in batch and served modes, and the OpenAI-compatible back-end's
time-out and non-JSON fall-backs against real loopback HTTP servers (stdlib http.server)."""
from __future__ import annotations

import json
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from models.schedmate.batch import Readers, decode, main, make_server, run_batch

EXCERPTS = Path(__file__).resolve().parents[1] / "benchmarks" / "realsets" / "excerpts"
FAILED = ["Traceback (most recent call last):", '  File "train.py", line 3, in <module>',
          "    import missingpkg", "ModuleNotFoundError: No module named 'missingpkg'"]
RUNNING = [f"INFO:tensorflow:global step {i}: loss = {2.0 / i:.4f} (0.500 sec/step)" for i in range(1, 30)]


def test_batch_writes_one_json_line_per_log_in_order(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text("\n".join(FAILED))
    b.write_bytes("\n".join(RUNNING).encode("utf-16"))  # a UTF-16 log with its BOM
    out: list[str] = []
    bad = run_batch("diagnose", [str(a), str(tmp_path / "missing.log"), str(b)], out.append)
    rows = [json.loads(x) for x in out]
    assert bad == 1 and [r["path"] for r in rows] == [str(a), str(tmp_path / "missing.log"), str(b)]
    assert (rows[0]["line"], rows[0]["kind"], rows[0]["component"]) == (4, "script", "import")
    assert "cannot read" in rows[1]["error"] and rows[2]["kind"] is None
    out.clear()
    run_batch("track", [str(b)], out.append)
    assert json.loads(out[0])["step"] == 29


def test_decode_reads_byte_order_marks():
    assert decode("x\ny".encode("utf-16")) == "x\ny"
    assert decode(b"\xef\xbb\xbfabc") == "abc"
    assert decode(b"ok \xff") == "ok \ufffd"


def test_module_entry_exit_codes(tmp_path, capsys):
    p = tmp_path / "a.log"
    p.write_text("\n".join(FAILED))
    assert main(["diagnose", str(p)]) == 0
    assert json.loads(capsys.readouterr().out)["kind"] == "script"
    assert main(["diagnose", str(tmp_path / "nope.log")]) == 1
    assert main(["serve", "--port", "70000"]) == 2


def _post(port: int, path: str, body: bytes) -> tuple[int, dict]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_served_mode_answers_diagnose_and_track_and_refuses_bad_requests():
    server = make_server("127.0.0.1", 0, readers=Readers())
    port = server.server_address[1]
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=10) as r:
            assert json.loads(r.read())["status"] == "ok"
        code, d = _post(port, "/diagnose", json.dumps({"lines": FAILED}).encode())
        assert code == 200 and (d["line"], d["kind"]) == (4, "script") and d["ms"] >= 0
        code, p = _post(port, "/track", json.dumps({"text": "\n".join(RUNNING)}).encode())
        assert code == 200 and p["step"] == 29 and p["loss"] == pytest.approx(2.0 / 29, abs=1e-4)
        assert _post(port, "/track", b"[1, 2]")[0] == 400
        assert _post(port, "/track", json.dumps({"path": "/etc/hostname"}).encode())[0] == 400  # paths not allowed
        assert _post(port, "/nope", b"{}")[0] == 404
    finally:
        server.shutdown()
        server.server_close()
        t.join(5)


@pytest.mark.skipif(not (EXCERPTS / "failures").is_dir(), reason="no committed excerpts")
def test_every_held_out_or_tuned_excerpt_has_a_manifest_entry_and_vice_versa():
    import yaml

    for kind, manifest in (("failures", "failures.yaml"), ("progress", "progress.yaml")):
        items = yaml.safe_load((EXCERPTS.parent / manifest).read_text())
        committed = {i["id"] for i in items if i.get("batch", 0) >= 16}  # excerpts are committed from batch 16 on
        files = {p.stem for p in (EXCERPTS / kind).glob("*.log")}
        assert committed == files, (kind, committed ^ files)
        ids = [i["id"] for i in items]
        assert len(ids) == len(set(ids)), f"duplicate ids in {manifest}"


# -- the LLM back-end: time-out and garbage answers fall back to the rules -----------------------------------
class _Slow(BaseHTTPRequestHandler):
    delay = 2.0
    reply = b""

    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        time.sleep(self.delay)
        body = self.reply or json.dumps({"choices": [{"message": {"content": "{}"}}]}).encode()
        self.send_response(500 if self.reply else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except OSError:
            pass

    def log_message(self, *args):
        pass


@pytest.mark.parametrize("delay, reply, note", [(2.0, b"", "unavailable"), (0.0, b"<html>busy</html>", "unavailable")])
def test_openai_backend_times_out_or_gets_garbage_and_the_rules_answer(delay, reply, note):
    from models.schedmate.failures import FailureHandler
    from models.schedmate.llm import OpenAIBackend

    _Slow.delay, _Slow.reply = delay, reply
    server = HTTPServer(("127.0.0.1", 0), _Slow)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        backend = OpenAIBackend(f"http://127.0.0.1:{server.server_address[1]}/v1", model="local", timeout=0.3)
        t0 = time.perf_counter()
        d = FailureHandler(llm=backend).diagnose(FAILED)
        assert time.perf_counter() - t0 < 1.9  # the time-out, not the server, decided
        assert (d.line_index, d.kind, d.component) == (3, "script", "import")
        assert note in d.note
    finally:
        server.shutdown()
        server.server_close()
        t.join(5)


def test_advise_batch_reads_json_lines_and_keeps_each_repository(tmp_path):
    from models.schedmate.batch import run_advise

    (tmp_path / "train.py").write_text('import argparse\np = argparse.ArgumentParser()\n'
                                       'p.add_argument("--epochs", type=int, default=90)\n'
                                       'p.add_argument("--batch-size", type=int, default=256)\n')
    reqs = [json.dumps({"repo": str(tmp_path), "command": "torchrun --nproc_per_node 4 train.py --epochs 30"}),
            "not json", json.dumps({"repo": str(tmp_path), "command": "python train.py"})]
    out: list[str] = []
    readers = Readers()
    assert run_advise(reqs, out.append, readers) == 1
    rows = [json.loads(x) for x in out]
    assert (rows[0]["iterations"], rows[0]["gpus"], rows[0]["batch_size"]) == (30, 4, 256)
    assert "error" in rows[1] and rows[2]["batch_size"] == 256 and rows[2]["gpus"] == 1
    assert list(readers._repos) == [str(tmp_path)]  # read once
