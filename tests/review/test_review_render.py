"""The pull-request comment stays under its size limit, summary first, and says what it left out."""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from tests.review.conftest import git
from tests.review.conftest import review_cli as cli

from splice.review.render import MARKER, markdown, md_text, text


def _big_review(n: int) -> dict[str, Any]:
    cols = [
        {
            "node": f"finance:model_{i:04d}",
            "column": f"col_{i}",
            "kind": "direct",
            "path": ["pricing:fx.daily_rates.rate_to_usd", f"finance:model_{i:04d}.col_{i}"],
        }
        for i in range(n)
    ]
    models = [
        {
            "node": f"finance:model_{i:04d}",
            "prod_relation": f"w.finance.model_{i:04d}",
            "head_relation": f"w.finance_review.model_{i:04d}",
            "key": ["id"],
            "rows": {"prod": 10, "head": 10},
            "added": 0,
            "removed": 0,
            "changed": 10,
            "changed_values": {f"col_{i}": 10},
            "examples": {
                f"col_{i}": [{"key": {"id": k}, "prod": 1.0, "head": 2.0} for k in range(3)]
            },
            "columns_added": [],
            "columns_removed": [],
            "differs": True,
            "sampled": None,
            "note": None,
        }
        for i in range(n)
    ]
    return {
        "base": "a" * 40,
        "head": "b" * 40,
        "base_ref": "main",
        "subject": "Change the rates",
        "files": ["pricing/models/fx/daily_rates.sql"],
        "changes": [
            {
                "node": "pricing:fx.daily_rates",
                "project": "pricing",
                "tool": "sqlmesh",
                "change": "modified",
                "category": "breaking",
                "reasons": ["directly modified"],
                "path": "models/fx/daily_rates.sql",
                "changes_data": True,
                "columns": {
                    "changed": ["rate_to_usd"],
                    "added": [],
                    "removed": [],
                    "rows_may_differ": False,
                },
            }
        ],
        "breaking": ["pricing:fx.daily_rates"],
        "impact": {
            "nodes": [c["node"] for c in cols],
            "columns": cols,
            "metrics": [],
            "dashboards": [],
        },
        "build": [m["node"] for m in models],
        "not_compared": [],
        "data": {
            "target": "review",
            "models": models,
            "metrics": [],
            "run": {"status": "success"},
            "cleaned": {"sqlmesh": [], "dbt": []},
        },  # fmt: skip
        "metric_changes": [],
        "timings": {},
        "notes": [],
    }


def test_a_small_review_keeps_every_detail() -> None:
    md = markdown(_big_review(3), limit=60_000)
    assert md.startswith(MARKER) and "| id=0 | 1 | 2 |" in md
    assert "left out to fit" not in md


def test_a_large_review_is_cut_to_the_limit_and_says_so() -> None:
    r = _big_review(600)
    full = markdown(r, limit=10_000_000)
    assert len(full) > 60_000
    md = markdown(r, limit=60_000)
    assert len(md) <= 60_000
    summary = md.split("<details>")[0]
    assert "**Breaking:** `pricing:fx.daily_rates`" in summary  # the summary always survives
    assert "`splice review --json`" in md


def test_text_output_names_the_change_and_the_data() -> None:
    r = _big_review(2)
    r["impact"]["dashboards"] = [
        {"node": "finance:exposure:q3_close", "name": "q3_close", "label": "Q3 close",
         "reads": ["finance:model_0001"], "owner": "lee", "url": "https://bi.example.com/q3"}
    ]  # fmt: skip
    out = text(r)
    assert "Q3 close <https://bi.example.com/q3> (finance:exposure:q3_close)" in out
    assert "](" not in out  # no Markdown link syntax in a terminal
    assert "pricing:fx.daily_rates: SQLMesh: breaking; changed: rate_to_usd" in out
    assert "finance:model_0001: rows 10 -> 10, +0 -0 ~10 (col_1 10)" in out


def test_a_commit_subject_and_a_ref_name_cannot_break_or_inject_into_the_comment(
    repo: Path,
) -> None:
    """A pull request's author writes its commit subject and names its branches: rendered as
    GitHub renders a comment (CommonMark with tables), they are text, never HTML, a link,
    emphasis, code or a table cell."""
    subject = "Fix | rates *now* <script>alert(1)</script> `code` [x](https://evil.example) _u_"
    ref = "evil|`<b>x</b>`(y)"  # a ref name git accepts
    git(repo, "branch", ref, "main")
    git(repo, "switch", "-q", "-c", "odd-subject", "new-column")
    git(repo, "commit", "-q", "--allow-empty", "-m", subject)
    try:
        res = cli(repo, "--base", ref, "--markdown", "--no-data")
    finally:
        git(repo, "switch", "-q", "--discard-changes", "main")
        git(repo, "branch", "-q", "-D", "odd-subject", ref)
    assert res.returncode == 0, res.stderr
    md = res.stdout
    lines = md.splitlines()
    assert lines[1] == f"### Splice review: {md_text(subject)}"
    assert lines[3].startswith(f"{md_text(ref)} (")
    page = MarkdownIt("commonmark").enable("table").render(md)
    assert f"<h3>Splice review: {html.escape(subject, quote=False)}</h3>" in page
    assert f"<p>{html.escape(ref, quote=False)} (" in page
    for injected in ("<script", "<b>", '<a href="https://evil', "<em>", "<code>`"):
        assert injected not in page, injected
    # the changes table is whole: its one row, three cells
    table = page.split("<tbody>", 1)[1].split("</tbody>", 1)[0]
    assert table.count("<tr>") == 1 and table.count("<td>") == 3
    assert "<td><code>finance:fct_gmv_qtd</code></td>" in table


def test_a_data_step_that_built_less_than_asked_says_so_in_the_summary() -> None:
    r = _big_review(3)
    r["data"]["run"] = {"status": "failed", "not_built": {"finance:model_0001": "Binder Error"}}
    r["data"]["models"][1] = {
        "node": "finance:model_0001",
        "note": "not built in the review environment",
    }
    summary = markdown(r).split("<details>")[0]
    assert "2 model(s) built in `review` and compared with prod: 2 differ" in summary
    assert "**1 not built, not compared:** `finance:model_0001`" in summary
    # nothing built: never "0 differ" after comparing nothing
    r["data"]["models"] = [{"node": m, "note": "not built"} for m in r["build"]]
    for out in (markdown(r).split("<details>")[0], text(r)):
        assert "nothing compared" in out and "none of the 3 model(s) to compare was built" in out
        assert "0 differ" not in out
