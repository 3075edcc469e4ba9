"""`splice run` on a real dbt project (tests/fixtures/projects/jaffle_dbt, no splice.toml):
the time it prints is the whole command's, planning included; a new or changed dbt test of an
unchanged model runs at the next run on its own (as `dbt build --select state:modified+` runs
it), and the plan's header counts tests apart from builds."""

from __future__ import annotations

import re
import time
from pathlib import Path

from cli_support import copy_fixture, plain, splice

NEW_TEST = "not_null_customers_lifetime_value"


def _dbt_deps(project: Path) -> None:
    """dbt 1.11 needs `dbt deps` even for a `local:` package (it links it into dbt_packages)."""
    from dbt.cli.main import dbtRunner

    res = dbtRunner().invoke(
        ["deps", "--project-dir", str(project), "--profiles-dir", str(project), "--quiet"]
    )
    assert res.success, res.exception


def seconds(text: str) -> float:
    value, unit = text.split()
    return float(value) / 1000 if unit == "ms" else float(value)


def run(root: Path, *args: str, process: bool = False) -> tuple[str, float]:
    t0 = time.perf_counter()
    res = splice("run", *args, cwd=root, timeout=300, process=process)
    wall = time.perf_counter() - t0
    out = plain(res.stdout + res.stderr)
    assert res.returncode == 0, out
    return out, wall


def plan_text(root: Path) -> str:
    res = splice("plan", cwd=root, timeout=300)
    assert res.returncode == 0, res.stderr
    return plain(res.stdout)


def test_new_and_changed_tests_run_on_their_own_and_the_run_time_is_whole(
    tmp_path: Path,
) -> None:
    root = copy_fixture("jaffle_dbt", tmp_path)
    _dbt_deps(root)
    run(root)  # builds everything, with its tests

    # a no-op run that plans from scratch (a new process loads dbt): the time printed is the
    # whole time
    out, wall = run(root, "--fresh", process=True)
    m = re.search(r"Run \S+ success in ([\d.]+ m?s) \(planning ([\d.]+ m?s)\)", out)
    assert m, out
    total, planning = seconds(m.group(1)), seconds(m.group(2))
    assert planning > 0.5 and total >= planning
    assert total >= 0.5 * wall, (total, wall)

    # a new test on the unchanged customers model
    schema = root / "models" / "marts" / "schema.yml"
    text = schema.read_text()
    assert "      - name: lifetime_value\n        data_type: double\n" in text
    schema.write_text(
        text.replace(
            "      - name: lifetime_value\n        data_type: double\n",
            "      - name: lifetime_value\n        data_type: double\n        data_tests: [not_null]\n",
        )
    )
    planned = plan_text(root)
    assert "0 to build, 1 test(s)/audit(s) to run (1 on their own: new or changed)" in planned
    assert f"CHECK jaffle:{NEW_TEST}" in planned
    assert "a new check: it never passed in target 'dev'" in planned
    out, _ = run(root)
    assert "1 test(s)/audit(s) to run" in out and "checks: 1 pass" in out, out
    assert "0 built" in out and "checks 1 pass" in out
    # it passed: the next plan runs nothing
    again = plan_text(root)
    assert "0 to build, 0 test(s)/audit(s) to run" in again, again

    # the same test changed (warn only): it runs again, on its own
    schema.write_text(
        schema.read_text().replace(
            "data_tests: [not_null]\n",
            "data_tests:\n          - not_null:\n              config: {severity: warn}\n",
        )
    )
    changed = plan_text(root)
    assert f"CHECK jaffle:{NEW_TEST}" in changed, changed
    assert "its code changed since it last passed" in changed
    out, _ = run(root)
    assert "checks 1 pass" in out, out
    assert "0 to build, 0 test(s)/audit(s) to run" in plan_text(root)
