"""The compiled SQL of a dbt model whose Jinja is only ``ref``, ``source`` and ``config``,
rendered without dbt.

``dbt compile`` renders every model through dbt's Jinja context: on a 1,500-model project that
is most of a first ``splice lineage`` after the parse itself. Many models (staging models over
``{{ source() }}``, marts over ``{{ ref() }}``) use nothing else, and for them the compiled SQL
is the model's own text with each call replaced by the relation the manifest already holds:
``ref('x')`` renders the ``relation_name`` of node ``x``, ``source('s', 't')`` that of the
source, ``config(...)`` renders nothing, a ``{# comment #}`` disappears. This module renders
exactly those models, and says None for any other: a block tag (``{% if is_incremental() %}``),
any other call, a variable, a filter, a versioned or ephemeral ref, a ref whose name more than
one package defines. Those are compiled by dbt as before. ``tests/providers/test_dbt_plain.py``
compares this module's SQL with ``dbt compile``'s on real projects.

>>> from types import SimpleNamespace as NS
>>> dep = NS(name="stg_orders", resource_type="model", relation_name='"wh"."main"."stg_orders"',
...          version=None, unique_id="model.shop.stg_orders")
>>> m = NS(nodes={dep.unique_id: dep}, sources={})
>>> node = NS(raw_code="{{ config(materialized='table') }}\\nselect id from {{ ref('stg_orders') }}\\n",
...           depends_on=NS(nodes=[dep.unique_id]), resource_type="model", language="sql")
>>> plain_render(m, node)
'\\nselect id from "wh"."main"."stg_orders"'
>>> node.raw_code = "select * from {{ ref('stg_orders') }} {% if is_incremental() %}where 1{% endif %}"
>>> plain_render(m, node) is None
True
"""

from __future__ import annotations

from typing import Any

_RESOURCES = ("model", "seed", "snapshot")


def _kind(node: Any) -> str:
    rt = getattr(node, "resource_type", "")
    return str(getattr(rt, "value", rt))


def _environment() -> Any:
    import jinja2

    # dbt's own environment keeps jinja's defaults for what is rendered here: no
    # trim_blocks, no lstrip_blocks, the one trailing newline dropped
    return jinja2.Environment()


_ENV: Any = None


class _Index:
    """The names a ref or a source call can resolve to, built once per manifest."""

    def __init__(self, manifest: Any) -> None:
        self.refs: dict[str, list[Any]] = {}
        for n in manifest.nodes.values():
            if _kind(n) in _RESOURCES:
                self.refs.setdefault(n.name, []).append(n)
        self.sources: dict[tuple[str, str], list[Any]] = {}
        for s in manifest.sources.values():
            self.sources.setdefault((s.source_name, s.name), []).append(s)


_INDEXES: dict[int, tuple[Any, _Index]] = {}


def _index(manifest: Any) -> _Index:
    kept = _INDEXES.get(id(manifest))
    if kept is not None and kept[0] is manifest:
        return kept[1]
    idx = _Index(manifest)
    _INDEXES.clear()  # one manifest at a time is enough: each provider holds its own
    _INDEXES[id(manifest)] = (manifest, idx)
    return idx


def _const_args(call: Any) -> list[str] | None:
    from jinja2 import nodes

    if call.kwargs or call.dyn_args or call.dyn_kwargs:
        return None
    out = []
    for a in call.args:
        if not isinstance(a, nodes.Const) or not isinstance(a.value, str):
            return None
        out.append(a.value)
    return out


def _ref(idx: _Index, args: list[str], depends: set[str]) -> str | None:
    if len(args) != 1:  # ref('package', 'model'): dbt resolves it; so does dbt compile
        return None
    found = idx.refs.get(args[0], [])
    if len(found) != 1:
        return None
    target = found[0]
    if (
        getattr(target, "version", None) is not None
        or not target.relation_name
        or getattr(getattr(target, "config", None), "materialized", None) == "ephemeral"
    ):
        return None  # a versioned model, or an ephemeral one (rendered as a CTE by dbt)
    if target.unique_id not in depends:
        return None
    return str(target.relation_name)


def _source(idx: _Index, args: list[str], depends: set[str]) -> str | None:
    if len(args) != 2:
        return None
    found = idx.sources.get((args[0], args[1]), [])
    if len(found) != 1 or not found[0].relation_name or found[0].unique_id not in depends:
        return None
    return str(found[0].relation_name)


def plain_render(manifest: Any, node: Any) -> str | None:
    """The SQL ``dbt compile`` gives ``node``, when its Jinja is only ``ref``, ``source`` and
    ``config`` calls with literal arguments (and comments); else None."""
    global _ENV
    from jinja2 import TemplateSyntaxError, nodes

    if _kind(node) != "model" or getattr(node, "language", "sql") != "sql":
        return None
    raw = node.raw_code or ""
    if "{{" not in raw and "{%" not in raw and "{#" not in raw:
        return raw[:-1] if raw.endswith("\n") else raw
    if "{%" in raw:
        return None  # a block tag: an if, a for, a set, a macro call block
    if _ENV is None:
        _ENV = _environment()
    try:
        tree = _ENV.parse(raw)
    except TemplateSyntaxError:
        return None
    idx = _index(manifest)
    depends = set(getattr(node.depends_on, "nodes", None) or [])
    parts: list[str] = []
    for stmt in tree.body:
        if not isinstance(stmt, nodes.Output):
            return None
        for item in stmt.nodes:
            if isinstance(item, nodes.TemplateData):
                parts.append(item.data)
                continue
            if not isinstance(item, nodes.Call) or not isinstance(item.node, nodes.Name):
                return None
            fn = item.node.name
            if fn == "config":
                continue  # renders nothing; its settings are in the manifest already
            args = _const_args(item)
            if args is None:
                return None
            text = _ref if fn == "ref" else _source if fn == "source" else None
            rendered = text(idx, args, depends) if text is not None else None
            if rendered is None:
                return None
            parts.append(rendered)
    out = "".join(parts)
    return out[:-1] if out.endswith("\n") else out
