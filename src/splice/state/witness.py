"""The witness: a small file outside ``.splice/`` that remembers the workspace's state.

Splice's state (``.splice/state.db``) holds the audit log and its head, so whoever can rewrite
that file can rewrite both consistently, and a deleted or truncated state would silently be
replaced by a new, empty one. The witness keeps, apart from the state (by default
``splice-witness.json`` in the workspace; ``[workspace] witness`` names another path, for
example on a volume the operators of Splice cannot write):

- ``state_id``: the id of the state this workspace has (created with it). A workspace whose
  witness names a state refuses to start a new one when the state file is missing, empty or
  another workspace's, unless asked explicitly (``--new-state``);
- ``audit_seq`` / ``audit_hash``: the head of the audit log, written after every transaction
  that appended to it, and only ever forward: a head is replaced only by one whose chain
  extends it (:mod:`splice.state.witnessed`). ``splice audit-log verify`` checks that the
  chain still holds that entry with that hash: a chain cut short, or rewritten together with
  its head, no longer does;
- ``divergences``: each divergence an owner accepted, and each witness an owner re-created.

The file is replaced atomically (written beside it, then renamed).

>>> import tempfile, pathlib
>>> p = pathlib.Path(tempfile.mkdtemp()) / "w.json"
>>> write(p, Witness("s-1", 1.0, 3, "ab" * 32))
>>> read(p).audit_seq
3
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from splice.errors import StateError

DEFAULT = "splice-witness.json"
VERSION = 2


@dataclass(frozen=True)
class Witness:
    state_id: str
    created_at: float
    audit_seq: int = 0
    audit_hash: str | None = None
    updated_at: float = 0.0
    #: each divergence an owner accepted (``splice audit-log accept-divergence``) or witness
    #: an owner re-created (``rewitness``): who, when, why, from which head to which
    divergences: list[dict[str, Any]] = field(default_factory=list)


def read(path: Path) -> Witness | None:
    """The witness at ``path``, None when there is none; a StateError when it is unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise StateError(
            f"Splice's state witness {path} cannot be read: {e}.",
            fix="restore the file, or move it aside and rerun with --new-state to start anew",
        ) from None
    try:
        d = json.loads(text)
        return Witness(
            state_id=str(d["state_id"]),
            created_at=float(d["created_at"]),
            audit_seq=int(d.get("audit_seq") or 0),
            audit_hash=d.get("audit_hash"),
            updated_at=float(d.get("updated_at") or 0.0),
            divergences=list(d.get("divergences") or []),
        )
    except (ValueError, KeyError, TypeError):
        raise StateError(
            f"Splice's state witness {path} is not a witness Splice wrote.",
            fix="restore the file, or move it aside and rerun with --new-state to start anew",
        ) from None


_WRITING = threading.Lock()


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """One writer of the witness at a time: threads of this process, and other processes
    (an exclusive ``flock`` on a lock file beside it)."""
    import fcntl

    path.parent.mkdir(parents=True, exist_ok=True)
    with _WRITING, open(path.with_name(f".{path.name}.lock"), "a+") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def write(path: Path, w: Witness) -> None:
    """Replace the witness atomically."""
    data = {"version": VERSION, **asdict(w), "updated_at": time.time()}
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
