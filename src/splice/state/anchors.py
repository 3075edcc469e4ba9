"""Anchors: the audit log's heads appended to places outside the workspace (``[audit] anchors``).

The witness file sits beside the workspace; whoever can write both can roll them back
together. An anchor keeps every head Splice wrote, where the workspace's writers cannot
rewrite history:

- ``postgres``: a table the writer may only INSERT into (a role without UPDATE or DELETE, and a
  trigger that refuses them: :func:`postgres_ddl` prints what an administrator runs once);
- ``git``: a commit per head in a clone, pushed to its remote (a remote that refuses
  non-fast-forward pushes keeps the history);
- ``webhook``: a POST of each head to a URL; with ``read_url`` (a GET answering the heads it
  received, as a JSON list) ``splice audit-log verify`` checks it too, otherwise it is sent to
  and reported as not checked.

Each head is ``{"state_id", "seq", "hash", "at", "divergence"}``; ``divergence`` marks a head an
owner accepted over a divergence (the heads before it in that anchor belong to the abandoned
chain). :func:`judge` checks an anchor's heads against the chain: a head missing from an anchor,
a head the chain does not hold, or an anchor that went backwards is TAMPERED.

>>> judge([Head("s", 1, "a"), Head("s", 3, "c")], {1: "a", 2: "b", 3: "c"}, 3)
>>> judge([Head("s", 3, "c"), Head("s", 1, "a")], {1: "a", 2: "b", 3: "c"}, 3)
'it went backwards: entry 1 after entry 3'
>>> judge([Head("s", 1, "a")], {1: "a", 2: "b"}, 2)
'the head (entry 2) is missing from it: its last is entry 1'
>>> judge([Head("s", 2, "x")], {1: "a", 2: "b"}, 2)
'it recorded entry 2 as x, the log holds b: the log was rewritten'
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice.errors import ConfigError, StateError
from splice.support import http

TRAILER = "splice-audit-head:"


@dataclass(frozen=True)
class Head:
    state_id: str
    seq: int
    hash: str
    divergence: bool = False

    @classmethod
    def of(cls, d: Any) -> Head:
        return cls(str(d["state_id"]), int(d["seq"]), str(d["hash"]), bool(d.get("divergence")))


def judge(heads: list[Head], chain: dict[int, str], head_seq: int) -> str | None:
    """What is wrong with an anchor's ``heads`` (of one state, in the order it took them)
    against the chain (seq -> hash) whose current head is ``head_seq``; None when nothing."""
    start = max((i for i, h in enumerate(heads) if h.divergence), default=0)
    live = heads[start:]
    last = 0
    for h in live:
        if h.seq < last:
            return f"it went backwards: entry {h.seq} after entry {last}"
        last = h.seq
        held = chain.get(h.seq)
        if held is None:
            return f"it recorded entry {h.seq}, the log ends at {max(chain, default=0)}: entries were cut"
        if held != h.hash:
            return f"it recorded entry {h.seq} as {h.hash[:12]}, the log holds {held[:12]}: the log was rewritten"
    if head_seq and last < head_seq:
        return f"the head (entry {head_seq}) is missing from it: " + (
            f"its last is entry {last}" if last else "it holds none"
        )
    return None


class Anchor:
    """One place outside the workspace that keeps the log's heads."""

    name: str
    #: whether :meth:`heads` can read back what was appended
    readable = True

    def append(self, state_id: str, seq: int, hash_: str, *, divergence: bool = False) -> None:
        raise NotImplementedError

    def heads(self, state_id: str) -> list[Head]:
        raise NotImplementedError


def _head_doc(state_id: str, seq: int, hash_: str, divergence: bool) -> dict[str, Any]:
    return {"state_id": state_id, "seq": seq, "hash": hash_, "at": time.time(),
            "divergence": divergence}  # fmt: skip


# -- PostgreSQL ----------------------------------------------------------------------------------
def postgres_ddl(table: str = "splice_audit_anchor", writer: str = "splice_anchor") -> list[str]:
    """What an administrator runs once: the table, a trigger refusing UPDATE, DELETE and
    TRUNCATE, and the writer role's INSERT and SELECT (nothing else).

    >>> print(postgres_ddl()[0])
    CREATE TABLE IF NOT EXISTS splice_audit_anchor (id BIGSERIAL PRIMARY KEY, state_id TEXT NOT NULL, seq BIGINT NOT NULL, hash TEXT NOT NULL, divergence BOOLEAN NOT NULL DEFAULT FALSE, at TIMESTAMPTZ NOT NULL DEFAULT NOW())
    """
    from sqlglot import exp

    t = exp.to_identifier(table).sql("postgres")
    w = exp.to_identifier(writer).sql("postgres")
    fn = exp.to_identifier(f"{table}_append_only").sql("postgres")
    return [
        f"CREATE TABLE IF NOT EXISTS {t} (id BIGSERIAL PRIMARY KEY, state_id TEXT NOT NULL, "
        "seq BIGINT NOT NULL, hash TEXT NOT NULL, divergence BOOLEAN NOT NULL DEFAULT FALSE, "
        "at TIMESTAMPTZ NOT NULL DEFAULT NOW())",
        f"CREATE OR REPLACE FUNCTION {fn}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
        "RAISE EXCEPTION 'the audit anchor is append-only'; END $$",
        f"CREATE OR REPLACE TRIGGER {fn} BEFORE UPDATE OR DELETE ON {t} "
        f"FOR EACH ROW EXECUTE FUNCTION {fn}()",
        f"CREATE OR REPLACE TRIGGER {fn}_truncate BEFORE TRUNCATE ON {t} "
        f"FOR EACH STATEMENT EXECUTE FUNCTION {fn}()",
        f"REVOKE ALL ON {t} FROM PUBLIC",
        f"GRANT SELECT, INSERT ON {t} TO {w}",
        f"GRANT USAGE ON SEQUENCE {exp.to_identifier(table + '_id_seq').sql('postgres')} TO {w}",
    ]


class PostgresAnchor(Anchor):
    def __init__(self, name: str, url: str, table: str, password_env: str | None) -> None:
        self.name, self.url, self.table, self.password_env = name, url, table, password_env

    def _connect(self) -> Any:
        import psycopg

        url = self.url.replace("postgresql+psycopg://", "postgresql://", 1)
        kw: dict[str, Any] = {"connect_timeout": 10, "autocommit": True}
        if self.password_env:
            pw = os.environ.get(self.password_env)
            if pw is None:
                raise StateError(
                    f"audit anchor {self.name}: password_env names {self.password_env}, which is "
                    "not set.",
                    fix=f"export {self.password_env}=...",
                )
            kw["password"] = pw
        try:
            return psycopg.connect(url, **kw)
        except psycopg.Error as e:
            raise StateError(
                f"audit anchor {self.name}: cannot reach PostgreSQL: {str(e).strip().splitlines()[0]}.",
                fix="check [audit] anchors' url and that the server runs",
                retry=True,
            ) from None

    def _run(self, tree: Any) -> list[Any]:
        import psycopg

        with self._connect() as conn:
            try:
                cur = conn.execute(tree.sql("postgres"))
                return cur.fetchall() if cur.description else []
            except psycopg.Error as e:
                raise StateError(
                    f"audit anchor {self.name}: {str(e).strip().splitlines()[0]}.",
                    fix="the table and the writer's grants are made once by an administrator "
                    "(docs/configuration.md, [audit])",
                ) from None

    def append(self, state_id: str, seq: int, hash_: str, *, divergence: bool = False) -> None:
        from sqlglot import exp

        tree = exp.insert(
            exp.values(
                [
                    (
                        exp.Literal.string(state_id),
                        exp.Literal.number(seq),
                        exp.Literal.string(hash_),
                        exp.Boolean(this=divergence),
                    )
                ]
            ),  # fmt: skip
            exp.to_table(self.table),
            columns=["state_id", "seq", "hash", "divergence"],
        )
        self._run(tree)

    def heads(self, state_id: str) -> list[Head]:
        from sqlglot import exp

        tree = (
            exp.select("state_id", "seq", "hash", "divergence")
            .from_(exp.to_table(self.table))
            .where(exp.column("state_id").eq(exp.Literal.string(state_id)))
            .order_by("id")
        )
        return [Head(str(r[0]), int(r[1]), str(r[2]), bool(r[3])) for r in self._run(tree)]


# -- git -----------------------------------------------------------------------------------------
class GitAnchor(Anchor):
    """A clone at ``repo`` (made from ``remote`` when missing); one empty commit per head whose
    message carries the head, pushed to ``remote``'s ``branch``."""

    def __init__(self, name: str, repo: Path, remote: str | None, branch: str) -> None:
        self.name, self.repo, self.remote, self.branch = name, repo, remote, branch

    def _git(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cmd = ["git", "-C", str(self.repo), "-c", "user.name=Splice",
               "-c", "user.email=splice@localhost", "-c", "commit.gpgsign=false", *args]  # fmt: skip
        try:
            res = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise StateError(f"audit anchor {self.name}: git failed: {e}.", retry=True) from None
        if check and res.returncode != 0:
            raise StateError(
                f"audit anchor {self.name}: git {args[0]} failed: "
                f"{(res.stderr or res.stdout).strip().splitlines()[-1:] or ['?']}",
                fix=f"check the clone {self.repo} and its remote",
                retry=True,
            )
        return res

    def _ready(self) -> None:
        if (self.repo / ".git").exists() or (self.repo / "HEAD").exists():
            return
        if self.remote is None:
            raise StateError(
                f"audit anchor {self.name}: {self.repo} is not a git repository.",
                fix="make it one (git init), or give the anchor a remote to clone",
            )
        self.repo.parent.mkdir(parents=True, exist_ok=True)
        try:
            res = subprocess.run(["git", "clone", "-q", self.remote, str(self.repo)],
                                 capture_output=True, text=True, timeout=120)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as e:
            raise StateError(
                f"audit anchor {self.name}: git clone failed: {e}.", retry=True
            ) from None
        if res.returncode != 0:
            raise StateError(
                f"audit anchor {self.name}: cannot clone {self.remote}: {res.stderr.strip()}",
                fix="check the anchor's remote",
                retry=True,
            )

    def append(self, state_id: str, seq: int, hash_: str, *, divergence: bool = False) -> None:
        import fcntl

        self._ready()
        doc = json.dumps(_head_doc(state_id, seq, hash_, divergence), sort_keys=True)
        with open(self.repo.parent / f".{self.repo.name}.lock", "a+") as fh:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            if self.remote is not None:  # start from what the remote holds
                fetched = self._git("fetch", "-q", "origin", self.branch, check=False)
                if fetched.returncode == 0:
                    self._git("checkout", "-q", "-B", self.branch, "FETCH_HEAD")
            else:
                self._git("checkout", "-q", "-B", self.branch, check=False)
            self._git(
                "commit", "-q", "--allow-empty", "-m", f"splice audit head {seq}\n\n{TRAILER} {doc}"
            )
            if self.remote is not None:
                self._git("push", "-q", "origin", f"HEAD:refs/heads/{self.branch}")

    def heads(self, state_id: str) -> list[Head]:
        self._ready()
        ref = self.branch
        if self.remote is not None:
            self._git("fetch", "-q", "origin", self.branch)
            ref = "FETCH_HEAD"
        res = self._git("log", "--reverse", "--format=%B%x1e", ref, check=False)
        if res.returncode != 0:
            return []
        out = []
        for body in res.stdout.split("\x1e"):
            for line in body.splitlines():
                if line.startswith(TRAILER):
                    try:
                        h = Head.of(json.loads(line[len(TRAILER) :]))
                    except (ValueError, KeyError, TypeError):
                        continue
                    if h.state_id == state_id:
                        out.append(h)
        return out


# -- webhook -------------------------------------------------------------------------------------
class WebhookAnchor(Anchor):
    def __init__(self, name: str, url: str, read_url: str | None, token_env: str | None) -> None:
        self.name, self.url, self.read_url, self.token_env = name, url, read_url, token_env
        self.readable = read_url is not None

    def _headers(self) -> dict[str, str]:
        token = os.environ.get(self.token_env) if self.token_env else None
        return {"Authorization": f"Bearer {token}"} if token else {}

    def append(self, state_id: str, seq: int, hash_: str, *, divergence: bool = False) -> None:
        try:
            http.request("POST", self.url, json=_head_doc(state_id, seq, hash_, divergence),
                         headers=self._headers(), timeout=10)  # fmt: skip
        except http.NoAnswer as e:
            raise StateError(f"audit anchor {self.name}: {self.url} did not answer: {e.reason}.",
                             retry=True) from None  # fmt: skip
        except http.ErrorStatus as e:
            raise StateError(f"audit anchor {self.name}: {self.url} answered {e.status}.",
                             retry=e.status >= 500) from None  # fmt: skip

    def heads(self, state_id: str) -> list[Head]:
        if self.read_url is None:
            return []
        try:
            data = http.request("GET", self.read_url, headers=self._headers(), timeout=10).json()
            items = data.get("heads", []) if isinstance(data, dict) else data
            return [h for h in map(Head.of, items) if h.state_id == state_id]
        except (http.HTTPFailure, ValueError, KeyError, TypeError) as e:
            raise StateError(f"audit anchor {self.name}: cannot read {self.read_url}: {e}.",
                             retry=True) from None  # fmt: skip


def build(specs: list[Any], root: Path) -> list[Anchor]:
    """The anchors of ``[audit] anchors`` (config entries), paths relative to ``root``."""
    out: list[Anchor] = []
    for i, s in enumerate(specs):
        name = s.name or f"{s.type}#{i + 1}"
        if s.type == "postgres":
            out.append(PostgresAnchor(name, str(s.url), s.table, s.password_env))
        elif s.type == "git":
            repo = Path(str(s.repo))
            out.append(
                GitAnchor(name, repo if repo.is_absolute() else root / repo, s.remote, s.branch)
            )
        elif s.type == "webhook":
            out.append(WebhookAnchor(name, str(s.url), s.read_url, s.token_env))
        else:  # the config's validator names the allowed types first
            raise ConfigError(f"[audit] anchors[{i}]: unknown type {s.type!r}.")
    return out
