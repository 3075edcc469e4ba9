"""Real receivers on 127.0.0.1 for the notification tests: an HTTP server (stdlib) that keeps
every JSON body it is sent, and an SMTP server (aiosmtpd) that keeps every message."""

from __future__ import annotations

import email
import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


@dataclass
class Receiver:
    url: str
    bodies: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # (path, body)
    delay: float = 0.0  # seconds before answering each request
    status: int = 200

    def on(self, path: str) -> list[dict[str, Any]]:
        return [b for p, b in self.bodies if p == path]


@contextmanager
def http_receiver(delay: float = 0.0) -> Iterator[Receiver]:
    lock = threading.Lock()
    box: dict[str, Receiver] = {}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            rec = box["r"]
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            if rec.delay:
                time.sleep(rec.delay)
            with lock:
                rec.bodies.append((self.path, body))
            self.send_response(rec.status)
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    box["r"] = Receiver(f"http://127.0.0.1:{server.server_address[1]}", delay=delay)
    t = threading.Thread(target=server.serve_forever, daemon=True)
    t.start()
    try:
        yield box["r"]
    finally:
        server.shutdown()
        server.server_close()


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = int(s.getsockname()[1])
    s.close()
    return port


@dataclass
class Mailbox:
    port: int
    messages: list[tuple[str, list[str], Message]] = field(default_factory=list)  # from, to, msg


@contextmanager
def smtp_server() -> Iterator[Mailbox]:
    from aiosmtpd.controller import Controller

    box = Mailbox(free_port())

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
            msg = email.message_from_bytes(envelope.content)
            box.messages.append((envelope.mail_from, list(envelope.rcpt_tos), msg))
            return "250 OK"

    c = Controller(Handler(), hostname="127.0.0.1", port=box.port)
    c.start()
    try:
        yield box
    finally:
        c.stop()


@contextmanager
def silent_port() -> Iterator[int]:
    """A port that accepts connections (the kernel's backlog) and never answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(16)
    try:
        yield int(s.getsockname()[1])
    finally:
        s.close()


def body_text(msg: Message) -> str:
    payload = msg.get_payload(decode=True)
    assert isinstance(payload, bytes)
    return payload.decode()


DOMAINS = """
[[domains]]
name = "pricing"
nodes = ["pricing:*"]
owners = ["maria", "sam"]
autonomy = "L2"

[policy]
allow_as = true  # the tests play several people on one machine
"""


def write_workspace(root: Path, notify: str) -> Path:
    """A small workspace (no projects: approvals need only domains and the state)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "splice.toml").write_text(
        f'[workspace]\nname = "travel"\n{DOMAINS}\n{notify}', encoding="utf-8"
    )
    return root
