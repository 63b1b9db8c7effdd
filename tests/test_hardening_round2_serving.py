"""Issue 44.3: schedcast's scoring server parses HTTP with a real HTTP stack (h11), with a body-size limit and
a read timeout; malformed requests are a 400-class answer with a one-line JSON error (never a traceback or a
500); finished records arriving out of end-time order cost O(log n) each, so they never stall a one-job query."""
from __future__ import annotations

import json
import socket
import threading
import time

import numpy as np
import pytest


@pytest.fixture(scope="module")
def model():
    """A small LightGBM duration model on 1,500 synthetic jobs, as a raw-record model."""
    from features.traces.synthetic import generate_preset
    from models.serving import raw_record_model
    from pipelines.train import train_duration

    table = generate_preset("saturn", seed=0, jobs=1500)
    result = train_duration(table, algo="lightgbm", test_days=0.5, n_estimators=10)
    frame = table.frame
    return frame, result, lambda: raw_record_model("duration", result.estimator, frame)[0].prepare()


def _late(frame, n: int) -> list[dict]:
    """``n`` finished records (the frame's jobs again, under new ids), newest first: each ends before the
    jobs already known for its keys (out of end-time order)."""
    from models.serving import to_records

    recs = to_records(frame.iloc[[k % len(frame) for k in range(n)]])
    for k, rec in enumerate(recs):
        rec.update(finished=True, duration=10.0 + k, job_id=f"late-{k}")
    return recs[::-1]


def _query(frame, i: int = -1, **extra) -> dict:
    from models.serving import to_records

    rec = to_records(frame.iloc[[i]])[0]
    rec.update(extra)
    return rec


@pytest.fixture()
def serve(model):
    """Start a scoring server (fresh model state) on a free loopback port; yields (host, port, scorer)."""
    from pipelines.server import Scorer, make_scoring_server

    servers = []

    def start(**limits):
        scorer = Scorer.__new__(Scorer)
        scorer.raw = model[2]()
        scorer.pyfunc = type("PyFunc", (), {"predict": lambda self, df: scorer.raw.predict(None, df)})()
        server = make_scoring_server(scorer, "127.0.0.1", 0, **limits)
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(server)
        return "127.0.0.1", server.server_address[1], scorer

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _raw(host: str, port: int, data: bytes, *, wait: float = 10.0, half_close: bool = False) -> bytes:
    """Send raw bytes, read the answer until the server closes or ``wait`` passes."""
    with socket.create_connection((host, port), timeout=wait) as sock:
        sock.sendall(data)
        if half_close:
            sock.shutdown(socket.SHUT_WR)
        out = b""
        try:
            while True:
                got = sock.recv(65536)
                if not got:
                    break
                out += got
                if b"\r\n\r\n" in out:
                    head, _, rest = out.partition(b"\r\n\r\n")
                    n = [int(h.split(b":")[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")]
                    if n and len(rest) >= n[0]:
                        break
        except socket.timeout:
            pass
        return out


def _answer(raw: bytes) -> tuple[int, dict | bytes]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    try:
        return status, json.loads(body)
    except ValueError:
        return status, body


def _post(body: bytes, extra: str = "") -> bytes:
    return (f"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(body)}\r\n\r\n").encode() + body


def _one_line_400(raw: bytes, *words: str, status: int = 400) -> dict:
    code, reply = _answer(raw)
    assert code == status, raw[:500]
    assert isinstance(reply, dict) and set(reply) == {"error_code", "message"}, reply
    assert "\n" not in reply["message"] and "Traceback" not in reply["message"], reply
    for w in words:
        assert w in reply["message"], reply
    return reply


def test_malformed_requests_are_one_line_4xx(model, serve, capfd):
    frame = model[0]
    host, port, _ = serve()
    good = _query(frame)
    _one_line_400(_raw(host, port, _post(b"[" * 1000 + b"]" * 1000)), "dataframe_records")
    _one_line_400(_raw(host, port, _post(b'{"dataframe_records": ' + b"[" * 100000 + b"]" * 100000 + b"}")))
    for field in ("user", "num_gpus", "finished", "submit_ts"):
        deep = json.dumps({**good, field: 0}).replace(f'"{field}": 0', f'"{field}": ' + "[" * 1000 + "]" * 1000)
        _one_line_400(_raw(host, port, _post(b'{"dataframe_records": [' + deep.encode() + b"]}")))
    big = b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n{}"
    _one_line_400(_raw(host, port, big), "Content-Length")
    _one_line_400(_raw(host, port, big.replace(b"99999999999999999999999", b"1000000000000")), "limit", status=413)
    for value in ("1" * 1000, "1" * 5000, "-" + "9" * 400):
        for field in ("num_gpus", "submit_time", "duration", "job_id", "user"):
            rec = json.dumps({**good, field: 0, "finished": True, "duration": 5}).replace(f'"{field}": 0', f'"{field}": {value}')
            code, reply = _answer(_raw(host, port, _post(b'{"dataframe_records": [' + rec.encode() + b"]}")))
            assert code in (200, 400) and "\n" not in json.dumps(reply), (field, value[:5], code, reply)
    surrogate = json.dumps({**good, "user": "x"}).replace('"user": "x"', '"user": "\\ud800"')
    _one_line_400(_raw(host, port, _post(b'{"dataframe_records": [' + surrogate.encode() + b"]}")), "surrogate")
    _one_line_400(_raw(host, port, _post(json.dumps({"dataframe_records": [{**good, "finished": "maybe"}]}).encode())),
                  "finished 'maybe'")
    _one_line_400(_raw(host, port, _post(b'{"dataframe_records": [1, 2, 3]}')), "list of JSON objects")
    _one_line_400(_raw(host, port, b"GARBAGE\r\n\r\n"), "malformed HTTP")
    _one_line_400(_raw(host, port, b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Length: 12abc\r\n\r\n"),
                  "malformed HTTP")
    # a chunked body is read as the body (it used to be parsed as a second request)
    body = json.dumps({"dataframe_records": [good]}).encode()
    chunked = (b"POST /invocations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
               + b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 50]), body[i:i + 50]) for i in range(0, len(body), 50))
               + b"0\r\n\r\n")
    code, reply = _answer(_raw(host, port, chunked))
    assert code == 200 and len(reply["predictions"]) == 1, reply
    code, plain = _answer(_raw(host, port, _post(body)))
    assert plain == reply
    assert "Traceback" not in capfd.readouterr().err


def test_body_limit_and_read_timeout(model, serve):
    frame = model[0]
    host, port, _ = serve(max_body=4096, read_timeout=0.5)
    body = json.dumps({"dataframe_records": [_query(frame)] * 40}).encode()
    assert len(body) > 4096
    _one_line_400(_raw(host, port, _post(body)), "4096 bytes", status=413)
    head = b"POST /invocations HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    chunk = b"%x\r\n%s\r\n" % (len(body), body)
    _one_line_400(_raw(host, port, head + chunk + b"0\r\n\r\n"), "4096 bytes", status=413)
    # a client that sends half its body and stalls gets 408 after the read timeout, and the server answers others
    t0 = time.monotonic()
    stalled = _raw(host, port, _post(b'{"dataframe_records": [')[:-5], wait=5)
    assert time.monotonic() - t0 < 4
    _one_line_400(stalled, "0.5 s", status=408)
    code, reply = _answer(_raw(host, port, _post(json.dumps({"dataframe_records": [_query(frame)]}).encode())))
    assert code == 200


def test_mlflow_engine_refuses_records_that_are_not_objects(model):
    """`--engine mlflow`: MLflow makes a frame of [1, 2, 3]; the model refuses it (MLflow answers 400),
    rather than predicting nothing (200 with [])."""
    import pandas as pd
    from mlflow.exceptions import MlflowException

    raw = model[2]()
    with pytest.raises(MlflowException, match="job records"):
        raw.predict(None, pd.DataFrame([1, 2, 3]))
    with pytest.raises(MlflowException, match="job records"):
        raw.predict(None, pd.DataFrame({"a": [1, 2]}))


def test_out_of_order_finished_records_are_not_quadratic(model):
    """Finished records sent newest first (each ends before every job already known for its keys) cost a
    bounded number of accumulator steps per record, not a replay of the whole key each (was quadratic)."""
    from models import serving_history

    frame = model[0]
    raw = model[2]()
    calls = [0]
    original = serving_history._Accumulator.add

    def counted(self, d):
        calls[0] += 1
        return original(self, d)

    recs = _late(frame, 1500)
    serving_history._Accumulator.add = counted
    try:
        raw.predict_records(recs)  # one request, every record out of end-time order
    finally:
        serving_history._Accumulator.add = original
    # each series a record touches is repaired once, from the earliest insertion on: at most the six keys'
    # series in full (history + records each); a replay per record was ~1,500 times that
    assert calls[0] <= 6 * (len(frame) + len(recs)), calls[0]
    fresh = model[2]()
    fresh.predict_records(sorted(recs, key=lambda r: r["submit_ts"]))
    q = [_query(frame)]
    np.testing.assert_array_equal(raw.predict_records(q), fresh.predict_records(q))


def test_a_one_job_query_is_fast_while_another_client_sends_out_of_order_records(model, serve):
    """Loopback: a client sends 3,000 out-of-order finished records (60 requests of 50) while another asks for
    one job at a time, all in this process (the server sets the interpreter's switch interval to 1 ms, as
    here): P99 under 250 ms and no answer over 2 s on a busy shared 2-core machine (it was a 32 s stall for
    3,000 records); benchmarks/bench_serving.py measures the issue's figure with separate processes:
    10,000 records, P99 <= 20 ms)."""
    import http.client
    import sys

    frame = model[0]
    host, port, _ = serve()
    recs = _late(frame, 3000)
    done = threading.Event()

    def sender():
        conn = http.client.HTTPConnection(host, port, timeout=60)
        for i in range(0, len(recs), 50):
            conn.request("POST", "/invocations", body=json.dumps({"dataframe_records": recs[i:i + 50]}))
            assert conn.getresponse().read()
        done.set()

    thread = threading.Thread(target=sender, daemon=True)
    body = json.dumps({"dataframe_records": [_query(frame)]})
    conn = http.client.HTTPConnection(host, port, timeout=60)
    lat = []
    switch = sys.getswitchinterval()
    sys.setswitchinterval(0.001)
    thread.start()
    while not done.is_set() and len(lat) < 5000:
        t0 = time.perf_counter()
        conn.request("POST", "/invocations", body=body)
        resp = conn.getresponse()
        assert resp.status == 200 and len(json.loads(resp.read())["predictions"]) == 1
        lat.append(time.perf_counter() - t0)
    thread.join(60)
    sys.setswitchinterval(switch)
    assert done.is_set() and len(lat) >= 10
    assert np.percentile(lat, 99) < 0.25 and max(lat) < 2.0, (max(lat), np.percentile(lat, 99), len(lat))


def _wait_until(cond, what: str, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.002)


def test_finished_records_pause_between_slices_while_a_query_is_in_progress(model, monkeypatch):
    """Queries before finished records (models.serving._Gate): while a query is in progress (the server
    enters the gate from a request's head to its answer), a request applying finished records stops after
    the slice under way and goes on only when the query is done; a query sees every record acknowledged
    before it. Deterministic: the pause's bound is set far beyond the test, no timing is asserted."""
    from models import serving

    monkeypatch.setattr(serving, "_APPLY_CHUNK", 4)
    monkeypatch.setattr(serving, "_PAUSE_MAX_S", 60.0)
    frame = model[0]
    raw = model[2]()
    gate = raw._gate
    recs = _late(frame, 40)
    q = [_query(frame)]
    before = raw.predict_records(q)
    assert gate.pauses == 0 and gate.active == 0  # a query alone never pauses
    applied = lambda: sum(1 for k in raw._state.by_id if str(k).startswith("late-"))  # noqa: E731
    result = {}
    with gate.request():  # a query's request in progress (its head arrived)
        ingest = threading.Thread(target=lambda: result.setdefault("out", raw.predict_records(recs)), daemon=True)
        ingest.start()
        _wait_until(lambda: gate.pauses >= 1, "the finished records' first pause")
        # the records were parsed in slices of 4 (each a pause point); nothing is applied while the query runs
        assert applied() == 0 and ingest.is_alive()
        # the query itself (same thread: counted once) goes through without waiting for the ingest
        np.testing.assert_array_equal(raw.predict_records(q), before)
        assert ingest.is_alive() and applied() == 0
    ingest.join(30)
    assert not ingest.is_alive() and len(result["out"]) == 0 and applied() == 40
    assert gate.active == 0 and gate.background == 0
    fresh = model[2]()
    fresh.predict_records(recs)
    np.testing.assert_array_equal(raw.predict_records(q), fresh.predict_records(q))  # every record seen


def test_finished_records_are_never_stopped_by_a_stream_of_queries(model, monkeypatch):
    """A query in progress for ever does not stop finished records: each slice waits at most _PAUSE_MAX_S."""
    from models import serving

    monkeypatch.setattr(serving, "_APPLY_CHUNK", 16)
    monkeypatch.setattr(serving, "_PAUSE_MAX_S", 0.001)
    frame = model[0]
    raw = model[2]()
    recs = _late(frame, 64)
    with raw._gate.request():
        ingest = threading.Thread(target=raw.predict_records, args=(recs,), daemon=True)
        ingest.start()
        ingest.join(60)
        assert not ingest.is_alive()
    assert raw._gate.pauses >= 4  # parse slices and apply slices each waited once
    assert sum(1 for k in raw._state.by_id if str(k).startswith("late-")) == 64


def test_background_requests_do_not_wait_for_each_other(model, monkeypatch):
    """Two requests applying finished records at once, no query: neither waits for the other (a pause's bound
    of 60 s, so waiting on each other would not finish within the join's 30 s)."""
    from models import serving

    monkeypatch.setattr(serving, "_APPLY_CHUNK", 4)
    monkeypatch.setattr(serving, "_PAUSE_MAX_S", 60.0)
    frame = model[0]
    raw = model[2]()
    recs = _late(frame, 80)
    threads = [threading.Thread(target=raw.predict_records, args=(part,), daemon=True) for part in (recs[:40], recs[40:])]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads)
    assert raw._gate.active == 0 and raw._gate.background == 0
    assert sum(1 for k in raw._state.by_id if str(k).startswith("late-")) == 80


def test_the_scoring_server_counts_a_request_from_its_head(model, serve):
    """The server enters the gate when a request's head has arrived, before its body: a request whose body is
    still on its way already makes finished records pause."""
    host, port, scorer = serve()
    gate = scorer.raw._gate
    body = json.dumps({"dataframe_records": [_query(model[0])]}).encode()
    with socket.create_connection((host, port)) as sock:
        sock.sendall(b"POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        _wait_until(lambda: gate.active == 1, "the request to be counted")
        sock.sendall(body)
        sock.settimeout(10)
        data = b""
        while b"predictions" not in data:
            data += sock.recv(65536)
    _wait_until(lambda: gate.active == 0, "the answered request to be done")
