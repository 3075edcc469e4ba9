"""Verification recomputes dbt models as a full refresh would build them: an incremental model
(whose last run compiled only the new rows' query) is compiled with ``is_incremental()`` false
and compared with production row by row; a row changed behind dbt's back is found.

On the seeded fixture (a dbt project in Snowflake SQL on DuckDB: an incremental ``fct_orders``
over its own seed), built through Splice.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest
from fixture_projects import copy_fixture, splice_cli

FCT = "shop:fct_orders"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_fixture("seeded", tmp_path_factory.mktemp("seeded_rc"))
    run = splice_cli(root, "run")
    assert run.returncode == 0, run.stdout + run.stderr
    return root


def _recompute(root: Path) -> dict[str, dict]:
    from splice.repair.damage import NodeDamage
    from splice.repair.recompute import recompute
    from splice.workspace.core import Workspace

    with Workspace.open(root) as ws:
        r = recompute(ws, [NodeDamage(FCT, None, [], full=True)])
    return {n.node: n.as_dict() for n in r.nodes}


def test_an_incremental_dbt_model_is_recomputed_as_a_full_refresh(built: Path) -> None:
    got = _recompute(built)
    assert set(got) == {FCT}  # renewals is a view: it stores nothing of its own to compare
    assert got[FCT]["skipped"] is None and got[FCT]["differ"] == {}
    assert got[FCT]["rows_prod"] == got[FCT]["rows_fresh"] > 0


def test_a_row_changed_behind_dbts_back_is_found(built: Path, tmp_path: Path) -> None:
    import shutil

    root = tmp_path / "seeded"
    shutil.copytree(built, root, symlinks=True)  # its profile's path is relative: it moves
    with duckdb.connect(str(root / "warehouse.duckdb")) as con:
        con.execute("UPDATE main.fct_orders SET amount = amount + 1 WHERE order_id = 2")
    got = _recompute(root)
    assert got[FCT]["differ"] == {"*": 2}  # the row as production holds it, and as rebuilt
    assert got[FCT]["examples"]["only in production"][0]["order_id"] == 2
