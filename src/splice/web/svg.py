"""Charts and the lineage drawing, as SVG made on the server (no script, no external asset).

Every text is escaped; shapes use presentation attributes and CSS classes (the page's
Content-Security-Policy forbids inline ``style``). Each drawing has a ``<title>`` and a
``<desc>`` for screen readers, and a ``viewBox`` so it scales to a phone's width.

>>> pts = [{"interval": "2026-09-2%d" % d, "value": v, "band": [0.9, 1.1], "anomalous": d == 3}
...        for d, v in [(1, 1.0), (2, 1.02), (3, 1.6)]]
>>> svg = metric_chart(pts, title="fx_rate (AUD)")
>>> svg.count('data-testid="anomaly-mark"'), 'data-testid="baseline-band"' in svg
(1, True)
"""

from __future__ import annotations

import math
from typing import Any

from markupsafe import Markup, escape

W, H = 640, 230
ML, MR, MT, MB = 64, 16, 14, 40


def _num(v: float) -> str:
    """A coordinate: short and exact enough.

    >>> _num(12.3456), _num(3.0)
    ('12.35', '3')
    """
    return f"{v:.2f}".rstrip("0").rstrip(".")


def _label(v: float) -> str:
    """An axis value in few characters.

    >>> _label(0.70302), _label(1234567.0), _label(4.0)
    ('0.703', '1.23M', '4')
    """
    a = abs(v)
    if a >= 1e6:
        return f"{v / 1e6:.3g}M"
    if a >= 1e4:
        return f"{v / 1e3:.3g}k"
    return f"{v:.3g}"


def metric_chart(points: list[dict[str, Any]], *, title: str, desc: str = "") -> Markup:
    """A line chart of ``points`` (``interval``, ``value``, ``band`` [lo, hi] or None,
    ``anomalous``): the baseline band shaded, the values as a line, each anomalous interval
    marked with a red column and dot."""
    vals = [p["value"] for p in points if _finite(p.get("value"))]
    lows = [p["band"][0] for p in points if p.get("band") and _finite(p["band"][0])]
    highs = [p["band"][1] for p in points if p.get("band") and _finite(p["band"][1])]
    ys = vals + lows + highs
    if not points or not ys:
        return Markup('<p class="muted">No points to draw.</p>')
    lo, hi = min(ys), max(ys)
    if hi == lo:
        lo, hi = lo - 1, hi + 1
    pad = (hi - lo) * 0.06
    lo, hi = lo - pad, hi + pad
    n = len(points)
    step = (W - ML - MR) / max(n - 1, 1)

    def x(i: int) -> float:
        return ML + i * step

    def y(v: float) -> float:
        return MT + (hi - v) / (hi - lo) * (H - MT - MB)

    parts = [
        f'<svg viewBox="0 0 {W} {H}" width="100%" role="img" class="chart" '
        'preserveAspectRatio="xMidYMid meet">',
        f"<title>{escape(title)}</title>",
        f"<desc>{escape(desc or title)}</desc>",
    ]
    # the baseline band, one polygon per run of points that have one
    run: list[tuple[int, list[float]]] = []
    runs: list[list[tuple[int, list[float]]]] = []
    for i, p in enumerate(points):
        b = p.get("band")
        if b and _finite(b[0]) and _finite(b[1]):
            run.append((i, b))
        elif run:
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    for r in runs:
        upper = " ".join(f"{_num(x(i))},{_num(y(b[1]))}" for i, b in r)
        lower = " ".join(f"{_num(x(i))},{_num(y(b[0]))}" for i, b in reversed(r))
        parts.append(
            f'<polygon class="band" data-testid="baseline-band" points="{upper} {lower}" '
            'fill="#0b5cad" fill-opacity="0.12" stroke="none"/>'
        )
    # the anomalous intervals
    for i, p in enumerate(points):
        if p.get("anomalous"):
            w = max(step, 4)
            parts.append(
                f'<rect data-testid="anomaly-mark" data-interval="{escape(p["interval"])}" '
                f'x="{_num(x(i) - w / 2)}" y="{MT}" width="{_num(w)}" height="{H - MT - MB}" '
                'fill="#b3261e" fill-opacity="0.15"><title>'
                f"{escape(p['interval'])}: {escape(_label(p['value']))} (anomalous)</title></rect>"
            )
    # the values
    segs: list[str] = []
    for i, p in enumerate(points):
        if _finite(p.get("value")):
            segs.append(f"{'L' if segs else 'M'}{_num(x(i))},{_num(y(p['value']))}")
    parts.append(f'<path d="{" ".join(segs)}" fill="none" stroke="#1b1f24" stroke-width="1.6"/>')
    for i, p in enumerate(points):
        if p.get("anomalous") and _finite(p.get("value")):
            parts.append(
                f'<circle cx="{_num(x(i))}" cy="{_num(y(p["value"]))}" r="3.5" fill="#b3261e"/>'
            )
    # axes: values left, dates below
    parts.append(
        f'<line x1="{ML}" y1="{H - MB}" x2="{W - MR}" y2="{H - MB}" stroke="#8a949e"/>'
        f'<line x1="{ML}" y1="{MT}" x2="{ML}" y2="{H - MB}" stroke="#8a949e"/>'
    )
    for v in (lo + pad, (lo + hi) / 2, hi - pad):
        parts.append(
            f'<text x="{ML - 6}" y="{_num(y(v) + 4)}" text-anchor="end" font-size="11" '
            f'fill="#5a6470">{escape(_label(v))}</text>'
        )
    ticks = sorted({0, n // 2, n - 1} | {i for i, p in enumerate(points) if p.get("anomalous")})
    shown: list[float] = []
    for i in ticks:
        if any(abs(x(i) - s) < 70 for s in shown):
            continue
        shown.append(x(i))
        parts.append(
            f'<text x="{_num(x(i))}" y="{H - MB + 16}" text-anchor="middle" font-size="11" '
            f'fill="#5a6470">{escape(points[i]["interval"])}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v)


NW, NH, GX, GY = 168, 44, 40, 14


def lineage_path(lineage: dict[str, Any], *, title: str) -> Markup:
    """The incident's nodes left to right by layer (source first, dashboards last), each a link
    to its graph page, the origin highlighted, with the edges between them.

    >>> svg = lineage_path({"nodes": [
    ...     {"id": "ingestion:a", "label": "a", "project": "ingestion", "kind": "ingestion",
    ...      "layer": 0, "origin": False, "source": True},
    ...     {"id": "p:b", "label": "b", "project": "p", "kind": "model", "layer": 1,
    ...      "origin": True, "source": False}], "edges": [["ingestion:a", "p:b"]]}, title="t")
    >>> svg.count('data-testid="lineage-node"'), svg.count('data-origin="true"')
    (2, 1)
    """
    nodes = lineage.get("nodes") or []
    if not nodes:
        return Markup('<p class="muted">No lineage to draw.</p>')
    layers: dict[int, list[dict[str, Any]]] = {}
    for n in nodes:
        layers.setdefault(int(n["layer"]), []).append(n)
    cols = sorted(layers)
    rows = max(len(v) for v in layers.values())
    width = len(cols) * (NW + GX) - GX + 8
    height = rows * (NH + GY) - GY + 8
    pos: dict[str, tuple[float, float]] = {}
    for ci, c in enumerate(cols):
        col = layers[c]
        off = (rows - len(col)) * (NH + GY) / 2
        for ri, n in enumerate(col):
            pos[n["id"]] = (4 + ci * (NW + GX), 4 + off + ri * (NH + GY))
    parts = [
        f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" class="lineage" '
        'data-testid="lineage-path" preserveAspectRatio="xMinYMid meet">',
        f"<title>{escape(title)}</title>",
        "<desc>"
        + escape(" ; ".join(f"{u} -> {v}" for u, v in lineage.get("edges") or []))
        + "</desc>",
        '<defs><marker id="arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="7" '
        'markerHeight="7" orient="auto"><path d="M0,0 L8,4 L0,8 z" fill="#8a949e"/></marker>'
        "</defs>",
    ]
    for u, v in lineage.get("edges") or []:
        if u not in pos or v not in pos:
            continue
        x1, y1 = pos[u][0] + NW, pos[u][1] + NH / 2
        x2, y2 = pos[v][0], pos[v][1] + NH / 2
        mx = (x1 + x2) / 2
        parts.append(
            f'<path d="M{_num(x1)},{_num(y1)} C{_num(mx)},{_num(y1)} {_num(mx)},{_num(y2)} '
            f'{_num(x2)},{_num(y2)}" fill="none" stroke="#8a949e" stroke-width="1.4" '
            'marker-end="url(#arrow)"/>'
        )
    for n in nodes:
        x0, y0 = pos[n["id"]]
        origin = bool(n.get("origin"))
        fill = "#fde7e5" if origin else "#eef4fb" if n.get("kind") == "dashboard" else "#ffffff"
        stroke = "#b3261e" if origin else "#0b5cad" if n.get("source") else "#8a949e"
        label = str(n.get("label") or n["id"])
        if len(label) > 24:
            label = label[:23] + "…"
        sub = "origin" if origin else f"{n.get('project')} · {n.get('kind')}"
        parts.append(
            f'<a href="/graph/node/{escape(n["id"])}" data-testid="lineage-node" '
            f'data-node="{escape(n["id"])}" data-origin="{"true" if origin else "false"}">'
            f"<title>{escape(n['id'])}{' (origin)' if origin else ''}</title>"
            f'<rect x="{_num(x0)}" y="{_num(y0)}" width="{NW}" height="{NH}" rx="6" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{3 if origin else 1.2}"/>'
            f'<text x="{_num(x0 + 8)}" y="{_num(y0 + 18)}" font-size="12" fill="#1b1f24">'
            f"{escape(label)}</text>"
            f'<text x="{_num(x0 + 8)}" y="{_num(y0 + 34)}" font-size="10.5" '
            f'fill="{"#b3261e" if origin else "#5a6470"}">{escape(sub)}</text></a>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
