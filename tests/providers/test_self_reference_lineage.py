"""selfref/: models that read their own table, in two dialects on one DuckDB file.

    raw.payments -> billing (SQLMesh, Snowflake SQL): BILLING.PAYMENTS -> BILLING.BALANCES
                    (INCREMENTAL_BY_TIME_RANGE, joins @this_model to carry the running balance)
    BILLING.BALANCES ..matched..> ledger (dbt-duckdb): source:billing.balances
                    -> balance_history (incremental, reads {{ this }} for the last day it holds)

Built by hand once (sqlmesh plan, dbt build), the lineage is read through splice.api.lineage.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fixture_projects import copy_fixture, cwd, dbt

from splice.api import lineage, lineage_chain
from splice.workspace.core import Workspace

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

BALANCES = "billing:BILLING.BALANCES"
PAYMENTS = "billing:BILLING.PAYMENTS"
RAW = "billing:RAW.PAYMENTS"
HISTORY = "ledger:balance_history"


def build_by_hand(root: Path) -> None:
    from splice.support.sqlmesh_import import import_sqlmesh

    Context = import_sqlmesh().Context
    with cwd(root / "billing"):
        ctx = Context(paths=str(root / "billing"))
        try:
            ctx.plan("prod", auto_apply=True, no_prompts=True, execution_time="2024-01-05")
        finally:
            ctx.close()
    dbt(root / "ledger", "build")


@pytest.fixture(scope="module")
def built_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_fixture("selfref", tmp_path_factory.mktemp("selfref"))
    build_by_hand(root)
    return root


@pytest.fixture(scope="module")
def built(built_dir: Path) -> Iterator[Workspace]:
    with Workspace.open(built_dir) as ws:
        yield ws


@pytest.fixture(scope="module")
def unbuilt(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    with Workspace.open(copy_fixture("selfref", tmp_path_factory.mktemp("unbuilt"))) as ws:
        yield ws


def walk(ws: Workspace, ref: str, direction: str | None = None) -> dict[str, Any]:
    return lineage(ws, ref, direction=direction)


def hops(res: dict[str, Any], direction: str = "upstream") -> set[tuple[str, str, str, bool]]:
    return {(h["node"], h["column"], h["kind"], h["self_ref"]) for h in res[direction]}


def test_the_fixture_really_carries_state(built_dir: Path) -> None:
    import duckdb

    with duckdb.connect(str(built_dir / "warehouse.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT user_id, paid_on::VARCHAR, balance FROM billing.balances ORDER BY 1, 2"
        ).fetchall()
        history = con.execute("SELECT count(*) FROM ledger.balance_history").fetchone()
    # each day adds to the balance read back from the model's own table (batch_size 1)
    assert rows == [
        ("u1", "2024-01-01", 10.0),
        ("u1", "2024-01-02", 17.5),
        ("u1", "2024-01-03", 20.0),
        ("u2", "2024-01-01", 5.0),
    ]
    assert history == (4,)


def test_sqlmesh_this_model_is_a_self_edge(built: Workspace) -> None:
    res = walk(built, f"{BALANCES}.balance")
    assert res["opaque_reason"] is None  # reading itself never makes it opaque
    up = hops(res)
    # the running balance flows from the model's own previous balance, and from the payments
    assert (BALANCES, "balance", "direct", True) in up
    assert (BALANCES, "user_id", "indirect", True) in up  # the self join's key
    assert (PAYMENTS, "amount", "direct", False) in up
    assert (RAW, "amount", "direct", False) in up
    record = next(h for h in res["upstream"] if h["self_ref"] and h["column"] == "balance")
    assert record["depth"] == 1 and record["node"] == BALANCES
    assert "previous state" in record["note"]
    # downstream: the balance feeds the next interval's balance and the dbt ledger
    down = hops(res, "downstream")
    assert (BALANCES, "balance", "direct", True) in down
    assert (HISTORY, "balance", "direct", False) in down
    # SQLMesh names a Snowflake project's models in upper case; any case finds the one node
    assert walk(built, "billing:billing.balances.balance", "upstream")["node"] == BALANCES


def test_dbt_this_is_a_self_edge_before_and_after_the_first_build(
    built: Workspace, unbuilt: Workspace
) -> None:
    # is_incremental() is false until the table exists: Splice compiles the incremental branch
    # either way, so the lineage does not depend on whether the warehouse was built
    before = walk(unbuilt, f"{HISTORY}.paid_on", "upstream")
    after = walk(built, f"{HISTORY}.paid_on", "upstream")
    for res in (before, after):
        up = hops(res)
        assert (HISTORY, "paid_on", "indirect", True) in up  # where paid_on > max(this.paid_on)
        assert (BALANCES, "paid_on", "direct", False) in up
    assert hops(before) == hops(after)
    down = hops(walk(unbuilt, f"{HISTORY}.paid_on", "downstream"), "downstream")
    assert down == {(HISTORY, c, "indirect", True) for c in ("user_id", "paid_on", "balance")}


def test_walks_through_self_references_terminate(built: Workspace) -> None:
    for ref in (BALANCES, HISTORY, f"{RAW}.amount", f"{PAYMENTS}.user_id"):
        res = lineage(built, ref)  # every column, both ways, no depth limit
        for d in ("upstream", "downstream"):
            keys = [(h["node"], h["column"], h["self_ref"]) for h in res[d]]
            assert len(keys) == len(set(keys)), (ref, d)
            assert all(h["depth"] <= 6 for h in res[d]), (ref, d)


def test_each_project_parses_in_its_own_dialect(built: Workspace) -> None:
    g = built.graph()
    assert built.dialect == "duckdb"  # [warehouse] dialect: only the default
    assert g.nodes[BALANCES].dialect == "snowflake"  # SQLMesh model_defaults.dialect
    assert g.nodes[HISTORY].dialect == "duckdb"  # dbt: the profile's adapter type
    assert built.provider("ledger").adapter_type == "duckdb"
    res = lineage(built, f"{PAYMENTS}.due_on", direction="upstream")
    # DATEADD(month, 1, paid_on) read as Snowflake: no column `month`
    assert hops(res) == {(RAW, "paid_on", "direct", False)}


def test_relations_meet_across_dialects(built: Workspace) -> None:
    res = walk(built, f"{HISTORY}.balance", "upstream")
    by_key = {(h["node"], h["column"]): h for h in res["upstream"] if not h["self_ref"]}
    first = by_key[(BALANCES, "balance")]
    assert first["kind"] == "direct" and first["across_binding"] and first["depth"] == 1
    # Snowflake folds names to upper case; the workspace names them by DuckDB's rules
    assert by_key[(PAYMENTS, "amount")]["relation"] == "warehouse.billing.payments"
    assert by_key[(RAW, "amount")]["relation"] == "warehouse.raw.payments"
    assert res["upstream_origins"] == [RAW]


def test_an_empty_walk_says_why(built: Workspace) -> None:
    leaf = walk(built, f"{RAW}.amount", "upstream")
    assert leaf["upstream"] == []
    assert leaf["why_empty"]["upstream"] == f"{RAW} is an external table: its columns start here"
    last = walk(built, f"{HISTORY}.balance", "downstream")
    assert last["why_empty"]["downstream"] == f"no model reads {HISTORY}"
    unknown = walk(built, "ledger:source:billing.balances.nope")
    assert unknown["why_empty"]["downstream"].startswith(
        "nope is not a column of ledger:source:billing.balances: its known columns are user_id"
    )
    bound = walk(built, "ledger:source:billing.balances.balance", "upstream")
    assert bound["why_empty"]["upstream"] == (
        f"ledger:source:billing.balances is bound to {BALANCES}: walk from there"
    )


def test_the_cli_shows_self_edges_and_why_a_walk_is_empty(tmp_path: Path) -> None:
    root = copy_fixture("selfref", tmp_path)  # its own copy: no lock shared with the others

    def cli(*args: str) -> str:
        proc = subprocess.run(
            [sys.executable, "-m", "splice", "--workspace", str(root), "lineage", *args],
            capture_output=True,
            text=True,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        return " ".join(proc.stdout.split())

    text = cli(f"{HISTORY}.balance")
    assert "ledger:balance_history.paid_on indirect (previous state" in text
    assert "downstream (0 columns)" in text and f"(none: no model reads {HISTORY})" in text
    assert text.index("downstream (0 columns)") < text.index(f"(none: no model reads {HISTORY})")
    data = json.loads(cli(f"{RAW}.amount", "--json"))
    assert data["why_empty"] == {"upstream": f"{RAW} is an external table: its columns start here"}


def test_the_direct_chain_skips_previous_states(built: Workspace) -> None:
    chain = lineage_chain(built, f"{HISTORY}.balance")
    assert chain == [
        f"{HISTORY}.balance",
        f"{BALANCES}.balance  (across binding)",
        f"{PAYMENTS}.amount",
        f"{RAW}.amount",
    ]


def test_direct_edges_match_sqlmeshs_own_column_lineage(built: Workspace) -> None:
    """SQLMesh's column_dependencies, asked by hand, names the same direct inputs, the model's
    own table included."""
    from sqlmesh.core.lineage import column_dependencies

    ctx = built.provider("billing").context
    for model, column in (("BALANCES", "balance"), ("BALANCES", "paid_on"), ("PAYMENTS", "due_on")):
        theirs = {
            (rel.replace('"', "").lower(), c.lower())
            for rel, cols in column_dependencies(
                ctx, f"billing.{model.lower()}", column.upper()
            ).items()
            for c in cols
        }
        res = lineage(built, f"billing:BILLING.{model}.{column}", direction="upstream")
        ours = {
            (h["relation"], h["column"])
            for h in res["upstream"]
            if h["depth"] == 1 and h["kind"] == "direct"
        }
        assert ours == theirs, (model, column)


def test_splice_compiles_what_an_incremental_run_compiles(
    built_dir: Path, built: Workspace, unbuilt: Workspace
) -> None:
    """`dbt compile` by hand, once the table exists, takes the incremental branch; Splice renders
    that same SQL for lineage, whether the table exists or not."""
    from splice.lineage.service import rendered_sql

    by_hand = dbt(built_dir / "ledger", "compile", "--select", "balance_history")
    (result,) = by_hand.result.results  # type: ignore[attr-defined]
    assert 'from "warehouse"."ledger"."balance_history"' in result.node.compiled_code
    for ws in (unbuilt, built):
        sql, dialect, _ = rendered_sql(ws, ws.graph(), [HISTORY])[HISTORY]
        assert dialect == "duckdb"
        assert sql is not None and sql.split() == result.node.compiled_code.split()


def test_an_incremental_branch_that_queries_the_warehouse_falls_back_to_the_first_run(
    tmp_path: Path,
) -> None:
    """run_query(... this) inside is_incremental() cannot compile without the warehouse: the
    project's lineage comes from the first run's SQL instead of failing."""
    root = copy_fixture("selfref", tmp_path)
    (root / "ledger" / "models" / "balance_watermark.sql").write_text(
        "{{ config(materialized='incremental') }}\n"
        "{% if is_incremental() %}\n"
        '  {% set last = run_query("select max(paid_on) from " ~ this).columns[0][0] %}\n'
        "{% endif %}\n"
        "select user_id, paid_on from {{ source('billing', 'balances') }}\n"
        "{% if is_incremental() %} where paid_on > '{{ last }}' {% endif %}\n"
    )
    with Workspace.open(root) as ws:
        res = lineage(ws, "ledger:balance_watermark.paid_on", direction="upstream")
        assert hops(res) >= {(BALANCES, "paid_on", "direct", False)}
        # the whole project compiled as a first run: balance_history's self edge is not seen
        history = hops(lineage(ws, f"{HISTORY}.paid_on", direction="upstream"))
        assert (BALANCES, "paid_on", "direct", False) in history
        assert not any(node == HISTORY for node, *_ in history)
