"""Golden fixtures: every ``fixtures/NAME.sql`` is analysed and compared to ``fixtures/NAME.yaml``.

To add a case, write ``fixtures/NAME.sql`` (start it with a ``--`` comment saying what it shows;
options go on a ``-- splice: key=value ...`` line: ``dialect``, ``default_catalog``,
``default_schema``), then run::

    SPLICE_UPDATE_FIXTURES=1 .venv/bin/python -m pytest tests/lineage/test_lineage_fixtures.py -q

and read the ``NAME.yaml`` it wrote before committing it: it is the expectation from then on.
Every fixture reads the tables of ``fixtures/_schema.yaml``.  The expected file holds, for each
output column, the sorted ``catalog.schema.table.column:kind`` refs of the column itself
(``columns``), the refs that apply to every column (``query_indirect``: filters, joins, grouping),
the model's ``opaque`` reason (or null) and the columns that are opaque, with their reason.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from splice.lineage import ModelLineage, analyse_model

FIXTURES = Path(__file__).parent / "fixtures"
SCHEMA = yaml.safe_load((FIXTURES / "_schema.yaml").read_text())
UPDATE = os.environ.get("SPLICE_UPDATE_FIXTURES") == "1"
_OPTIONS = re.compile(r"^--\s*splice:\s*(.*)$", re.M)


def options(sql: str) -> dict[str, Any]:
    opts: dict[str, Any] = {"dialect": "duckdb", "default_catalog": "warehouse"}
    for line in _OPTIONS.findall(sql):
        for pair in line.split():
            key, _, value = pair.partition("=")
            opts[key] = None if value.lower() in ("", "none", "null") else value
    return opts


def summary(ml: ModelLineage) -> dict[str, Any]:
    return {
        "opaque": ml.opaque_reason,
        "columns": {n: sorted(r.text for r in c.sources) for n, c in ml.columns.items()},
        "query_indirect": sorted(r.text for r in ml.query_indirect),
        "opaque_columns": ml.opaque_columns,
    }


def analyse_fixture(path: Path) -> ModelLineage:
    sql = path.read_text()
    return analyse_model(sql, schema=SCHEMA, **options(sql))


CASES = sorted(p for p in FIXTURES.glob("*.sql"))


@pytest.mark.parametrize("path", CASES, ids=[p.stem for p in CASES])
def test_fixture(path: Path) -> None:
    got = summary(analyse_fixture(path))
    expected_path = path.with_suffix(".yaml")
    if UPDATE:
        expected_path.write_text(yaml.safe_dump(got, sort_keys=False, width=100))
    if not expected_path.exists():
        pytest.fail(
            f"{expected_path.name} is missing; this is what the engine says:\n"
            f"{yaml.safe_dump(got, sort_keys=False)}\n"
            "check it, then write it with SPLICE_UPDATE_FIXTURES=1"
        )
    expected = yaml.safe_load(expected_path.read_text())
    assert got == expected


def test_there_are_fixtures_for_the_shapes_the_brief_names() -> None:
    names = {p.stem for p in CASES}
    for needed in (
        "cte_chain",
        "join_where",
        "aggregate_group_having",
        "window_functions",
        "union_all",
        "star_known",
        "star_unknown",
        "qualify_dedupe",
        "asof_join",
        "case_when",
        "unparsable",
        "correlated_subquery",
        "two_part_default_catalog",
    ):
        assert needed in names
