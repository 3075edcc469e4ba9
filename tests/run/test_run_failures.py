"""Fault injection with the real tools: what a user checks after a failed run, and the rerun."""

from __future__ import annotations

from pathlib import Path

from run_support import (
    AGG_SQL,
    NEXT_DAY,
    add_bad_rates,
    attempts,
    break_sql,
    prod_snapshot,
    query,
    run_in,
    versions,
)

AGG = "pricing:marts.agg_gmv_daily"
OCT_1 = 1790812800000  # 2026-10-01T00:00Z in ms: the end of Q3's intervals
OCT_2 = 1790899200000
AGG_READERS = {"finance:stg_gmv_daily", "finance:fct_gmv_by_currency", "finance:fct_gmv_qtd"}


def test_sql_error_mid_graph_skips_downstream_across_the_boundary(fresh_demo: Path) -> None:
    # A new day is due (2026-10-01), and agg_gmv_daily's new code does not compile.
    good_sql = break_sql(fresh_demo)
    snapshot_before = prod_snapshot(fresh_demo)
    readers_before = {n: versions(fresh_demo)[n] for n in AGG_READERS}
    report = run_in(fresh_demo, execution_time=NEXT_DAY)

    assert not report.ok and report.status == "failed"
    agg = report.nodes[AGG]
    assert agg.status == "failed" and "no_such_column" in (agg.message or "")
    (pricing,) = [s for s in report.segments if s.project == "pricing"]
    assert report.failed_segments == [pricing.id] and pricing.status == "partial"
    assert pricing.method == "sqlmesh plan"  # a changed model: SQLMesh plans, and does not promote
    # upstream of the failure: built and committed
    for up in ("pricing:fx.daily_rates", "pricing:marts.fct_bookings_usd"):
        assert report.nodes[up].status == "success" and report.nodes[up].version
        assert attempts(fresh_demo)[up] == "succeeded"
    # downstream, in the other project: skipped, naming the failure; independent: built
    assert set(report.skipped_nodes) == AGG_READERS
    assert {report.nodes[n].skipped_because for n in AGG_READERS} == {AGG}
    assert report.nodes["finance:fct_gmv_by_channel"].status == "success"
    assert {c.status for c in report.checks.values() if AGG in c.of} == {"skipped"}
    # the last good state stands: prod still points at the old agg_gmv_daily, with Q3's
    # intervals and nothing of the failed day; the dbt models were never touched
    assert prod_snapshot(fresh_demo) == snapshot_before
    assert agg.intervals and agg.intervals[-1][1] == OCT_1
    assert report.nodes["pricing:fx.daily_rates"].intervals[-1][1] == OCT_2  # type: ignore[index]
    assert query(fresh_demo, "SELECT COUNT(*) FROM finance.fct_gmv_qtd") == [(92,)]
    assert attempts(fresh_demo)[AGG] == "failed"
    # the readers' last attempt is still the demo's build: never attempted, no new version
    assert {attempts(fresh_demo)[n] for n in AGG_READERS} == {"succeeded"}
    assert {n: versions(fresh_demo)[n] for n in AGG_READERS} == readers_before

    # fixed: the rerun builds only what is left
    (fresh_demo / AGG_SQL).write_text(good_sql)
    again = run_in(fresh_demo, execution_time=NEXT_DAY)
    assert again.ok, again.to_dict()
    assert set(again.built) == {AGG} | AGG_READERS
    assert again.nodes[AGG].intervals[-1][1] == OCT_2  # type: ignore[index]


def test_sqlmesh_audit_failure_blocks_everything_downstream(fresh_demo: Path) -> None:
    add_bad_rates(fresh_demo)  # the vendor sends 50 USD per unit on 2026-10-01
    report = run_in(fresh_demo, execution_time=NEXT_DAY)

    assert report.status == "failed"
    rates = report.nodes["pricing:fx.daily_rates"]
    assert rates.status == "failed" and "accepted_range" in (rates.message or "")
    audit = report.checks["pricing:audit:fx.daily_rates.accepted_range"]
    assert (
        audit.status == "fail" and audit.failures == 30 and audit.of == ["pricing:fx.daily_rates"]
    )
    assert report.checks["pricing:audit:fx.daily_rates.not_null"].status == "pass"
    assert rates.checks_failed == ["pricing:audit:fx.daily_rates.accepted_range"]
    # SQLMesh skips its own downstream; Splice skips dbt's
    for n in ("pricing:marts.fct_bookings_usd", "pricing:marts.agg_gmv_daily"):
        assert report.nodes[n].status == "skipped"
    assert {"finance:fct_gmv_by_channel"} | AGG_READERS <= set(report.skipped_nodes)
    assert "finance:currency_regions" not in report.nodes  # not downstream: nothing to do
    # SQLMesh did not record the interval: it stays missing, and is retried next time
    assert attempts(fresh_demo)["pricing:fx.daily_rates"] == "failed"
    assert rates.intervals and rates.intervals[-1][1] == OCT_1
    # (SQLMesh audits after inserting: the rejected rows are in the table prod reads)
    assert query(fresh_demo, "SELECT COUNT(*) FROM fx.daily_rates WHERE rate_to_usd > 10") == [
        (30,)
    ]
    # no new version: still the demo's build
    assert versions(fresh_demo)["pricing:fx.daily_rates"] == 1 and rates.version is None


def test_dbt_test_failure_fails_its_model_and_skips_downstream(fresh_demo: Path) -> None:
    test = fresh_demo / "finance" / "tests" / "assert_no_positive_gmv.sql"
    test.parent.mkdir(exist_ok=True)
    test.write_text("select * from {{ ref('stg_gmv_daily') }} where gmv_usd > 0\n")
    stg_sql = fresh_demo / "finance" / "models" / "staging" / "stg_gmv_daily.sql"
    stg_sql.write_text(stg_sql.read_text() + "\n-- a new version of the model\n")
    report = run_in(fresh_demo)

    assert report.status == "failed"
    chk = report.checks["finance:assert_no_positive_gmv"]
    assert chk.status == "fail" and chk.failures and chk.failures > 0
    stg = report.nodes["finance:stg_gmv_daily"]
    assert stg.status == "failed" and stg.checks_failed == ["finance:assert_no_positive_gmv"]
    assert {
        report.nodes[n].status for n in ("finance:fct_gmv_qtd", "finance:fct_gmv_by_currency")
    } == {"skipped"}
    assert "finance:fct_gmv_by_channel" not in report.nodes  # independent: nothing to do
    assert attempts(fresh_demo)["finance:stg_gmv_daily"] == "failed"

    test.unlink()
    again = run_in(fresh_demo)
    assert again.ok and set(again.built) == AGG_READERS


def test_failed_dbt_models_keep_their_previous_table_and_view(fresh_demo: Path) -> None:
    # a table and a view whose new SQL fails: dbt builds each under a temporary name first
    table_sql = fresh_demo / "finance" / "models" / "marts" / "fct_gmv_by_channel.sql"
    view_sql = fresh_demo / "finance" / "models" / "staging" / "stg_gmv_daily.sql"
    rows_before = {
        rel: query(fresh_demo, f"SELECT COUNT(*) FROM finance.{rel}")[0][0]
        for rel in ("fct_gmv_by_channel", "stg_gmv_daily", "fct_gmv_qtd")
    }
    table_sql.write_text(table_sql.read_text().replace("channel,", "no_such_column,", 1))
    view_sql.write_text(view_sql.read_text().replace("gmv_usd", "no_such_column", 1))
    report = run_in(fresh_demo)

    assert report.nodes["finance:fct_gmv_by_channel"].status == "failed"
    assert report.nodes["finance:stg_gmv_daily"].status == "failed"
    assert report.nodes["finance:fct_gmv_qtd"].status == "skipped"
    for rel, n in rows_before.items():
        assert n > 0 and query(fresh_demo, f"SELECT COUNT(*) FROM finance.{rel}") == [(n,)], rel
    leftovers = query(
        fresh_demo,
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'finance' "
        "AND (table_name LIKE '%__dbt_tmp' OR table_name LIKE '%__dbt_backup')",
    )
    assert leftovers == []
