"""Incidents written where finance looks: annotations on the BI tool's charts
(``[[bi]] annotate = true``).

Derived, like the notifications (:mod:`splice.notify`): :func:`sync` compares what each BI tool
should show with what it shows, and writes the difference.

- an incident that is open or repaired, whose blast radius (as the graph has it now) reaches
  charts of the tool, has one annotation on those charts: its days, its title, and a link to its
  page; "being repaired" while open, "repaired and verified" once an applied repair of it passed
  its verification (:func:`splice.repair.store.incident_verified`);
- an incident that is resolved (closed), or no longer reaches any chart, has none.

Every write is an entry of the audit log (``bi-annotate``, ``bi-annotation-end``, by Splice
itself), made after the tool accepted it. A tool that does not answer or refuses is one line in
the report and is tried again by the next call; nothing here fails the command that called it.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from splice.workspace.core import Workspace

LIVE = ("open", "repaired")


def _wanted(ws: Workspace, bi: str) -> dict[str, dict[str, Any]]:
    """incident id -> the annotation tool ``bi`` should show for it."""
    from splice.repair.store import incident_verified
    from splice.watch.blast import refresh_reach
    from splice.watch.incidents import list_incidents

    graph = ws.graph()
    out: dict[str, dict[str, Any]] = {}
    base = ws.config.serve.base_url
    for inc in list_incidents(ws.state.conn, ws.target, status=list(LIVE)):
        if not inc.diagnosis or not inc.first_interval:
            continue
        refresh_reach(ws, inc.diagnosis, inc.origin_node)
        charts = sorted(
            int(str(graph.nodes[c["node"]].meta["bi_id"]))
            for c in (inc.diagnosis.get("blast_radius") or {}).get("charts") or []
            if c["node"] in graph.nodes and graph.nodes[c["node"]].meta.get("bi") == bi
        )
        if not charts:
            continue
        verified = incident_verified(ws.state, inc.incident_id)
        days = f"{inc.first_interval}..{inc.last_interval}"
        state = (f"repaired and verified ({verified[1]})" if verified
                 else "being repaired" if inc.status == "open" else "repaired")  # fmt: skip
        cause = str(inc.diagnosis.get("cause") or "").strip()
        link = f"{base}/incidents/{inc.incident_id}"
        out[inc.incident_id] = {
            "key": inc.incident_id, "charts": charts,
            "title": f"{inc.incident_id} {state}: {inc.title}",
            "description": f"{days}: {state}. {cause}".strip(),
            "start": date.fromisoformat(str(inc.first_interval)[:10]),
            "end": date.fromisoformat(str(inc.last_interval or inc.first_interval)[:10]),
            "link": link,
        }  # fmt: skip
    return out


def sync(ws: Workspace) -> list[str]:
    """Bring every ``[[bi]] annotate = true`` tool's annotations in line (see the module
    doc); the problems met, one line each (none: every tool shows what it should)."""
    from splice.approvals.auditlog import record
    from splice.bi.annotate import annotate, annotations, end
    from splice.bi.snapshot import client
    from splice.errors import SpliceError
    from splice.support.principals import SYSTEM

    problems: list[str] = []
    for cfg in ws.config.bi:
        if not cfg.annotate:
            continue
        try:
            want = _wanted(ws, cfg.name)
            api = client(cfg, ws.root)
            have = {str(a["key"]): a for a in annotations(api)}
            for key, w in sorted(want.items()):
                shown = have.get(key)
                if shown is not None and _same(shown, w):
                    continue
                done = annotate(api, key=key, charts=w["charts"], title=w["title"],
                                description=w["description"], start=w["start"], end=w["end"],
                                link=w["link"])  # fmt: skip
                record(ws.state, kind="bi-annotate", principal=SYSTEM, proposal_id=None,
                       payload={"bi": cfg.name, "url": cfg.url, "incident": key,
                                "title": w["title"], "charts": w["charts"],
                                "start": w["start"].isoformat(), "end": w["end"].isoformat(),
                                "annotation": done.get("annotation")})  # fmt: skip
            for key in sorted(set(have) - set(want)):
                done = end(api, key=key)
                record(ws.state, kind="bi-annotation-end", principal=SYSTEM, proposal_id=None,
                       payload={"bi": cfg.name, "url": cfg.url, "incident": key,
                                "done": done})  # fmt: skip
        except SpliceError as e:
            problems.append(f"bi {cfg.name} annotations: {e.message}")
    return problems


def _same(shown: dict[str, Any], want: dict[str, Any]) -> bool:
    """Whether the annotation shown says what is wanted (title, days, charts). Its link is not
    compared: a served Splice and a command may know the page's address differently (``splice
    serve --port``), and the annotation would flap between them."""
    return (
        str(shown.get("short_descr") or "") == want["title"][:500]
        and str(shown.get("start") or "")[:10] == want["start"].isoformat()
        and str(shown.get("end") or "")[:10] == want["end"].isoformat()
        and sorted(shown.get("charts") or want["charts"]) == want["charts"]
    )
