"""The faults the runs themselves say (for :func:`splice.watch.cause.classify`):

- ``failed_ingestion``: the ingestion job feeding the origin failed for the incident's days, and
  no later run of it loaded them: the job, its runs and each run's own error (a vendor's HTTP
  503, a dlt load error, an orchestrator run that failed), read from the run journal and the
  orchestrator (:func:`splice.watch.cause_evidence.ingestion_runs`);
- ``failed_audit``: an audit or test of the origin (or downstream of it) failed in the runs:
  which, of what, in how many runs since which (:func:`splice.watch.cause_evidence.failed_checks`).
"""

from __future__ import annotations

from typing import Any

from splice.watch.cause_words import ROWS_DETECTORS, days_words, iso_day

#: How much of a run's own error is quoted.
ERROR_CHARS = 240


def error_words(message: str | None) -> str:
    """A run's error as quoted in a cause: its first line, without the fix, shortened.

    >>> error_words("exit 2: the vendor answered 503 for 2026-09-28 Fix: check it\\nmore")
    'exit 2: the vendor answered 503 for 2026-09-28'
    """
    text = (message or "").strip().splitlines()[0] if (message or "").strip() else ""
    text = text.split(" Fix: ")[0].strip()
    return text if len(text) <= ERROR_CHARS else text[: ERROR_CHARS - 3].rstrip() + "..."


def _run_words(r: dict[str, Any]) -> str:
    days = r["first"] if r["first"] == r["last"] else f"{r['first']}..{r['last']}"
    where = f"{r['system']} run" if r.get("system") else "run"
    return (f"{where} {r['run_id']} for {days} failed at {str(r.get('at') or '?')[:19]}"
            + (f": {error_words(r.get('error'))}" if r.get("error") else ""))  # fmt: skip


def failed_ingestion(
    source: dict[str, Any] | None, anomalies: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The ingestion job failed for flagged intervals and no later run loaded them.

    >>> from datetime import date
    >>> src = {"relation": "wh.raw.fx", "runs": {"job": "fx_ingest", "failed_days":
    ...        ["2026-09-28"], "runs": [{"run_id": "r1", "status": "failed", "first":
    ...        "2026-09-28", "last": "2026-09-28", "at": "2026-09-28T06:00:00",
    ...        "error": "exit 2: the vendor answered 503"}]}}
    >>> a = {"detector": "missing", "metric": "p:fx/row_count", "interval": date(2026, 9, 28)}
    >>> f = failed_ingestion(src, [a])
    >>> f["class"], f["intervals"]
    ('failed_ingestion', ['2026-09-28'])
    >>> print(f["words"])
    failed ingestion: fx_ingest failed for 2026-09-28 (Mon) and no later run loaded it (run r1 for 2026-09-28 failed at 2026-09-28T06:00:00: exit 2: the vendor answered 503); p:fx/row_count has no rows on 2026-09-28 (Mon)
    """
    runs = (source or {}).get("runs") or {}
    flagged = {iso_day(a["interval"]) for a in anomalies}
    days = sorted(d for d in runs.get("failed_days") or [] if d in flagged)
    if not days:
        return None
    job = runs.get("job") or "the ingestion job"
    failed = [r for r in runs.get("runs") or [] if r.get("status") != "success"
              and r["first"] <= days[-1] and r["last"] >= days[0]]  # fmt: skip
    shown = "; ".join(_run_words(r) for r in failed[:3])
    if len(failed) > 3:
        shown += f"; {len(failed) - 3} more failed runs"
    lost = [
        a for a in anomalies if a["detector"] in ROWS_DETECTORS and iso_day(a["interval"]) in days
    ]
    rows = ""
    if lost:
        metric = lost[0]["metric"]
        rows = f"; {metric} has no rows on {days_words([iso_day(a['interval']) for a in lost])}"
    one = len(days) == 1
    return {
        "class": "failed_ingestion",
        "n": len(days),
        "words": (
            f"failed ingestion: {job} failed for {days_words(days)} and no later run loaded "
            f"{'it' if one else 'them'}" + (f" ({shown})" if shown else "") + rows
        ),
        "evidence": {
            "job": job,
            "node": runs.get("node"),
            "relation": (source or {}).get("relation"),
            "failed_days": days,
            "runs": failed,
        },
        "intervals": days,
    }


def empty_loads(source: dict[str, Any] | None, days: list[str]) -> str | None:
    """Words for intervals that lost their rows though the job's runs for them succeeded (a
    source that answered with nothing): the runs and what they said.

    >>> src = {"runs": {"job": "fx_ingest", "loaded_days": ["2026-09-28"], "covering": {
    ...     "2026-09-28": {"run_id": "r1", "at": "2026-09-28T06:00:00",
    ...                    "said": "loaded 0 rates"}}}}
    >>> empty_loads(src, ["2026-09-28"])
    'fx_ingest ran and succeeded for 2026-09-28 (Mon) but loaded no rows for it (run r1 at 2026-09-28T06:00:00: loaded 0 rates)'
    """
    runs = (source or {}).get("runs") or {}
    ok = sorted(set(runs.get("loaded_days") or []) & set(days))
    if not ok:
        return None
    latest = runs.get("covering") or {}
    shown = []
    for r in {latest[d]["run_id"]: latest[d] for d in ok if d in latest}.values():
        shown.append(f"run {r['run_id']} at {str(r.get('at') or '?')[:19]}"
                     + (f": {error_words(r.get('said'))}" if r.get("said") else ""))  # fmt: skip
    return (f"{runs.get('job') or 'the ingestion job'} ran and succeeded for {days_words(ok)} but "
            f"loaded no rows for {'it' if len(ok) == 1 else 'them'}"
            + (f" ({'; '.join(shown[:3])})" if shown else ""))  # fmt: skip


def failed_audit(checks: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """The failed checks of the runs as a finding (the latest failing streak of each)."""
    if not checks:
        return None
    parts = []
    for c in checks[:3]:
        # the check's kind as the graph says (gather), else as its id says
        what = c.get("kind") if c.get("kind") in ("test", "audit") else (
            "audit" if ":audit:" in c["check"] else "test")  # fmt: skip
        name = c["check"].split(":")[-1]
        for o in c["of"]:
            name = name.removeprefix(o.split(":", 1)[-1] + ".")
        parts.append(
            f"{what} {name} of {', '.join(c['of']) or '?'} failed in {c['runs']} run"
            f"{'s' if c['runs'] > 1 else ''} since {c['first_run']} ({str(c['first_at'])[:19]})"
            + (f": {c['message']}" if c.get("message") else "")
            + (" (blocking: the run stopped downstream)" if c.get("blocking") else "")
            + (
                f"; the runs skipped {', '.join(c['skipped'])}, whose tables stay as they were"
                if c.get("skipped")
                else ""
            )
        )
    return {
        "class": "failed_audit",
        "n": len(checks),
        "words": "failed check: " + "; ".join(parts),
        "evidence": {"checks": checks},
        "intervals": [],
    }
