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

import contextlib
import json
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

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


#: Where the path comes from, named in every error about a path Splice cannot use.
SETTING = "[workspace] witness in splice.toml"


def unusable(path: Path, doing: str, e: OSError) -> StateError:
    """A witness path Splice cannot read or write (a parent that is a file, a directory it
    cannot create or write): one line naming the setting, the path and the OS's error."""
    where = f" ({e.filename})" if e.filename and str(e.filename) != str(path) else ""
    return StateError(
        f"Splice's state witness {path} ({SETTING}) cannot be {doing}: {e.strerror or e}{where}.",
        fix=f"point {SETTING} at a file in a directory Splice can create and write (default "
        f"{DEFAULT}, beside splice.toml)",
    )


def read(path: Path) -> Witness | None:
    """The witness at ``path``, None when there is none; a StateError when it is unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (NotADirectoryError, PermissionError) as e:  # the path, not the file's content
        raise unusable(path, "read", e) from None
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

    with _WRITING, _lock_file(path) as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _lock_file(path: Path) -> IO[str]:
    """The open lock file beside the witness (its directory made first)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        return open(path.with_name(f".{path.name}.lock"), "a+")  # noqa: SIM115 - the caller's
    except OSError as e:
        raise unusable(path, "written", e) from None


def write(path: Path, w: Witness) -> None:
    """Replace the witness atomically."""
    data = {"version": VERSION, **asdict(w), "updated_at": time.time()}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(data, indent=2, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise unusable(path, "written", e) from None
