"""A review as Markdown for a pull-request comment, or as plain text for a terminal.

The Markdown leads with a summary (what changed, what it reaches, what it does to the numbers)
and puts the details in collapsible ``<details>`` sections.  It stays under ``[review]
comment_limit`` characters (GitHub refuses a comment over 65,536): when the details would not
fit, examples go first, then the longest lists are cut, and the comment says so.
"""

from __future__ import annotations

import html
import re
from typing import Any

MARKER = "<!-- splice-review -->"  # lets a workflow find and update its own comment

#: Markdown's punctuation that can start or end formatting, a link, a table cell or a heading.
_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+\-.!|~:])")


def md_text(value: Any) -> str:
    """Text someone else wrote (a commit subject, a ref name) as inert Markdown: HTML escaped
    (no tag, no comment, no entity of theirs), Markdown's punctuation backslash-escaped (no
    emphasis, code, link, image or table cell), on one line.

    >>> print(md_text("Fix | *now* <script>alert(1)</script> `x` [x](https://e.com) R&D"))
    Fix \\| \\*now\\* &lt;script&gt;alert\\(1\\)&lt;/script&gt; \\`x\\` \\[x\\]\\(https\\://e\\.com\\) R&amp;D
    """
    text = " ".join(str(value).split())  # one line: a newline would end a table row
    text = html.escape(text, quote=False)
    return _MD_SPECIAL.sub(r"\\\1", text)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:,.4f}".rstrip("0").rstrip(".") if abs(v) < 1e6 else f"{v:,.0f}"
    if isinstance(v, int):
        return f"{v:,}"
    return "" if v is None else str(v)


def _pct(before: Any, after: Any) -> str:
    if not isinstance(before, (int, float)) or not isinstance(after, (int, float)) or not before:
        return ""
    return f"{(after - before) / abs(before) * 100:+.2f}%"


def _change_words(c: dict[str, Any]) -> str:
    if c["tool"] == "sqlmesh":
        return f"SQLMesh: {c['category'] or c['change']}"
    if c["change"] == "added":
        return "dbt: new"
    if c["change"] == "removed":
        return "removed"
    return "dbt: state:modified." + ", .".join(c["reasons"])


def _columns_words(cols: dict[str, Any] | None) -> str:
    if not cols:
        return ""
    parts = []
    if cols.get("not_compared"):
        parts.append(f"columns not compared ({cols['not_compared']})")
    if cols.get("rows_may_differ"):
        parts.append("which rows it returns changed")
    if cols["changed"] and not cols.get("rows_may_differ"):
        parts.append("changed: " + ", ".join(f"`{c}`" for c in cols["changed"]))
    if cols["added"]:
        parts.append("added: " + ", ".join(f"`{c}`" for c in cols["added"]))
    if cols["removed"]:
        parts.append("removed: " + ", ".join(f"`{c}`" for c in cols["removed"]))
    return "; ".join(parts)


def summary_lines(r: dict[str, Any]) -> list[str]:
    """The summary, one fact a line (shared by the Markdown and the text)."""
    lines: list[str] = []
    direct = [c for c in r["changes"] if c["change"] != "indirect"]
    if not direct:
        lines.append("No model changed." + (" " + " ".join(r["notes"]) if r["notes"] else ""))
        return lines
    by_tool: dict[str, int] = {}
    for c in direct:
        by_tool[c["tool"]] = by_tool.get(c["tool"], 0) + 1
    what = ", ".join(f"{n} {t} model{'s' if n != 1 else ''}" for t, n in sorted(by_tool.items()))
    data_changing = [c for c in direct if c["changes_data"]]
    lines.append(
        f"**Changed:** {what}"
        + (
            f" ({len(direct) - len(data_changing)} metadata only: nothing to build)"
            if len(direct) != len(data_changing)
            else ""
        )
    )
    if r["breaking"]:
        lines.append("**Breaking:** " + ", ".join(f"`{n}`" for n in r["breaking"]))
    additive = [
        c["node"]
        for c in data_changing
        if c["columns"]
        and c["columns"]["added"]
        and c["node"] not in r["breaking"]
        and not (
            c["columns"]["changed"]
            or c["columns"]["removed"]
            or c["columns"].get("rows_may_differ")
        )
        and c["change"] != "added"
    ]
    if additive:
        lines.append(
            "**Non-breaking (adds columns only):** " + ", ".join(f"`{n}`" for n in additive)
        )
    imp = r.get("impact") or {}
    if imp.get("columns") or imp.get("metrics") or imp.get("dashboards"):
        projects = {n.split(":", 1)[0] for n in imp["nodes"]}
        lines.append(
            f"**Reaches:** {len(imp['columns'])} column(s) in {len(imp['nodes'])} model(s) of "
            f"{len(projects)} project(s)"
            + (
                "; metrics " + ", ".join(f"`{m['name']}`" for m in imp["metrics"])
                if imp["metrics"]
                else ""
            )
            + (
                "; dashboards "
                + ", ".join(
                    f"**{d['label']}**"
                    + (f" ({len(d['charts'])} chart(s))" if d.get("charts") else "")
                    for d in imp["dashboards"]
                )
                if imp["dashboards"]
                else ""
            )
        )
    elif data_changing:
        lines.append("**Reaches:** no downstream column reads a changed column")
    data = r.get("data")
    if data:
        run = data.get("run") or {}
        models = [m for m in data["models"] if "added" in m]
        missing = [m["node"] for m in data["models"] if "added" not in m]
        differ = [m for m in models if m["differs"]]
        if not models:  # never "0 differ" after comparing nothing
            line = (
                f"**Data: nothing compared:** none of the {len(missing)} model(s) to compare was "
                f"built in `{data['target']}`"
            )
        else:
            line = (
                f"**Data:** {len(models)} model(s) built in `{data['target']}` and compared "
                f"with prod: {len(differ)} differ"
            )
            if differ:
                line += " (" + ", ".join(f"`{m['node']}`" for m in differ[:6])
                line += f" and {len(differ) - 6} more)" if len(differ) > 6 else ")"
            if missing:
                line += f"; **{len(missing)} not built, not compared:** " + ", ".join(
                    f"`{n}`" for n in missing[:6]
                )
        lines.append(line)
        if run.get("status") not in (None, "success"):
            failed = run.get("not_built") or {}
            lines.append(
                f"**The head's build {run['status']}:** "
                + "; ".join(f"`{n}`: {msg}" for n, msg in list(failed.items())[:3])
            )
        for m in data.get("metrics") or []:
            if not m["changed"]:
                lines.append(
                    f"**Metric `{m['name']}`:** unchanged from {m['from']} to {m['through']}"
                )
                continue
            before = sum(x["before"] or 0 for x in m["rows"]) if not m["dimensions"] else None
            after = sum(x["after"] or 0 for x in m["rows"]) if not m["dimensions"] else None
            lines.append(
                f"**Metric `{m['name']}`:** changed on {m['changed_intervals']} of the intervals "
                f"from {m['from']} to {m['through']}"
                + (
                    f" (total {_fmt(before)} → {_fmt(after)}, {_pct(before, after)})"
                    if before
                    else ""
                )
            )
    if r["not_compared"]:
        lines.append(
            f"**Not compared:** {len(r['not_compared'])} more model(s) beyond the limit of "
            "[review] max_models"
        )
    return lines


def _changes_table(r: dict[str, Any]) -> list[str]:
    rows = ["| node | change | columns |", "|---|---|---|"]
    for c in r["changes"]:
        rows.append(f"| `{c['node']}` | {_change_words(c)} | {_columns_words(c['columns'])} |")
    return rows


def _impact_section(r: dict[str, Any], limit: int | None) -> list[str]:
    imp = r.get("impact") or {}
    out = []
    cols = imp.get("columns") or []
    shown = cols if limit is None else cols[:limit]
    for c in shown:
        out.append(f"- `{c['node']}.{c['column']}` ({c['kind']}): " + " → ".join(c["path"]))
    if len(shown) < len(cols):
        out.append(f"- … and {len(cols) - len(shown)} more column(s) (see --json)")
    if imp.get("metrics"):
        out.append("")
        out.append("Metrics:")
        for m in imp["metrics"]:
            out.append(
                f"- `{m['name']}` on `{m['node']}` (owner {m['owner'] or '-'}): "
                + " → ".join(m["path"])
            )
    if imp.get("dashboards"):
        out.append("")
        out.append("Dashboards:")
        charts = {c["node"]: c for c in imp.get("charts") or []}
        for d in imp["dashboards"]:
            label = f"[{d['label']}]({d['url']})" if d.get("url") else d["label"]
            shown = [charts[c] for c in d.get("charts") or [] if c in charts]
            others = [n for n in d["reads"] if n not in {c["node"] for c in shown}]
            if shown and not others:
                out.append(f"- {label} (`{d['node']}`), its charts:")
            else:
                out.append(
                    f"- {label} (`{d['node']}`) reads "
                    + ", ".join(f"`{n}`" for n in others)
                    + (", and its charts:" if shown else "")
                )
            for c in shown:
                name = f"[{c['label']}]({c['url']})" if c.get("url") else c["label"]
                out.append(
                    f"  - {name} (`{c['node']}`): " + ", ".join(f"`{col}`" for col in c["columns"])
                )
    return out


def _data_section(r: dict[str, Any], examples: bool) -> list[str]:
    data = r.get("data") or {}
    out = ["| model | rows prod → head | added | removed | changed | values that differ |",
           "|---|---|---|---|---|---|"]  # fmt: skip
    for m in data.get("models") or []:
        if "added" not in m:
            out.append(f"| `{m['node']}` | {m.get('note', '')} | | | | |")
            continue
        vals = ", ".join(f"`{c}` {_fmt(n)}" for c, n in m["changed_values"].items())
        extra = []
        if m["columns_added"]:
            extra.append("new columns " + ", ".join(f"`{c}`" for c in m["columns_added"]))
        if m["columns_removed"]:
            extra.append("dropped columns " + ", ".join(f"`{c}`" for c in m["columns_removed"]))
        if not m["key"]:
            extra.append("no key: whole rows compared")
        elif m.get("key_from"):
            extra.append(f"key ({', '.join(m['key'])}) from `{m['key_from']}`")
        if m["sampled"]:
            extra.append("sampled " + m["sampled"])
        cell = "; ".join([vals, *extra]) if vals else "; ".join(extra)
        out.append(
            f"| `{m['node']}` | {_fmt(m['rows']['prod'])} → {_fmt(m['rows']['head'])} | "
            f"{_fmt(m['added'])} | {_fmt(m['removed'])} | {_fmt(m['changed'])} | {cell} |"
        )
    if examples:
        for m in data.get("models") or []:
            for col, exs in (m.get("examples") or {}).items():
                if not exs:
                    continue
                out.append("")
                out.append(f"`{m['node']}.{col}`:")
                out.append("")
                out.append("| key | prod | head |")
                out.append("|---|---|---|")
                for e in exs:
                    key = ", ".join(f"{k}={v}" for k, v in e["key"].items())
                    out.append(f"| {key} | {_fmt(e['prod'])} | {_fmt(e['head'])} |")
    return out


def _metrics_section(r: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for m in (r.get("data") or {}).get("metrics") or []:
        out.append(f"`{m['name']}` ({m['value']} of `{m['node']}`), {m['from']} to {m['through']}:")
        out.append("")
        dims = m["dimensions"]
        out.append("| interval" + "".join(f" | {d}" for d in dims) + " | prod | head | change |")
        out.append("|---" * (1 + len(dims)) + "|---|---|---|")
        for row in m["rows"]:
            out.append(
                f"| {row['interval']}"
                + "".join(f" | {row['dimensions'].get(d)}" for d in dims)
                + f" | {_fmt(row['before'])} | {_fmt(row['after'])} | {_pct(row['before'], row['after'])} |"
            )
        if not m["rows"]:
            out.append("| (no interval differs) |" + " |" * (len(dims) + 3))
        out.append("")
    return out


def _details(title: str, body: list[str]) -> list[str]:
    return ["<details>", f"<summary>{title}</summary>", "", *body, "", "</details>", ""]


def markdown(r: dict[str, Any], limit: int = 60_000) -> str:
    """The review as a pull-request comment of at most ``limit`` characters."""
    for examples, cols in ((True, None), (False, None), (False, 50), (False, 10)):
        text = _markdown(r, examples, cols, truncated=(not examples))
        if len(text) <= limit:
            return text
    return (
        text[: limit - 200] + "\n\n… (cut to fit a comment: run `splice review --json` for all)\n"
    )


def _markdown(r: dict[str, Any], examples: bool, cols: int | None, truncated: bool) -> str:
    head = [
        MARKER,
        f"### Splice review: {md_text(r['subject']) if r['subject'] else r['head'][:12]}",
        "",
        f"{md_text(r['base_ref'])} ({r['base'][:12]}) → {r['head'][:12]}",
        "",
        *[f"- {line}" for line in summary_lines(r)],
        "",
    ]
    body: list[str] = []
    if r["changes"]:
        body += _details("What changed, in each tool's terms", _changes_table(r))
    if (r.get("impact") or {}).get("columns") or (r.get("impact") or {}).get("dashboards"):
        body += _details("Impact across tools, column by column", _impact_section(r, cols))
    if r.get("data"):
        body += _details("Data: the head against prod, per model", _data_section(r, examples))
        if r["data"].get("metrics"):
            body += _details("Metrics before and after", _metrics_section(r))
    foot = []
    if truncated:
        foot.append(
            "_Some details were left out to fit a comment: `splice review --json` has them all._"
        )
    env = (r.get("data") or {}).get("cleaned")
    if r.get("data"):
        foot.append(
            f"_Built in target `{r['data']['target']}`"
            + (", then dropped._" if env else ", kept for inspection (--keep)._")
        )
    return "\n".join(head + body + foot) + "\n"


def text(r: dict[str, Any]) -> str:
    """The review for a terminal: the summary, then each section without HTML."""
    import re

    lines = [
        f"Review of {r['head'][:12]} ({r['subject']}) against {r['base_ref']} ({r['base'][:12]})",
        "",
    ]
    lines += [re.sub(r"\*\*", "", s) for s in summary_lines(r)]
    if r["changes"]:
        lines += r["notes"]
    if r["changes"]:
        lines += ["", "What changed:"]
        for c in r["changes"]:
            cols = _columns_words(c["columns"])
            lines.append(f"  {c['node']}: {_change_words(c)}" + (f"; {cols}" if cols else ""))
    imp = r.get("impact") or {}
    if imp.get("columns") or imp.get("dashboards"):
        lines += ["", "Impact:"]
        lines += ["  " + s for s in _impact_section(r, 30) if s]
    data = r.get("data")
    if data:
        lines += ["", f"Data (target {data['target']}):"]
        for m in data["models"]:
            if "added" not in m:
                lines.append(f"  {m['node']}: {m.get('note')}")
                continue
            vals = ", ".join(f"{c} {n:,}" for c, n in m["changed_values"].items())
            lines.append(
                f"  {m['node']}: rows {_fmt(m['rows']['prod'])} -> {_fmt(m['rows']['head'])}, "
                f"+{m['added']:,} -{m['removed']:,} ~{m['changed']:,}"
                + (f" ({vals})" if vals else "")
                + (f"; new columns {', '.join(m['columns_added'])}" if m["columns_added"] else "")
                + (
                    f"; dropped columns {', '.join(m['columns_removed'])}"
                    if m["columns_removed"]
                    else ""
                )
                + ("" if m["key"] else " [no key: whole rows compared]")
                + (f" [key from {m['key_from']}]" if m.get("key_from") else "")
                + (f" [sampled {m['sampled']}]" if m["sampled"] else "")
            )
    plain = re.sub(r"\[([^\]]+)\]\(([^)]+)\)", r"\1 <\2>", "\n".join(lines))  # links
    return plain.replace("`", "") + "\n"
