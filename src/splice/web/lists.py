"""Filterable lists that refresh themselves while something in them runs.

A list page takes its filters as query parameters (``/runs?status=failed&project=finance``), so
a filtered list has a URL to share; each filter offers the values the list holds. While a row
is in a running state (a run running, a proposal applying, a grant being granted) the list's
container carries ``data-poll`` with the URL of the list alone (``partial=1``): the page's
script (``static/splice.js``) fetches it every few seconds and puts it in place, and stops when
the fragment it got no longer carries ``data-poll`` (nothing runs any more).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import urlencode

from splice.web.core import Ctx

#: How often a running list is fetched again, in milliseconds.
POLL_MS = 2000

Getter = Callable[[dict[str, Any]], Any]


def _values(v: Any) -> list[str]:
    if v is None or v == "":
        return []
    if isinstance(v, list | tuple | set):
        return [str(x) for x in v if x not in (None, "")]
    return [str(v)]


def filtered(
    ctx: Ctx, rows: list[dict[str, Any]], fields: Iterable[tuple[str, str, Getter]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows that pass the filters in the request's query, and the filters to draw
    (``name``, ``label``, ``options``: the values the rows hold, ``value``: the one chosen,
    ``absent``: no row holds it, so none passes; ``held``: the values the rows hold).

    >>> ctx = Ctx(None, None, {}, {"status": "failed"})  # type: ignore[arg-type]
    >>> rows = [{"s": "failed", "p": ["a"]}, {"s": "success", "p": ["a", "b"]}]
    >>> kept, ui = filtered(ctx, rows, [("status", "Status", lambda r: r["s"]),
    ...                                 ("project", "Project", lambda r: r["p"])])
    >>> kept, [(f["name"], f["options"], f["value"]) for f in ui]
    ([{'s': 'failed', 'p': ['a']}], [('status', ['failed', 'success'], 'failed'), ('project', ['a', 'b'], '')])
    >>> kept, ui = filtered(Ctx(None, None, {}, {"status": "nope"}), rows,  # type: ignore[arg-type]
    ...                     [("status", "Status", lambda r: r["s"])])
    >>> kept, ui[0]["absent"], ui[0]["held"]
    ([], True, ['failed', 'success'])
    """
    ui = []
    kept = list(rows)
    for name, label, get in fields:
        options = sorted({v for r in rows for v in _values(get(r))})
        value = ctx.query.get(name, "").strip()
        absent = bool(value) and value not in options
        if value:
            kept = [r for r in kept if value in _values(get(r))]
            if absent:  # kept in the choice so the form says what was asked
                options.append(value)
        ui.append({"name": name, "label": label, "options": options, "value": value,
                   "absent": absent, "held": [o for o in options if o != value or not absent]})  # fmt: skip
    return kept, ui


def partial(ctx: Ctx) -> bool:
    """Whether the request asks for the list alone (the script's refresh)."""
    return ctx.query.get("partial") == "1"


def poll_url(ctx: Ctx, path: str, running: bool) -> str | None:
    """The URL the list refreshes itself from while ``running`` (its filters kept), else None.

    >>> ctx = Ctx(None, None, {}, {"status": "running", "partial": "1"})  # type: ignore[arg-type]
    >>> poll_url(ctx, "/runs", True), poll_url(ctx, "/runs", False)
    ('/runs?status=running&partial=1', None)
    """
    if not running:
        return None
    q = {k: v for k, v in ctx.query.items() if k != "partial" and v}
    return f"{path}?{urlencode({**q, 'partial': '1'})}"
