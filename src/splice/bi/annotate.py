"""Open incidents written onto a Superset's charts: one annotation layer, one annotation each.

Splice keeps one native annotation layer per Superset, :data:`LAYER`. An incident is one
annotation in it, found again by its ``json_metadata`` (``{"incident": KEY, "link": ...}``),
or, for one made by hand, by a ``short_descr`` that starts with the key. Its ``short_descr`` is
the title after the key (``INC-1 stale rates``), its ``long_descr`` the description and the
incident's link, and it spans whole days (``start`` 00:00:00 to ``end`` 23:59:59, UTC), so a
chart draws an interval band rather than a line.

A chart shows the layer when it lists it (``annotationType`` ``INTERVAL``, ``sourceType``
``NATIVE``, ``value`` the layer's id) in ``params.annotation_layers``, which the chart and its
dashboard draw from, and in its ``query_context`` (``form_data`` and each query), which
``/api/v1/chart/ID/data/`` (reports, thumbnails, the API) runs; see
:mod:`splice.bi.superset_seed` for the REST shapes. Everything else in a chart is left as it
was: its JSON is read, the one list changed, and written back only when it differs.

- :func:`annotate` is an upsert: the layer made when missing, the annotation made or updated
  only in what differs, the layer attached to the charts that lack it. Calling it twice sends
  no write the second time.
- :func:`end` deletes the incident's annotation; when that leaves the layer empty, it takes
  the layer out of every chart listing it (a chart listing a deleted layer answers 500 to its
  data call) and then deletes the layer. Calling it twice is harmless.
- :func:`annotations` reads the layer's annotations back (for the tests and ``splice doctor``).

A native layer is Superset's, not a chart's: a chart listing it shows every annotation in it,
so a chart attached for one incident also shows the other open ones (the layer's annotations
are the open incidents; a chart is attached when one of them touches it).

Every call goes through :class:`splice.bi.superset.Superset` (errors are
:class:`splice.errors.BIError`). Two Splice processes annotating and ending at the same moment
could detach a layer that the other has just written to: the callers serialize these writes.
A Superset with a data cache (``DATA_CACHE_CONFIG``) keeps serving a chart's cached
``annotation_data`` until that cache expires or the chart is refreshed with ``force``.
"""

import datetime as dt
import json
from collections.abc import Callable
from email.utils import parsedate_to_datetime
from typing import Any

from splice.bi.superset import Superset

#: The one annotation layer Splice writes in a Superset.
LAYER = "Splice incidents"
LAYER_DESCR = "Open data incidents, one annotation each, written and removed by Splice."

Layers = list[dict[str, Any]]


def _layer(api: Superset, *, create: bool) -> int | None:
    """The id of :data:`LAYER` (made when missing and ``create``)."""
    rows = api.listing("annotation_layer", ["id", "name"],
                       filters=[{"col": "name", "opr": "eq", "value": LAYER}])  # fmt: skip
    ids = sorted(int(r["id"]) for r in rows if r.get("name") == LAYER)
    if ids or not create:
        return ids[0] if ids else None
    body = {"name": LAYER, "descr": LAYER_DESCR}
    return int(api.call("POST", "/api/v1/annotation_layer/", body)["id"])


def _read(api: Superset, layer: int) -> list[dict[str, Any]]:
    """The layer's annotations, each read whole (the list leaves ``json_metadata`` out)."""
    base = f"/api/v1/annotation_layer/{layer}/annotation"
    ids = sorted(int(r["id"]) for r in api.listing(f"annotation_layer/{layer}/annotation", ["id"]))
    out = []
    for pk in ids:
        r = api.call("GET", f"{base}/{pk}")["result"]
        try:
            meta = json.loads(r.get("json_metadata") or "{}")
        except ValueError:
            meta = {}
        out.append({**r, "id": pk, "meta": meta if isinstance(meta, dict) else {}})
    return out


def _key_of(short_descr: str | None) -> str:
    """The incident key a ``short_descr`` starts with.

    >>> _key_of("INC-1 stale rates"), _key_of("INC-1: stale"), _key_of("INC-10"), _key_of(None)
    ('INC-1', 'INC-1', 'INC-10', '')
    """
    words = (short_descr or "").split(maxsplit=1)
    return words[0].rstrip(":") if words else ""


def _mine(records: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The annotations of incident ``key``: by metadata, else by ``short_descr``."""
    tagged = [r for r in records if r["meta"].get("incident") == key]
    return tagged or [r for r in records
                      if not r["meta"].get("incident") and _key_of(r.get("short_descr")) == key]  # fmt: skip


def _when(value: Any) -> str:
    """A Superset date-time (ISO 8601 or RFC 1123) as ``YYYY-MM-DDTHH:MM:SS``.

    >>> _when("2026-09-28T00:00:00.000000"), _when("Mon, 28 Sep 2026 00:00:00 GMT")
    ('2026-09-28T00:00:00', '2026-09-28T00:00:00')
    """
    text = str(value or "")
    try:
        return dt.datetime.fromisoformat(text).replace(tzinfo=None).isoformat(timespec="seconds")
    except ValueError:
        try:
            return parsedate_to_datetime(text).replace(tzinfo=None).isoformat(timespec="seconds")
        except (TypeError, ValueError):
            return text


def _norm(field: str, value: Any) -> Any:
    """An annotation's field as compared: dates as :func:`_when`, metadata parsed.

    >>> _norm("json_metadata", '{"a":1}') == _norm("json_metadata", '{"a": 1}'), _norm("x", None)
    (True, '')
    """
    if field in ("start_dttm", "end_dttm"):
        return _when(value)
    if field == "json_metadata":
        try:
            return json.loads(value or "{}")
        except ValueError:
            return value
    return value or ""


def _entry(layer: int) -> dict[str, Any]:
    """How a chart lists :data:`LAYER`: an interval band per annotation."""
    return {"name": LAYER, "annotationType": "INTERVAL", "sourceType": "NATIVE", "value": layer,
            "show": True, "showLabel": True, "showMarkers": False, "hideLine": False,
            "color": None, "opacity": "", "style": "solid", "width": 1,
            "overrides": {"time_range": None}, "titleColumn": "", "descriptionColumns": [],
            "timeColumn": "", "intervalEndColumn": ""}  # fmt: skip


def _lists(entry: Any, layer: int) -> bool:
    return (isinstance(entry, dict) and entry.get("sourceType") == "NATIVE"
            and str(entry.get("value")) == str(layer))  # fmt: skip


def _attach(layer: int) -> Callable[[Layers], Layers]:
    """Add the layer when missing; drop an entry of a :data:`LAYER` that no longer exists."""

    def fix(have: Layers) -> Layers:
        kept = [e for e in have if _lists(e, layer) or not (
            isinstance(e, dict) and e.get("sourceType") == "NATIVE" and e.get("name") == LAYER)]  # fmt: skip
        return kept if any(_lists(e, layer) for e in kept) else [*kept, _entry(layer)]

    return fix


def _detach(layer: int) -> Callable[[Layers], Layers]:
    return lambda have: [e for e in have if not _lists(e, layer)]


def _edit(api: Superset, chart_id: int, fix: Callable[[Layers], Layers]) -> bool:
    """Apply ``fix`` to the chart's ``params`` and ``query_context`` annotation layers; write
    the chart only when one changed. Whether it was written."""
    chart = api.call("GET", f"/api/v1/chart/{chart_id}")["result"]
    params = json.loads(chart.get("params") or "{}")
    context = json.loads(chart["query_context"]) if chart.get("query_context") else None
    changed: dict[str, str] = {}
    have = params.get("annotation_layers") or []
    if (want := fix(have)) != have:
        params["annotation_layers"] = want
        changed["params"] = json.dumps(params)
    if isinstance(context, dict):
        holders = [context.get("form_data"), *(context.get("queries") or [])]
        touched = False
        for h in (h for h in holders if isinstance(h, dict)):
            have = h.get("annotation_layers") or []
            if (want := fix(have)) != have:
                h["annotation_layers"], touched = want, True
        if touched:
            changed["query_context"] = json.dumps(context)
    if changed:
        api.call("PUT", f"/api/v1/chart/{chart_id}", changed)
    return bool(changed)


def annotate(api: Superset, *, key: str, charts: list[int], title: str, description: str,
             start: dt.date, end: dt.date, link: str) -> dict[str, Any]:  # fmt: skip
    """Make (or bring up to date) incident ``key``'s annotation, from ``start`` to ``end``
    (whole days), on ``charts``; nothing is written that is already so::

        {"layer": 1, "annotation": 3, "charts": [1, 2]}
    """
    if end < start:
        raise ValueError(f"incident {key}: end {end} is before start {start}")
    layer = _layer(api, create=True)
    assert layer is not None
    short = title if _key_of(title) == key else f"{key} {title}"
    want = {"short_descr": short[:500],
            "long_descr": "\n".join(p for p in (description, link) if p),
            "start_dttm": f"{start.isoformat()}T00:00:00",
            "end_dttm": f"{end.isoformat()}T23:59:59",
            "json_metadata": json.dumps({"incident": key, "link": link})}  # fmt: skip
    base = f"/api/v1/annotation_layer/{layer}/annotation"
    found = _mine(_read(api, layer), key)
    for extra in found[1:]:  # one annotation per incident
        api.call("DELETE", f"{base}/{extra['id']}")
    if not found:
        pk = int(api.call("POST", f"{base}/", want)["id"])
    else:
        pk, have = int(found[0]["id"]), found[0]
        diff = {k: v for k, v in want.items() if _norm(k, v) != _norm(k, have.get(k))}
        if diff:
            api.call("PUT", f"{base}/{pk}", diff)
    for chart_id in charts:
        _edit(api, chart_id, _attach(layer))
    return {"layer": layer, "annotation": pk, "charts": list(charts)}


def end(api: Superset, *, key: str) -> dict[str, Any]:
    """Remove incident ``key``'s annotation; the layer too when it is left empty, taken out of
    every chart first. What was done::

        {"annotation": 3 or None, "layer": 1 or None, "layer_deleted": True,
         "detached": [1, 2]}
    """
    out: dict[str, Any] = {"annotation": None, "layer": None, "layer_deleted": False,
                           "detached": []}  # fmt: skip
    layer = _layer(api, create=False)
    if layer is None:
        return out
    out["layer"] = layer
    records = _read(api, layer)
    mine = _mine(records, key)
    for r in mine:
        api.call("DELETE", f"/api/v1/annotation_layer/{layer}/annotation/{r['id']}")
    out["annotation"] = int(mine[0]["id"]) if mine else None
    if len(records) > len(mine):
        return out
    for c in sorted(api.listing("chart", ["id", "params"]), key=lambda c: int(c["id"])):
        try:
            listed = json.loads(c.get("params") or "{}").get("annotation_layers") or []
        except (ValueError, AttributeError):
            listed = []
        if any(_lists(e, layer) for e in listed) and _edit(api, int(c["id"]), _detach(layer)):
            out["detached"].append(int(c["id"]))
    api.call("DELETE", f"/api/v1/annotation_layer/{layer}")
    out["layer_deleted"] = True
    return out


def annotations(api: Superset) -> list[dict[str, Any]]:
    """:data:`LAYER`'s annotations as Superset holds them (none when there is no layer)::

    [{"id": 3, "key": "INC-1", "short_descr": "INC-1 stale rates", "long_descr": "...",
      "start": "2026-09-28T00:00:00", "end": "2026-09-29T23:59:59", "link": "..."}]
    """
    layer = _layer(api, create=False)
    if layer is None:
        return []
    return [{"id": r["id"], "key": r["meta"].get("incident") or _key_of(r.get("short_descr")),
             "short_descr": r.get("short_descr"), "long_descr": r.get("long_descr"),
             "start": _when(r.get("start_dttm")), "end": _when(r.get("end_dttm")),
             "link": r["meta"].get("link")} for r in _read(api, layer)]  # fmt: skip
