"""The demo's stale-rates story on PostgreSQL, end to end with the real tools: dlt's postgres
destination, SQLMesh's Postgres engine, dbt-postgres, on a real server started by the tests.

Built, baselined, frozen, run on, watched, diagnosed, proposed (undo captured), approved,
applied, verified, with a receipt; then undone, back to exactly the frozen rows."""

from __future__ import annotations

import uuid
from datetime import date
from decimal import Decimal
from pathlib import Path
from typing import Any

import psycopg
import pytest
from tests.story_support import assert_stale_rates_diagnosed

from splice.demo.story import tell
from splice.support.principals import Principal
from splice.warehouse.postgres.local_server import LocalPostgres


@pytest.fixture(scope="module")
def pg_story(pg_server: LocalPostgres, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The story told on a database of its own, Splice's state in another of the same server
    (read it; tests that change it say so)."""
    url = pg_server.create_database(f"story_{uuid.uuid4().hex[:8]}")
    state = pg_server.create_database(f"state_{uuid.uuid4().hex[:8]}")
    told, fixed = tell(tmp_path_factory.mktemp("pg_story") / "travel", incident="stale-rates",
                       warehouse="postgres", warehouse_url=url,
                       state_url=state.replace("postgresql://", "postgresql+psycopg://"))  # fmt: skip
    return told, fixed, url, state


def _gmv(url: str) -> dict[date, Decimal]:
    with psycopg.connect(url) as con:
        rows = con.execute(
            "SELECT booking_date, SUM(gmv_usd) FROM marts.agg_gmv_daily GROUP BY 1"
        ).fetchall()
    return dict(rows)


def test_the_incident_is_found_and_diagnosed_on_postgres(pg_story: Any) -> None:
    told, _fixed, _url, _state = pg_story
    assert_stale_rates_diagnosed(told, "postgres")


def test_the_repair_verifies_and_gives_the_clean_numbers(pg_story: Any, demo_build: Any) -> None:
    """After the repair, GMV per day on PostgreSQL equals the clean DuckDB demo's within a
    cent (each engine rounds a booking's double-precision USD amount to 4 decimals its own way,
    so a day of ~1,000 bookings may differ in the 4th decimal)."""
    import duckdb

    _told, fixed, url, _state = pg_story
    applied = fixed.applied.as_dict()
    assert applied["proposal"]["status"] == "applied"
    assert applied["verification"]["summary"].startswith("verified:")
    kinds = [s["kind"] for s in applied["proposal"]["steps"]]
    assert kinds[0] == "reload" and "restate" in kinds and "rebuild" in kinds
    assert all(u["saved_to"].endswith(".pgcopy") for u in applied["proposal"]["undo"])
    con = duckdb.connect(str(demo_build.warehouse), read_only=True)
    try:
        clean = dict(con.execute(
            "SELECT booking_date, SUM(gmv_usd) FROM warehouse.marts.agg_gmv_daily "
            "WHERE booking_date <= DATE '2026-09-30' GROUP BY 1"
        ).fetchall())  # fmt: skip
    finally:
        con.close()
    gmv = _gmv(url)
    assert gmv.keys() == clean.keys() and len(gmv) == 92
    assert {d: (gmv[d], clean[d]) for d in gmv if abs(gmv[d] - clean[d]) >= Decimal("0.01")} == {}
    # the frozen days were wrong by far more than that before the repair
    assert abs(gmv[date(2026, 9, 28)] - clean[date(2026, 9, 28)]) < Decimal("0.01")


def test_the_receipt_names_the_owner_and_says_verified(pg_story: Any) -> None:
    from splice import api

    told, fixed, _url, state = pg_story
    with api.open_workspace(told.build.workspace) as ws:
        r = api.receipt(ws, fixed.proposal.proposal_id)
        text = api.receipt_markdown(r)
        assert api.verify_audit_log(ws).intact
    assert "Approved by: maria" in text and "Passed: verified" in text
    # the decisions live in PostgreSQL, not in a file of the workspace
    assert not (told.build.workspace / ".splice" / "state.db").exists()
    with psycopg.connect(state) as con:
        kinds = [r[0] for r in con.execute("SELECT kind FROM repair_audit_log ORDER BY seq")]
        status = con.execute("SELECT status FROM repair_proposals").fetchall()
    assert kinds[0] == "propose" and "approve" in kinds and kinds[-1] == "receipt"
    assert status == [("applied",)]


def test_after_the_story_the_plan_reuses_everything(pg_story: Any) -> None:
    """Every build's evidence (SQLMesh's, dbt's, the reload's) is in the PostgreSQL state."""
    from splice import api

    told, _fixed, _url, _state = pg_story
    with api.open_workspace(told.build.workspace) as ws:
        plan = api.plan(ws)
    assert plan.to_build == []


def test_an_agent_reads_the_incident_over_mcp_from_the_team_server(pg_story: Any) -> None:
    """``splice serve`` on the PostgreSQL workspace: an agent's API key (kept in the PostgreSQL
    state) reads the incident and the runs through /mcp."""
    import anyio
    from tests.mcp.mcp_support import call
    from tests.serve.serve_support import (
        free_port,
        http_session,
        make_key,
        running_server,
        serve_config,
    )

    told, _fixed, _url, _state = pg_story
    ws = told.build.workspace
    port = free_port()
    with (ws / "splice.toml").open("a") as f:
        f.write(serve_config(port, None))
    key = make_key(ws, "ci-agent", "agent", "read,propose")

    async def main(base: str) -> tuple[Any, Any]:
        async with http_session(base, key, client="ci-agent") as s:
            return await call(s, "get_incident", incident_id="INC-1"), await call(s, "list_runs")

    with running_server(ws, port) as base:
        incident, runs = anyio.run(main, base)
    assert incident["origin"] == "pricing:fx.daily_rates" and incident["status"] == "resolved"
    assert runs["count"] >= 3 and {r["status"] for r in runs["runs"]} == {"success"}


def test_undo_restores_the_frozen_rows_exactly(pg_story: Any) -> None:
    """Runs last in this module: it changes the warehouse back to the frozen days."""
    from splice import api
    from splice.repair import undo

    told, fixed, url, _state = pg_story
    repaired = _gmv(url)
    p = fixed.proposal
    owner = Principal.of("maria", kind="person", auth="cli-as")
    with api.open_workspace(told.build.workspace) as ws:
        api.undo(ws, p.proposal_id, principal=owner)
        assert undo.current_checksums(ws, p.undo) == [u.checksum for u in p.undo]
    back = _gmv(url)
    assert back != repaired
    assert {d for d in back if back[d] != repaired[d]} >= {date(2026, 9, 28), date(2026, 9, 29)}


def test_a_restore_that_fails_midway_changes_nothing(
    pg_server: LocalPostgres, tmp_path: Path
) -> None:
    """The undo's restore is one transaction: a relation that changed shape stops it, and the
    relations restored before it are rolled back."""
    from splice.errors import RepairError
    from splice.repair import undo
    from splice.workspace.core import Workspace

    url = pg_server.create_database(f"undo_{uuid.uuid4().hex[:8]}")
    db = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("CREATE SCHEMA s")
        con.execute("CREATE TABLE s.a (d DATE, v NUMERIC(18,4))")
        con.execute("CREATE TABLE s.b (d DATE, v DOUBLE PRECISION)")
        con.execute(
            "INSERT INTO s.a SELECT DATE '2026-09-01' + i, i * 1.5 FROM generate_series(0, 9) i"
        )
        con.execute("INSERT INTO s.b SELECT DATE '2026-09-01' + i, i FROM generate_series(0, 9) i")
    (tmp_path / "splice.toml").write_text(
        f'[workspace]\nname = "u"\n[warehouse]\ntype = "postgres"\nurl = "{url}"\n'
    )
    with Workspace.open(tmp_path) as ws:
        entries = undo.capture(ws, "PR-9", [
            ("p:a", f"{db}.s.a", "d", date(2026, 9, 3), date(2026, 9, 4)),
            ("p:b", f"{db}.s.b", None, None, None),
        ])  # fmt: skip
        assert [e.rows for e in entries] == [2, 10]
        undo.verify_restorable(ws, entries)  # restores and rolls back: nothing changes
        with psycopg.connect(url, autocommit=True) as con:
            con.execute("UPDATE s.a SET v = -1")
            con.execute("ALTER TABLE s.b ADD COLUMN extra TEXT")
            before = con.execute("SELECT d, v FROM s.a ORDER BY d").fetchall()
        with pytest.raises(RepairError, match="changed shape"):
            undo.restore(ws, entries)
        with psycopg.connect(url) as con:
            assert con.execute("SELECT d, v FROM s.a ORDER BY d").fetchall() == before


def test_a_saved_file_swapped_for_another_relations_is_refused(
    pg_server: LocalPostgres, tmp_path: Path
) -> None:
    """PostgreSQL's binary COPY file carries no column names: another relation's file in
    place of one is refused as it loads, naming the relation and the file, and nothing is
    restored."""
    import shutil

    from splice.errors import RepairError
    from splice.repair import undo
    from splice.workspace.core import Workspace

    url = pg_server.create_database(f"swap_{uuid.uuid4().hex[:8]}")
    db = url.rsplit("/", 1)[1]
    with psycopg.connect(url, autocommit=True) as con:
        con.execute("CREATE SCHEMA s")
        con.execute("CREATE TABLE s.a (d DATE, v NUMERIC(18,4))")
        con.execute("CREATE TABLE s.b (d DATE, v DOUBLE PRECISION, note TEXT)")
        con.execute(
            "INSERT INTO s.a SELECT DATE '2026-09-01' + i, i * 1.5 FROM generate_series(0, 9) i"
        )
        con.execute(
            "INSERT INTO s.b SELECT DATE '2026-09-01' + i, i, 'n' FROM generate_series(0, 9) i"
        )
    (tmp_path / "splice.toml").write_text(
        f'[workspace]\nname = "u"\n[warehouse]\ntype = "postgres"\nurl = "{url}"\n'
    )
    with Workspace.open(tmp_path) as ws:
        entries = undo.capture(ws, "PR-9", [
            ("p:a", f"{db}.s.a", "d", date(2026, 9, 3), date(2026, 9, 4)),
            ("p:b", f"{db}.s.b", None, None, None),
        ])  # fmt: skip
        a = tmp_path / entries[0].saved_to
        shutil.copyfile(tmp_path / entries[1].saved_to, a)
        with psycopg.connect(url, autocommit=True) as con:
            con.execute("UPDATE s.a SET v = -1")
            before = con.execute("SELECT d, v FROM s.a ORDER BY d").fetchall()
        with pytest.raises(RepairError) as refused:
            undo.restore(ws, entries)
        assert f"the saved rows in {a.resolve()} do not match the columns of {db}.s.a" in (
            refused.value.message
        )
        assert "nothing was restored" in refused.value.message
        with psycopg.connect(url) as con:
            assert con.execute("SELECT d, v FROM s.a ORDER BY d").fetchall() == before
