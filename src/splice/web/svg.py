"""SVG drawings for the pages, as markup: a metric's chart (its history, the baseline band and
the anomalous intervals) and an incident's lineage (left to right, the origin highlighted).

Pure functions of plain data (what :func:`splice.api.incident_charts` and
:func:`splice.api.incident_lineage` return). Every text is escaped; there is no script and no
``style=`` attribute (the page's CSP forbids them): colours are SVG presentation attributes,
which the CSS classes may refine. The drawings scale with their container (``viewBox``, width
100%) and carry a ``<title>`` and ``<desc>`` for screen readers.

>>> chart = {"metric": "fx_rate", "series": "currency=AUD", "points": [
...     {"interval": "2026-09-24", "value": 1.0, "lower": 0.9, "upper": 1.1, "expected": 1.0},
...     {"interval": "2026-09-25", "value": 1.0, "lower": 0.9, "upper": 1.1, "expected": 1.0},
...     {"interval": "2026-09-28", "value": 2.0, "lower": 0.9, "upper": 1.1, "expected": 1.0}],
...     "intervals": ["2026-09-28"], "anomalies": [], "other_intervals": []}
>>> svg = str(metric_chart(chart, uid="c1"))
>>> svg.count('data-testid="anomaly-mark"'), 'data-testid="baseline-band"' in svg
(1, True)
>>> 'data-interval="2026-09-28"' in svg, "style=" in svg, "<script" in svg
(True, False, False)
>>> num(0.70302), num(12345.678), num(-0.0), num(None), num(3.0)
('0.703', '12,345.7', '0', '-', '3')
"""

from __future__ import annotations

import math
from datetime import date
from typing import Any
from urllib.parse import quote

from markupsafe import Markup, escape

from splice import api

MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")

# the chart's frame, in viewBox units
W, H = 600, 250
ML, MR, MT, MB = 78, 14, 12, 44


#: A number as Splice says numbers in reasons (watch's own format, through the api).
num = api.format_number


def nice_ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    """About ``n`` round values covering ``lo..hi``.

    >>> nice_ticks(0.0, 4.0)
    [0.0, 1.0, 2.0, 3.0, 4.0]
    >>> nice_ticks(0.64, 0.79)
    [0.6, 0.65, 0.7, 0.75, 0.8]
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(n, 1)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    out = []
    k = 0
    while True:
        v = first + k * step
        out.append(float(round(v, 12)))
        if v >= hi - 1e-12 * max(1.0, abs(hi)):
            break
        k += 1
    return out


def tick_label(v: float, ticks: list[float]) -> str:
    """A tick's value with as many decimals as the ticks' step needs.

    >>> [tick_label(t, [0.6, 0.65, 0.7]) for t in (0.6, 0.65)], tick_label(2000.0, [0.0, 2000.0])
    (['0.60', '0.65'], '2k')
    """
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else abs(v) or 1.0
    if abs(v) >= 1000 and step >= 1000:
        return f"{v / 1000:g}k" if abs(v) < 1e6 else f"{v / 1e6:g}M"
    decimals = next((d for d in range(9) if abs(round(step, d) - step) <= 1e-9 * step), 8)
    text = f"{v:.{decimals}f}"
    return "0" if float(text) == 0 else text


def day_label(d: date) -> str:
    """A date on the axis.

    >>> day_label(date(2026, 9, 28))
    'Sep 28'
    """
    return f"{MONTHS[d.month - 1]} {d.day}"


def _f(x: float) -> str:
    return f"{x:.1f}"


def metric_chart(chart: dict[str, Any], *, uid: str) -> Markup:
    """One metric's chart: the values as a line, the band as a shaded area (its expected value
    dashed), each anomalous interval of ``chart["intervals"]`` marked (``anomaly-mark``), the
    anomalies of other incidents as hollow rings, dates and values on the axes."""
    pts = [p for p in chart.get("points") or [] if p.get("value") is not None]
    title = f"{chart.get('metric')}, {chart.get('series')}"
    if not pts:
        return Markup(
            f'<svg class="chart" viewBox="0 0 {W} 60" width="100%" role="img" '
            f'aria-labelledby="{escape(uid)}-t"><title id="{escape(uid)}-t">{escape(title)}: '
            f'no points</title><text x="8" y="34" class="note">No points measured.</text></svg>'
        )
    days = [date.fromisoformat(p["interval"]) for p in pts]
    d0, d1 = days[0].toordinal(), days[-1].toordinal()
    span = max(d1 - d0, 1)
    pw, ph = W - ML - MR, H - MT - MB

    def x(d: date) -> float:
        return ML + (d.toordinal() - d0) / span * pw if d1 > d0 else ML + pw / 2

    vals = [float(p["value"]) for p in pts]
    ext = vals + [float(p[k]) for p in pts for k in ("lower", "upper") if p.get(k) is not None]
    lo, hi = min(ext), max(ext)
    pad = (hi - lo) * 0.08 if hi > lo else max(abs(hi) * 0.1, 1.0)
    bottom = max(lo - pad, 0.0) if lo >= 0 else lo - pad  # a count or a rate stays >= 0
    ticks = nice_ticks(bottom, hi + pad)
    y_lo, y_hi = min(ticks[0], bottom), max(ticks[-1], hi + pad)

    def y(v: float) -> float:
        return MT + ph - (v - y_lo) / (y_hi - y_lo) * ph

    e = escape
    out = [
        f'<svg class="chart" viewBox="0 0 {W} {H}" width="100%" role="img" '
        f'aria-labelledby="{e(uid)}-t {e(uid)}-d" font-size="14">',
        f'<title id="{e(uid)}-t">{e(title)}, {e(days[0].isoformat())} to '
        f"{e(days[-1].isoformat())}</title>",
        f'<desc id="{e(uid)}-d">{e(_chart_words(chart, pts))}</desc>',
    ]
    # grid and value axis
    out.append('<g class="axis y-axis">')
    for t in ticks:
        if y_lo - 1e-12 <= t <= y_hi + 1e-12:
            yy = _f(y(t))
            out.append(
                f'<line x1="{ML}" x2="{W - MR}" y1="{yy}" y2="{yy}" class="grid" stroke="#e3e7eb"/>'
                f'<text x="{ML - 6}" y="{yy}" dy="0.35em" text-anchor="end" fill="#5a6470">'
                f"{e(tick_label(t, ticks))}</text>"
            )
    out.append("</g>")
    # the band (one area per run of points that have one) and the expected value
    runs: list[list[dict[str, Any]]] = [[]]
    for p in pts:
        if p.get("lower") is not None and p.get("upper") is not None:
            runs[-1].append(p)
        elif runs[-1]:
            runs.append([])
    runs = [r for r in runs if r]
    if runs:
        out.append('<g data-testid="baseline-band" class="band">')
        for r in runs:
            top = [f"{_f(x(date.fromisoformat(p['interval'])))},{_f(y(p['upper']))}" for p in r]
            low = [
                f"{_f(x(date.fromisoformat(p['interval'])))},{_f(y(p['lower']))}"
                for p in reversed(r)
            ]
            out.append(
                f'<polygon points="{" ".join(top + low)}" fill="#cfe0f3" stroke="#cfe0f3" '
                'stroke-width="6" stroke-linejoin="round"/>'
            )
            exp = [p for p in r if p.get("expected") is not None]
            if exp:
                dash = " ".join(
                    f"{'M' if i == 0 else 'L'}{_f(x(date.fromisoformat(p['interval'])))},"
                    f"{_f(y(p['expected']))}"
                    for i, p in enumerate(exp)
                )
                out.append(
                    f'<path d="{dash}" class="expected" fill="none" stroke="#6d8fb3" '
                    'stroke-width="1.2" stroke-dasharray="4 3"/>'
                )
        out.append("</g>")
    # the anomalous intervals, under the line
    width = max(pw / (span + 1), 5.0)
    by_day = {p["interval"]: p for p in pts}
    details: dict[str, list[dict[str, Any]]] = {}
    for a in chart.get("anomalies") or []:
        details.setdefault(a["interval"], []).append(a)
    marks = []
    for iv in chart.get("intervals") or []:
        if iv not in by_day:
            continue
        d = date.fromisoformat(iv)
        p = by_day[iv]
        words = "; ".join(
            f"{a.get('detector')}: {a.get('reason') or ''}".strip() for a in details.get(iv, [])
        )
        marks.append(
            f'<g data-testid="anomaly-mark" data-interval="{e(iv)}" class="anomaly">'
            f"<title>{e(iv)}: {e(num(p['value']))}{e(' (' + words + ')') if words else ''}</title>"
            f'<rect x="{_f(x(d) - width / 2)}" y="{MT}" width="{_f(width)}" height="{ph}" '
            'fill="#b3261e" fill-opacity="0.14"/>'
            f'<circle cx="{_f(x(d))}" cy="{_f(y(p["value"]))}" r="5" fill="#b3261e" '
            'stroke="#fff" stroke-width="1.5"/></g>'
        )
    line = " ".join(
        f"{'M' if i == 0 else 'L'}{_f(x(dd))},{_f(y(v))}"
        for i, (dd, v) in enumerate(zip(days, vals, strict=True))
    )
    out.append(
        f'<path d="{line}" class="series" fill="none" stroke="#1b1f24" stroke-width="1.8" '
        'stroke-linejoin="round"/>'
    )
    out.extend(marks)
    rep = chart.get("repeat")
    if rep and rep.get("from") and rep.get("to"):
        # the stopped_moving detector's rule: the same value on every interval since it moved
        x0, x1 = x(date.fromisoformat(rep["from"])), x(date.fromisoformat(rep["to"]))
        yy = _f(y(float(rep["value"])))
        label = f"unchanged at {num(rep['value'])} since {rep['from']}"
        out.append(
            f'<g data-testid="repeat-line" class="repeat" data-value="{e(str(rep["value"]))}" '
            f'data-from="{e(rep["from"])}" data-to="{e(rep["to"])}"><title>{e(label)} '
            f"({rep.get('intervals', 0)} intervals repeated)</title>"
            f'<line x1="{_f(x0)}" x2="{_f(max(x1, x0 + 2))}" y1="{yy}" y2="{yy}" '
            'stroke="#b3261e" stroke-width="3" stroke-dasharray="7 3"/>'
            f'<text x="{_f(max(x1, ML + 200))}" y="{yy}" dy="-0.7em" text-anchor="end" '
            f'fill="#b3261e">{e(label)}</text></g>'
        )
    for iv in chart.get("other_intervals") or []:
        if iv in by_day and iv not in (chart.get("intervals") or []):
            d = date.fromisoformat(iv)
            out.append(
                f'<g class="anomaly-other" data-interval="{e(iv)}"><title>{e(iv)}: anomalous in '
                f'another incident</title><circle cx="{_f(x(d))}" '
                f'cy="{_f(y(by_day[iv]["value"]))}" r="5" fill="none" stroke="#8a5a00" '
                'stroke-width="1.5"/></g>'
            )
    # the date axis
    base = MT + ph
    out.append(
        f'<g class="axis x-axis"><line x1="{ML}" x2="{W - MR}" y1="{base}" y2="{base}" '
        'stroke="#8a949e"/>'
    )
    ticks_x = _date_ticks(days)
    for d in ticks_x:
        xx = _f(x(d))
        anchor = "end" if d == days[-1] and len(ticks_x) > 1 else "middle"
        out.append(
            f'<line x1="{xx}" x2="{xx}" y1="{base}" y2="{base + 5}" stroke="#8a949e"/>'
            f'<text x="{xx}" y="{base + 20}" text-anchor="{anchor}" fill="#5a6470">'
            f"{e(day_label(d))}</text>"
        )
    out.append(
        f'<text x="{W - MR}" y="{H - 4}" text-anchor="end" fill="#5a6470" class="year">'
        f"{e(_years(days))}</text></g>"
    )
    out.append("</svg>")
    return Markup("".join(out))


def lag_chart(payload: dict[str, Any], *, uid: str) -> Markup:
    """How far behind its interval a source's payload is (its own as-of date), per interval:
    a bar per interval (``lag-bar``, red where stale), the usual lag as a dashed line
    (``usual-lag``): the rule the as-of check judges lateness by.

    >>> p = {"column": "as_of", "usual_lag_days": 1, "days": [
    ...     {"interval": "2026-09-27", "lag_days": 1, "stale": False},
    ...     {"interval": "2026-09-28", "lag_days": 3, "stale": True}]}
    >>> svg = str(lag_chart(p, uid="l1"))
    >>> svg.count('data-testid="lag-bar"'), svg.count('data-stale="true"'), 'usual-lag' in svg
    (2, 1, True)
    """
    days = [d for d in payload.get("days") or [] if d.get("lag_days") is not None]
    column = str(payload.get("column") or "as_of")
    usual = payload.get("usual_lag_days")
    e = escape
    title = f"How many days {column} is behind each interval"
    if not days:
        return Markup(
            f'<svg class="chart" viewBox="0 0 {W} 60" width="100%" role="img" '
            f'aria-labelledby="{e(uid)}-t"><title id="{e(uid)}-t">{e(title)}: no intervals'
            "</title></svg>"
        )
    top = max([float(d["lag_days"]) for d in days] + [float(usual or 0), 1.0])
    ticks = nice_ticks(0.0, top)
    y_hi = ticks[-1] or 1.0
    pw, ph = W - ML - MR, H - MT - MB
    step = pw / len(days)

    def y(v: float) -> float:
        return MT + ph - v / y_hi * ph

    stale = [d["interval"] for d in days if d.get("stale")]
    desc = (f"{len(days)} intervals from {days[0]['interval']} to {days[-1]['interval']}; usually "
            f"{usual} days behind" + (f"; stale: {', '.join(stale)}" if stale else "") + ".")  # fmt: skip
    out = [
        f'<svg class="chart" viewBox="0 0 {W} {H}" width="100%" role="img" data-testid="lag-chart" '
        f'aria-labelledby="{e(uid)}-t {e(uid)}-d" font-size="14">',
        f'<title id="{e(uid)}-t">{e(title)}</title><desc id="{e(uid)}-d">{e(desc)}</desc>',
        '<g class="axis y-axis">',
    ]
    for t in ticks:
        yy = _f(y(t))
        out.append(
            f'<line x1="{ML}" x2="{W - MR}" y1="{yy}" y2="{yy}" class="grid" stroke="#e3e7eb"/>'
            f'<text x="{ML - 6}" y="{yy}" dy="0.35em" text-anchor="end" fill="#5a6470">'
            f"{e(tick_label(t, ticks))} d</text>"
        )
    out.append("</g>")
    for i, d in enumerate(days):
        v = float(d["lag_days"])
        bad = bool(d.get("stale"))
        out.append(
            f'<g data-testid="lag-bar" data-interval="{e(d["interval"])}" '
            f'data-stale="{"true" if bad else "false"}"><title>{e(d["interval"])}: {e(num(v))} '
            f'days behind{" (stale)" if bad else ""}</title><rect x="{_f(ML + i * step + 1)}" '
            f'y="{_f(y(v))}" width="{_f(max(step - 2, 1.0))}" height="{_f(y(0) - y(v))}" '
            f'fill="{"#b3261e" if bad else "#6d8fb3"}"/></g>'
        )
    if usual is not None:
        yy = _f(y(float(usual)))
        out.append(
            f'<g data-testid="usual-lag"><title>usually {e(num(usual))} days behind</title>'
            f'<line x1="{ML}" x2="{W - MR}" y1="{yy}" y2="{yy}" stroke="#1b1f24" '
            'stroke-width="1.5" stroke-dasharray="5 3"/>'
            f'<text x="{W - MR}" y="{yy}" dy="-0.5em" text-anchor="end" fill="#1b1f24">'
            f"usual: {e(num(usual))} d</text></g>"
        )
    base = MT + ph
    out.append(f'<g class="axis x-axis"><line x1="{ML}" x2="{W - MR}" y1="{base}" y2="{base}" '
               'stroke="#8a949e"/>')  # fmt: skip
    picked = _date_ticks([date.fromisoformat(d["interval"]) for d in days])
    at = {d["interval"]: i for i, d in enumerate(days)}
    for dd in picked:
        xx = _f(ML + (at[dd.isoformat()] + 0.5) * step)
        out.append(f'<text x="{xx}" y="{base + 20}" text-anchor="middle" fill="#5a6470">'
                   f"{e(day_label(dd))}</text>")  # fmt: skip
    out.append("</g></svg>")
    return Markup("".join(out))


def _years(days: list[date]) -> str:
    a, b = days[0].year, days[-1].year
    return str(a) if a == b else f"{a}-{b}"


def _date_ticks(days: list[date], n: int = 5) -> list[date]:
    """About ``n`` dates spread over the drawn points, the last one always included."""
    if len(days) <= n:
        return days
    step = (len(days) - 1) / (n - 1)
    picked = [days[round(i * step)] for i in range(n)]
    return list(dict.fromkeys(picked))


def _chart_words(chart: dict[str, Any], pts: list[dict[str, Any]]) -> str:
    """The chart in words, for a screen reader."""
    vals = [float(p["value"]) for p in pts]
    marks = [iv for iv in chart.get("intervals") or [] if any(p["interval"] == iv for p in pts)]
    by = {p["interval"]: p for p in pts}
    words = [
        f"{len(pts)} points from {pts[0]['interval']} to {pts[-1]['interval']}, between "
        f"{num(min(vals))} and {num(max(vals))}."
    ]
    banded = [p for p in pts if p.get("lower") is not None]
    if banded:
        last = banded[-1]
        words.append(
            f"Baseline band on {last['interval']}: {num(last['lower'])} to {num(last['upper'])}."
        )
    else:
        words.append("No baseline band yet (too little history).")
    if marks:
        words.append(
            "Anomalous: "
            + ", ".join(
                f"{iv} ({num(by[iv]['value'])}"
                + (
                    f", band {num(by[iv]['lower'])} to {num(by[iv]['upper'])}"
                    if by[iv].get("lower") is not None
                    else ""
                )  # fmt: skip
                + ")"
                for iv in marks
            )
            + "."
        )
    return " ".join(words)


# -- the lineage ----------------------------------------------------------------------------------
BOX_W, BOX_H = 164, 50
COL, ROW = 200, 70
PAD = 10
LABEL_CHARS = 19
#: The drawing's size on the page per viewBox unit: it keeps its text readable and scrolls
#: sideways in a narrow window rather than shrinking with it.
SCALE = 0.75


def node_href(node_id: str) -> str:
    """The graph page of a node.

    >>> node_href("pricing:fx.daily_rates"), node_href("a b/c")
    ('/graph/node/pricing:fx.daily_rates', '/graph/node/a%20b/c')
    """
    return "/graph/node/" + quote(node_id, safe=":/")


def short(text: str, n: int = LABEL_CHARS) -> str:
    """A label cut to ``n`` characters.

    >>> short("marts.fct_bookings_usd_by_channel_and_day", 12)
    'marts.fct_b…'
    """
    return text if len(text) <= n else text[: n - 1] + "…"


def lineage(
    drawing: dict[str, Any], *, uid: str = "lineage", title: str = "Lineage of the incident"
) -> Markup:
    """The lineage drawing: one box per node at its ``column`` and ``row`` (each a link to its
    graph page, ``data-testid="lineage-node"``, ``data-node``, ``data-origin``), an arrow per
    edge (the column path's in bold), the origin highlighted.

    >>> d = {"origin": "p:b", "sources": ["i:a"], "dashboards": ["d:c"], "nodes": [
    ...     {"id": "i:a", "label": "a", "project": "i", "kind": "ingestion", "column": 0, "row": 0},
    ...     {"id": "p:b", "label": "b", "project": "p", "kind": "model", "column": 1, "row": 0,
    ...      "origin": True, "on_path": True},
    ...     {"id": "d:c", "label": "C <dash>", "project": "d", "kind": "dashboard", "column": 2,
    ...      "row": 0, "dashboard": True}],
    ...     "edges": [{"from": "i:a", "to": "p:b", "on_path": True}, {"from": "p:b", "to": "d:c"}]}
    >>> svg = str(lineage(d))
    >>> svg.count('data-testid="lineage-node"'), svg.count('data-origin="true"')
    (3, 1)
    >>> 'href="/graph/node/p:b"' in svg, "C &lt;dash&gt;" in svg, "<dash>" in svg
    (True, True, False)
    """
    nodes = drawing.get("nodes") or []
    e = escape
    if not nodes:
        return Markup("")
    cols = max(n["column"] for n in nodes) + 1
    rows = max(n["row"] for n in nodes) + 1
    width = PAD * 2 + (cols - 1) * COL + BOX_W
    lane_room = 16
    height = PAD * 2 + (rows - 1) * ROW + BOX_H + lane_room
    pos = {n["id"]: (PAD + n["column"] * COL, PAD + n["row"] * ROW) for n in nodes}
    where = {(n["column"], n["row"]) for n in nodes}
    by_id = {n["id"]: n for n in nodes}
    out = [
        f'<svg data-testid="lineage-path" class="lineage" viewBox="0 0 {width} {height}" '
        f'width="{round(width * SCALE)}" height="{round(height * SCALE)}" '
        f'aria-labelledby="{e(uid)}-t {e(uid)}-d" font-size="14">',
        f'<title id="{e(uid)}-t">{e(title)}</title>',
        f'<desc id="{e(uid)}-d">{e(_lineage_words(drawing))}</desc>',
        f'<defs><marker id="{e(uid)}-arrow" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#8a949e"/></marker>'
        f'<marker id="{e(uid)}-arrow-path" viewBox="0 0 10 10" refX="9" refY="5" '
        'markerWidth="7" markerHeight="7" orient="auto-start-reverse">'
        '<path d="M0,0 L10,5 L0,10 z" fill="#b3261e"/></marker></defs>',
    ]
    for ed in drawing.get("edges") or []:
        a, b = by_id.get(ed["from"]), by_id.get(ed["to"])
        if a is None or b is None:
            continue
        (ax, ay), (bx, by_) = pos[a["id"]], pos[b["id"]]
        x1, y1 = ax + BOX_W, ay + BOX_H / 2
        x2, y2 = bx, by_ + BOX_H / 2
        lo_r, hi_r = sorted((a["row"], b["row"]))
        between = range(a["column"] + 1, b["column"])
        blocked = [r for c in between for r in range(rows) if (c, r) in where and r >= lo_r]
        if b["column"] > a["column"] + 1 and any(r <= hi_r for r in blocked):
            lane = PAD + (max(blocked) + 1) * ROW - (ROW - BOX_H) / 2
            lane = min(lane, height - 4)
            cx1, cx2 = x1 + (COL - BOX_W) / 2, x2 - (COL - BOX_W) / 2
            d = (
                f"M{_f(x1)},{_f(y1)} C{_f(cx1)},{_f(y1)} {_f(cx1)},{_f(lane)} {_f(cx1 + 12)},"
                f"{_f(lane)} L{_f(cx2 - 12)},{_f(lane)} C{_f(cx2)},{_f(lane)} {_f(cx2)},{_f(y2)} "
                f"{_f(x2)},{_f(y2)}"
            )
        else:
            mid = (x1 + x2) / 2
            d = f"M{_f(x1)},{_f(y1)} C{_f(mid)},{_f(y1)} {_f(mid)},{_f(y2)} {_f(x2)},{_f(y2)}"
        on = bool(ed.get("on_path"))
        via = ed.get("via") or []
        dash = ' stroke-dasharray="5 3"' if via else ""
        tip = f"{ed['from']} → {ed['to']}" + (f" (through {', '.join(via)})" if via else "")
        out.append(
            f'<path d="{d}" class="edge{" on-path" if on else ""}" fill="none" '
            f'stroke="{"#b3261e" if on else "#8a949e"}" stroke-width="{"2.5" if on else "1.3"}"'
            f"{dash} "
            f'marker-end="url(#{e(uid)}-arrow{"-path" if on else ""})"><title>{e(tip)}</title></path>'
        )
    for n in nodes:
        x0, y0 = pos[n["id"]]
        origin = bool(n.get("origin"))
        kinds = ["node"]
        if origin:
            kinds.append("origin")
        if n.get("on_path"):
            kinds.append("on-path")
        if n.get("dashboard"):
            kinds.append("dashboard")
        if n.get("source"):
            kinds.append("source")
        fill = "#fde7e5" if origin else "#eef3f8" if n.get("dashboard") else "#fff"
        stroke = "#b3261e" if origin else "#0b5cad" if n.get("on_path") else "#8a949e"
        label = str(n.get("label") or n["id"])
        schema = ""
        if not n.get("dashboard") and "." in label:  # the schema goes under the name
            schema, label = label.rsplit(".", 1)
        what = "origin" if origin else n.get("kind")
        sub = " · ".join(str(p) for p in (n.get("project"), schema, what) if p)
        tool = f" ({n['tool']})" if n.get("tool") else ""
        out.append(
            f'<a href="{e(node_href(n["id"]))}" data-testid="lineage-node" '
            f'data-node="{e(n["id"])}" data-origin="{"true" if origin else "false"}" '
            f'class="{" ".join(kinds)}">'
            f"<title>{e(n['id'])}{' (the origin)' if origin else ''}: {e(sub + tool)}</title>"
            f'<rect x="{x0}" y="{y0}" width="{BOX_W}" height="{BOX_H}" '
            f'rx="{14 if n.get("dashboard") else 5}" fill="{fill}" stroke="{stroke}" '
            f'stroke-width="{3 if origin else 1.5}"/>'
            f'<text x="{x0 + 9}" y="{y0 + 20}" fill="#1b1f24" font-weight="600" font-size="13">'
            f"{e(short(label))}</text>"
            f'<text x="{x0 + 9}" y="{y0 + 39}" fill="#5a6470" font-size="12">'
            f"{e(short(sub, LABEL_CHARS + 6))}</text></a>"
        )
    out.append("</svg>")
    return Markup("".join(out))


def _lineage_words(drawing: dict[str, Any]) -> str:
    by_id = {n["id"]: n for n in drawing.get("nodes") or []}
    if drawing.get("origin") is None:  # the whole graph
        edges = len(drawing.get("edges") or [])
        return (
            f"{len(by_id)} nodes and {edges} edges, upstream on the left; "
            f"{len(drawing.get('sources') or [])} read no other node, "
            f"{len(drawing.get('dashboards') or [])} are dashboards."
        )
    dash = [str(by_id[d].get("label") or d) for d in drawing.get("dashboards") or [] if d in by_id]
    src = drawing.get("sources") or []
    words = [
        f"From {', '.join(src) if src else 'the origin'}"
        + f" through {drawing.get('origin')} (the origin)"
        + (
            f" to {len(dash)} dashboard{'s' if len(dash) != 1 else ''}: {', '.join(dash)}"
            if dash
            else ""
        )  # fmt: skip
        + f"; {len(by_id)} nodes in all."
    ]
    return " ".join(words)
