"""The audit Splice proposes for the stale-rates incident, applied to the demo in real SQLMesh:
it passes on the clean quarter and fails on the stale days (where every existing audit passed)."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from splice.demo import relocate
from splice.repair.audit_suggestion import _add_to_audits, suggest_audit

DIAGNOSIS = {
    "headline": {"detector": "stopped_moving", "metric": "fx_rate", "series": 29},
    "origin": {"node": "pricing:fx.daily_rates", "columns": ["rate_to_usd", "as_of"]},
    "source": {"node": "ingestion:fx_rates_ingest", "time_column": "rate_date"},
    "path": [
        {"node": "pricing:fx.daily_rates", "column": "rate_to_usd"},
        {"node": "ingestion:fx_rates_ingest", "column": "rate_to_usd",
         "relation": "warehouse.raw.fx_rates"},
    ],
}  # fmt: skip


def _apply(ws: Path) -> str:
    s = suggest_audit(ws / "pricing", "pricing", "models/fx/daily_rates.sql", DIAGNOSIS,
                      time_col="rate_date", dims=["currency"])  # fmt: skip
    assert s is not None
    (ws / "p.diff").write_text(s.diff)
    subprocess.run(["patch", "-p1", "-i", str(ws / "p.diff")], cwd=ws / "pricing", check=True,
                   capture_output=True)  # fmt: skip
    return s.name


def _plan(ws: Path, out: io.StringIO) -> None:
    from rich.console import Console
    from sqlmesh import Context
    from sqlmesh.core.console import TerminalConsole, get_console, set_console

    previous = get_console()
    set_console(TerminalConsole(console=Console(file=out, width=200, no_color=True)))
    ctx = Context(paths=str(ws / "pricing"))
    try:
        ctx.plan("prod", auto_apply=True, no_prompts=True, execution_time="2026-10-01")
    finally:
        ctx.close()
        set_console(previous)


def test_the_audit_passes_on_the_clean_quarter(fresh_demo: Path) -> None:
    name = _apply(fresh_demo)
    assert f"{name}()" in (fresh_demo / "pricing/models/fx/daily_rates.sql").read_text()
    out = io.StringIO()
    _plan(fresh_demo, out)  # SQLMesh audits every interval of the changed model: all pass
    assert "audit error" not in out.getvalue()


def test_the_audit_fails_on_the_stale_days(stale_demo_build, tmp_path: Path) -> None:
    from sqlmesh.utils.errors import PlanError

    ws = tmp_path / "travel"
    shutil.copytree(stale_demo_build.workspace, ws, symlinks=True)
    relocate(ws)
    name = _apply(ws)
    out = io.StringIO()
    with pytest.raises(PlanError):
        _plan(ws, out)
    # exactly the two stale days fail it (every other audit passed on them)
    assert f"'{name}' audit error: 2 rows failed" in out.getvalue()


def test_adding_to_an_audits_list_keeps_the_model_valid() -> None:
    model = "MODEL (\n  name a.b,\n  audits (\n    not_null(columns := (x))\n  )\n);\nSELECT 1 AS x"
    out = _add_to_audits(model, "x_moves()")
    assert out == (
        "MODEL (\n  name a.b,\n  audits (\n    not_null(columns := (x)),\n    x_moves()\n  )\n);"
        "\nSELECT 1 AS x"
    )
    bare = "MODEL (\n  name a.b\n);\nSELECT 1 AS x"
    assert _add_to_audits(bare, "x_moves()") == (
        "MODEL (\n  name a.b,\n  audits (\n    x_moves()\n  )\n);\nSELECT 1 AS x"
    )
