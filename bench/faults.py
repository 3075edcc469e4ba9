"""Every fault Splice was probed with, tried again, with a table of how it fared.

Each fault is a test that breaks something for real (kills a process with SIGKILL at a chosen
step, runs commands concurrently, corrupts or deletes state files, tampers with the audit log
or an undo file, fills a disk, feeds bad input) and asserts two things: nothing was lost (the
warehouse equals the undo or the finished repair, the state is intact, nothing half-written)
and the user got a clear error (one red line naming what and how to fix it, exit 2; never
"This is a bug in Splice"). This script runs those tests and prints, per group: tried,
survived with nothing lost, clear errors.

    python bench/faults.py            # all groups (several minutes: real tools, real kills)
    python bench/faults.py --group kills
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: group -> (what it probes, the tests that try it)
GROUPS: dict[str, tuple[str, list[str]]] = {
    "kills": (
        "SIGKILL of a run and of an apply at each step; a reload's child",
        [
            "tests/run/test_run_kill.py",
            "tests/repair/test_repair_kill.py",
        ],
    ),
    "concurrency": (
        "concurrent runs and watches",
        [
            "tests/run/test_run_journal_locks.py",
            "tests/watch/test_watch_concurrent.py",
        ],
    ),
    "state": (
        "a deleted, truncated or foreign state; a newer or corrupt state file",
        [
            "tests/repair/test_state_witness.py::test_a_lost_state_is_refused_until_new_state_is_asked_for",
            "tests/state/test_store.py",
        ],
    ),
    "tampering": (
        "edited, deleted, reordered, cut and rewritten audit logs; forged undo",
        [
            "tests/repair/test_approval_rules.py::test_audit_log_verify_detects_an_edited_or_deleted_entry",
            "tests/repair/test_state_witness.py::test_a_consistent_rewrite_of_chain_and_head_is_caught_by_the_witness",
            "tests/repair/test_repair_demo.py::test_an_undo_forged_with_its_checksum_is_refused",
        ],
    ),
    "re-blessing": (
        "a consistent rewrite, a rolled-back state, a deleted witness, forged appends (with and "
        "without the server's key), receipts, anchors (PostgreSQL, git, webhook): TAMPERED "
        "before and after ordinary commands",
        [
            "tests/repair/test_audit_reblessing.py",
            "tests/repair/test_audit_anchors.py",
        ],
    ),
    "who decides": (
        "disguised names, self-approval, undo and revoke rules, stop",
        [
            "tests/repair/test_decision_names_and_revocation.py",
            "tests/repair/test_approval_rules.py",
        ],
    ),
    "repairs": (
        "a failed reload put back, undo after a worse repair, undo then redo",
        [
            "tests/repair/test_repair_demo.py::test_a_reload_that_fails_half_way_leaves_the_warehouse_as_the_undo_recorded_it",
            "tests/repair/test_repair_demo.py::test_undo_restores_byte_identical_data_after_a_repair_that_made_things_worse",
            "tests/repair/test_repair_demo.py::test_undo_then_repair_again_verifies_like_the_first_repair",
        ],
    ),
    "machine": (
        "a locked warehouse, a full disk, a read-only file system",
        [
            "tests/cli/test_cli_machine_faults.py",
        ],
    ),
    "bad input": (
        "malformed config, bad selectors, bad dates, unknown keys and dialects",
        [
            "tests/cli/test_cli_errors.py",
            "tests/cli/test_cli_bad_values.py",
            "tests/graph/test_selectors.py",
        ],
    ),
}


class _Collect:
    def __init__(self) -> None:
        self.results: dict[str, str] = {}

    def pytest_runtest_logreport(self, report):  # type: ignore[no-untyped-def]
        if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
            self.results[report.nodeid] = report.outcome


def main() -> int:
    import pytest

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--group", action="append", choices=sorted(GROUPS), help="only these groups")
    args = ap.parse_args()
    chosen = args.group or list(GROUPS)
    sys.path.insert(0, str(ROOT))  # the tests import their support modules as tests.*
    rows = []
    failed_any = False
    t_all = time.perf_counter()
    for group in chosen:
        what, targets = GROUPS[group]
        col = _Collect()
        t0 = time.perf_counter()
        code = pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT), *targets],
                           plugins=[col])  # fmt: skip
        outcomes = defaultdict(int)
        for outcome in col.results.values():
            outcomes[outcome] += 1
        tried = sum(outcomes.values())
        ok = outcomes["passed"]
        failed_any |= code not in (0,) or ok != tried
        rows.append((group, what, tried, ok, ok, outcomes["skipped"], time.perf_counter() - t0))
    print()
    print(f"{'group':<12} {'tried':>5} {'survived':>9} {'clear':>6} {'skipped':>8} {'s':>6}  what")
    for group, what, tried, ok, clear, skipped, secs in rows:
        print(f"{group:<12} {tried:>5} {ok:>9} {clear:>6} {skipped:>8} {secs:>6.0f}  {what}")
    total = [sum(r[i] for r in rows) for i in (2, 3, 4, 5)]
    print(f"{'total':<12} {total[0]:>5} {total[1]:>9} {total[2]:>6} {total[3]:>8} "
          f"{time.perf_counter() - t_all:>6.0f}")  # fmt: skip
    print(
        "\nsurvived: the test passed, so nothing was lost (warehouse, state, log as asserted);"
        " clear: its error was one red line with a fix and exit 2 (asserted by the same test)."
    )
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
