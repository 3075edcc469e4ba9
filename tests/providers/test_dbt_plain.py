"""The compiled SQL of a dbt model whose Jinja is only ref, source and config, rendered from the
manifest without dbt (splice.providers.dbt_plain), is what ``dbt compile`` gives it: checked
model by model on real projects (the demo's finance project, jaffle_dbt with its package and
snapshot, versioned_dbt with model versions and an ephemeral model, federated's dbt project);
every other model is still compiled by dbt."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice.providers import dbt_plain
from splice.workspace.core import Workspace


def _compare(root: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """(models rendered from the manifest, models left to dbt), after checking each of the
    first is what dbt compiles."""
    plain = left = 0
    with Workspace.open(root) as ws:
        graph = ws.graph()
        for spec in ws.config.projects:
            if spec.format != "dbt":
                continue
            prov = ws.provider(spec.name)
            nodes = [n for n in graph.nodes.values()
                     if n.project == spec.name and n.kind in ("model", "snapshot")]  # fmt: skip
            fast = prov.render(nodes)
            manifest = prov.manifest
            used = {n.id for n in nodes if n.kind == "model" and dbt_plain.plain_render(
                manifest, manifest.nodes[n.meta["unique_id"]]) is not None}  # fmt: skip
            with monkeypatch.context() as mp:
                mp.setattr(dbt_plain, "plain_render", lambda m, n: None)
                by_dbt = prov.render(nodes)
            for n in nodes:  # the same text, whether rendered from the manifest or by dbt
                if n.language == "sql":
                    assert by_dbt[n.id].sql is not None, (n.id, by_dbt[n.id].opaque_reason)
                assert fast[n.id].sql == by_dbt[n.id].sql, n.id
            plain += len(used)
            left += len(nodes) - len(used)
    return plain, left


def test_the_demo_finance_models(fresh_demo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plain, left = _compare(fresh_demo, monkeypatch)
    assert plain >= 3 and left >= 1, (plain, left)  # the time spine's macros go to dbt


def test_jaffle_versions_and_federated(
    jaffle_dir: Path, shopv_dir: Path, federated_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    totals = [_compare(d, monkeypatch) for d in (jaffle_dir, shopv_dir, federated_dir)]
    assert sum(p for p, _ in totals) >= 5, totals
    assert sum(n for _, n in totals) >= 2, totals  # the snapshot, the versioned refs, macros
