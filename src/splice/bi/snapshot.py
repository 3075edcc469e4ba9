"""A BI tool's last read, kept in the workspace, and when to read it again.

``.splice/bi/NAME.json`` holds the last full read of ``[[bi]] NAME`` (dashboards, charts,
datasets, and the tool's change marker then). The graph is built from it and the graph cache
keys on it (:mod:`splice.workspace.graph_cache`), so a reading command never waits on the BI
tool for the graph. :func:`refresh` asks the tool for its change markers (three list calls)
at most once per ``[[bi]] refresh`` (a minute by default): the same marker keeps the read; a new
one reads the tool again and replaces the file whole (written to a temporary file, then
renamed: never half a read).

When the tool does not answer or refuses the sign-in, the last read is kept and marked stale:
``.splice/bi/NAME.status.json`` (not part of the cache key) records when it was last asked and
what it said, which ``splice doctor`` reports (SPL511).
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from splice.config.bi import BISection
from splice.errors import BIError


def snapshot_path(root: Path, name: str) -> Path:
    return root / ".splice" / "bi" / f"{name}.json"


def status_path(root: Path, name: str) -> Path:
    return root / ".splice" / "bi" / f"{name}.status.json"


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        got = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return got if isinstance(got, dict) else None


def _write_json(path: Path, value: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(value, f, sort_keys=True)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def last_read(root: Path, name: str) -> dict[str, Any] | None:
    """The kept read of ``[[bi]] name`` (None before the first)."""
    return _read_json(snapshot_path(root, name))


def status(root: Path, name: str) -> dict[str, Any]:
    """When the tool was last asked, and the error it gave then (``error`` None: it answered)."""
    return _read_json(status_path(root, name)) or {}


def client(cfg: BISection, root: Path | None = None) -> Any:
    """The REST client of ``cfg``'s tool (``root``: the workspace, where a local tool's home
    is)."""
    if cfg.type == "superset":
        from splice.bi.superset import Superset

        return Superset(cfg, root=root)
    raise BIError(
        f"bi {cfg.name!r}: reading {cfg.type} is not supported yet (only superset is).",
        fix=f"remove the [[bi]] entry {cfg.name!r}, or declare its dashboards with [[dashboards]]",
    )


def refresh(root: Path, cfg: BISection, *, force: bool = False) -> dict[str, Any] | None:
    """The read of ``cfg`` to build the graph from: the kept one while ``cfg.refresh`` has not
    passed since the tool was last asked (``force``: ask now), else the tool's current one.
    Never raises for the tool itself: an error is recorded in the status and the kept read is
    returned (None when there is none)."""
    kept = last_read(root, cfg.name)
    st = status(root, cfg.name)
    now = time.time()
    same_place = kept is not None and kept.get("url") == cfg.url and kept.get(
        "filter") == sorted(cfg.dashboards)  # fmt: skip
    if (not force and same_place and st.get("asked_at")
            and now - float(st["asked_at"]) < cfg.refresh_seconds):  # fmt: skip
        return kept
    result = kept if same_place else None
    try:
        api = client(cfg, root)
        marker = api.markers()
        if result is None or result.get("marker") != marker:
            result = api.read(marker)
            result["filter"] = sorted(cfg.dashboards)
            result["read_at"] = now
            _write_json(snapshot_path(root, cfg.name), result)
        _write_json(status_path(root, cfg.name), {"asked_at": now, "answered_at": now,
                                                   "error": None, "retry": None})  # fmt: skip
    except BIError as e:
        _write_json(status_path(root, cfg.name), {
            "asked_at": now, "answered_at": st.get("answered_at"), "error": e.message,
            "fix": e.fix, "retry": e.retry})  # fmt: skip
    return result
