"""Node selectors, in dbt's syntax, over the joined graph of every project.

A selector is parsed into plain data first (:func:`parse`), then resolved against a
:class:`~splice.graph.model.Graph` (:func:`select`).

Syntax
------
``a b``         union (whitespace), ``a,b`` intersection (comma); ``--exclude`` takes the same.

Atoms:

- ``fct_gmv_qtd``, ``fx.daily_rates``, ``source:pricing.agg_gmv_daily``: a node's name, in
  whichever projects have a node of that name.
- ``pricing:fx.daily_rates``, ``finance:source:pricing.agg_gmv_daily``: a full id
  ``project:name``.  Names may contain ``:`` (sources), so only the first ``:`` separates the
  project, and only when what precedes it is a project of the graph.
- ``pricing:*``, ``pricing:marts.*``, ``*gmv*``: glob wildcards (``*``, ``?``, ``[abc]``) in names
  and ids.
- ``tag:daily``, ``kind:dashboard``, ``path:models/marts``, ``project:pricing``: methods.  A
  method name wins over a project of the same name (select that project with ``project:NAME``).
- dbt model versions: ``dim_customers.v1`` (its node name) or ``dim_customers_v1`` is one
  version; ``dim_customers`` (or ``finance:dim_customers``) is every version, as in dbt;
  ``version:latest``, ``version:old`` (older than the latest), ``version:prerelease`` (newer
  than the latest), ``version:none`` (models that are not versions).

Graph operators, applied to each atom before intersecting, following every edge (bindings
across projects included):

- ``+x`` x and all its ancestors, ``2+x`` ancestors up to 2 edges away;
- ``x+`` x and all its descendants, ``x+3`` descendants up to 3 edges away; ``+x+`` both;
- ``@x`` x, its descendants, and every ancestor of those.

Every atom must match at least one node, and every intersection must be non-empty; a typo is an
error that names the closest ids, never a silently smaller selection.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import get_args

from splice.errors import SelectorError
from splice.graph.model import Graph, Node, NodeKind

__all__ = ["METHODS", "Atom", "Selector", "parse", "select"]

#: Methods written ``method:value``.  Without one, an atom is a name, an id or a glob of either.
METHODS: tuple[str, ...] = ("tag", "kind", "path", "project", "version")
VERSION_VALUES: tuple[str, ...] = ("latest", "old", "prerelease", "none")
KINDS: tuple[str, ...] = get_args(NodeKind)

_GLOB = re.compile(r"[*?\[]")
_PARENTS = re.compile(r"(\d*)\+")
_CHILDREN = re.compile(r"\+(\d*)\Z")
_FORMS = "+x, 2+x, x+, x+3, +x+, @x"


@dataclass(frozen=True)
class Atom:
    """One selector term, such as ``2+tag:daily+`` or ``@pricing:fx.daily_rates``.

    ``method`` is ``"name"`` when none is written: ``value`` is then a name, a full id or a
    glob of either.  A depth of ``None`` means unlimited.
    """

    text: str
    method: str
    value: str
    parents: bool = False
    parents_depth: int | None = None
    children: bool = False
    children_depth: int | None = None
    childrens_parents: bool = False  # the '@' operator


@dataclass(frozen=True)
class Selector:
    """A parsed selector: a union (``terms``) of intersections (each a tuple of atoms)."""

    text: str
    terms: tuple[tuple[Atom, ...], ...]

    @property
    def atoms(self) -> list[Atom]:
        return [atom for term in self.terms for atom in term]


def parse(selector: str | None) -> Selector:
    """Parse ``selector`` into plain data, without looking at any graph.

    >>> s = parse("tag:daily,pricing:* 2+fct_gmv_qtd")
    >>> [[(a.method, a.value) for a in term] for term in s.terms]
    [[('tag', 'daily'), ('name', 'pricing:*')], [('name', 'fct_gmv_qtd')]]
    >>> a = parse("@finance:source:pricing.agg_gmv_daily").atoms[0]
    >>> a.value, a.childrens_parents
    ('finance:source:pricing.agg_gmv_daily', True)
    >>> a = parse("2+x+").atoms[0]
    >>> a.parents, a.parents_depth, a.children, a.children_depth
    (True, 2, True, None)
    >>> parse("++x")
    Traceback (most recent call last):
    ...
    splice.errors.SelectorError: selector '++x' is malformed: '+' may appear once before and once after a name (+x, 2+x, x+, x+3, +x+, @x)
    """
    text = (selector or "").strip()
    terms: list[tuple[Atom, ...]] = []
    for word in text.split():
        parts = word.split(",")
        if any(not p for p in parts):
            raise SelectorError(
                f"selector {word!r} is malformed: an empty term around ','",
                fix="',' joins terms without spaces, as in tag:daily,pricing:*",
            )
        terms.append(tuple(_parse_atom(p) for p in parts))
    return Selector(text=text, terms=tuple(terms))


def _malformed(text: str, why: str, fix: str | None = None) -> SelectorError:
    return SelectorError(f"selector {text!r} is malformed: {why}", fix=fix)


def _parse_atom(text: str) -> Atom:
    rest = text
    at = rest.startswith("@")
    if at:
        rest = rest[1:]
    parents, parents_depth = False, None
    m = _PARENTS.match(rest)
    if m:
        parents, parents_depth = True, (int(m.group(1)) if m.group(1) else None)
        rest = rest[m.end() :]
    children, children_depth = False, None
    m = _CHILDREN.search(rest)
    if m:
        children, children_depth = True, (int(m.group(1)) if m.group(1) else None)
        rest = rest[: m.start()]
    if "+" in rest:
        raise _malformed(text, f"'+' may appear once before and once after a name ({_FORMS})")
    if "@" in rest:
        raise _malformed(text, "'@' may only start a selector, as in @x")
    if at and parents:
        raise _malformed(
            text,
            "'@' and a leading '+' cannot be combined",
            fix="'@x' already selects every ancestor of x and of its descendants",
        )
    if at and children_depth is not None:
        raise _malformed(
            text, "'@' already selects every descendant; a depth after it means nothing"
        )
    if not rest:
        raise _malformed(text, "no node name, id or method:value next to the operator")
    method, value = "name", rest
    prefix, sep, tail = rest.partition(":")
    if sep:
        if not prefix:
            raise _malformed(text, "nothing before ':'", fix="write project:name or method:value")
        if not tail:
            raise _malformed(
                text, f"nothing after '{prefix}:'", fix=f"write {prefix}:VALUE (or {prefix}:*)"
            )
        if prefix in METHODS:
            method, value = prefix, tail
    if method == "kind" and not _GLOB.search(value) and value not in KINDS:
        close = difflib.get_close_matches(value, KINDS, n=1)
        hint = f" (did you mean kind:{close[0]}?)" if close else ""
        raise _malformed(
            text, f"unknown kind {value!r}{hint}", fix=f"kinds are: {', '.join(KINDS)}"
        )
    if method == "version" and value not in VERSION_VALUES:
        raise _malformed(
            text,
            f"unknown version selector {value!r}",
            fix=f"write version:{' or version:'.join(VERSION_VALUES)}",
        )
    return Atom(
        text=text,
        method=method,
        value=value,
        parents=parents,
        parents_depth=parents_depth,
        children=children,
        children_depth=children_depth,
        childrens_parents=at,
    )


def select(graph: Graph, selector: str | None, *, exclude: str | None = None) -> list[str]:
    """Ids of the nodes ``selector`` matches, minus those ``exclude`` matches, in dependency order.

    ``None``, ``""`` (or only spaces) selects every node.  Raises
    :class:`~splice.errors.SelectorError` when the syntax is malformed, when an atom (of either)
    matches no node, or when an intersection is empty.  An exclusion that removes everything returns ``[]``.

    >>> from splice.graph.model import Edge, Graph, Node
    >>> g = Graph()
    >>> for nid, kind, tags in [
    ...     ("pricing:fx.daily_rates", "model", ["daily"]),
    ...     ("pricing:marts.agg_gmv_daily", "model", ["daily"]),
    ...     ("finance:source:pricing.agg_gmv_daily", "source", []),
    ...     ("finance:fct_gmv_qtd", "model", []),
    ...     ("finance:gmv_usd", "dashboard", []),
    ... ]:
    ...     project, name = nid.split(":", 1)
    ...     g.add_node(Node(nid, project, name, kind, "dbt", tags=tags))
    >>> g.add_edge(Edge("pricing:fx.daily_rates", "pricing:marts.agg_gmv_daily"))
    >>> g.add_edge(Edge("pricing:marts.agg_gmv_daily", "finance:source:pricing.agg_gmv_daily", "declared"))
    >>> g.add_edge(Edge("finance:source:pricing.agg_gmv_daily", "finance:fct_gmv_qtd"))
    >>> g.add_edge(Edge("finance:fct_gmv_qtd", "finance:gmv_usd"))
    >>> select(g, "pricing:marts.agg_gmv_daily+1")
    ['pricing:marts.agg_gmv_daily', 'finance:source:pricing.agg_gmv_daily']
    >>> select(g, "+fct_gmv_qtd", exclude="source:*")
    ['pricing:fx.daily_rates', 'pricing:marts.agg_gmv_daily', 'finance:fct_gmv_qtd']
    >>> select(g, "tag:daily,pricing:fx.*+ kind:dashboard")
    ['pricing:fx.daily_rates', 'pricing:marts.agg_gmv_daily', 'finance:gmv_usd']
    >>> select(g, "fct_gmv_qdt")
    Traceback (most recent call last):
    ...
    splice.errors.SelectorError: selector 'fct_gmv_qdt' matched no node. Closest: finance:fct_gmv_qtd
    """
    wanted, unwanted = parse(selector), parse(exclude)
    chosen = _resolve(graph, wanted, role="selector") if wanted.terms else set(graph.nodes)
    if unwanted.terms:
        chosen -= _resolve(graph, unwanted, role="exclude")
    return graph.topological_order(chosen)


def _resolve(graph: Graph, parsed: Selector, *, role: str) -> set[str]:
    out: set[str] = set()
    for term in parsed.terms:
        sets = [_expand(graph, _match(graph, atom, role), atom) for atom in term]
        common = set.intersection(*sets)
        if not common:
            sizes = ", ".join(f"{a.text}: {len(s)}" for a, s in zip(term, sets, strict=True))
            raise SelectorError(
                f"{role} {','.join(a.text for a in term)!r} matched no node: "
                f"no node is in every part ({sizes})",
                fix="',' intersects; separate terms with a space for a union",
            )
        out |= common
    return out


# -- matching one atom ------------------------------------------------------------------------


def _match(graph: Graph, atom: Atom, role: str) -> set[str]:
    test = _PREDICATES[atom.method]
    found = {nid for nid, node in graph.nodes.items() if test(node, atom.value)}
    if not found:
        raise _no_match(graph, atom, role)
    return found


def _match_name(node: Node, value: str) -> bool:
    # a version of a dbt model also answers to its unversioned name (every version, as in
    # dbt) and, as in dbt, to name_vN
    names = [node.name]
    version = node.meta.get("version")
    model_name = node.meta.get("model_name") if version is not None else None
    if model_name:
        names += [str(model_name), f"{model_name}_v{version}"]
    if any(fnmatchcase(n, value) for n in names):
        return True
    project, sep, name = value.partition(":")
    return (
        bool(sep)
        and fnmatchcase(node.project, project)
        and any(fnmatchcase(n, name) for n in names)
    )


def _version_key(v: object) -> tuple[float, str]:
    """dbt versions are numbers or strings: compare numerically where both are numbers."""
    text = str(v)
    try:
        return (float(text), "")
    except ValueError:
        return (float("inf"), text)


def _match_version(node: Node, value: str) -> bool:
    version, latest = node.meta.get("version"), node.meta.get("latest_version")
    if value == "none":
        return version is None and node.kind == "model"
    if version is None:
        return False
    if latest is None:  # no latest_version: dbt takes the highest as latest
        return value == "latest"
    order = (_version_key(version) > _version_key(latest)) - (
        _version_key(version) < _version_key(latest)
    )
    return {"latest": order == 0, "old": order < 0, "prerelease": order > 0}[value]


def _norm_path(path: str) -> str:
    path = path.replace("\\", "/")
    while path.startswith("./"):
        path = path[2:]
    return path.rstrip("/")


def _match_path(node: Node, value: str) -> bool:
    if not node.path:
        return False
    path, want = _norm_path(node.path), _norm_path(value)
    return path == want or path.startswith(want + "/") or fnmatchcase(path, want)


_PREDICATES: dict[str, Callable[[Node, str], bool]] = {
    "name": _match_name,
    "tag": lambda node, value: any(fnmatchcase(t, value) for t in node.tags),
    "kind": lambda node, value: fnmatchcase(node.kind, value),
    "path": _match_path,
    "project": lambda node, value: fnmatchcase(node.project, value),
    "version": _match_version,
}


def _closest(word: str, candidates: Iterable[str], n: int = 3) -> list[str]:
    by_lower: dict[str, list[str]] = {}
    for c in sorted(set(candidates)):
        by_lower.setdefault(c.lower(), []).append(c)
    hits = difflib.get_close_matches(word.lower(), list(by_lower), n=n, cutoff=0.6)
    return [c for h in hits for c in by_lower[h]]


def _no_match(graph: Graph, atom: Atom, role: str) -> SelectorError:
    head = f"{role} {atom.text!r} matched no node"
    nodes = graph.nodes.values()
    projects = sorted({n.project for n in nodes})
    if atom.method == "name":
        names: dict[str, list[str]] = {}
        for n in nodes:
            names.setdefault(n.name, []).append(n.id)
        ids: list[str] = []
        for hit in _closest(atom.value, list(graph.nodes) + list(names)):
            for nid in sorted(names.get(hit, [hit] if hit in graph.nodes else [])):
                if nid not in ids:
                    ids.append(nid)
        fix = "select by name, by full id project:name, or with a glob such as 'fct_*'"
        prefix, sep, _ = atom.value.partition(":")
        if (
            sep
            and not _GLOB.search(prefix)
            and prefix not in projects
            and not any(n.name.startswith(prefix + ":") for n in nodes)
        ):
            fix = (
                f"{prefix!r} is neither a project ({', '.join(projects) or 'none'}) "
                f"nor a method ({', '.join(METHODS)})"
            )
        if ids:
            return SelectorError(f"{head}. Closest: {', '.join(ids[:5])}", fix=fix)
        return SelectorError(f"{head}, and no node id or name is close to it", fix=fix)
    options: dict[str, list[str]] = {
        "tag": sorted({t for n in nodes for t in n.tags}),
        "kind": sorted({str(n.kind) for n in nodes}),
        "path": sorted({_norm_path(n.path) for n in nodes if n.path}),
        "project": projects,
        "version": [v for v in VERSION_VALUES if any(_match_version(n, v) for n in nodes)],
    }
    present = options[atom.method]
    close = [f"{atom.method}:{c}" for c in _closest(atom.value, present)]
    if close:
        return SelectorError(f"{head}. Closest: {', '.join(close)}")
    listing = ", ".join(present[:10]) + (", ..." if len(present) > 10 else "")
    return SelectorError(
        f"{head}, and no {atom.method} is close to it",
        fix=f"{atom.method}s in the graph: {listing or 'none'}",
    )


# -- graph operators --------------------------------------------------------------------------


def _walk(starts: set[str], step: Callable[[str], set[str]], depth: int | None) -> set[str]:
    """Every node within ``depth`` steps of any of ``starts`` (breadth first, multi-source)."""
    seen = set(starts)
    frontier = set(starts)
    level = 0
    while frontier and (depth is None or level < depth):
        frontier = {m for n in frontier for m in step(n)} - seen
        seen |= frontier
        level += 1
    return seen


def _expand(graph: Graph, base: set[str], atom: Atom) -> set[str]:
    out = set(base)
    if atom.childrens_parents:
        down = _walk(base, graph.children, None)
        return down | _walk(down, graph.parents, None)
    if atom.parents:
        out |= _walk(base, graph.parents, atom.parents_depth)
    if atom.children:
        out |= _walk(base, graph.children, atom.children_depth)
    return out
