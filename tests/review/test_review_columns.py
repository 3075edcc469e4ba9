"""Golden pairs: which output columns a change touches (tests/fixtures/review/column_changes.sql)."""

from __future__ import annotations

from pathlib import Path

import pytest

from splice.review.columns import compare, shapes

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "review" / "column_changes.sql"
SCHEMA = {
    "warehouse": {
        "raw": {
            "orders": {"id": "", "amount": "", "ccy": "", "status": "", "ts": ""},
            "rates": {"ccy": "", "rate": ""},
        }
    }
}


def _cases() -> list[tuple[str, str, str, dict[str, object]]]:
    cases = []
    for block in FIXTURE.read_text().split("\n== ")[1:]:
        name, rest = block.split("\n", 1)
        parts: dict[str, list[str]] = {}
        section = None
        for line in rest.splitlines():
            if line.startswith("-- ") and line[3:] in ("base", "head", "expect"):
                section = line[3:]
                parts[section] = []
            elif section:
                parts[section].append(line)
        expect: dict[str, object] = {"changed": [], "added": [], "removed": [], "rows": False}
        for line in parts["expect"]:
            if ":" in line:
                key, value = (s.strip() for s in line.split(":", 1))
                expect[key] = (
                    value == "true" if key == "rows" else [v.strip() for v in value.split(",")]
                )
        cases.append((name, "\n".join(parts["base"]), "\n".join(parts["head"]), expect))
    return cases


CASES = _cases()


def test_the_fixture_has_cases() -> None:
    assert len(CASES) >= 9


@pytest.mark.parametrize(("name", "base", "head", "expect"), CASES, ids=[c[0] for c in CASES])
def test_golden(name: str, base: str, head: str, expect: dict[str, object]) -> None:
    d = compare(base, head, dialect="duckdb", schema=SCHEMA, default_catalog="warehouse")
    assert d.opaque is None
    got = {"changed": d.changed, "added": d.added, "removed": d.removed, "rows": d.rows}
    assert got == expect


def test_unparsable_sql_is_opaque_and_counts_every_column() -> None:
    assert shapes("SELECT (1 FROM", dialect="duckdb").opaque
    d = compare("SELECT id FROM raw.orders", "SELECT (1 FROM", dialect="duckdb", schema=SCHEMA)
    assert d.opaque and d.any
