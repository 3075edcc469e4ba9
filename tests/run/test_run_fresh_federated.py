"""`splice run` on a workspace nobody built yet: SQLMesh's first prod plan (with external
models upstream) and the dbt project after it, real tools, from nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from run_support import query, splice_cli

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "projects" / "federated"


def test_a_never_built_federated_workspace_builds_in_one_run(tmp_path: Path) -> None:
    import shutil

    ws = tmp_path / "ops"
    shutil.copytree(FIXTURE, ws)
    subprocess.run([sys.executable, "ingest/load_stock.py"], cwd=ws, check=True)

    r = splice_cli("run", "--execution-time", "2024-03-04", "--json", cwd=ws, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    report = json.loads(r.stdout)
    statuses = {n: v["status"] for n, v in report["nodes"].items()}
    # SQLMesh's first plan promoted both models to prod (an external model upstream of them
    # must not make Splice misread the promotion), and dbt built on top
    assert statuses["inventory:stock.levels"] == "success", report["nodes"][
        "inventory:stock.levels"
    ]
    assert statuses["inventory:stock.reorder_points"] == "success"
    assert {s for n, s in statuses.items() if n.startswith("reporting:")} == {"success"}
    assert [(s["project"], s["status"]) for s in report["segments"]] == [
        ("inventory", "success"),
        ("reporting", "success"),
    ]
    assert query(ws, "SELECT COUNT(*) FROM stock.levels")[0][0] > 0

    again = splice_cli("run", "--execution-time", "2024-03-04", "--json", cwd=ws, timeout=300)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["segments"] == []
