"""`tail --probe`: readiness as the operator checks it, against a small HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from journal_helpers import T0, ready_tail, rule_pack, startup

from logsense import probe
from logsense.commands import tail
from logsense.errors import UsageError


def make_server(health: int = 200, chat: int = 200):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):  # quiet
            pass

        def _send(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self._send(health, {})
            elif self.path == "/v1/models":
                self._send(200, {"data": [{"id": "kimi-k2.6"}]})
            else:
                self._send(404, {"error": "no"})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if self.path == "/v1/chat/completions" and body.get("model") == "kimi-k2.6" and body["max_tokens"] == 1:
                self._send(chat, {"choices": [{"message": {"content": "Hi"}}]} if chat == 200 else {"error": "x"})
            elif self.path == "/generate":
                self._send(chat, {"text": "Hi"})
            else:
                self._send(400, {"error": "bad request"})

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.fixture
def ready_log(tmp_path):
    p = tmp_path / "ok.log"
    p.write_text("".join(m + "\n" for _, m in startup() + ready_tail()))
    return p, rule_pack(tmp_path)


def url(srv) -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}"


def test_check_health_then_one_token():
    srv = make_server()
    try:
        assert probe.check(probe.config(url(srv))).ok
        assert probe.check(probe.config(url(srv), api="generate")).ok
    finally:
        srv.shutdown()
    srv = make_server(chat=500)
    try:
        r = probe.check(probe.config(url(srv), timeout=2))
        assert not r.ok and "HTTP 500" in r.detail
    finally:
        srv.shutdown()


def test_loopback_only_unless_allowed():
    with pytest.raises(UsageError, match="loopback"):
        probe.config("http://10.1.2.3:30000")
    assert probe.config("10.1.2.3:30000", any_host=True).url == "http://10.1.2.3:30000"
    with pytest.raises(UsageError, match="--probe-api"):
        probe.config("127.0.0.1:1", api="grpc")


def run(capsys, log, pack, **kw):
    code = tail.main(target=str(log), until_ready=True, fmt="jsonl", only_rules=[str(pack)], follow=True,
                     timeout="20s", **kw)
    return code, [json.loads(x) for x in capsys.readouterr().out.splitlines()]


def test_ready_only_when_the_server_answers(ready_log, capsys):
    log, pack = ready_log
    srv = make_server()
    try:
        code, ev = run(capsys, log, pack, probe=url(srv))
    finally:
        srv.shutdown()
    assert code == 0 and ev[-1]["reason"] == "ready"
    assert any(e["event"] == "notice" and "answered" in e["message"] for e in ev)


def test_log_ready_but_endpoint_fails_is_its_own_outcome(ready_log, capsys):
    log, pack = ready_log
    srv = make_server(health=503)
    try:
        code, ev = run(capsys, log, pack, probe=url(srv), probe_tries=2, probe_every="0.1s", probe_timeout="2s")
    finally:
        srv.shutdown()
    assert code == 4 and ev[-1]["reason"] == "not-answering"
    assert sum(e["event"] == "notice" and "HTTP 503" in e["message"] for e in ev) == 2
    verdict = next(e for e in ev if e["event"] == "verdict")
    assert verdict["outcome"] == "not-answering" and T0  # the log said ready; the endpoint did not


def test_nothing_listening_is_bounded(ready_log, capsys):
    log, pack = ready_log
    srv = make_server()
    port = srv.server_address[1]
    srv.shutdown()
    srv.server_close()
    code, ev = run(capsys, log, pack, probe=f"127.0.0.1:{port}", probe_tries=1, probe_timeout="1s")
    assert code == 4


def test_no_redirect_is_followed():
    """A redirect could leave loopback, and a POST turned into a GET by one would pass for an answer."""
    answering = make_server()

    class Redirects(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def _redirect(self):
            self.send_response(307 if self.path == "/health" else 302)
            self.send_header("Location", url(answering) + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_GET = do_POST = _redirect

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Redirects)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        got = probe.check(probe.config(url(srv), timeout=5))
        assert not got.ok
        assert "307" in got.detail and "not followed" in got.detail
    finally:
        srv.shutdown()
        answering.shutdown()
