"""Every SQLMesh model kind through Splice, compared with SQLMesh run by hand.

tests/fixtures/projects/sqlmesh_kinds uses SEED, EXTERNAL, INCREMENTAL_BY_TIME_RANGE,
INCREMENTAL_BY_UNIQUE_KEY, INCREMENTAL_BY_PARTITION, SCD_TYPE_2 by time and by column, FULL,
VIEW, EMBEDDED, a CUSTOM materialization and a standalone audit. One copy is built with SQLMesh's
Python API (`sqlmesh plan`, then `sqlmesh run` after new raw data), another with `splice run`;
the warehouses must hold the same objects, columns and rows.
"""

from __future__ import annotations

import json
import os
import subprocess
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pytest
from fixture_projects import copy_fixture, cwd
from tests.cli_runner import run_cli

from splice.api import lineage, list_nodes, plan, run
from splice.workspace.core import Workspace

P = "sqlmesh_kinds"
FIRST = "2024-01-04"  # the raw data covers 2024-01-01 .. 2024-01-03
LATER = "2024-01-06"  # after new raw data for 2024-01-04 .. 2024-01-05
DB = "kinds.duckdb"

# what the loader would bring the day after: new events, a customer's tier changed, a price moved
NEW_RAW_DATA = [
    "INSERT INTO raw.events VALUES"
    " (6, 3, 'FI', TIMESTAMP '2024-01-04 10:00:00', 3.0),"
    " (7, 1, 'GB', TIMESTAMP '2024-01-05 16:30:00', 40.0)",
    "UPDATE raw.customers SET tier = 'gold', updated_at = TIMESTAMP '2024-01-04 12:00:00'"
    " WHERE customer_id = 1",
    "UPDATE raw.prices SET price = 11.0 WHERE product_id = 'P1'",
]


def _copy(parent: Path, name: str = "sqlmesh_kinds") -> Path:
    parent.mkdir(parents=True, exist_ok=True)
    return copy_fixture(name, parent)


def _sqlmesh(root: Path, what: str, execution_time: str) -> None:
    """`sqlmesh plan` (auto-applied to prod) or `sqlmesh run`, by hand, in this process."""
    from splice.support.sqlmesh_import import import_sqlmesh

    with cwd(root):
        ctx = import_sqlmesh().Context(paths=str(root))
        try:
            if what == "plan":
                ctx.plan("prod", auto_apply=True, no_prompts=True, execution_time=execution_time)
            else:
                ctx.run("prod", execution_time=execution_time)
        finally:
            ctx.close()


def _splice_run(root: Path, selector: str | None = None, when: str = FIRST) -> Any:
    with Workspace.open(root) as ws:
        return run(ws, selector, execution_time=when)


def _new_raw_data(root: Path, db: str = DB) -> None:
    con = duckdb.connect(str(root / db))
    try:
        for sql in NEW_RAW_DATA:
            con.execute(sql)
    finally:
        con.close()


def warehouse(root: Path, db: str = DB) -> dict[tuple[str, str], dict[str, Any]]:
    """Every object SQLMesh built (virtual layer and physical tables, SQLMesh's own state left
    out): its type, columns with types, and rows (sorted)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    with duckdb.connect(str(root / db), read_only=True) as con:
        objects = con.execute(
            "SELECT table_schema, table_name, table_type FROM information_schema.tables"
            " WHERE table_schema NOT IN ('sqlmesh', 'raw') AND table_name NOT LIKE '\\_\\_temp%' ESCAPE '\\'"
        ).fetchall()
        for schema, name, ttype in objects:
            cols = con.execute(
                "SELECT column_name, data_type FROM information_schema.columns"
                " WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
                [schema, name],
            ).fetchall()
            rows = con.execute(f'SELECT * FROM "{schema}"."{name}"').fetchall()
            out[(schema, name)] = {
                "type": ttype,
                "columns": cols,
                "rows": sorted(rows, key=repr),
            }
    return out


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SPLICE_WORKSPACE", "SPLICE_TARGET")}
    return run_cli(
        args,
        cwd=root,
        env={**env, "SQLMESH__DISABLE_ANONYMIZED_ANALYTICS": "true", "COLUMNS": "300"},
    )


# -- one copy built by SQLMesh by hand, one by `splice run` --------------------------------------
@pytest.fixture(scope="module")
def by_hand(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = _copy(tmp_path_factory.mktemp("hand"))
    _sqlmesh(root, "plan", FIRST)
    return root


@pytest.fixture(scope="module")
def by_splice(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = _copy(tmp_path_factory.mktemp("splice"))
    return root, _splice_run(root)


def test_splice_run_builds_every_kind_as_sqlmesh_plan_does(
    by_hand: Path, by_splice: tuple[Path, Any]
) -> None:
    root, report = by_splice
    assert report.ok, {n: (r.status, r.message) for n, r in report.nodes.items()}
    hand, spliced = warehouse(by_hand), warehouse(root)
    assert sorted(spliced) == sorted(hand)
    for key in hand:
        assert spliced[key] == hand[key], key
    # what each kind left behind: views over physical tables; a VIEW model's physical object is
    # a view; an EMBEDDED model has nothing at all
    assert ("staging", "valid_events") not in spliced
    physical = {n.split("__")[1]: v["type"] for (s, n), v in spliced.items() if "__" in s}
    assert physical["customer_tiers"] == "VIEW"
    assert physical["countries"] == physical["customers_history"] == "BASE TABLE"
    # the data: the seed loaded, SCD2 history, the custom materialization stamped its copy
    assert len(spliced[("ref", "countries")]["rows"]) == 3
    assert [c for c, _ in spliced[("staging", "customers_history")]["columns"]][-2:] == [
        "valid_from",
        "valid_to",
    ]
    assert {r[0] for r in spliced[("marts", "events_log")]["rows"]} == {date(2024, 1, 4)}


def test_the_run_report_says_what_each_kind_did(by_splice: tuple[Path, Any]) -> None:
    _, report = by_splice
    status = {n.split(":", 1)[1]: r.status for n, r in report.nodes.items()}
    assert status == {
        "ref.countries": "success",  # the seed is built (and counted)
        "staging.events": "success",
        "staging.customers_history": "success",
        "staging.prices_history": "success",
        "staging.valid_events": "noop",  # embedded: never a failure
        "marts.daily_revenue": "success",
        "marts.customer_last_event": "success",
        "marts.revenue_by_country": "success",
        "marts.customer_tiers": "success",
        "marts.events_log": "success",
    }
    assert "embedded" in (report.nodes[f"{P}:staging.valid_events"].message or "")
    assert f"{P}:ref.countries" in report.built
    # the standalone audit ran like `sqlmesh plan` runs it
    assert report.checks[f"{P}:audit:no_negative_revenue"].status == "pass"
    assert report.checks[f"{P}:audit:staging.events.not_null"].status == "pass"


def test_splice_plan_afterwards_reuses_everything(by_splice: tuple[Path, Any]) -> None:
    root, _ = by_splice
    with Workspace.open(root) as ws:
        p = plan(ws, execution_time=FIRST)
    assert p.to_build == []
    assert p.segments == []
    embedded = p.decisions[f"{P}:staging.valid_events"]
    assert embedded.action == "reuse"
    assert "EMBEDDED" in embedded.reasons[0].text


def test_ls_lists_the_standalone_audit_and_every_kind(by_splice: tuple[Path, Any]) -> None:
    root, _ = by_splice
    r = _cli(root, "ls", "--json")
    assert r.returncode == 0, r.stderr
    records = {x["id"]: x for x in json.loads(r.stdout)}
    audit = records[f"{P}:audit:no_negative_revenue"]
    assert audit["kind"] == "audit"
    assert records[f"{P}:staging.customers_history"]["materialization"] == "SCD_TYPE_2_BY_TIME"
    with Workspace.open(root) as ws:
        g = ws.graph()
        kinds = {
            n.name: (n.kind, n.materialization)
            for n in g.nodes.values()
            if n.kind not in ("audit",)
        }
        assert g.parents(f"{P}:audit:no_negative_revenue") == {f"{P}:marts.daily_revenue"}
        assert len(list_nodes(ws, f"{P}:audit:no_negative_revenue")) == 1
    assert kinds == {
        "raw.events": ("external", "EXTERNAL"),
        "raw.customers": ("external", "EXTERNAL"),
        "raw.prices": ("external", "EXTERNAL"),
        "ref.countries": ("seed", "SEED"),
        "staging.events": ("model", "INCREMENTAL_BY_TIME_RANGE"),
        "staging.valid_events": ("model", "EMBEDDED"),
        "staging.customers_history": ("model", "SCD_TYPE_2_BY_TIME"),
        "staging.prices_history": ("model", "SCD_TYPE_2_BY_COLUMN"),
        "marts.daily_revenue": ("model", "FULL"),
        "marts.customer_last_event": ("model", "INCREMENTAL_BY_UNIQUE_KEY"),
        "marts.revenue_by_country": ("model", "INCREMENTAL_BY_PARTITION"),
        "marts.customer_tiers": ("model", "VIEW"),
        "marts.events_log": ("model", "CUSTOM"),
    }


def test_scd2_columns_are_known_to_lineage(by_splice: tuple[Path, Any]) -> None:
    root, _ = by_splice
    with Workspace.open(root) as ws:
        up = lineage(ws, f"{P}:marts.customer_tiers.valid_to", direction="upstream")
        by_column = lineage(ws, f"{P}:staging.prices_history.valid_from", direction="upstream")
    hops = {(h["node"], h["column"]) for h in up["upstream"]}
    assert (f"{P}:staging.customers_history", "valid_to") in hops
    # SCD type 2 by time: SQLMesh derives valid_from / valid_to from updated_at
    assert (f"{P}:raw.customers", "updated_at") in hops
    assert not up.get("opaque_reason")
    # by column: set from the run's time; no upstream column, and lineage says why
    assert by_column["upstream"] == []
    assert "execution time" in by_column["why_empty"]["upstream"]
    # what a person reads: the empty direction with its reason, not a bare "(none)"
    r = _cli(root, "lineage", f"{P}:staging.prices_history.valid_from", "--upstream")
    assert r.returncode == 0, r.stderr
    assert "(none: SQLMesh adds it to this SCD_TYPE_2_BY_COLUMN model" in r.stdout


# -- later: new raw data, `sqlmesh run` by hand vs `splice run` ----------------------------------
def test_a_later_run_evaluates_the_new_intervals_like_sqlmesh_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    hand = _copy(tmp_path_factory.mktemp("hand_later"))
    _sqlmesh(hand, "plan", FIRST)
    _new_raw_data(hand)
    _sqlmesh(hand, "run", LATER)

    root = _copy(tmp_path_factory.mktemp("splice_later"))
    assert _splice_run(root).ok
    _new_raw_data(root)
    with Workspace.open(root) as ws:
        p = plan(ws, execution_time=LATER)
    # SQLMesh's view: every model due by its cron builds; the seed and the embedded model do not
    assert set(p.to_build) >= {f"{P}:staging.events", f"{P}:marts.customer_tiers"}
    assert f"{P}:ref.countries" not in p.to_build
    view = p.decisions[f"{P}:marts.customer_tiers"].reasons[0].text
    assert "recreates the view" in view
    report = _splice_run(root, when=LATER)
    assert report.ok, {n: (r.status, r.message) for n, r in report.nodes.items()}
    events = report.nodes[f"{P}:staging.events"]
    assert events.status == "success"
    assert events.intervals and events.intervals[-1][1] == 1704499200000  # up to 2024-01-06
    assert report.checks[f"{P}:audit:no_negative_revenue"].status == "pass"

    before, after = warehouse(hand), warehouse(root)
    assert sorted(after) == sorted(before)
    for key in before:
        assert after[key] == before[key], key
    history = after[("staging", "customers_history")]["rows"]
    assert len([r for r in history if r[0] == 1]) == 2  # Ada's old tier closed, the new one open


# -- selecting a seed ----------------------------------------------------------------------------
def test_selecting_the_seed_builds_it_and_plus_builds_its_downstream(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    only = _splice_run(root, f"{P}:ref.countries")
    assert only.ok
    assert only.built == [f"{P}:ref.countries"]
    with duckdb.connect(str(root / DB), read_only=True) as con:
        assert con.execute("SELECT COUNT(*) FROM ref.countries").fetchone() == (3,)

    assert _splice_run(root).ok  # everything else
    seed = root / "seeds" / "countries.csv"
    seed.write_text(seed.read_text().replace("Finland,EMEA", "Finland,NORDICS"))
    down = _splice_run(root, f"{P}:ref.countries+")
    assert down.ok, {n: (r.status, r.message) for n, r in down.nodes.items()}
    assert set(down.built) == {f"{P}:ref.countries", f"{P}:marts.daily_revenue"}
    # SQLMesh drops standalone audits from a run that selects models (`--select-model`): the
    # audit on daily_revenue comes along but is not run, and says why
    audit = down.checks[f"{P}:audit:no_negative_revenue"]
    assert audit.status == "skipped"
    assert "whole project" in (audit.message or "")
    with duckdb.connect(str(root / DB), read_only=True) as con:
        regions = {r[0] for r in con.execute("SELECT region FROM marts.daily_revenue").fetchall()}
    assert "NORDICS" in regions


# -- shop_sqlmesh: its seed feeds an incremental model -------------------------------------------
def test_shop_sqlmesh_builds_through_splice_run_like_sqlmesh_plan(tmp_path: Path) -> None:
    hand = _copy(tmp_path / "hand", "shop_sqlmesh")
    _sqlmesh(hand, "plan", "2024-01-05")
    root = _copy(tmp_path / "splice", "shop_sqlmesh")
    report = _splice_run(root, when="2024-01-05")
    assert report.ok, {n: (r.status, r.message) for n, r in report.nodes.items()}
    assert report.nodes["shop_sqlmesh:staging.products"].status == "success"
    assert report.nodes["shop_sqlmesh:staging.orders"].status == "success"
    assert warehouse(root, "shop.duckdb") == warehouse(hand, "shop.duckdb")


def test_a_changed_standalone_audit_is_planned_and_applied_like_sqlmesh_plan(
    tmp_path: Path,
) -> None:
    """`sqlmesh plan` lists a changed standalone audit and applies it (a metadata update: it
    evaluates nothing); Splice's plan must not call the project unchanged."""
    root = _copy(tmp_path)
    assert _splice_run(root).ok
    audit = root / "audits" / "no_negative_revenue.sql"
    audit.write_text(audit.read_text().replace("revenue < 0", "revenue < 0 OR events < 0"))
    aid = f"{P}:audit:no_negative_revenue"
    with Workspace.open(root) as ws:
        p = plan(ws, execution_time=FIRST)
    assert p.to_build == [aid]
    assert "standalone audit changed" in p.decisions[aid].reasons[0].text
    report = _splice_run(root)
    assert report.ok
    assert report.segments[0].method == "sqlmesh plan"
    with Workspace.open(root) as ws:
        assert plan(ws, execution_time=FIRST).to_build == []


def test_a_failing_standalone_audit_warns_as_sqlmesh_does(tmp_path: Path) -> None:
    """SQLMesh refuses blocking standalone audits: one that finds rows is a warning, the run
    succeeds, and the rows it found are counted."""
    root = _copy(tmp_path)
    audit = root / "audits" / "no_negative_revenue.sql"
    audit.write_text(audit.read_text().replace("revenue < 0", "revenue > 0"))
    report = _splice_run(root)
    assert report.ok
    chk = report.checks[f"{P}:audit:no_negative_revenue"]
    assert (chk.status, chk.blocking) == ("warn", False)
    with duckdb.connect(str(root / DB), read_only=True) as con:
        (rows,) = con.execute(
            "SELECT COUNT(*) FROM marts.daily_revenue WHERE revenue > 0"
        ).fetchone()
    assert chk.failures == rows > 0
