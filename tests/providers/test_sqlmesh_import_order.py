"""SQLMesh loads and plans whatever sqlglot generated before it was imported.

sqlglot caches each generator's dispatch table on first use; SQLMesh adds its expressions to
the generators when it is imported. Splice generates DuckDB SQL before it loads SQLMesh (the
plan memo, evidence, metrics), which left SQLMesh unable to write its own ``MODEL (...)``
expression: "Unsupported expression type Model" on load and on every plan of a changed model.
These run in a fresh interpreter: the test process has long imported SQLMesh.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from fixture_projects import copy_fixture


def _fresh_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_a_project_loads_and_renders_after_sqlglot_generated_duckdb_sql(tmp_path: Path) -> None:
    project = copy_fixture("shop_sqlmesh", tmp_path)
    done = _fresh_python(
        """
        import sqlglot
        # what Splice does before it loads SQLMesh: build DuckDB SQL with sqlglot
        print(sqlglot.parse_one("SELECT a::INT FROM t", read="duckdb").sql("duckdb"))
        assert "sqlmesh" not in __import__("sys").modules
        from splice.workspace.core import Workspace
        from splice.lineage.service import workspace_lineage
        with Workspace.open(".") as ws:
            nodes = ws.graph().nodes
            models = workspace_lineage(ws).models
            opaque = {k: m.opaque_reason for k, m in models.items() if m.opaque_reason}
            print("NODES", len(nodes))
            print("OPAQUE", opaque)
            # what SQLMesh's loader and its plan's text diff do: write a model's MODEL (...)
            ctx = ws.provider("shop_sqlmesh").context
            model = ctx.models['"shop"."staging"."orders"']
            print("DEF", model.render_definition()[0].sql(dialect="duckdb")[:40])
        """,
        project,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Unsupported expression type" not in done.stdout + done.stderr
    assert "NODES" in done.stdout and "DEF MODEL (" in done.stdout
    # only the Python model has no SQL to read
    assert "Unsupported" not in done.stdout.split("OPAQUE", 1)[1]


def test_a_changed_model_plans_through_splice_run(fresh_demo: Path) -> None:
    """The demo, a SQLMesh model edited, `splice run` as a person would type it."""
    model = fresh_demo / "pricing" / "models" / "fx" / "daily_rates.sql"
    model.write_text(
        model.read_text().replace(
            "rate_to_usd::DOUBLE AS rate_to_usd", "rate_to_usd::DOUBLE * 1 AS rate_to_usd"
        )
    )
    done = subprocess.run(
        [sys.executable, "-m", "splice", "run", "--json"],
        cwd=fresh_demo,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "Unsupported expression type" not in done.stdout + done.stderr
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    import json

    report = json.loads(done.stdout)
    built = {n for n, r in report["nodes"].items() if r["status"] == "success"}
    assert "pricing:fx.daily_rates" in built
    assert {"finance:fct_gmv_qtd", "finance:stg_gmv_daily"} <= built
