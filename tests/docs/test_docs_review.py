"""The GitHub Actions workflow in docs/review.md is valid YAML and uses splice review as it is."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from splice.cli.main import cli, register_commands
from splice.review.render import MARKER

ROOT = Path(__file__).resolve().parents[2]


def _workflow() -> dict:
    text = (ROOT / "docs" / "review.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert block, "docs/review.md has no ```yaml block"
    return yaml.safe_load(block.group(1))


def test_the_workflow_runs_review_with_options_that_exist() -> None:
    register_commands()
    wf = _workflow()
    steps = wf["jobs"]["review"]["steps"]
    run = next(s["run"] for s in steps if "splice review" in s.get("run", ""))
    options = {o for p in cli.commands["review"].params for o in getattr(p, "opts", [])}
    used = set(re.findall(r"(--[a-z-]+)", run.split("splice review", 1)[1]))
    assert used and used <= options, f"not options of splice review: {used - options}"
    assert "--markdown" in used and "--base" in used
    checkout = next(s for s in steps if str(s.get("uses", "")).startswith("actions/checkout"))
    assert checkout["with"]["fetch-depth"] == 0  # the base commit must be fetched


def test_the_workflow_finds_its_comment_by_the_marker_splice_prints() -> None:
    script = next(
        s["with"]["script"]
        for s in _workflow()["jobs"]["review"]["steps"]
        if "script" in s.get("with", {})
    )
    assert f'"{MARKER}"' in script
