"""`splice access` on a real PostgreSQL: a request routed to a domain's owners, approved by one
of them (never the requester), granted as a role holding exactly the named relations, and
revoked when its time is up: by the next command, or by a running `splice serve` restarted
meanwhile. The demo is built on the server by the real tools (dlt, SQLMesh, dbt-postgres), and
Splice's own state is in another database of the same server (as a team shares it)."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from tests.cli_runner import run_cli
from tests.serve.serve_support import free_port, running_server

from splice.demo import build_demo
from splice.state.sql import statement
from splice.warehouse.postgres.local_server import LocalPostgres

#: the grant's last write ten minutes back (past the grace period of a grant being made)
_TEN_MINUTES_AGO = statement(
    "UPDATE access_grants SET updated_at = updated_at - 600 WHERE grant_id = ?"
)

AGG = "pricing:marts.agg_gmv_daily"  # a SQLMesh model: a view over its physical table
QTD = "finance:fct_gmv_qtd"  # a dbt model
READER_PW = "reader-pw"


@pytest.fixture(scope="module")
def pg_demo(pg_server: LocalPostgres, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    url = pg_server.create_database(f"access_{uuid.uuid4().hex[:8]}")
    state = pg_server.create_database(f"access_state_{uuid.uuid4().hex[:8]}")
    built = build_demo(tmp_path_factory.mktemp("access") / "travel", warehouse="postgres",
                       warehouse_url=url,
                       state_url=state.replace("postgresql://", "postgresql+psycopg://"))  # fmt: skip
    return built.workspace, url


@pytest.fixture
def reader(pg_demo: tuple[Path, str]) -> Iterator[str]:
    """A login role of its own (roles belong to the server), with no privileges at all."""
    _ws, url = pg_demo
    name = f"reader_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"CREATE ROLE {name} LOGIN PASSWORD '{READER_PW}'".encode())
    yield name
    with psycopg.connect(url, autocommit=True) as con:
        con.execute(f"DROP OWNED BY {name}; DROP ROLE {name}".encode())


def splice(ws: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = run_cli(["-w", str(ws), *args])
    if check and r.returncode != 0:
        raise AssertionError(f"splice {' '.join(args)} exited {r.returncode}:\n{r.stderr}")
    return r


def as_reader(url: str, role: str) -> str:
    u = urlsplit(url)
    return urlunsplit(u._replace(netloc=f"{role}:{READER_PW}@{u.hostname}:{u.port}"))


def can_read(url: str, role: str, relation: str) -> bool:
    try:
        with psycopg.connect(as_reader(url, role)) as con:
            con.execute(f"SELECT count(*) FROM {relation}".encode()).fetchone()
        return True
    except psycopg.errors.InsufficientPrivilege:
        return False


def relations(url: str) -> list[str]:
    """Every table and view of the demo, physical tables of SQLMesh included."""
    with psycopg.connect(url) as con:
        rows = con.execute(
            "SELECT table_schema || '.' || table_name FROM information_schema.tables "
            "WHERE table_schema NOT IN ('pg_catalog', 'information_schema') "
            "AND table_schema NOT LIKE 'sqlmesh%%' OR table_schema LIKE 'sqlmesh__%%'"
        ).fetchall()
    return sorted(r[0] for r in rows)


def test_a_grant_reads_exactly_its_relations_then_nothing(pg_demo: Any, reader: str) -> None:
    ws, url = pg_demo
    everything = relations(url)
    assert "marts.agg_gmv_daily" in everything and len(everything) > 10
    assert not any(can_read(url, reader, r) for r in ("marts.agg_gmv_daily", "raw.fx_rates"))

    asked = json.loads(splice(ws, "access", "request", AGG, "--for", reader, "--why",
                              "GMV reconciliation", "--hours", "0.002", "--as", "maria",
                              "--json").stdout)  # fmt: skip
    gid = asked["grant_id"]
    assert asked["relations"] == ["marts.agg_gmv_daily"] and asked["asked"] == ["maria"]
    assert not can_read(url, reader, "marts.agg_gmv_daily")  # nothing before approval

    own = splice(ws, "access", "approve", gid, "--as", "maria", check=False)
    assert own.returncode == 2 and "cannot approve it" in own.stderr
    stranger = splice(ws, "access", "approve", gid, "--as", "lee", check=False)
    assert stranger.returncode == 2 and "not an owner of domain pricing" in stranger.stderr

    done = json.loads(splice(ws, "access", "approve", gid, "--as", "sam", "--json").stdout)
    assert done["status"] == "granted" and done["role"].startswith("splice_ag_")
    readable = [r for r in everything if can_read(url, reader, r)]
    assert readable == ["marts.agg_gmv_daily"]  # the view; not its physical table, nothing else

    listed = json.loads(splice(ws, "access", "list", "--json").stdout)
    assert [(g["grant_id"], g["status"]) for g in listed] == [(gid, "granted")]
    time.sleep(max(0.0, done["until"] - time.time()) + 0.5)
    later = splice(ws, "access", "list", "--json")  # the next command revokes what is due
    assert json.loads(later.stdout) == []
    assert not any(can_read(url, reader, r) for r in everything)
    with psycopg.connect(url) as con:
        assert (
            con.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (done["role"],)).fetchone()
            is None
        )

    shown = json.loads(splice(ws, "access", "show", gid, "--json").stdout)
    assert shown["status"] == "ended" and "its time was up" in shown["end_reason"]
    receipt = shown["receipt"]
    assert [a["by"] for a in receipt["approved_by"]] == ["sam"]
    assert receipt["requested_by"]["name"] == "maria" and receipt["revoked"][-1].startswith(
        "DROP ROLE"
    )
    log = json.loads(splice(ws, "audit-log", "show", "--json").stdout)
    kinds = [e["kind"] for e in log if e["proposal_id"] == gid]
    assert kinds == ["access-request", "access-approve", "access-grant", "access-revoke",
                     "access-receipt"]  # fmt: skip
    assert "intact" in splice(ws, "audit-log", "verify").stdout


def test_requests_that_cannot_be_granted_are_refused(pg_demo: Any, reader: str) -> None:
    ws, url = pg_demo
    both = splice(ws, "access", "request", f"{AGG} {QTD}", "--for", reader, "--why", "x",
                  "--hours", "1", "--as", "maria", check=False)  # fmt: skip
    assert both.returncode == 2 and "2 domains" in both.stderr and "separately" in both.stderr
    nobody = splice(ws, "access", "request", QTD, "--for", "no_such_role", "--why", "x",
                    "--hours", "1", "--as", "sam", check=False)  # fmt: skip
    assert nobody.returncode == 2 and "no role 'no_such_role'" in nobody.stderr
    long = splice(ws, "access", "request", QTD, "--for", reader, "--why", "x", "--hours",
                  "1000", "--as", "sam", check=False)  # fmt: skip
    assert long.returncode == 2 and "max_hours" in long.stderr
    listed = json.loads(splice(ws, "access", "list", "--all", "--json").stdout)
    assert all(g["grantee"] != reader for g in listed)  # nothing was recorded for them

    # --for takes a principal whose role [access] roles names; during an org-wide stop nothing
    # is approved; after it is lifted, it is
    toml = ws / "splice.toml"
    before = toml.read_text()
    toml.write_text(before + f'\n[access]\nroles = {{ "Rita" = "{reader}" }}\n')
    try:
        asked = json.loads(splice(ws, "access", "request", QTD, "--for", "rita", "--why", "close",
                                  "--hours", "1", "--as", "sam", "--json").stdout)  # fmt: skip
    finally:
        toml.write_text(before)
    gid = asked["grant_id"]
    assert asked["grantee"] == reader
    splice(ws, "stop", "--reason", "quarter freeze", "--as", "lee")
    try:
        stopped = splice(ws, "access", "approve", gid, "--as", "lee", check=False)
        assert stopped.returncode == 2 and "org-wide stop" in stopped.stderr
        assert not can_read(url, reader, "finance.fct_gmv_qtd")
    finally:
        splice(ws, "resume", "--as", "lee")
    splice(ws, "access", "approve", gid, "--as", "lee")
    assert can_read(url, reader, "finance.fct_gmv_qtd")
    withdrawn = splice(ws, "access", "revoke", gid, "--reason", "done", "--as", "sam")
    assert "reads none of it now" in withdrawn.stdout  # the requester may end it early
    assert not can_read(url, reader, "finance.fct_gmv_qtd")


def test_an_owner_revokes_early_and_a_killed_grant_is_taken_back(pg_demo: Any, reader: str) -> None:
    from splice import api
    from splice.grants import store
    from splice.support.principals import Principal
    from splice.warehouse.postgres import grants as pg

    ws, url = pg_demo
    sam = Principal.of("sam", kind="person", auth="cli-as")
    lee = Principal.of("lee", kind="person", auth="cli-as")
    with api.open_workspace(ws) as w:
        g = api.request_access(w, QTD, grantee=reader, why="close", hours=1, principal=sam)
        api.approve_access(w, g["grant_id"], principal=lee)
    assert can_read(url, reader, "finance.fct_gmv_qtd")
    out = splice(ws, "access", "revoke", g["grant_id"], "--reason", "done early", "--as", "lee")
    assert "reads none of it now" in out.stdout
    assert not can_read(url, reader, "finance.fct_gmv_qtd")

    # a process killed between granting on the warehouse and recording it: the row says
    # granting; the next command (after the grace period) takes the grant back
    with api.open_workspace(ws) as w:
        g = api.request_access(w, QTD, grantee=reader, why="again", hours=1, principal=sam)
        role = pg.role_for(g["grant_id"])

        def planned(cur: Any) -> None:
            cur.role, cur.until = role, time.time() + 3600
            cur.statements = pg.grant_statements(role, reader, cur.relations)
            cur.revoke_statements = pg.revoke_statements(role)

        held = store.transition(w.state, g["grant_id"], "granting", principal=lee, change=planned)
        with psycopg.connect(url, autocommit=True) as con:
            pg.run(con, held.statements, "granting")
        assert can_read(url, reader, "finance.fct_gmv_qtd")
        assert api.end_due_access(w) == []  # within the grace period: left alone
        with w.state.transaction() as conn:
            conn.execute(_TEN_MINUTES_AGO, (g["grant_id"],))
    shown = json.loads(splice(ws, "access", "show", g["grant_id"], "--json").stdout)
    assert shown["status"] == "failed" and "interrupted while granting" in shown["end_reason"]
    assert not can_read(url, reader, "finance.fct_gmv_qtd")


def test_over_mcp_an_agent_asks_an_owner_grants_and_serve_revokes_after_a_restart(
    pg_demo: Any, reader: str
) -> None:
    """An agent asks over /mcp; the agent and a non-owner may not approve; the owner does; the
    server is stopped and started again, and its scheduler revokes on time, no command run."""
    import anyio
    from tests.mcp.mcp_support import ToolFailed, call
    from tests.serve.serve_support import http_session, make_key, serve_config

    ws, url = pg_demo
    toml = ws / "splice.toml"
    before = toml.read_text()
    port = free_port()
    toml.write_text(before + serve_config(port, None))
    keys = {"bot": make_key(ws, "claude", "agent", "read,propose"),
            "sam": make_key(ws, "sam", "person", "read,propose,approve"),
            "lee": make_key(ws, "lee", "person", "read,propose,approve")}  # fmt: skip

    async def ask_and_grant(base: str) -> tuple[dict[str, Any], list[str]]:
        refusals = []
        async with http_session(base, keys["bot"], client="ci") as bot:
            asked = await call(bot, "request_access", selector=QTD, grantee=reader,
                               why="agent's reconciliation", hours=0.003)  # fmt: skip
            with pytest.raises(ToolFailed) as e:
                await call(bot, "approve_access", grant_id=asked["grant_id"])
            refusals.append(str(e.value))
        async with http_session(base, keys["sam"]) as sam:
            with pytest.raises(ToolFailed) as e:
                await call(sam, "approve_access", grant_id=asked["grant_id"])
            refusals.append(str(e.value))
        async with http_session(base, keys["lee"]) as lee:
            done = await call(lee, "approve_access", grant_id=asked["grant_id"], comment="ok")
        return done, refusals

    try:
        with running_server(ws, port) as base:
            done, refusals = anyio.run(ask_and_grant, base)
        assert "agent never decides" in refusals[0] and "not an owner" in refusals[1]
        assert done["status"] == "granted" and done["requester"]["kind"] == "agent"
        assert can_read(url, reader, "finance.fct_gmv_qtd")  # the server is down; access holds
        with running_server(ws, port):  # started again: its scheduler revokes on time
            until = datetime.fromisoformat(done["until"]).timestamp()  # MCP: ISO 8601
            time.sleep(max(0.0, until - time.time()) + 3)
            assert not can_read(url, reader, "finance.fct_gmv_qtd")
        shown = json.loads(splice(ws, "access", "show", done["grant_id"], "--json").stdout)
        assert shown["status"] == "ended" and shown["decisions"][-1]["actor"] == "splice"
        approver = [d for d in shown["decisions"] if d["decision"] == "approve"][0]
        assert (approver["actor"], approver["principal_auth"]) == ("lee", "api-key")
    finally:
        toml.write_text(before)


def test_the_web_page_asks_an_owner_grants_and_revokes(pg_demo: Any, reader: str) -> None:
    """The page: maria asks through the form; lee (not an owner) sees no Approve and a forged
    approval is refused; sam approves (granted) and then revokes."""
    from tests.web.web_support import served_site, text_of

    ws, url = pg_demo
    toml = ws / "splice.toml"
    before = toml.read_text()
    try:
        with served_site(ws, people=("maria", "sam", "lee")) as site:
            maria = site.client("maria")
            assert 'data-testid="request-form"' in maria.get("/access").text
            r = maria.post("/access/request", {"selector": AGG, "grantee": reader,
                                                "why": "pricing audit", "hours": "2"})  # fmt: skip
            assert r.status_code == 200 and "/access/AG-" in str(r.url), r.text[:600]
            page = str(r.url).split(site.base, 1)[1]
            assert 'data-testid="approve"' not in r.text and 'data-testid="reject"' in r.text
            lee = site.client("lee")
            seen = lee.get(page)
            assert 'data-testid="approve"' not in seen.text
            assert "not an owner of domain pricing" in text_of(seen.text)
            assert lee.post(f"{page}/approve", {"comment": "sure"}).status_code == 403
            assert not can_read(url, reader, "marts.agg_gmv_daily")
            sam = site.client("sam")
            assert 'data-testid="approve"' in sam.get(page).text
            done = sam.post(f"{page}/approve", {"comment": "for the audit"})
            assert done.status_code == 200 and "granted" in text_of(done.text)
            assert can_read(url, reader, "marts.agg_gmv_daily")
            assert 'data-testid="revoke"' in done.text
            ended = sam.post(f"{page}/revoke", {"comment": "audit done"})
            assert ended.status_code == 200 and "revoked by sam" in text_of(ended.text)
            assert not can_read(url, reader, "marts.agg_gmv_daily")
            assert "DROP ROLE" in ended.text
    finally:
        toml.write_text(before)


def test_owners_are_told_when_access_waits_is_granted_and_ends(pg_demo: Any, reader: str) -> None:
    from tests.notify.notify_support import http_receiver

    ws, _url = pg_demo
    toml = ws / "splice.toml"
    before = toml.read_text()
    try:
        with http_receiver() as rec:
            toml.write_text(before + f'\n[[notify]]\nname = "hook"\ntype = "webhook"\nurl = "{rec.url}/hook"\n'
                            'events = ["access_requested", "access_granted", "access_ended"]\n')  # fmt: skip
            gid = json.loads(splice(ws, "access", "request", QTD, "--for", reader, "--why",
                                    "close", "--hours", "1", "--as", "sam", "--json").stdout)["grant_id"]  # fmt: skip
            splice(ws, "access", "approve", gid, "--as", "lee")
            splice(ws, "access", "revoke", gid, "--reason", "done", "--as", "lee")
            got = [(b["event"], b["proposal_id"]) for b in rec.on("/hook")]
            assert got == [
                ("access_requested", gid),
                ("access_granted", gid),
                ("access_ended", gid),
            ]
            first = rec.on("/hook")[0]
            assert first["summary"].startswith(f"Access {gid} waits for approval by lee")
            assert first["next_command"] == f"splice access approve {gid}"
    finally:
        toml.write_text(before)


def test_an_unanswered_request_escalates_then_expires_never_granted(
    pg_demo: Any, reader: str
) -> None:
    from splice import api
    from splice.grants import end_due, refresh
    from splice.grants.store import load
    from splice.support.principals import Principal

    ws, url = pg_demo
    lee = Principal.of("lee", kind="person", auth="cli-as")
    sam = Principal.of("sam", kind="person", auth="cli-as")
    with api.open_workspace(ws) as w:
        g = api.request_access(w, AGG, grantee=reader, why="x", hours=1, principal=lee)
        assert g["asked"] == ["maria"]
        later = refresh(w, load(w.state, g["grant_id"]), now=g["created_at"] + 2 * 3600 + 1)
        assert later.status == "pending" and api.access_grant(w, g["grant_id"])["asked"] == [
            "maria",
            "sam",
        ]
        assert end_due(w, now=g["expires_at"] + 1) == []
        assert load(w.state, g["grant_id"]).status == "expired"
        with pytest.raises(Exception, match="only a pending request is approved"):
            api.approve_access(w, g["grant_id"], principal=sam)
    assert not can_read(url, reader, "marts.agg_gmv_daily")


def test_a_rebuild_by_dbt_keeps_the_access_granted(pg_demo: Any, reader: str) -> None:
    """dbt's table materialization builds a new table and drops the old one, privileges and
    all: Splice grants again after every build, so a grant lasts its hours, not one run."""
    ws, url = pg_demo
    gid = json.loads(splice(ws, "access", "request", QTD, "--for", reader, "--why", "close",
                            "--hours", "1", "--as", "sam", "--json").stdout)["grant_id"]  # fmt: skip
    splice(ws, "access", "approve", gid, "--as", "lee")
    with psycopg.connect(url) as con:
        oid = con.execute(b"SELECT 'finance.fct_gmv_qtd'::regclass::oid").fetchone()
    splice(ws, "run", "--full", "-s", QTD)
    with psycopg.connect(url) as con:
        assert (
            con.execute(b"SELECT 'finance.fct_gmv_qtd'::regclass::oid").fetchone() != oid
        )  # a new table
    assert can_read(url, reader, "finance.fct_gmv_qtd")
    splice(ws, "access", "revoke", gid, "--reason", "done", "--as", "lee")
    assert not can_read(url, reader, "finance.fct_gmv_qtd")


def test_a_grant_is_ended_by_its_own_targets_commands(pg_demo: Any, reader: str) -> None:
    """A command on another target (which may live on another warehouse) leaves prod's due
    grant alone; the next prod command ends it."""
    ws, url = pg_demo
    done = json.loads(splice(ws, "access", "request", QTD, "--for", reader, "--why", "x",
                             "--hours", "0.001", "--as", "sam", "--json").stdout)  # fmt: skip
    granted = json.loads(splice(ws, "access", "approve", done["grant_id"], "--as", "lee",
                                "--json").stdout)  # fmt: skip
    time.sleep(max(0.0, granted["until"] - time.time()) + 0.5)
    assert json.loads(splice(ws, "-t", "dev", "access", "list", "--json").stdout) == []
    assert can_read(url, reader, "finance.fct_gmv_qtd")  # dev's command did not touch it
    assert json.loads(splice(ws, "access", "list", "--json").stdout) == []
    assert not can_read(url, reader, "finance.fct_gmv_qtd")
