"""The source's own records on a real DuckDB table: rows per load, duplicates against the keys,
and the payload's as-of after the scope (a feed still late)."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb

from splice.graph.model import Node, Relation
from splice.watch.source_evidence import source_evidence

COLUMNS = {"day": "DATE", "id": "VARCHAR", "as_of": "DATE", "_load_id": "VARCHAR",
           "_loaded_at": "TIMESTAMP"}  # fmt: skip


def test_rows_by_load_duplicates_and_a_payload_still_late(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"))
    con.execute("CREATE SCHEMA raw")
    con.execute(
        "CREATE TABLE raw.feed (day DATE, id VARCHAR, as_of DATE, _load_id VARCHAR, "
        "_loaded_at TIMESTAMP)"
    )
    rows = []
    for d in range(1, 31):  # September, one row per day; from the 28th a day late
        day = date(2026, 9, d)
        as_of = day if d < 28 else date(2026, 9, d - 1)
        rows.append((day, f"k{d}", as_of, "L1", "2026-10-01 02:00:00"))
    rows.append((date(2026, 9, 28), "k28", date(2026, 9, 27), "L2", "2026-10-01 03:00:00"))
    con.executemany("INSERT INTO raw.feed VALUES (?, ?, ?, ?, ?)", rows)
    node = Node("ingestion:feed", "ingestion", "feed", "ingestion", "command")
    ev = source_evidence(con, node, Relation("wh", "raw", "feed"), COLUMNS, "day",
                         [date(2026, 9, 28)], "duckdb", ["id"])  # fmt: skip
    con.close()
    assert ev["duplicates"] == [{
        "interval": "2026-09-28", "rows": 2, "distinct": 1, "keys": ["id"],
        "loads": [{"interval": "2026-09-28", "load_id": "L1", "at": "2026-10-01T02:00:00", "rows": 1},
                  {"interval": "2026-09-28", "load_id": "L2", "at": "2026-10-01T03:00:00", "rows": 1}],
    }]  # fmt: skip
    assert [(ld["load_id"], ld["rows"], ld["succeeded"]) for ld in ev["loads"]] == [
        ("L1", 1, None), ("L2", 1, None)
    ]  # fmt: skip
    (p,) = ev["payload_dates"]
    assert p["column"] == "as_of" and p["usual_lag_days"] == 0
    assert [(d["interval"], d["lag_intervals"], d["stale"]) for d in p["days"]] == [
        ("2026-09-28", 1, True)
    ]
    assert [(d["interval"], d["oldest"], d["lag_intervals"]) for d in p["later"]] == [
        ("2026-09-29", "2026-09-28", 1), ("2026-09-30", "2026-09-29", 1)
    ]  # fmt: skip
