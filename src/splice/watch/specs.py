"""What ``splice watch`` measures, as data: a :class:`MetricSpec` (one query over one node's
relation, grouped by interval and dimensions) and its :class:`Measure` s, the kinds of measure and
the detectors each runs, and the column helpers the monitor builders share (a node's relation,
its column types, what its audits say about its keys).  The builders are
:mod:`splice.watch.metrics` (declared metrics, default monitors, and every spec of a workspace),
:mod:`splice.watch.table_monitors` and :mod:`splice.watch.graph_monitors`.

>>> is_temporal("TIMESTAMP"), is_numeric("DECIMAL(18, 2)"), is_text("VARCHAR"), is_date("DATE")
(True, True, True, True)
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
from dataclasses import dataclass, field
from datetime import date
from typing import TYPE_CHECKING, Any

from sqlglot import exp
from sqlglot.errors import ErrorLevel, UnsupportedError

from splice.config.workspace import CONFIG_FILE
from splice.errors import ConfigError
from splice.graph.model import Graph, Node, Relation

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

#: Kinds of measure, and the detectors each kind runs (see splice.watch.detectors).
KIND_DETECTORS: dict[str, tuple[str, ...]] = {
    "value": ("stopped_moving", "spike", "level_shift", "jump"),
    "volume": ("volume_drop", "volume_jump", "missing"),
    "null_rate": ("null_rate_rise",),
    "duplicates": ("duplicates",),
    "distinct": ("distinct_change",),
    "lag": ("spike", "level_shift"),
    "slice": ("slice_drop", "domain_change"),  # rows per value (splice.watch.detectors.slices)
    "coverage": ("coverage_drop",),  # share of a join's rows finding a partner
    # a checksum of a column's values per interval: never judged as a number; measured so that
    # values a code change rewrote are seen (splice.watch.restated)
    "checksum": (),
}
VALUE_DETECTORS = KIND_DETECTORS["value"]
INTERVAL = "interval_start"
TEXT_TYPES = (exp.DataType.Type.VARCHAR, exp.DataType.Type.TEXT, exp.DataType.Type.CHAR)


@dataclass(frozen=True)
class Measure:
    """One aggregate computed per interval and dimension values: a metric's series family."""

    name: str  # the metric name series are stored under
    label: str  # what it measures, in SQL-ish words: "avg(rate_to_usd)", "row_count"
    kind: str  # a key of KIND_DETECTORS
    expr: exp.Expr = field(compare=False)
    column: str | None = None  # the column it is about, if one
    detectors: tuple[str, ...] | None = None  # restrict the detectors (None: the kind's)

    @property
    def active_detectors(self) -> tuple[str, ...]:
        kind = KIND_DETECTORS[self.kind]
        return tuple(d for d in kind if self.detectors is None or d in self.detectors)


@dataclass
class MetricSpec:
    """One query: the measures of one node grouped by interval and dimensions."""

    name: str
    node_id: str
    relation: Relation
    time: str
    time_type: str
    dimensions: list[str]
    grain: str
    measures: list[Measure]
    declared: bool = True
    owner: str | None = None
    domain: str | None = None
    description: str | None = None
    sensitivity: str = "medium"
    calendar: str | None = None
    #: a monitor of a node without a time column measures the whole table as of this
    #: interval (``time`` is empty): the newest interval of the watch that measures it
    at: date | None = None

    @property
    def per_table(self) -> bool:
        return not self.time

    # -- SQL ---------------------------------------------------------------------------------
    def interval_expr(self) -> exp.Expr:
        if self.per_table:
            return exp.cast(
                exp.Literal.string((self.at or date(1970, 1, 1)).isoformat()),
                exp.DataType.build("DATE"),
            )
        col = exp.column(self.time, quoted=True)
        day = exp.cast(col, exp.DataType.build("DATE"))
        if self.grain == "day":
            return day
        trunc = exp.DateTrunc(this=day, unit=exp.var(self.grain.upper()))
        return exp.cast(trunc, exp.DataType.build("DATE"))

    def query(self, start: date | None = None) -> exp.Select:
        """The query measuring every interval from ``start`` (every interval when None)."""
        interval = self.interval_expr()
        selects: list[exp.Expr] = [exp.alias_(interval, INTERVAL, quoted=True)]
        group: list[exp.Expr] = [] if self.per_table else [interval.copy()]
        for i, d in enumerate(self.dimensions):
            selects.append(exp.alias_(exp.column(d, quoted=True), f"d{i}", quoted=True))
            group.append(exp.column(d, quoted=True))
        for i, m in enumerate(self.measures):
            selects.append(exp.alias_(_quote_columns(m.expr.copy()), f"m{i}", quoted=True))
        q = exp.select(*selects).from_(
            exp.table_(
                self.relation.name,
                db=self.relation.schema,
                catalog=self.relation.catalog,
                quoted=True,
            )
        )
        if start is not None and not self.per_table:
            literal_type = "TIMESTAMP" if "TIMESTAMP" in self.time_type.upper() else "DATE"
            q = q.where(
                exp.GTE(
                    this=exp.column(self.time, quoted=True),
                    expression=exp.cast(
                        exp.Literal.string(start.isoformat()), exp.DataType.build(literal_type)
                    ),
                )
            )
        return q.group_by(*group) if group else q

    def sql(self, dialect: str, start: date | None = None, pretty: bool = False) -> str:
        try:
            return self.query(start).sql(
                dialect=dialect, pretty=pretty, unsupported_level=ErrorLevel.RAISE
            )
        except UnsupportedError as e:
            raise ConfigError(
                f"{CONFIG_FILE}: metric {self.name!r}: the {dialect} dialect cannot express it ({e}).",
                fix="use an aggregate the warehouse supports (sum, count, avg, min, max, ...)",
            ) from None

    def fingerprint(self, dialect: str) -> str:
        """Changes when what the spec measures changes (its history is then measured anew)."""
        sql = dataclasses.replace(self, at=None).sql(dialect) if self.at else self.sql(dialect)
        h = hashlib.sha256(f"{self.grain}|{sql}".encode())
        h.update("|".join(f"{m.name}:{m.kind}" for m in self.measures).encode())
        return h.hexdigest()[:16]


def _quote_columns(e: exp.Expr) -> exp.Expr:
    for c in list(e.find_all(exp.Column)):
        c.this.set("quoted", True)
    return e


def _dtype(type_text: str, dialect: str) -> exp.DataType | None:
    if not type_text:
        return None
    try:
        return exp.DataType.build(type_text, dialect=dialect)
    except Exception:  # noqa: BLE001 - an exotic type is just unknown
        return None


def is_temporal(type_text: str, dialect: str = "duckdb") -> bool:
    dt = _dtype(type_text, dialect)
    return dt is not None and dt.is_type(*exp.DataType.TEMPORAL_TYPES)


def is_numeric(type_text: str, dialect: str = "duckdb") -> bool:
    dt = _dtype(type_text, dialect)
    return dt is not None and dt.is_type(*exp.DataType.NUMERIC_TYPES)


def is_date(type_text: str, dialect: str = "duckdb") -> bool:
    dt = _dtype(type_text, dialect)
    return dt is not None and dt.is_type(exp.DataType.Type.DATE)


def is_text(type_text: str, dialect: str = "duckdb") -> bool:
    dt = _dtype(type_text, dialect)
    return dt is not None and dt.is_type(*TEXT_TYPES)


def relation_of(node: Node) -> Relation | None:
    """The relation a metric on ``node`` reads: what it writes, or the one relation a source names."""
    if node.writes is not None:
        return node.writes
    if node.kind in ("source", "external") and len(node.reads) == 1:
        return node.reads[0]
    return None


class ColumnTypes:
    """Column types of nodes: the tool's metadata first, the warehouse's information_schema for
    what the tool leaves untyped (read at most once, and only when needed)."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self._warehouse: dict[Relation, dict[str, str]] | None = None

    def of(self, node: Node) -> dict[str, str]:
        cols = {k.lower(): v for k, v in node.columns.items()}
        rel = relation_of(node)
        if rel is not None and (not cols or any(not v for v in cols.values())):
            wh = self.warehouse().get(rel, {})
            for k, v in wh.items():
                if not cols.get(k):
                    cols[k] = v
        return cols

    def warehouse(self) -> dict[Relation, dict[str, str]]:
        if self._warehouse is None:
            from splice.lineage.service import warehouse_columns

            self._warehouse = warehouse_columns(self.ws)
        return self._warehouse


_COLS = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _audit_columns(arg: object) -> list[str]:
    """Column names from an audit argument: ``"(a, b)"``, ``"a"`` or a list."""
    if isinstance(arg, list | tuple):
        return [str(a).strip().lower() for a in arg]
    return [c.lower() for c in _COLS.findall(str(arg or ""))]


@dataclass
class NodeKeys:
    """What a node's own audits and tests say about its keys."""

    grain: list[str] = field(default_factory=list)  # unique combination of columns
    unique: list[str] = field(default_factory=list)  # single unique columns
    not_null: list[str] = field(default_factory=list)


def node_keys(graph: Graph, node: Node) -> NodeKeys:
    keys = NodeKeys()
    for n in graph.nodes.values():
        if n.kind not in ("audit", "test") or n.meta.get("model") != node.id:
            continue
        args = n.meta.get("args") or {}
        assert isinstance(args, dict)
        cols = _audit_columns(args.get("columns") or args.get("column"))
        kind = str(n.meta.get("audit") or "")
        if kind == "unique_combination_of_columns" and not keys.grain:
            keys.grain = cols
        elif kind == "unique_values":
            keys.unique += [c for c in cols if c not in keys.unique]
        elif kind == "not_null":
            keys.not_null += [c for c in cols if c not in keys.not_null]
    return keys


def declared_fields(m: Any, where: str, label: str, expr: exp.Expr, *, sensitivity: str,
                    calendar: str | None) -> dict[str, Any]:  # fmt: skip
    """What a declared metric's spec takes from its ``[[metrics]]`` entry ``m`` (whatever
    writes its SQL): its one measure ``label``/``expr`` with the entry's detectors (an unknown
    one is a ConfigError naming ``where``), owner, domain, sensitivity and calendar."""
    if m.detectors is not None:
        unknown = [d for d in m.detectors if d not in VALUE_DETECTORS]
        if unknown:
            raise ConfigError(
                f"{where}: unknown detector(s) {', '.join(map(repr, unknown))}.",
                fix=f"use a subset of: {', '.join(VALUE_DETECTORS)}",
            )
    detectors = tuple(m.detectors) if m.detectors is not None else None
    return {
        "name": m.name, "grain": m.grain, "declared": True, "owner": m.owner,
        "domain": m.domain, "description": m.description,
        "measures": [Measure(m.name, label, "value", expr, detectors=detectors)],
        "sensitivity": m.sensitivity or sensitivity,
        "calendar": m.calendar if m.calendar is not None else calendar,
    }  # fmt: skip
