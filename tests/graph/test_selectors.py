"""Selectors over a small joined graph: ingestion -> SQLMesh pricing -> dbt finance -> dashboards.

ingest:fx_rates_ingest ..matched..> pricing:fx.daily_rates --> pricing:marts.fct_bookings_usd
ingest:bookings_ingest ..declared.......................................^        |
pricing:dim_currency --------------------------------------------------^         v
                                                             pricing:marts.agg_gmv_daily
                                                                          : declared
                                                                          v
finance:source:pricing.agg_gmv_daily --> finance:stg_gmv --> finance:fct_gmv_qtd --> gmv_usd
                                             |       |                        \\--> q3_close
                                             |       \\--> finance:not_null_stg_gmv (test)
finance:dim_currency ------------------------+--> finance:gmv_by_currency
"""

from __future__ import annotations

import pytest

from splice.errors import SelectorError, SpliceError
from splice.graph.model import Edge, Evidence, Graph, Node, NodeKind, Relation
from splice.graph.selectors import parse, select

NODES: list[tuple[str, NodeKind, str, list[str], str]] = [
    # id, kind, tool, tags, path
    ("ingest:fx_rates_ingest", "ingestion", "dlt", [], "pipelines/fx_rates.py"),
    ("ingest:bookings_ingest", "ingestion", "dlt", [], "pipelines/bookings.py"),
    ("pricing:fx.daily_rates", "model", "sqlmesh", ["daily", "fx"], "models/fx/daily_rates.sql"),
    ("pricing:dim_currency", "model", "sqlmesh", [], "models/dim_currency.sql"),
    (
        "pricing:marts.fct_bookings_usd",
        "model",
        "sqlmesh",
        ["daily"],
        "models/marts/fct_bookings_usd.sql",
    ),
    (
        "pricing:marts.agg_gmv_daily",
        "model",
        "sqlmesh",
        ["daily"],
        "models/marts/agg_gmv_daily.sql",
    ),
    ("finance:source:pricing.agg_gmv_daily", "source", "dbt", [], "models/sources.yml"),
    ("finance:stg_gmv", "model", "dbt", ["daily"], "models/staging/stg_gmv.sql"),
    ("finance:fct_gmv_qtd", "model", "dbt", ["finance"], "models/marts/fct_gmv_qtd.sql"),
    ("finance:dim_currency", "model", "dbt", [], "models/marts/dim_currency.sql"),
    ("finance:gmv_by_currency", "model", "dbt", ["finance"], "models/marts/gmv_by_currency.sql"),
    ("finance:not_null_stg_gmv", "test", "dbt", [], "models/staging/schema.yml"),
    ("finance:gmv_usd", "dashboard", "exposure", [], "models/exposures.yml"),
    ("finance:q3_close", "dashboard", "exposure", [], "models/exposures.yml"),
]
EDGES: list[tuple[str, str, Evidence]] = [
    ("ingest:fx_rates_ingest", "pricing:fx.daily_rates", "matched"),
    ("ingest:bookings_ingest", "pricing:marts.fct_bookings_usd", "declared"),
    ("pricing:fx.daily_rates", "pricing:marts.fct_bookings_usd", "tool"),
    ("pricing:dim_currency", "pricing:marts.fct_bookings_usd", "tool"),
    ("pricing:marts.fct_bookings_usd", "pricing:marts.agg_gmv_daily", "tool"),
    ("pricing:marts.agg_gmv_daily", "finance:source:pricing.agg_gmv_daily", "declared"),
    ("finance:source:pricing.agg_gmv_daily", "finance:stg_gmv", "tool"),
    ("finance:stg_gmv", "finance:fct_gmv_qtd", "tool"),
    ("finance:stg_gmv", "finance:gmv_by_currency", "tool"),
    ("finance:stg_gmv", "finance:not_null_stg_gmv", "tool"),
    ("finance:dim_currency", "finance:gmv_by_currency", "tool"),
    ("finance:fct_gmv_qtd", "finance:gmv_usd", "tool"),
    ("finance:fct_gmv_qtd", "finance:q3_close", "tool"),
]


@pytest.fixture
def g() -> Graph:
    graph = Graph()
    for nid, kind, tool, tags, path in NODES:
        project, name = nid.split(":", 1)
        graph.add_node(Node(nid, project, name, kind, tool, tags=tags, path=path))
    for up, down, evidence in EDGES:
        relation = Relation("warehouse", "x", up.split(":", 1)[1]) if evidence != "tool" else None
        graph.add_edge(Edge(up, down, evidence, relation))
    return graph


def s(graph: Graph, selector: str | None, exclude: str | None = None) -> set[str]:
    return set(select(graph, selector, exclude=exclude))


# -- atoms ------------------------------------------------------------------------------------


def test_everything_when_no_selector(g: Graph) -> None:
    assert s(g, None) == set(g.nodes)
    assert s(g, "") == set(g.nodes)
    assert s(g, "   ") == set(g.nodes)
    assert s(g, None, exclude="") == set(g.nodes)


def test_bare_name_and_full_id(g: Graph) -> None:
    assert select(g, "fct_gmv_qtd") == ["finance:fct_gmv_qtd"]
    assert select(g, "fx.daily_rates") == ["pricing:fx.daily_rates"]
    assert select(g, "pricing:fx.daily_rates") == ["pricing:fx.daily_rates"]


def test_bare_name_in_two_projects_selects_both(g: Graph) -> None:
    assert s(g, "dim_currency") == {"pricing:dim_currency", "finance:dim_currency"}
    assert select(g, "finance:dim_currency") == ["finance:dim_currency"]


def test_source_names_contain_a_colon(g: Graph) -> None:
    src = ["finance:source:pricing.agg_gmv_daily"]
    assert select(g, "source:pricing.agg_gmv_daily") == src
    assert select(g, "finance:source:pricing.agg_gmv_daily") == src
    assert select(g, "source:*") == src
    assert select(g, "finance:source:pricing.*") == src


def test_project_star_and_globs(g: Graph) -> None:
    assert s(g, "ingest:*") == {"ingest:fx_rates_ingest", "ingest:bookings_ingest"}
    assert s(g, "project:ingest") == s(g, "ingest:*")
    assert s(g, "pricing:marts.*") == {
        "pricing:marts.fct_bookings_usd",
        "pricing:marts.agg_gmv_daily",
    }
    assert s(g, "gmv_by_*") == {"finance:gmv_by_currency"}
    assert s(g, "*:dim_*") == {"pricing:dim_currency", "finance:dim_currency"}
    assert s(g, "*") == set(g.nodes)


def test_methods(g: Graph) -> None:
    assert s(g, "tag:finance") == {"finance:fct_gmv_qtd", "finance:gmv_by_currency"}
    assert s(g, "kind:dashboard") == {"finance:gmv_usd", "finance:q3_close"}
    assert s(g, "kind:ingestion") == {"ingest:fx_rates_ingest", "ingest:bookings_ingest"}
    assert s(g, "kind:test") == {"finance:not_null_stg_gmv"}
    assert s(g, "project:fin*") == {n for n in g.nodes if n.startswith("finance:")}


def test_path_by_directory_file_and_glob(g: Graph) -> None:
    marts = {
        "pricing:marts.fct_bookings_usd",
        "pricing:marts.agg_gmv_daily",
        "finance:fct_gmv_qtd",
        "finance:dim_currency",
        "finance:gmv_by_currency",
    }
    assert s(g, "path:models/marts") == marts
    assert s(g, "path:models/marts/") == marts
    assert s(g, "path:./models/staging/stg_gmv.sql") == {"finance:stg_gmv"}
    assert s(g, "path:pipelines/*.py") == {"ingest:fx_rates_ingest", "ingest:bookings_ingest"}
    # a directory prefix must end at a '/': models/mart is not models/marts
    with pytest.raises(SelectorError):
        select(g, "path:models/mart")


# -- graph operators --------------------------------------------------------------------------


def test_ancestors_cross_projects_back_to_ingestion(g: Graph) -> None:
    assert s(g, "+fct_gmv_qtd") == {
        "finance:fct_gmv_qtd",
        "finance:stg_gmv",
        "finance:source:pricing.agg_gmv_daily",
        "pricing:marts.agg_gmv_daily",
        "pricing:marts.fct_bookings_usd",
        "pricing:fx.daily_rates",
        "pricing:dim_currency",
        "ingest:fx_rates_ingest",
        "ingest:bookings_ingest",
    }


def test_descendants_cross_projects_to_dashboards(g: Graph) -> None:
    assert s(g, "pricing:fx.daily_rates+") == {
        "pricing:fx.daily_rates",
        "pricing:marts.fct_bookings_usd",
        "pricing:marts.agg_gmv_daily",
        "finance:source:pricing.agg_gmv_daily",
        "finance:stg_gmv",
        "finance:fct_gmv_qtd",
        "finance:gmv_by_currency",
        "finance:not_null_stg_gmv",
        "finance:gmv_usd",
        "finance:q3_close",
    }
    assert "finance:gmv_usd" in s(g, "fx_rates_ingest+")


def test_both_directions(g: Graph) -> None:
    assert s(g, "+stg_gmv+") == s(g, "+stg_gmv") | s(g, "stg_gmv+")
    assert "finance:dim_currency" not in s(g, "+stg_gmv+")  # a sibling's parent is not selected


def test_depth_limits(g: Graph) -> None:
    assert s(g, "1+stg_gmv") == {"finance:stg_gmv", "finance:source:pricing.agg_gmv_daily"}
    assert s(g, "2+stg_gmv") == {
        "finance:stg_gmv",
        "finance:source:pricing.agg_gmv_daily",
        "pricing:marts.agg_gmv_daily",
    }
    assert s(g, "marts.agg_gmv_daily+2") == {
        "pricing:marts.agg_gmv_daily",
        "finance:source:pricing.agg_gmv_daily",
        "finance:stg_gmv",
    }
    assert s(g, "1+stg_gmv+1") == {
        "finance:source:pricing.agg_gmv_daily",
        "finance:stg_gmv",
        "finance:fct_gmv_qtd",
        "finance:gmv_by_currency",
        "finance:not_null_stg_gmv",
    }
    assert s(g, "0+stg_gmv+0") == {"finance:stg_gmv"}
    # depth is counted from the nearest selected node
    assert s(g, "tag:finance+1") == {
        "finance:fct_gmv_qtd",
        "finance:gmv_by_currency",
        "finance:gmv_usd",
        "finance:q3_close",
    }


def test_at_adds_the_parents_of_descendants(g: Graph) -> None:
    at = s(g, "@fx.daily_rates")
    down = s(g, "fx.daily_rates+")
    assert down < at
    # parents of descendants, in other projects and upstream of other branches
    assert at - down == {
        "ingest:fx_rates_ingest",
        "ingest:bookings_ingest",
        "pricing:dim_currency",
        "finance:dim_currency",
    }


# -- set operations ---------------------------------------------------------------------------


def test_union_and_intersection(g: Graph) -> None:
    assert s(g, "fct_gmv_qtd gmv_by_currency") == {"finance:fct_gmv_qtd", "finance:gmv_by_currency"}
    assert s(g, "tag:daily,pricing:*") == {
        "pricing:fx.daily_rates",
        "pricing:marts.fct_bookings_usd",
        "pricing:marts.agg_gmv_daily",
    }
    # operators apply to each atom before intersecting
    assert s(g, "+fct_gmv_qtd,kind:ingestion") == {
        "ingest:fx_rates_ingest",
        "ingest:bookings_ingest",
    }
    assert s(g, "fx.daily_rates+,kind:dashboard kind:test") == {
        "finance:gmv_usd",
        "finance:q3_close",
        "finance:not_null_stg_gmv",
    }


def test_exclude(g: Graph) -> None:
    assert s(g, "pricing:fx.daily_rates+", exclude="finance:*") == {
        "pricing:fx.daily_rates",
        "pricing:marts.fct_bookings_usd",
        "pricing:marts.agg_gmv_daily",
    }
    assert s(g, "+fct_gmv_qtd", exclude="+marts.agg_gmv_daily kind:source") == {
        "finance:fct_gmv_qtd",
        "finance:stg_gmv",
    }
    assert "finance:not_null_stg_gmv" not in s(g, "stg_gmv+", exclude="kind:test,finance:*")
    assert select(g, "stg_gmv", exclude="stg_gmv") == []
    assert s(g, None, exclude="kind:dashboard kind:test") == set(g.nodes) - {
        "finance:gmv_usd",
        "finance:q3_close",
        "finance:not_null_stg_gmv",
    }


def test_result_is_in_dependency_order_even_across_excluded_nodes(g: Graph) -> None:
    order = select(g, None)
    position = {nid: i for i, nid in enumerate(order)}
    for e in g.edges:
        assert position[e.upstream] < position[e.downstream], e
    # stg_gmv sits between the pricing marts and fct_gmv_qtd; excluding it keeps the order
    assert select(g, "+fct_gmv_qtd", exclude="stg_gmv source:* kind:ingestion") == [
        "pricing:dim_currency",
        "pricing:fx.daily_rates",
        "pricing:marts.fct_bookings_usd",
        "pricing:marts.agg_gmv_daily",
        "finance:fct_gmv_qtd",
    ]


# -- errors -----------------------------------------------------------------------------------


def test_typo_names_the_closest_id(g: Graph) -> None:
    with pytest.raises(SelectorError) as err:
        select(g, "fct_gmv_qdt")
    assert str(err.value) == "selector 'fct_gmv_qdt' matched no node. Closest: finance:fct_gmv_qtd"
    assert isinstance(err.value, SpliceError)


def test_a_sqlmesh_name_needs_its_schema(g: Graph) -> None:
    # names are matched whole: the error points at both nodes whose names end that way
    with pytest.raises(SelectorError) as err:
        select(g, "agg_gmv_daily")
    assert str(err.value) == (
        "selector 'agg_gmv_daily' matched no node. "
        "Closest: pricing:marts.agg_gmv_daily, finance:source:pricing.agg_gmv_daily"
    )
    assert select(g, "*.agg_gmv_daily") == [
        "pricing:marts.agg_gmv_daily",
        "finance:source:pricing.agg_gmv_daily",
    ]


def test_typo_inside_a_larger_selector_and_with_operators(g: Graph) -> None:
    with pytest.raises(SelectorError, match=r"selector '\+stg_gmvv' matched no node\. Closest: "):
        select(g, "fct_gmv_qtd +stg_gmvv")


def test_typo_in_project_names_the_id_and_explains(g: Graph) -> None:
    with pytest.raises(SelectorError) as err:
        select(g, "finanec:fct_gmv_qtd")
    assert "Closest: finance:fct_gmv_qtd" in str(err.value)
    assert (
        err.value.fix
        and "'finanec' is neither a project (finance, ingest, pricing)" in err.value.fix
    )


def test_unknown_method_like_prefix(g: Graph) -> None:
    with pytest.raises(SelectorError) as err:
        select(g, "tags:daily")
    assert "matched no node" in str(err.value)
    assert err.value.fix and "nor a method (tag, kind, path, project, version)" in err.value.fix


def test_tag_and_project_typos_name_closest_values(g: Graph) -> None:
    with pytest.raises(SelectorError, match=r"selector 'tag:dialy' .*Closest: tag:daily"):
        select(g, "tag:dialy")
    with pytest.raises(SelectorError, match=r"Closest: project:pricing"):
        select(g, "project:prcing")


def test_kind_present_in_no_node(g: Graph) -> None:
    with pytest.raises(SelectorError, match="selector 'kind:snapshot' matched no node") as err:
        select(g, "kind:snapshot")
    assert err.value.fix and "dashboard" in err.value.fix


def test_no_close_match(g: Graph) -> None:
    with pytest.raises(SelectorError, match="and no node id or name is close to it"):
        select(g, "zzzzqqq")


def test_exclude_typo_is_an_error_not_a_silent_no_op(g: Graph) -> None:
    with pytest.raises(SelectorError, match=r"exclude 'q3_clsoe' matched no node\. Closest"):
        select(g, None, exclude="q3_clsoe")


def test_empty_intersection_is_an_error(g: Graph) -> None:
    with pytest.raises(SelectorError) as err:
        select(g, "tag:finance,pricing:*")
    assert "selector 'tag:finance,pricing:*' matched no node" in str(err.value)
    assert "tag:finance: 2" in str(err.value)


@pytest.mark.parametrize(
    ("selector", "complaint"),
    [
        ("++x", "'+' may appear once before and once after"),
        ("x++", "'+' may appear once before and once after"),
        ("x+3+", "'+' may appear once before and once after"),
        ("a+b", "'+' may appear once before and once after"),
        ("3+", "no node name"),
        ("+", "no node name"),
        ("@", "no node name"),
        ("@+x", "'@' and a leading '+' cannot be combined"),
        ("@x+2", "'@' already selects every descendant"),
        ("@@x", "'@' may only start a selector"),
        ("x@y", "'@' may only start a selector"),
        ("tag:", "nothing after 'tag:'"),
        ("+tag:+", "nothing after 'tag:'"),
        ("pricing:", "nothing after 'pricing:'"),
        (":x", "nothing before ':'"),
        ("kind:modle", "unknown kind 'modle' (did you mean kind:model?)"),
        ("a,", "an empty term around ','"),
        (",a", "an empty term around ','"),
        ("a,,b", "an empty term around ','"),
    ],
)
def test_malformed(g: Graph, selector: str, complaint: str) -> None:
    with pytest.raises(SelectorError) as err:
        select(g, selector)
    assert "is malformed" in str(err.value)
    assert complaint in str(err.value)
    with pytest.raises(SelectorError):  # the same rules hold for --exclude
        select(g, None, exclude=selector)


def test_parse_is_plain_data() -> None:
    (atom,) = parse("2+pricing:marts.*+3").atoms
    assert (atom.method, atom.value) == ("name", "pricing:marts.*")
    assert (atom.parents, atom.parents_depth) == (True, 2)
    assert (atom.children, atom.children_depth) == (True, 3)
    assert not atom.childrens_parents
    assert parse("a b,c").terms == (parse("a").terms[0], parse("b,c").terms[0])
    assert parse(None).terms == ()
