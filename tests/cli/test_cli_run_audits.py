"""`splice run` on a real SQLMesh project (tests/fixtures/projects/shop_sqlmesh): an audit added
to, or changed in, the MODEL block of an unchanged model runs at the next run (SQLMesh's plan
sees a metadata change and audits the reused table), the plan counts it apart from builds, a
failing one fails the run; and it fails again at every run until it is fixed (SQLMesh's own
plan promotes the already stored snapshot the second time without auditing it)."""

from __future__ import annotations

import json
from pathlib import Path

from cli_support import copy_fixture, plain, splice

MODEL = Path("models") / "marts" / "customers.sql"
AUDITS = "  audits (not_null(columns := (customer_id)))"
RANGE = "i35i:audit:marts.customers.accepted_range"  # the project is named after its folder


def _with_range(root: Path, min_v: int) -> None:
    text = (root / MODEL).read_text()
    head, _, rest = text.partition("  audits (")
    rest = rest.split("\n", 1)[1]
    (root / MODEL).write_text(
        f"{head}  audits (not_null(columns := (customer_id)), "
        f"accepted_range(column := lifetime_value, min_v := {min_v}))\n{rest}"
    )


def _run(root: Path) -> tuple[int, str]:
    res = splice("run", cwd=root, timeout=300)
    return res.returncode, plain(res.stdout + res.stderr)


def _plan(root: Path) -> str:
    res = splice("plan", cwd=root, timeout=300)
    assert res.returncode == 0, res.stderr
    return plain(res.stdout)


def _journal_checks(root: Path, out: str) -> dict[str, str]:
    run_id = out.split("journal: splice runs show ", 1)[1].split()[0]
    res = splice("runs", "show", run_id, "--json", cwd=root)
    assert res.returncode == 0, res.stderr
    events = json.loads(res.stdout)["events"]
    return {e["node_id"]: e["status"] for e in events if e["kind"] == "check_finished"}


def test_an_added_or_changed_audit_of_an_unchanged_model_runs_and_fails_until_fixed(
    tmp_path: Path,
) -> None:
    root = copy_fixture("shop_sqlmesh", tmp_path, as_name="i35i")
    assert AUDITS in (root / MODEL).read_text()
    code, out = _run(root)
    assert code == 0, out
    assert "0 to build, 0 test(s)/audit(s) to run" in _plan(root)

    # a passing audit added to the unchanged model: it runs, the table is not rebuilt
    _with_range(root, 0)
    planned = _plan(root)
    assert "2 test(s)/audit(s) to run" in planned and "SQLMesh: metadata change" in planned
    code, out = _run(root)
    assert code == 0, out
    assert "checks 2 pass" in out, out
    assert _journal_checks(root, out)[RANGE] == "pass"
    assert "0 to build, 0 test(s)/audit(s) to run" in _plan(root)

    # its argument changed so that it fails: the run fails on it
    _with_range(root, 1000)
    code, out = _run(root)
    assert code != 0, out
    assert "blocking audit failed: accepted_range (3 rows)" in out, out
    assert "checks 1 fail, 1 pass" in out
    assert _journal_checks(root, out)[RANGE] == "fail"

    # nothing fixed: the next run fails again (it does not promote the failing audit)
    code, out = _run(root)
    assert code != 0, out
    assert "blocking audit failed: accepted_range (3 rows)" in out, out
    assert "checks 1 fail, 1 pass" in out
    assert _journal_checks(root, out)[RANGE] == "fail"
    assert "2 test(s)/audit(s) to run" in _plan(root)  # still to run: not promoted

    # fixed: it passes and the plan is empty again
    _with_range(root, -1)
    code, out = _run(root)
    assert code == 0, out
    assert "checks 2 pass" in out, out
    assert "0 to build, 0 test(s)/audit(s) to run" in _plan(root)


def test_an_added_audit_left_unpromoted_by_a_failed_plan_runs_at_the_next_run(
    tmp_path: Path,
) -> None:
    root = copy_fixture("shop_sqlmesh", tmp_path, as_name="i35i")
    code, out = _run(root)
    assert code == 0, out
    # a passing audit added, in the same plan as a model downstream that fails: SQLMesh
    # stores the audited model's new snapshot, promotes nothing
    _with_range(root, 0)
    tiers = root / "models" / "marts" / "customer_tiers.py"
    good = tiers.read_text()
    tiers.write_text(
        good.replace(
            "    table = context.resolve_table",
            '    raise ValueError("broken")\n    table = context.resolve_table',
        )
    )
    code, out = _run(root)
    assert code != 0 and "raise ValueError('broken')" in out, out
    # the downstream model fixed: the audit is still to run, and runs (it is not skipped)
    tiers.write_text(good)
    planned = _plan(root)
    assert "2 test(s)/audit(s) to run" in planned, planned
    code, out = _run(root)
    assert code == 0, out
    assert "checks 2 pass" in out, out
    assert _journal_checks(root, out)[RANGE] == "pass"
    assert "0 to build, 0 test(s)/audit(s) to run" in _plan(root)
