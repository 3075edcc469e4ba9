"""The built demo workspace, as a user would look at it: files, warehouse, tools' metadata."""

from __future__ import annotations

import json
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest
from currency_converter import CurrencyConverter

from splice.config.workspace import load_config, parse_config
from splice.demo import DemoResult, build_demo
from splice.demo.ecb import CURRENCIES
from splice.errors import SpliceError

Q3_DAYS = [date(2026, 7, 1) + timedelta(days=i) for i in range(92)]


@pytest.fixture
def wh(demo_workspace: Path):
    con = duckdb.connect(str(demo_workspace / "warehouse.duckdb"), read_only=True)
    yield con
    con.close()


def test_splice_toml_is_a_valid_workspace(demo_workspace: Path) -> None:
    cfg = parse_config((demo_workspace / "splice.toml").read_text())
    assert load_config(demo_workspace) == cfg
    assert cfg.workspace.name == "travel"
    assert cfg.warehouse.path == "warehouse.duckdb"
    assert {(p.name, p.format, p.path) for p in cfg.projects} == {
        ("pricing", "sqlmesh", "pricing"),
        ("finance", "dbt", "finance"),
    }
    assert cfg.environment_for("pricing", "dev") == "dev"
    assert cfg.environment_for("finance", "prod") == "prod"
    ingest = {i.name: i for i in cfg.ingestion}
    assert ingest["fx_rates_ingest"].runner == "dlt"
    assert ingest["fx_rates_ingest"].writes == ["raw.fx_rates"]
    assert "{start}" in ingest["fx_rates_ingest"].command
    assert (demo_workspace / ingest["fx_rates_ingest"].pipelines_dir / "fx_rates_ingest").is_dir()
    assert ingest["bookings_load"].writes == ["raw.bookings"]
    assert [(b.writer, b.reader) for b in cfg.bindings] == [
        ("pricing:marts.agg_gmv_daily", "finance:source:pricing.agg_gmv_daily")
    ]
    assert [(d.name, d.reads, d.label) for d in cfg.dashboards] == [
        ("pricing_ops", ["pricing:fx.daily_rates"], "FX monitor")
    ]


def test_sqlmesh_prod_views_cover_every_q3_day(wh: duckdb.DuckDBPyConnection) -> None:
    views = {
        f"{s}.{n}": t
        for s, n, t in wh.execute(
            "SELECT table_schema, table_name, table_type FROM information_schema.tables "
            "WHERE table_catalog = 'warehouse'"
        ).fetchall()
    }
    for name in ("fx.daily_rates", "marts.fct_bookings_usd", "marts.agg_gmv_daily"):
        assert views[name] == "VIEW"
    days = [
        r[0]
        for r in wh.execute(
            "SELECT DISTINCT booking_date FROM warehouse.marts.agg_gmv_daily ORDER BY 1"
        ).fetchall()
    ]
    assert days == Q3_DAYS
    per_day = wh.execute(
        "SELECT MIN(n), MAX(n) FROM (SELECT SUM(bookings) AS n FROM warehouse.marts.agg_gmv_daily "
        "GROUP BY booking_date)"
    ).fetchone()
    assert per_day is not None and per_day[0] >= 300 and per_day[1] <= 2000
    assert wh.execute(
        "SELECT COUNT(DISTINCT currency) FROM warehouse.marts.agg_gmv_daily"
    ).fetchone() == (30,)


def test_rates_are_the_ecb_rates_in_usd(wh: duckdb.DuckDBPyConnection) -> None:
    cc = CurrencyConverter(fallback_on_missing_rate=False, fallback_on_wrong_date=False)
    rows = dict(
        wh.execute(
            "SELECT currency, rate_to_usd FROM warehouse.fx.daily_rates WHERE rate_date = '2026-07-15'"
        ).fetchall()
    )
    assert sorted(rows) == sorted(CURRENCIES)
    assert rows["USD"] == 1.0
    for cur in ("EUR", "GBP", "JPY", "BRL", "ZAR"):
        assert rows[cur] == pytest.approx(
            cc.convert(1, cur, "USD", date=date(2026, 7, 15)), rel=1e-9
        )
    assert wh.execute(
        "SELECT COUNT(*) FROM warehouse.fx.daily_rates WHERE as_of <> rate_date"
    ).fetchone() == (0,)


def test_weekends_have_no_rates_and_use_fridays(wh: duckdb.DuckDBPyConnection) -> None:
    weekend = wh.execute(
        "SELECT COUNT(*) FROM warehouse.raw.fx_rates WHERE dayofweek(rate_date) IN (0, 6)"
    ).fetchone()
    assert weekend == (0,)
    assert wh.execute(
        "SELECT COUNT(DISTINCT rate_date) FROM warehouse.fx.daily_rates"
    ).fetchone() == (66,)
    used = wh.execute(
        "SELECT DISTINCT b.booking_date, b.rate_date, b.rate_to_usd = r.rate_to_usd "
        "FROM warehouse.marts.fct_bookings_usd b JOIN warehouse.fx.daily_rates r "
        "ON r.currency = b.currency AND r.rate_date = b.rate_date "
        "WHERE b.booking_date IN ('2026-07-04', '2026-07-05', '2026-07-06') ORDER BY 1"
    ).fetchall()
    assert used == [
        (date(2026, 7, 4), date(2026, 7, 3), True),  # Saturday -> Friday
        (date(2026, 7, 5), date(2026, 7, 3), True),  # Sunday -> Friday
        (date(2026, 7, 6), date(2026, 7, 6), True),  # Monday -> Monday
    ]
    bad = wh.execute(
        "SELECT COUNT(*) FROM warehouse.marts.fct_bookings_usd "
        "WHERE abs(amount_usd - amount * rate_to_usd) > 0.0001 OR amount_usd IS NULL"
    ).fetchone()
    assert bad == (0,)


def test_dbt_marts_agree_with_sqlmesh(wh: duckdb.DuckDBPyConnection) -> None:
    sqlmesh_total = wh.execute("SELECT SUM(gmv_usd) FROM warehouse.marts.agg_gmv_daily").fetchone()
    qtd = wh.execute(
        "SELECT gmv_usd_qtd FROM warehouse.finance.fct_gmv_qtd WHERE booking_date = '2026-09-30'"
    ).fetchone()
    by_currency = wh.execute(
        "SELECT SUM(gmv_usd) FROM warehouse.finance.fct_gmv_by_currency"
    ).fetchone()
    by_channel = wh.execute(
        "SELECT SUM(gmv_usd) FROM warehouse.finance.fct_gmv_by_channel"
    ).fetchone()
    assert sqlmesh_total and qtd and by_currency and by_channel
    assert qtd[0] == by_currency[0] == by_channel[0] == sqlmesh_total[0]  # DECIMAL: exact
    assert wh.execute(
        "SELECT COUNT(*) FROM warehouse.finance.fct_gmv_by_currency WHERE region IS NULL"
    ).fetchone() == (0,)


def test_dbt_manifest_has_sources_on_sqlmesh_views_and_exposures(demo_workspace: Path) -> None:
    # the demo builds through `splice run`: dbt's artefacts are in Splice's directory
    target = demo_workspace / ".splice/dbt/finance/target/prod"
    manifest = json.loads((target / "manifest.json").read_text())
    src = manifest["sources"]["source.finance.pricing.agg_gmv_daily"]
    assert src["relation_name"] == '"warehouse"."marts"."agg_gmv_daily"'
    exposures = {e["name"]: e for e in manifest["exposures"].values()}
    assert exposures["gmv_usd_dashboard"]["label"] == "GMV (USD)"
    assert exposures["gmv_usd_dashboard"]["type"] == "dashboard"
    assert sorted(exposures["gmv_usd_dashboard"]["depends_on"]["nodes"]) == [
        "model.finance.fct_gmv_by_currency",
        "model.finance.stg_gmv_daily",
    ]
    assert exposures["q3_close"]["label"] == "Q3 close"
    assert exposures["q3_close"]["depends_on"]["nodes"] == ["model.finance.fct_gmv_qtd"]
    assert exposures["q3_close"]["url"].startswith("https://lightdash.example.com/")


def test_the_build_is_recorded(demo_build: DemoResult) -> None:
    record = json.loads((demo_build.workspace / ".splice/demo.json").read_text())
    assert record["start"] == "2026-07-01" and record["end"] == "2026-09-30"
    assert record["incident"] is None
    assert record["counts"]["gmv_days"] == 92
    assert demo_build.counts["bookings"] == record["counts"]["bookings"] > 50_000
    assert demo_build.counts["fx_rates"] == 66 * 30
    assert demo_build.elapsed_seconds < 60
    # the steps in demo.log; every tool's own output in .splice/logs/ (one place)
    assert "step build" in demo_build.log_path.read_text()
    logs = demo_build.workspace / ".splice/logs"
    assert "Model batches executed" in (logs / "tools.log").read_text()  # SQLMesh's
    assert "Running with dbt=" in (logs / "dbt/finance/dbt.log").read_text()
    # and no log directory left in the projects
    assert not (demo_build.workspace / "finance/logs").exists()
    assert not (demo_build.workspace / "pricing/logs").exists()


def test_a_non_empty_directory_needs_force(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(SpliceError) as err:
        build_demo(tmp_path)
    assert "not empty" in err.value.message and err.value.fix
    with pytest.raises(SpliceError) as err:  # force only ever replaces a demo workspace
        build_demo(tmp_path, force=True)
    assert (tmp_path / "notes.txt").read_text() == "mine"
    with pytest.raises(SpliceError, match="unknown incident"):
        build_demo(tmp_path / "new", incident="stale")
    assert not (tmp_path / "new").exists()
