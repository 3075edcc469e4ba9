"""The new audit that would have caught an incident, as a diff the team applies in SQLMesh.

Every audit of the demo passed on Friday's rates served for Monday: the values were valid,
just not new.  For an incident whose origin is a SQLMesh model, Splice writes the audit its
headline detector implies:

- ``stopped_moving`` on a value column: fail an interval where most series repeat the value of
  the previous interval *as the source published it* (the upstream relation, so a one-day
  interval still sees the day before);
- a ``lag`` spike on a date column: fail rows whose date is further behind the time column
  than it ever was in the baseline.

The result is a new file under ``audits/`` and a change to the model's ``audits (...)`` list,
as one unified diff (``git apply`` / ``patch -p1`` in the project directory).  The SQL is
parsed with sqlglot before it is offered, so a suggestion that does not parse is never shown.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sqlglot


@dataclass
class AuditSuggestion:
    name: str
    project: str
    model_path: str  # relative to the project
    audit_path: str  # relative to the project
    audit_sql: str
    diff: str
    why: str


def _stopped_moving_sql(
    name: str, time_col: str, dims: list[str], value: str, source: str, source_time: str,
    share: float,
) -> str:  # fmt: skip
    on = " AND ".join(f"p.{d} = c.{d}" for d in dims) or "TRUE"
    dim_list = "".join(f"{d}, " for d in dims)
    return f"""AUDIT (
  name {name},
  dialect duckdb
);
/* Written by Splice: fails an interval where more than {share:.0%} of the series repeat the
   value the source published for the interval before (the vendor re-served old data). */
WITH current_values AS (
  SELECT {time_col}, {dim_list}{value} FROM @this_model
), compared AS (
  SELECT
    c.{time_col},
    c.{value},
    (
      SELECT p.{value}
      FROM {source} AS p
      WHERE {on} AND p.{source_time} < c.{time_col}
      ORDER BY p.{source_time} DESC
      LIMIT 1
    ) AS previous_value
  FROM current_values AS c
)
SELECT
  {time_col},
  COUNT(*) AS series,
  SUM(CASE WHEN {value} = previous_value THEN 1 ELSE 0 END) AS repeated
FROM compared
GROUP BY {time_col}
HAVING SUM(CASE WHEN {value} = previous_value THEN 1 ELSE 0 END) > {share} * COUNT(*)
"""


def _lag_sql(name: str, time_col: str, date_col: str, max_lag: int) -> str:
    return f"""AUDIT (
  name {name},
  dialect duckdb
);
/* Written by Splice: fails rows whose {date_col} is more than {max_lag} day(s) behind
   {time_col} (the source re-served old data under a new date). */
SELECT *
FROM @this_model
WHERE DATE_DIFF('day', {date_col}, {time_col}) > {max_lag}
"""


def _add_to_audits(model_sql: str, call: str) -> str | None:
    """The model text with ``call`` appended to its MODEL's ``audits (...)`` list."""
    m = re.search(r"\baudits\s*\(", model_sql, flags=re.IGNORECASE)
    if m is None:
        # no audits yet: add the property before the MODEL block's closing parenthesis
        end = re.search(r"\)\s*;", model_sql)
        if end is None:
            return None
        head = model_sql[: end.start()].rstrip()
        return f"{head},\n  audits (\n    {call}\n  )\n{model_sql[end.start() :]}"
    depth, i = 1, m.end()
    while i < len(model_sql) and depth:
        depth += {"(": 1, ")": -1}.get(model_sql[i], 0)
        i += 1
    close = i - 1  # the audits list's closing parenthesis
    body = model_sql[m.end() : close].rstrip()
    indent = re.search(r"\n([ \t]*)\S", model_sql[m.end() : close])
    pad = indent.group(1) if indent else "    "
    outer = re.search(r"\n([ \t]*)$", model_sql[:close])
    tail = "\n" + (outer.group(1) if outer else "  ")
    return f"{model_sql[: m.end()]}{body},\n{pad}{call}{tail}{model_sql[close:]}"


def suggest_audit(
    project_dir: Path, project: str, model_path: str, diagnosis: dict[str, Any],
    *, time_col: str, dims: list[str],
) -> AuditSuggestion | None:  # fmt: skip
    """The audit for this diagnosis on this SQLMesh model, or None when none is known."""
    head = diagnosis.get("headline") or {}
    origin = diagnosis.get("origin") or {}
    cols = origin.get("columns") or []
    src = diagnosis.get("source") or {}
    path = diagnosis.get("path") or []
    if head.get("detector") == "stopped_moving" and cols and path and path[-1].get("relation"):
        value = cols[0]
        name = f"{value}_moves_each_interval"
        source = path[-1]["relation"]
        sql = _stopped_moving_sql(
            name, time_col, dims, value, source, src.get("time_column") or time_col, 0.5
        )
        why = (f"{origin.get('node')}.{value} stopped moving and every audit passed; this audit "
               f"fails an interval where most series repeat {source}'s previous value")  # fmt: skip
    elif src.get("payload_dates"):
        p = src["payload_dates"][0]
        name = f"{p['column']}_not_behind_{time_col}"
        sql = _lag_sql(name, time_col, p["column"], int(p["usual_lag_days"]))
        why = f"{p['column']} fell behind {time_col}; this audit fails rows that do"
    else:
        return None
    sqlglot.parse_one(sql.split(");", 1)[1], read="duckdb")  # the SELECT must parse
    model_file = project_dir / model_path
    before = model_file.read_text()
    after = _add_to_audits(before, f"{name}()")
    if after is None:
        return None
    audit_path = f"audits/{name}.sql"
    diff = "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            fromfile=f"a/{model_path}", tofile=f"b/{model_path}",
        )
    ) + "".join(
        difflib.unified_diff(
            [], sql.splitlines(keepends=True), fromfile="/dev/null", tofile=f"b/{audit_path}"
        )
    )  # fmt: skip
    return AuditSuggestion(name, project, model_path, audit_path, sql, diff, why)
