"""The row and value comparison of splice review, on a DuckDB warehouse."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from splice.graph.model import Relation
from splice.review.data import compare_model


@pytest.fixture
def con(tmp_path: Path):  # type: ignore[no-untyped-def]
    c = duckdb.connect(str(tmp_path / "w.duckdb"))
    c.execute("CREATE SCHEMA prod; CREATE SCHEMA head")
    c.execute(
        "CREATE TABLE prod.t AS SELECT i AS k, i * 1.0 AS v, 'x' AS s, 'gone' AS old "
        "FROM range(1, 101) r(i)"
    )
    # the head: row 1 removed, 101 added, v changed on 2..11, s changed on 50, a new column
    c.execute(
        "CREATE TABLE head.t AS SELECT i AS k, CASE WHEN i BETWEEN 2 AND 11 THEN i * 2.0 "
        "ELSE i * 1.0 END AS v, CASE WHEN i = 50 THEN 'y' ELSE 'x' END AS s, 0 AS extra "
        "FROM range(2, 102) r(i)"
    )
    yield c
    c.close()


P, H = Relation("w", "prod", "t"), Relation("w", "head", "t")


def test_keyed_rows_and_values(con) -> None:  # type: ignore[no-untyped-def]
    d = compare_model(con, "p:t", P, H, ["k"], dialect="duckdb", max_rows=10_000, examples=2)
    assert (d.added, d.removed, d.changed) == (1, 1, 11)
    assert d.columns == {"v": 10, "s": 1}
    assert d.examples["v"] == [
        {"key": {"k": 2}, "prod": 2.0, "head": 4.0},
        {"key": {"k": 3}, "prod": 3.0, "head": 6.0},
    ]
    assert d.columns_added == ["extra"] and d.columns_removed == ["old"]
    assert (d.rows_prod, d.rows_head) == (100, 100) and d.sampled is None


def test_without_a_key_rows_are_compared_whole(con) -> None:  # type: ignore[no-untyped-def]
    d = compare_model(con, "p:t", P, H, [], dialect="duckdb", max_rows=10_000, examples=2)
    assert d.key == [] and "no key" in (d.note or "")
    # only in the head: row 101, the 10 rows whose v changed and row 50 (its s); only in
    # prod: row 1 and the same 11 rows as they were
    assert (d.added, d.removed) == (12, 12)


def test_large_tables_are_sampled_by_key(con) -> None:  # type: ignore[no-untyped-def]
    d = compare_model(con, "p:t", P, H, ["k"], dialect="duckdb", max_rows=20, examples=0)
    assert d.sampled and d.sampled.startswith("1 in 5 keys")
    assert d.changed <= 11 and d.added + d.removed <= 2


def test_a_head_relation_that_was_not_built(con) -> None:  # type: ignore[no-untyped-def]
    d = compare_model(con, "p:t", P, Relation("w", "head", "nope"), ["k"], dialect="duckdb",
                      max_rows=10_000, examples=0)  # fmt: skip
    assert d.note == "w.head.nope was not built in the review environment"


def test_an_upstream_key_is_used_only_where_it_is_unique(con) -> None:  # type: ignore[no-untyped-def]
    # the first candidate (s: 'x' on almost every row) is not unique here: the next (k) is
    d = compare_model(con, "p:t", P, H, [], dialect="duckdb", max_rows=10_000, examples=0,
                      keys=[(["s"], "p:codes"), (["k"], "p:upstream")])  # fmt: skip
    assert (d.key, d.key_from) == (["k"], "p:upstream")
    assert (d.added, d.removed, d.changed) == (1, 1, 11)  # changed values, not whole rows
    d = compare_model(con, "p:t", P, H, [], dialect="duckdb", max_rows=10_000, examples=0,
                      keys=[(["s"], "p:codes")])  # fmt: skip
    assert d.key == [] and "the key of p:codes (s) is not unique in it" in (d.note or "")
    assert (d.added, d.removed) == (12, 12)


def test_a_model_without_a_key_takes_its_upstream_grain() -> None:
    from splice.graph.model import Edge, Graph, Node
    from splice.review.data import review_keys

    g = Graph()
    g.add_node(Node(id="p:agg", project="p", name="agg", kind="model", tool="sqlmesh",
                    meta={"grain": ["Day", "currency"]}))  # fmt: skip
    g.add_node(Node(id="f:src", project="f", name="src", kind="source", tool="dbt"))
    g.add_node(Node(id="f:stg", project="f", name="stg", kind="model", tool="dbt"))
    g.add_edge(Edge("p:agg", "f:src"))
    g.add_edge(Edge("f:src", "f:stg"))
    assert review_keys(g, g.nodes["f:stg"]) == [(["day", "currency"], "p:agg")]
    assert review_keys(g, g.nodes["p:agg"]) == [(["day", "currency"], None)]
