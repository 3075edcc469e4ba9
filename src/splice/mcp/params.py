"""The tools' parameters as an agent reads them: each one's format in words and examples that
work on the demo workspace (``splice demo``; tests/mcp_server/test_mcp_params.py calls every
tool with every example against the built demo and its stale-rates incident).

The MCP SDK turns these ``Annotated`` types into each tool's JSON Schema (``description``,
``examples``, bounds), as dbt-mcp does for its discovery tools. Ids carry no ``pattern``: a
wrong one is answered by Splice itself, naming the ids that exist and the tool that lists
them, which helps an agent more than a schema validation error.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

NodeId = Annotated[
    str,
    Field(
        description="A node's id, PROJECT:NAME as `splice ls` and search_nodes print it: a "
        "SQLMesh model 'pricing:fx.daily_rates' (project, then schema.model), a dbt model "
        "'finance:fct_gmv_qtd', a dbt source 'finance:source:pricing.agg_gmv_daily', an "
        "ingestion table 'ingestion:fx_rates_ingest', a dashboard "
        "'finance:exposure:q3_close'. A bare name that is unique also works.",
        examples=["pricing:fx.daily_rates", "finance:fct_gmv_qtd"],
    ),
]
Selector = Annotated[
    str | None,
    Field(
        description="A node selector in dbt's syntax, as `splice run -s` takes it: a node id "
        "or name, '+' before it for its upstream, '+' after it for its downstream, globs "
        "('pricing:*'), methods ('kind:dashboard', 'project:finance', 'tag:NAME'); a space "
        "between two is their union (omit for the whole graph).",
        examples=["+pricing:marts.agg_gmv_daily", "pricing:fx.daily_rates+", "kind:dashboard"],
    ),
]
AccessSelector = Annotated[
    str,
    Field(
        description="The nodes whose relations to read, as a selector (see get_graph); every "
        "node picked must be in one domain.",
        examples=["finance:fct_gmv_qtd"],
    ),
]
Column = Annotated[
    str,
    Field(
        description="A column as NODE.COLUMN: a node id (or a name unique in the graph) and "
        "the column's name, as get_node lists its columns.",
        examples=["pricing:fx.daily_rates.rate_to_usd", "marts.agg_gmv_daily.gmv_usd"],
    ),
]
Query = Annotated[
    str,
    Field(
        description="Words to find in node ids, descriptions, column names and metrics.",
        examples=["gmv", "fx rates"],
    ),
]
NodeKind = Annotated[
    str | None,
    Field(
        description="Only nodes of this kind: model, seed, source, external (a SQLMesh "
        "external table), ingestion, dashboard, test, audit (omit for every kind).",
        examples=["model", "dashboard"],
    ),
]
Limit = Annotated[
    int, Field(ge=1, le=500, description="At most this many, newest or best first.", examples=[5])
]
Depth = Annotated[
    int | None,
    Field(ge=1, description="How many steps to follow (omit for all of them).", examples=[2]),
]
IncidentId = Annotated[
    str,
    Field(
        description="An incident's id, INC-N, as list_incidents returns it.",
        examples=["INC-1"],
    ),
]
ProposalId = Annotated[
    str,
    Field(
        description="A repair proposal's id, PR-N, as propose_repair and list_proposals return it.",
        examples=["PR-1"],
    ),
]
GrantId = Annotated[
    str,
    Field(
        description="An access grant's id, AG-N, as request_access and list_access_grants "
        "return it.",
        examples=["AG-1"],
    ),
]
MigrationId = Annotated[
    str | None,
    Field(
        description="One migration's id, as get_migrations lists them (omit for every one).",
        examples=[None],
    ),
]
RunId = Annotated[
    str,
    Field(
        description="A run's id as list_runs returns it (rYYYYMMDD-HHMMSS-xxxxxx, in UTC), a "
        "prefix of it that only one run has, or 'latest' for the newest run.",
        examples=["latest"],
    ),
]
MetricName = Annotated[
    str,
    Field(
        description="A metric's name as list_metrics returns it: a declared metric such as "
        "'fx_rate', or a default monitor, NODE/MEASURE.",
        examples=["fx_rate", "pricing:fx.daily_rates/row_count"],
    ),
]
MetricFilter = Annotated[
    str | None,
    Field(description="Only this metric's (a name as list_metrics returns it).",
          examples=["fx_rate"]),
]  # fmt: skip
Series = Annotated[
    str | None,
    Field(
        description="One series of the metric, DIMENSION=VALUE as its results label it, or "
        "the value alone (omit for every series).",
        examples=["currency=EUR", "EUR"],
    ),
]
SeriesList = Annotated[
    list[str] | None,
    Field(
        description="Only these series (DIMENSION=VALUE) or metrics (a name); the others stay "
        "open (omit for every series of the incident).",
        examples=[["currency=EUR"]],
    ),
]
Last = Annotated[
    int | None,
    Field(ge=1, description="Only the newest N points of each series.", examples=[30]),
]
Since = Annotated[
    str | None,
    Field(
        description="An ISO 8601 date, YYYY-MM-DD: only anomalies on or after it.",
        examples=["2026-09-01"],
    ),
]
AnomalyStatus = Annotated[
    Literal["open", "repaired", "resolved", "accepted", "merged"] | None,
    Field(description="Only anomalies whose incident has this status.", examples=["open"]),
]
IncidentStatus = Annotated[
    Literal["open", "repaired", "resolved", "accepted", "all"],
    Field(description="Which incidents: open (default), repaired (by Splice at L3, waiting "
          "for an owner to close it), resolved, accepted, or all.",
          examples=["all"]),
]  # fmt: skip
Direction = Annotated[
    Literal["up", "down", "both"],
    Field(description="up: where it comes from; down: what reads it, to the dashboards; both.",
          examples=["down"]),
]  # fmt: skip
IncludeClosed = Annotated[
    bool, Field(description="Also the closed ones (rejected, expired, ended).", examples=[True])
]
Comment = Annotated[
    str | None,
    Field(description="Free text recorded with the decision.",
          examples=["rates confirmed with the vendor"]),
]  # fmt: skip
Reason = Annotated[
    str,
    Field(min_length=1, description="Why, in words; recorded with the decision.",
          examples=["the vendor's feed is still stale"]),
]  # fmt: skip
Grantee = Annotated[
    str,
    Field(
        min_length=1,
        description="The warehouse role (or user) that is to read, as the warehouse names it.",
        examples=["analyst_ro"],
    ),
]
Why = Annotated[
    str,
    Field(min_length=1, description="Why the access is needed, for the owner who decides.",
          examples=["reconcile Q3 GMV with finance"]),
]  # fmt: skip
Hours = Annotated[
    float,
    Field(gt=0, description="How long the access lasts, in hours (at most [access] "
          "max_hours, 168 by default).", examples=[8]),
]  # fmt: skip
Note = Annotated[
    str | None,
    Field(description="Why the new level is the normal, recorded with the decision.",
          examples=["the EUR price change is permanent"]),
]  # fmt: skip
