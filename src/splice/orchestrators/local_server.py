"""An orchestrator's server that Splice starts itself for a workspace that asks for one
(``[ingestion.dagster] local`` / ``[ingestion.airflow] local``: demos and tests).

The server runs on 127.0.0.1 at the port of the table's ``url``, with its home (instance
storage, logs) in the workspace. It is started the first time Splice needs it (one starter
at a time: a lock file in the home) and left running for the next command; :func:`stop` ends
its whole process group. Its output goes to ``HOME/server.log``; ``HOME/server.json`` names
its process.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from splice.errors import OrchestratorError
from splice.support import http
from splice.support.procs import pid_alive


@dataclass
class LocalServer:
    """How to start one orchestrator's local server and how to tell it is ready."""

    system: str  # "dagster", "airflow": named in errors as [ingestion.SYSTEM] local
    url: str
    home: Path
    target: Path  # the definitions file / DAGs folder it serves
    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)
    probe: str = "/"  # a path that answers 200 once the server is up
    ready: Callable[[str], bool] = lambda _url: True  # and then: can it run jobs yet?
    setup: Callable[[Path], None] | None = None  # writes the instance's config into home
    start_timeout: float = 180.0


def answers(url: str, probe: str, timeout: float = 2.0) -> bool:
    """Whether the server at ``url`` answers ``probe`` with 200 (asked once)."""
    try:
        return (
            http.request("GET", f"{url}{probe}", timeout=timeout, retry=http.ONCE).status_code
            == 200
        )
    except http.HTTPFailure:
        return False


def ensure_running(srv: LocalServer, root: Path | None = None) -> None:
    """Start ``srv`` unless something already answers at its URL; wait until it is ready.
    One started is announced on stderr (it outlives the command); ``root``: the workspace."""
    if answers(srv.url, srv.probe):
        return
    u = urlsplit(srv.url)
    if u.hostname not in ("127.0.0.1", "localhost") or not u.port:
        raise OrchestratorError(
            f"[ingestion.{srv.system}] local serves it on this machine, but url {srv.url} is "
            "not 127.0.0.1 with a port.",
            fix='set url = "http://127.0.0.1:PORT", or remove local and start the server yourself',
        )
    if not srv.target.exists():
        raise OrchestratorError(
            f"[ingestion.{srv.system}] local names {srv.target}, which does not exist.",
            fix=f"point local at the {srv.system} definitions of the job (relative to the workspace)",
        )
    srv.home.mkdir(parents=True, exist_ok=True)
    with open(srv.home / "start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one starter at a time; the others find it running
        started = not answers(srv.url, srv.probe)
        if started:
            _start(srv)
    _wait_ready(srv)
    if started:
        from splice.support.procs import announce_started

        announce_started(f"a local {srv.system.capitalize()} at {srv.url}", root)


def _start(srv: LocalServer) -> int:
    if srv.setup is not None:
        srv.setup(srv.home)
    log = open(srv.home / "server.log", "ab")  # noqa: SIM115 - the server's, kept open by it
    proc = subprocess.Popen(  # noqa: S603 - the orchestrator's own command
        srv.argv, cwd=srv.home, env={**os.environ, **srv.env}, stdout=log,
        stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    log.close()
    (srv.home / "server.json").write_text(json.dumps({"pid": proc.pid, "url": srv.url,
                                                      "serves": str(srv.target)}))  # fmt: skip
    return proc.pid


def _wait_ready(srv: LocalServer) -> None:
    deadline = time.monotonic() + srv.start_timeout
    pid = json.loads((srv.home / "server.json").read_text()).get("pid")
    while time.monotonic() < deadline:
        if answers(srv.url, srv.probe) and srv.ready(srv.url):
            return
        if pid and not pid_alive(int(pid)):
            break
        time.sleep(0.5)
    tail = ""
    with contextlib.suppress(OSError):
        tail = " | ".join((srv.home / "server.log").read_text(errors="replace").splitlines()[-3:])
    raise OrchestratorError(
        f"the local {srv.system} did not come up at {srv.url} within "
        f"{srv.start_timeout:.0f} s: {tail}",
        fix=f"read {srv.home / 'server.log'}; is the port taken, or the definitions broken?",
        retry=True,
    )


def stop(home: Path, *, timeout: float = 20.0) -> bool:
    """Stop the server recorded in ``home`` (its whole process group). Whether one ran."""
    rec = home / "server.json"
    if not rec.exists():
        return False
    pid = int(json.loads(rec.read_text())["pid"])
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and pid_alive(pid):
        time.sleep(0.2)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    rec.unlink(missing_ok=True)
    return True


def find_command(name: str, env_var: str, venv: str) -> tuple[Path | None, str]:
    """Where a tool kept in an environment of its own is: ``$env_var``, else next to this
    Python, else in ``venv`` beside Splice's own environment (what ``make`` builds), else on
    ``PATH``; (the command or None, where it looked: for the error)."""
    import shutil
    import sys

    env = os.environ.get(env_var)
    beside = Path(sys.prefix).parent / venv / "bin" / name
    candidates = [Path(env)] if env else []
    candidates += [Path(sys.executable).parent / name, beside]
    found = shutil.which(name)
    candidates += [Path(found)] if found else []
    looked = (f"${env_var}={env or '(unset)'}, next to {sys.executable}, in {beside.parent} "
              "and on PATH")  # fmt: skip
    return next((c for c in candidates if c.is_file() and os.access(c, os.X_OK)), None), looked
