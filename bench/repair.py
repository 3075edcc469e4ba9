"""Benchmark: the scoped repair of the demo's stale-rates incident against a full rebuild.

    python bench/repair.py               # build the incident story once, then both repairs
    python bench/repair.py --json

What it measures, in one run, with the real tools (dlt, SQLMesh, dbt, DuckDB):

1. the incident story (``splice.demo.story``): the clean quarter, the vendor frozen on Monday
   2026-09-28 and Tuesday, ``splice run``, ``splice watch``: one incident;
2. the vendor is fixed; on a copy, Splice's repair: ``propose`` (draft from the diagnosis,
   undo capture of every row it will rewrite, restore check), ``approve`` (a named owner),
   ``apply`` (reload the two days, SQLMesh restatement of those intervals with its cascade,
   dbt rebuild downstream, as one journaled run) and the verification (the incident's metrics
   measured afresh): the wall time of each phase, and the rows rewritten;
3. the peer, on another copy: what a team does without the scope: reload the whole quarter,
   restate the SQLMesh models over their whole range, ``dbt build``: wall time and rows
   rewritten (every row of the same relations);
4. both end states compared: the GMV of every day, which must be identical (the scoped repair
   is not a shortcut to a different answer).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def _copy(src: Path, dest: Path) -> Path:
    from splice.demo import relocate

    shutil.copytree(src, dest, symlinks=True)
    relocate(dest)
    return dest


def _gmv(ws_dir: Path) -> dict[str, float]:
    import duckdb

    con = duckdb.connect(str(ws_dir / "warehouse.duckdb"), read_only=True)
    try:
        rows = con.execute(
            "SELECT booking_date, SUM(gmv_usd) FROM warehouse.marts.agg_gmv_daily GROUP BY 1"
        ).fetchall()
    finally:
        con.close()
    return {d.isoformat(): round(float(v), 4) for d, v in rows}


def scoped(ws_dir: Path, incident_id: str) -> dict[str, Any]:
    from splice.repair import approvals
    from splice.repair.flow import apply, propose
    from splice.workspace import Workspace

    out: dict[str, Any] = {}
    t0 = time.perf_counter()
    with Workspace.open(ws_dir) as ws:
        p = propose(ws, incident_id, actor="splice-agent")
        out["propose_s"] = time.perf_counter() - t0
        t1 = time.perf_counter()
        approvals.approve(ws, p.proposal_id, actor="maria", comment="bench")
        out["approve_s"] = time.perf_counter() - t1
        t2 = time.perf_counter()
        res = apply(ws, p.proposal_id, actor="maria")
        out["apply_and_verify_s"] = time.perf_counter() - t2
    out["total_s"] = time.perf_counter() - t0
    out["run_status"] = res.run.status
    out["verified"] = bool(res.verification and res.verification.passed)
    out["verify_s"] = res.verification.seconds if res.verification else None
    out["rows_rewritten"] = p.cost.get("rows_scoped")
    out["rows_full_rebuild"] = p.cost.get("rows_full_rebuild")
    out["intervals"] = p.cost.get("intervals_scoped")
    out["undo_rows"] = sum(u.rows for u in p.undo)
    out["relations"] = p.cost.get("relations")
    return out


def full_rebuild(ws_dir: Path) -> dict[str, Any]:
    """Reload the quarter, restate every SQLMesh model over its whole range, dbt build."""
    from sqlmesh import Context

    from splice.demo.layout import EXECUTION_TIME, Q3_END, Q3_START

    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "ingest/fx_rates_ingest.py", "--start", Q3_START.isoformat(),
         "--end", Q3_END.isoformat()],
        cwd=ws_dir, check=True, capture_output=True,
    )  # fmt: skip
    t1 = time.perf_counter()
    ctx = Context(paths=str(ws_dir / "pricing"))
    try:
        ctx.plan("prod", restate_models=["fx.daily_rates"], start=Q3_START.isoformat(),
                 end=Q3_END.isoformat(), auto_apply=True, no_prompts=True,
                 execution_time=EXECUTION_TIME)  # fmt: skip
    finally:
        ctx.close()
    t2 = time.perf_counter()
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    from dbt.cli.main import dbtRunner

    fin = str(ws_dir / "finance")
    res = dbtRunner().invoke(["build", "--project-dir", fin, "--profiles-dir", fin,
                              "--target", "prod", "--log-level", "none"])  # fmt: skip
    DuckDBConnectionManager.close_all_connections()
    t3 = time.perf_counter()
    return {"reload_s": t1 - t0, "restate_s": t2 - t1, "dbt_s": t3 - t2, "total_s": t3 - t0,
            "dbt_ok": bool(res.success)}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from splice.demo import set_incident
    from splice.demo.story import tell_stale_rates

    with tempfile.TemporaryDirectory(prefix="splice-bench-repair-") as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        story = tell_stale_rates(root / "story")
        story_s = time.perf_counter() - t0
        inc = story.incidents[0].incident_id
        set_incident(story.build.workspace, None)  # the vendor is fixed
        splice_ws = _copy(story.build.workspace, root / "splice")
        peer_ws = _copy(story.build.workspace, root / "peer")
        ours = scoped(splice_ws, inc)
        peer = full_rebuild(peer_ws)
        same = _gmv(splice_ws) == _gmv(peer_ws)
    report = {"story_s": story_s, "splice": ours, "peer_full_rebuild": peer,
              "same_gmv_every_day": same}  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=2, default=str))
        return 0
    print("Repair benchmark: the demo's stale-rates incident (2026-09-28..29), real tools")
    print(f"(story: clean quarter, freeze, splice run, splice watch: {story_s:.0f} s)\n")
    s = ours
    print(f"Splice scoped repair: {s['run_status']}, verified={s['verified']}")
    print(f"  propose (draft + undo capture of {s['undo_rows']:,} rows + restore check) "
          f"{s['propose_s']:.2f} s; approve {s['approve_s']:.2f} s; apply + verify "
          f"{s['apply_and_verify_s']:.2f} s (verify {s['verify_s']:.2f} s); total "
          f"{s['total_s']:.2f} s")  # fmt: skip
    print(f"  rows rewritten {s['rows_rewritten']:,} of {s['rows_full_rebuild']:,} in the same "
          f"relations ({100 * s['rows_rewritten'] / s['rows_full_rebuild']:.1f}%); "
          f"{s['intervals']} SQLMesh intervals")  # fmt: skip
    for r in s["relations"]:
        print(
            f"    {r['relation']:62} {r['rows_scoped']:>7,} of {r['rows_total']:>7,}"
            + (f" (by {r['scoped_by']})" if r["scoped_by"] else " (whole table: dbt)")
        )
    p = peer
    print(f"\npeer full rebuild (reload quarter, restate whole range, dbt build): "
          f"{p['total_s']:.2f} s = reload {p['reload_s']:.2f} + SQLMesh {p['restate_s']:.2f} + "
          f"dbt {p['dbt_s']:.2f}; rewrites every row ({s['rows_full_rebuild']:,})")  # fmt: skip
    print(f"\nsame GMV on every day after both repairs: {'yes' if same else 'NO'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
