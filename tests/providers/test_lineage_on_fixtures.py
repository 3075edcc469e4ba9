"""Column lineage on projects Splice has never seen: ephemeral models, packages, seeds,
Python models, SQLMesh macros and external models."""

from __future__ import annotations

from pathlib import Path

from splice.api import doctor
from splice.lineage.query import column_lineage
from splice.lineage.service import workspace_lineage
from splice.workspace.core import Workspace


def test_dbt_ephemeral_models_are_seen_through(jaffle_dir: Path) -> None:
    with Workspace.open(jaffle_dir) as ws:
        res = column_lineage(ws, "jaffle:orders", direction="upstream")
    hops = {(h["node"], h["column"]): h["kind"] for h in res["upstream"]}
    # stg_payments is ephemeral: dbt inlines it, so lineage reaches the source behind it
    assert ("jaffle:source:shop.payments", "amount") in hops
    assert not any(node == "jaffle:stg_payments" for node, _ in hops)
    assert hops[("jaffle:stg_orders", "order_id")] == "direct"


def test_a_python_model_is_opaque_with_a_reason_not_a_crash(jaffle_dir: Path) -> None:
    with Workspace.open(jaffle_dir) as ws:
        wl = workspace_lineage(ws)
        ml = wl.models["jaffle:customer_segments"]
        assert ml.opaque_reason and "python" in ml.opaque_reason.lower()
        res = column_lineage(ws, "jaffle:customer_segments", direction="upstream")
        assert res["opaque_reason"]
        # the walk still names what it reads, as opaque '*' hops
        assert res["upstream"] and all(h["column"] == "*" for h in res["upstream"])
        codes = {(c.code, c.node) for c in doctor(ws)}
    assert ("SPL302", "jaffle:customer_segments") in codes


def test_sqlmesh_macros_and_external_models(shop_dir: Path) -> None:
    with Workspace.open(shop_dir) as ws:
        wl = workspace_lineage(ws)
        g = ws.graph()
        sql_models = [n.id for n in g.nodes.values() if n.kind == "model" and n.language == "sql"]
        assert sql_models
        for nid in sql_models:
            assert wl.models[nid].opaque_reason is None, (nid, wl.models[nid].opaque_reason)
        externals = {n.id for n in g.nodes.values() if n.kind == "external"}
        origins: set[str] = set()
        for nid in sql_models:
            origins |= set(column_lineage(ws, nid, direction="upstream")["upstream_origins"])
    assert origins & externals
