"""The servers Splice starts on this machine for a workspace and leaves running for the next
command: the warehouse's own PostgreSQL or Spark Connect server (``[warehouse] local``) and the
orchestrators' local servers (``[ingestion.dagster] local``: ``dagster-webserver``;
``[ingestion.airflow] local``: ``airflow standalone``) and a BI tool's (``[[bi]] local``:
Superset). ``splice local status`` lists them,
``splice local stop`` stops them. Neither opens the workspace (which would start them)."""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

__all__ = ["local_servers", "start_local_bi", "stop_local_servers"]


def _pid_in(path: Path, line: int = 0) -> int | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        text = path.read_text()
        if path.suffix == ".json":
            return int(json.loads(text)["pid"])
        return int(text.splitlines()[line].strip())
    return None


def _servers(root: Path) -> list[tuple[dict[str, Any], Any]]:
    """(record, how to stop it) for every local server the workspace's splice.toml asks for."""
    from splice.config.workspace import load_config
    from splice.orchestrators import for_job
    from splice.support.procs import pid_alive

    cfg = load_config(root)
    found: list[tuple[dict[str, Any], Any]] = []
    wh = cfg.warehouse
    if wh.local and wh.type == "postgres":
        from splice.warehouse.postgres.local_server import LocalPostgres

        data = root / wh.local
        pid = _pid_in(data / "postmaster.pid")
        server = LocalPostgres(data, port=int(wh.port or 5432))
        rec = {"kind": "postgres", "name": "PostgreSQL", "address": f"127.0.0.1:{server.port}",
               "home": wh.local, "pid": pid, "running": bool(pid and pid_alive(pid))}  # fmt: skip
        found.append((rec, server.stop))
    elif wh.local and wh.type == "spark":
        from splice.warehouse.spark.local_server import PID_FILE, LocalSpark

        base = root / wh.local
        pid = _pid_in(base / PID_FILE)
        rec = {"kind": "spark", "name": "Spark Connect", "address": str(wh.remote),
               "home": wh.local, "pid": pid, "running": bool(pid and pid_alive(pid))}  # fmt: skip
        found.append((rec, lambda: LocalSpark.stop_at(base, str(wh.remote))))
    for b in cfg.bi:
        if not b.local:
            continue
        from splice.bi.superset_local import stop as stop_superset

        home = root / b.local
        pid = _pid_in(home / "server.json")
        rec = {"kind": b.type, "name": b.type.capitalize(), "address": b.url, "home": b.local,
               "pid": pid, "running": bool(pid and pid_alive(pid)), "bi": b.name}  # fmt: skip
        found.append((rec, lambda home=home: stop_superset(home)))
    for job in cfg.ingestion:
        orch = for_job(job, root)
        if orch is None or not orch.cfg.local:
            continue
        pid = _pid_in((root / orch.cfg.home) / "server.json")
        rec = {"kind": orch.system, "name": orch.system.capitalize(), "address": orch.cfg.url,
               "home": orch.cfg.home, "pid": pid, "running": bool(pid and pid_alive(pid)),
               "job": job.name}  # fmt: skip
        found.append((rec, orch.stop_local))
    return found


def local_servers(root: Any) -> list[dict[str, Any]]:
    """The local servers of the workspace at ``root``: kind, name, address, home (relative to
    the workspace), pid and whether it runs now."""
    return [rec for rec, _stop in _servers(Path(root).resolve())]


def stop_local_servers(root: Any) -> list[dict[str, Any]]:
    """Stop every local server of the workspace at ``root`` that runs (PostgreSQL as its own
    user when Splice runs as root); each record says whether it was ``stopped``."""
    out = []
    for rec, stop in _servers(Path(root).resolve()):
        if rec["running"]:
            stop()
        out.append({**rec, "stopped": rec["running"]})
    return out


def start_local_bi(root: Any) -> list[str]:
    """Start every ``[[bi]] local`` tool of the workspace at ``root`` that does not answer (a
    BI tool is never started by a reading command); their URLs."""
    from splice.bi.superset_local import start_local
    from splice.config.workspace import load_config

    base = Path(root).resolve()
    return [start_local(base, b) for b in load_config(base).bi if b.local]
