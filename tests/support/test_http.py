"""The one HTTP transport (splice.support.http) against real servers on 127.0.0.1: what it tries
again (a refused connection, a busy server's 503 for a read), what it never does (a 4xx, an
answer lost after a POST was sent), and how a timeout reads."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from splice.support.http import ONCE, ErrorStatus, NoAnswer, Retry, request

FAST = Retry(attempts=3, backoff=0.05)


class Server:
    """A stdlib HTTP server answering ``statuses`` in turn (then the last one forever)."""

    def __init__(self, statuses: list[int], port: int = 0) -> None:
        self.statuses = statuses
        self.hits: list[str] = []  # "METHOD /path" of each request received
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                server.hits.append(f"{self.command} {self.path}")
                n = len(server.hits)
                status = server.statuses[min(n, len(server.statuses)) - 1]
                body = b'{"n": %d}' % n if status < 400 else b"not now"
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer  # noqa: N815 - the stdlib's names

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@contextmanager
def serving(statuses: list[int]) -> Iterator[Server]:
    s = Server(statuses)
    try:
        yield s
    finally:
        s.close()


@contextmanager
def silent() -> Iterator[tuple[str, list[socket.socket]]]:
    """A server that accepts connections, reads nothing and never answers: (url, accepted)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    accepted: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", accepted
    finally:
        listener.close()
        for conn in accepted:
            conn.close()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_a_refused_connection_is_tried_again_until_the_server_is_up() -> None:
    port = free_port()
    started: list[Server] = []
    timer = threading.Timer(0.1, lambda: started.append(Server([200], port)))
    timer.start()
    try:
        # a POST too: a refused connection never sent it
        r = request("POST", f"http://127.0.0.1:{port}/graphql", json={},
                    retry=Retry(attempts=6, backoff=0.05))  # fmt: skip
        assert r.json() == {"n": 1}
        assert started[0].hits == ["POST /graphql"]
    finally:
        timer.join()
        for s in started:
            s.close()


def test_a_refused_connection_fails_with_the_reason_once_the_tries_are_spent() -> None:
    port = free_port()
    t = time.perf_counter()
    with pytest.raises(NoAnswer) as e:
        request("GET", f"http://127.0.0.1:{port}/x?token=secret", retry=FAST)
    assert time.perf_counter() - t >= 0.05 + 0.1  # two pauses: three tries
    assert "Connection refused" in e.value.reason
    assert e.value.retry and not e.value.timed_out
    assert e.value.one_line() == (
        f"127.0.0.1:{port}: {e.value.reason} (a retry may help)"  # the host, not the path
    )


def test_a_busy_server_is_asked_again_and_then_answers() -> None:
    with serving([503, 503, 200]) as s:
        r = request("GET", f"{s.url}/api/v2/dags/x", retry=FAST)
        assert r.json() == {"n": 3}
        assert s.hits == ["GET /api/v2/dags/x"] * 3


def test_a_post_answered_503_is_sent_again_only_when_it_is_a_read() -> None:
    with serving([503, 200]) as s:
        with pytest.raises(ErrorStatus) as e:
            request("POST", f"{s.url}/dagRuns", json={"a": 1}, retry=FAST)
        assert s.hits == ["POST /dagRuns"]  # it may have done its work: never twice
        assert e.value.status == 503 and e.value.retry
        assert e.value.text == "not now"
        assert request("POST", f"{s.url}/graphql", json={}, retry=FAST,
                       idempotent=True).json() == {"n": 2}  # fmt: skip


def test_a_4xx_is_final_and_says_a_retry_will_not_help() -> None:
    with serving([404, 200]) as s:
        with pytest.raises(ErrorStatus) as e:
            request("GET", f"{s.url}/hooks/T0/secret", retry=FAST)
        assert s.hits == ["GET /hooks/T0/secret"]
    assert e.value.status == 404 and not e.value.retry
    assert e.value.one_line() == f"{s.url[7:]} answered 404 Not Found: not now"


def test_a_server_that_stays_busy_is_asked_as_many_times_as_the_policy_says() -> None:
    with serving([502]) as s:
        with pytest.raises(ErrorStatus) as e:
            request("GET", f"{s.url}/", retry=FAST)
        assert len(s.hits) == 3 and e.value.retry
        with pytest.raises(ErrorStatus):
            request("GET", f"{s.url}/", retry=ONCE)
        assert len(s.hits) == 4


def test_a_silent_server_times_out_with_the_wait_in_words() -> None:
    with silent() as (url, accepted):
        t = time.perf_counter()
        with pytest.raises(NoAnswer) as e:
            request("POST", f"{url}/hook", json={"event": "x"}, timeout=0.3, retry=FAST)
        took = time.perf_counter() - t
        assert e.value.timed_out and e.value.retry
        assert e.value.reason == "no answer within 0.3 s"
        assert 0.3 <= took < 1.5 and len(accepted) == 1  # sent, maybe received: not again
        with pytest.raises(NoAnswer):
            request("GET", f"{url}/status", timeout=0.2, retry=Retry(attempts=2, backoff=0.05))
        time.sleep(0.05)
        assert len(accepted) == 3  # a read is asked again


def test_a_url_httpx_cannot_send_to_is_final() -> None:
    t = time.perf_counter()
    with pytest.raises(NoAnswer) as e:
        request("GET", "ftp://127.0.0.1/x", retry=Retry(attempts=3, backoff=2.0))
    assert not e.value.retry and "unsupported protocol" in e.value.reason
    assert time.perf_counter() - t < 1.5  # not tried again
