"""The benchmark's generated workspace: deterministic, valid SQL, clean lineage; the bench runs."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path

import duckdb
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import _gen  # noqa: E402


def _load_bench():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("splice_bench_lineage", BENCH / "lineage.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["splice_bench_lineage"] = mod
    spec.loader.exec_module(mod)
    return mod


bench = _load_bench()


def _digest(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> _gen.GeneratedWorkspace:
    return _gen.generate_federated_workspace(tmp_path_factory.mktemp("ws"), n_dbt=90, n_sqlmesh=30)


def test_same_seed_same_bytes(tmp_path: Path) -> None:
    a = _gen.generate_federated_workspace(tmp_path / "a", n_dbt=40, n_sqlmesh=15, seed=3)
    b = _gen.generate_federated_workspace(tmp_path / "b", n_dbt=40, n_sqlmesh=15, seed=3)
    c = _gen.generate_federated_workspace(tmp_path / "c", n_dbt=40, n_sqlmesh=15, seed=4)
    assert _digest(a.root) == _digest(b.root) != _digest(c.root)


def test_layout_and_config(small: _gen.GeneratedWorkspace) -> None:
    from splice.config.workspace import parse_config

    cfg = parse_config((small.root / "splice.toml").read_text())
    assert [(p.name, p.format, p.path) for p in cfg.projects] == [
        ("sqlmesh_proj", "sqlmesh", "sqlmesh_proj"),
        ("dbt_proj", "dbt", "dbt_proj"),
    ]
    assert cfg.warehouse.path == "warehouse.duckdb"
    for f in (
        "dbt_proj/dbt_project.yml",
        "dbt_proj/profiles.yml",
        "dbt_proj/models/sources.yml",
        "sqlmesh_proj/config.yaml",
        "sqlmesh_proj/external_models.yaml",
    ):
        assert (small.root / f).is_file(), f
    tools = [m.tool for m in small.models]
    assert tools.count("dbt") == 90 and tools.count("sqlmesh") == 30
    # dbt reads SQLMesh through sources
    assert any(
        "{{ source(" in (small.root / m.path).read_text() for m in small.models if m.tool == "dbt"
    )
    assert {m.shape for m in small.models} == set(_gen.SHAPES)


def test_generated_sql_runs_in_duckdb_with_the_declared_columns(
    small: _gen.GeneratedWorkspace,
) -> None:
    con = duckdb.connect()
    con.execute(f"ATTACH ':memory:' AS {_gen.CATALOG}")
    for schema in ("raw", "sm_stg", "sm_int", "sm_marts", _gen.DBT_SCHEMA):
        con.execute(f"CREATE SCHEMA {_gen.CATALOG}.{schema}")
    cols = ", ".join(f"{c} {t}" for c, t in _gen.COLUMNS.items())
    for rel in small.raw:
        con.execute(f"CREATE TABLE {rel} ({cols})")
    for m in small.models:
        con.execute(f"CREATE VIEW {m.relation} AS {bench.render(small, m)}")
        described = con.execute(f"DESCRIBE {m.relation}").fetchall()
        assert {r[0]: r[1] for r in described} == m.columns, m.name


def test_engine_resolves_every_generated_column(small: _gen.GeneratedWorkspace) -> None:
    for bm in bench.engine_inputs(small):
        ml = bm.request.run()
        assert ml.opaque_reason is None and not ml.opaque_columns, bm.node_id
        assert list(ml.columns) == list(_gen.COLUMNS)
        assert all(c.sources for n, c in ml.columns.items() if n != "m15"), bm.node_id


def test_bench_runs_end_to_end(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = bench.main(
        [
            "--dir",
            str(tmp_path),
            "--n-dbt",
            "24",
            "--n-sqlmesh",
            "8",
            "--peer-sample",
            "2",
            "--engine-only",
        ]
    )
    out = capsys.readouterr().out
    assert "engine cold, full lineage" in out and "speed-up vs peer" in out
    assert "1 re-analysed" in out
    assert code in (0, 1)
