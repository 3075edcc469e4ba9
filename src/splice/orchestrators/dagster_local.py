"""A local Dagster for a workspace that asks for one (``[ingestion.dagster] local``).

``dagster dev`` (webserver, daemon and code server; the daemon takes runs off the queue) on
127.0.0.1 at the port of ``[ingestion.dagster] url``, with ``DAGSTER_HOME`` in the workspace
(``home``). It is started the first time Splice needs it and left running for the next
command (the demo's Dagster UI stays up); :func:`stop` ends it. Its output goes to
``HOME/dagster.log``; ``HOME/server.json`` names its process.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

from splice.config_orchestrators import DagsterJob
from splice.errors import OrchestratorError
from splice.procs import pid_alive

#: ``dagster dev`` loads its code location in about 5-30 s on a small machine.
START_TIMEOUT_S = 180.0

INSTANCE_YAML = """\
# The local Dagster instance of a Splice workspace (written by Splice).
telemetry:
  enabled: false
run_coordinator:
  module: dagster.core.run_coordinator
  class: DefaultRunCoordinator
"""


def _answers(url: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/server_info", timeout=timeout) as r:  # noqa: S310
            return r.status == 200
    except OSError:
        return False


def _loaded(url: str) -> bool:
    """Whether the webserver has loaded a code location (jobs can be submitted)."""
    body = json.dumps({"query": "{ repositoriesOrError { __typename } }"}).encode()
    req = urllib.request.Request(f"{url}/graphql", data=body,
                                 headers={"Content-Type": "application/json"})  # fmt: skip
    try:
        with urllib.request.urlopen(req, timeout=5) as r:  # noqa: S310
            return (json.load(r).get("data") or {}).get("repositoriesOrError", {}).get(
                "__typename"
            ) == "RepositoryConnection"
    except (OSError, ValueError):
        return False


def home_of(cfg: DagsterJob, root: Path) -> Path:
    return (root / cfg.home).resolve()


def ensure_running(cfg: DagsterJob, root: Path) -> None:
    """Start the workspace's local Dagster unless something already answers at its URL."""
    if _answers(cfg.url):
        return
    assert cfg.local is not None
    u = urlsplit(cfg.url)
    if u.hostname not in ("127.0.0.1", "localhost") or not u.port:
        raise OrchestratorError(
            f"[ingestion.dagster] local serves Dagster on this machine, but url {cfg.url} is "
            "not 127.0.0.1 with a port.",
            fix='set url = "http://127.0.0.1:PORT", or remove local and start Dagster yourself',
        )
    defs = (root / cfg.local).resolve()
    if not defs.is_file():
        raise OrchestratorError(
            f"[ingestion.dagster] local names {cfg.local}, which is not a file in {root}.",
            fix="point local at the Dagster definitions file (definitions.py) of the job",
        )
    home = home_of(cfg, root)
    home.mkdir(parents=True, exist_ok=True)
    with open(home / "start.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one starter at a time; the others find it running
        if _answers(cfg.url):
            return
        start(defs, home, port=u.port)
    _wait_loaded(cfg.url, home)


def start(defs: Path, home: Path, *, port: int) -> int:
    """Start ``dagster dev`` for ``defs`` on 127.0.0.1:``port``; its process id."""
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text(INSTANCE_YAML)
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    log = open(home / "dagster.log", "ab")  # noqa: SIM115 - the server's, kept open by it
    argv = [sys.executable, "-m", "dagster", "dev", "-f", str(defs),
            "-h", "127.0.0.1", "-p", str(port)]  # fmt: skip
    proc = subprocess.Popen(  # noqa: S603 - Dagster's own command
        argv, cwd=defs.parent, env=env, stdout=log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    log.close()
    (home / "server.json").write_text(json.dumps({"pid": proc.pid, "port": port,
                                                  "definitions": str(defs)}))  # fmt: skip
    return proc.pid


def _wait_loaded(url: str, home: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    pid = json.loads((home / "server.json").read_text()).get("pid")
    while time.monotonic() < deadline:
        if _answers(url) and _loaded(url):
            return
        if pid and not pid_alive(int(pid)):
            break
        time.sleep(0.5)
    tail = ""
    with contextlib.suppress(OSError):
        tail = " | ".join((home / "dagster.log").read_text(errors="replace").splitlines()[-3:])
    raise OrchestratorError(
        f"the local Dagster did not come up at {url} within {START_TIMEOUT_S:.0f} s: {tail}",
        fix=f"read {home / 'dagster.log'}; is the port taken, or the definitions file broken?",
        retry=True,
    )


def stop(home: Path, *, timeout: float = 20.0) -> bool:
    """Stop the local Dagster recorded in ``home`` (its whole process group). Whether one ran."""
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
