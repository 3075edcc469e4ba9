"""Every command the README's tour and the demo's "Look next" show does what its text says,
run as printed in the workspace `make demo` leaves (the stale-rates story, repaired), and so
do docs/cli.md's examples on the demo.

A command added to the README or to the demo's tour without a check here fails the test: each
one shown needs an entry in CHECKS (what its comment promises, as a user would see it)."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import duckdb
import pytest
from tests.cli_runner import run_cli

from splice.demo import relocate

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
CLI_DOC = ROOT / "docs" / "cli.md"


def readme_tour() -> list[str]:
    """The commands of the README's "A short tour of the demo" block, as typed (without the
    `../.venv/bin/splice` in front and the comment after)."""
    text = README.read_text().split("## A short tour of the demo", 1)[1]
    block = text.split("```sh", 1)[1].split("```", 1)[0]
    prefix = "../.venv/bin/splice "
    return [
        line.strip().removeprefix(prefix).split("#", 1)[0].strip()
        for line in block.splitlines()
        if line.strip().startswith(prefix)
    ]


def look_next(tour: str) -> list[str]:
    """The `splice ...` commands under a tour's "Look next:" (Rich markup and comments off)."""
    from rich.text import Text

    plain = Text.from_markup(tour).plain
    lines = plain.split("Look next:", 1)[1].splitlines()
    return [
        line.strip().removeprefix("splice ").split("#", 1)[0].strip()
        for line in lines
        if line.strip().startswith("splice ")
    ]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "SPLICE_WORKSPACE")}
    env.update(NO_COLOR="1", DBT_SEND_ANONYMOUS_USAGE_STATS="false")
    return env


def splice(ws: Path, command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``splice COMMAND`` typed in the workspace, as the tour says."""
    return run_cli(shlex.split(command), cwd=ws, env=_env())


def _rate(ws: Path, day: str) -> float:
    with duckdb.connect(str(ws / "warehouse.duckdb"), read_only=True) as con:
        row = con.execute(
            "SELECT rate_to_usd FROM fx.daily_rates WHERE currency = 'EUR' AND rate_date = ?",
            [day],
        ).fetchone()
    assert row is not None
    return float(row[0])


# -- what each command shown must do ----------------------------------------------------------
Check = Callable[[Path, subprocess.CompletedProcess[str]], None]


def _ok(r: subprocess.CompletedProcess[str], *texts: str) -> None:
    assert r.returncode == 0, (r.args, r.stdout[-2000:], r.stderr[-2000:])
    for t in texts:
        assert t in r.stdout, (r.args, t, r.stdout[-3000:])


def _ls(ws: Path, r: Any) -> None:  # every node of every project, one graph
    _ok(r, "pricing:fx.daily_rates", "finance:fct_gmv_qtd", "ingestion:fx_rates_ingest",
        "dashboards:pricing_ops", "finance:metric:gmv", "49 nodes")  # fmt: skip


def _graph(ws: Path, r: Any) -> None:  # bindings across projects, with their evidence
    _ok(r, "bindings across projects", "pricing:marts.agg_gmv_daily -> "
        "finance:source:pricing.agg_gmv_daily (declared via warehouse.marts.agg_gmv_daily)")  # fmt: skip


def _lineage_up(ws: Path, r: Any) -> None:  # dashboard -> dbt -> SQLMesh -> raw -> dlt job
    _ok(r, "finance:fct_gmv_qtd.gmv_usd direct", "pricing:marts.agg_gmv_daily.gmv_usd direct",
        "ingestion:fx_rates_ingest.rate_to_usd direct (across binding)",
        "origins: ingestion:bookings_load, ingestion:fx_rates_ingest")  # fmt: skip


def _lineage_down(ws: Path, r: Any) -> None:
    _ok(r, "finance:fct_gmv_qtd.gmv_usd_qtd direct", "dashboards: dashboards:pricing_ops, "
        "finance:exposure:gmv_usd_dashboard, finance:exposure:q3_close")  # fmt: skip


def _doctor(ws: Path, r: Any) -> None:  # where the join is weak (exit 1 on errors): none
    _ok(r)
    assert "0 error(s)" in r.stdout or "No problems found." in r.stdout, r.stdout


def _plan(ws: Path, r: Any) -> None:  # BUILD or REUSE per node, with the evidence
    _ok(r, "REUSE pricing:fx.daily_rates  SQLMesh: no changes and no missing intervals",
        "REUSE finance:fct_gmv_qtd  unchanged since its last build")  # fmt: skip


def _run(ws: Path, r: Any) -> None:  # here: nothing to build, the demo is up to date
    _ok(r, "success", "0 failed")
    assert "nothing to build: every selected node is up to date" in r.stdout + r.stderr


def _runs(ws: Path, r: Any) -> None:  # the run journal
    _ok(r, "splice apply PR-1", "splice run -s pricing:fx.daily_rates+")


def _watch(ws: Path, r: Any) -> None:  # measure what is new, run the detectors
    _ok(r, "Watched 27 metric queries")


def _watch_backfill(ws: Path, r: Any) -> None:  # baseline the numbers; detect anomalies
    _ok(r, "Watched 27 metric queries", "anomal")


def _incidents(ws: Path, r: Any) -> None:  # anomalies grouped by shared cause (INC-1: resolved)
    _ok(r, "INC-1", "resolved")


def _incident(ws: Path, r: Any) -> None:  # origin, cause, evidence, blast radius, scope
    _ok(r, "Where it starts: pricing:fx.daily_rates", "Cause: Stopped moving", "Evidence:",
        "Blast radius:", "Scope: 2026-09-28..2026-09-29")  # fmt: skip


def _incident_json(ws: Path, r: Any) -> None:  # the whole diagnosis as data
    _ok(r)
    d = json.loads(r.stdout)
    assert d["id"] == "INC-1" and d["origin"] == "pricing:fx.daily_rates"
    assert d["diagnosis"]["source"]["node"] == "ingestion:fx_rates_ingest"


def _proposals(ws: Path, r: Any) -> None:  # repair proposals and their status
    _ok(r, "PR-1 applied")


def _receipt(ws: Path, r: Any) -> None:  # cause, scope, approver, runs, before/after, undo
    _ok(r, "- Cause: Stopped moving", "- Scope: 2026-09-28 .. 2026-09-29",
        "- Approved by: maria (person", "## What ran", "## Verification", "| before | after |",
        "## Undo")  # fmt: skip


def _receipt_json(ws: Path, r: Any) -> None:  # the receipt as data
    _ok(r)
    d = json.loads(r.stdout)
    assert d["proposal"] == "PR-1" and d["incident"] == "INC-1"
    assert [a["by"] for a in d["approved_by"]] == ["maria", "lee"], d["approved_by"]


def _verify(ws: Path, r: Any) -> None:  # the hash-chained log of every decision
    _ok(r, "Audit log intact")


def _undo(ws: Path, r: Any) -> None:  # an owner puts back exactly what the repair rewrote
    _ok(r, "PR-1 undone: 7 relation(s), 2,186 rows restored, checksums equal.")
    assert "Restoring the undo of PR-1 in one warehouse transaction" in r.stderr
    # the frozen rates are back: Monday repeats Friday's, as the vendor served them
    assert _rate(ws, "2026-09-28") == _rate(ws, "2026-09-25")


def _keys(ws: Path, r: Any) -> None:  # a key maria signs in with and approves
    _ok(r, "spk_")
    keys = json.loads(splice(ws, "keys list --json").stdout)
    mine = [k for k in keys if k["principal"] == "maria"]
    assert mine and "approve" in mine[-1]["scopes"], mine


CHECKS: dict[str, Check] = {
    "ls": _ls,
    "graph": _graph,
    "lineage finance:exposure:q3_close --upstream": _lineage_up,
    "lineage pricing:fx.daily_rates.rate_to_usd --downstream": _lineage_down,
    "doctor": _doctor,
    "plan": _plan,
    "run -s pricing:fx.daily_rates+": _run,
    "runs": _runs,
    "watch": _watch,
    "watch --backfill": _watch_backfill,
    "incidents --all": _incidents,
    "incident show INC-1": _incident,
    "incident show INC-1 --json": _incident_json,
    "proposals --all": _proposals,
    "receipt PR-1": _receipt,
    "receipt PR-1 --json": _receipt_json,
    "audit-log verify": _verify,
    "undo PR-1 --as maria": _undo,
    "keys create --principal maria --kind person --scopes read,propose,approve": _keys,
}
#: Servers: started, asked, stopped (see the tests below).
SERVERS = ("mcp", "serve")


@pytest.fixture(scope="module")
def made(stale_story: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """What `make demo` leaves: the stale-rates story and its repair (a private copy)."""
    from splice.demo.story import tell_repair

    ws = tmp_path_factory.mktemp("tour") / "demo-workspace"
    shutil.copytree(stale_story.build.workspace, ws, symlinks=True)
    relocate(ws)
    fixed = tell_repair(ws, "INC-1")
    return SimpleNamespace(workspace=ws, story=stale_story, repair=fixed)


def test_the_readme_tour_does_what_it_says(made: Any) -> None:
    commands = readme_tour()
    assert commands[0] == "ls" and commands[-1] == "undo PR-1 --as maria", commands
    unchecked = [c for c in commands if c not in CHECKS]
    assert unchecked == [], f"README tour commands without a check here: {unchecked}"
    # without --as, the operating-system user is no owner: the error names the command that works
    refused = splice(made.workspace, "undo PR-1")
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "Fix: one of them runs splice undo PR-1 --as maria" in refused.stderr, refused.stderr
    assert "Restoring" not in refused.stderr  # refused before anything is said to start
    metrics_show_example(made.workspace, frozen=False)  # the repaired rates: nothing flagged
    for command in commands:
        CHECKS[command](made.workspace, splice(made.workspace, command))


def test_the_demos_look_next_does_what_it_says(made: Any) -> None:
    """What `splice demo --incident stale-rates` prints to look at next (the build's tour, then
    the story's), run after the README's tour; a command the README already ran is not run
    twice (a second undo has nothing to put back)."""
    from splice.demo.tour import demo_tour, story_tour

    ws = made.workspace
    built = SimpleNamespace(workspace=ws, counts={}, elapsed_seconds=0)
    shown = look_next(demo_tour(built)) + look_next(story_tour(made.story, made.repair))
    assert "undo PR-1 --as maria" in shown and "incidents --all" in shown
    unchecked = [c for c in shown if c not in CHECKS and c not in SERVERS]
    assert unchecked == [], f"Look next commands without a check here: {unchecked}"
    done = set(readme_tour())
    for command in dict.fromkeys(shown):
        if command in done or command in SERVERS:
            continue
        CHECKS[command](ws, splice(ws, command))
    assert [c for c in shown if c in SERVERS] == ["mcp", "serve"]


def test_look_next_mcp_serves_the_tools(made: Any) -> None:
    """`splice mcp`: these tools for a coding agent (a real stdio session)."""
    import anyio
    from tests.mcp.mcp_support import stdio_session

    async def tools() -> list[str]:
        async with stdio_session(made.workspace) as s:
            return [t.name for t in (await s.list_tools()).tools]

    names = anyio.run(tools)
    assert "list_incidents" in names and "get_incident" in names, names


def test_look_next_serve_answers_and_the_key_signs_in(made: Any) -> None:
    """`splice serve`: the web page (on a free port: tests run side by side), and the key
    `splice keys create` printed signs maria in."""
    from splice.warehouse.postgres.local_server import free_port

    # docs/web.md starts the same way
    block = (ROOT / "docs" / "web.md").read_text().split("```sh", 1)[1].split("```", 1)[0]
    web_md = [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    assert web_md == [
        "splice keys create --principal maria --kind person --scopes read,propose,approve",
        "splice serve",
    ]
    ws = made.workspace
    made_key = splice(ws, "keys create --principal maria --kind person --scopes "
                      "read,propose,approve --json")  # fmt: skip
    key = json.loads(made_key.stdout)["key"]
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "splice", "serve", "--port", str(port)],
                            cwd=ws, env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/signin", timeout=5) as page:
                    assert page.status == 200 and "key" in page.read().decode().lower()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
                assert time.monotonic() < deadline, "splice serve did not answer in 120 s"
                time.sleep(0.5)
        import httpx

        r = httpx.post(f"{base}/signin/key", data={"key": key, "next": "/"})
        assert r.status_code == 303 and r.cookies, r.text[:500]
        home = httpx.get(f"{base}/", cookies=r.cookies)
        assert home.status_code == 200 and "maria" in home.text
    finally:
        proc.terminate()
        proc.wait(timeout=30)


# -- docs/cli.md's examples on the demo --------------------------------------------------------
def metrics_show_example(ws: Path, *, frozen: bool) -> None:
    """`splice metrics show fx_rate --series EUR --last 5`: with INC-1 open, Friday's rate
    repeated on Monday and Tuesday, flagged stopped_moving, with a baseline apart from it;
    repaired, the rates move and nothing is flagged."""
    shown = "splice metrics show fx_rate --series EUR --last 5"
    section = CLI_DOC.read_text().split("## `splice metrics show NAME`", 1)[1].split("\n## ")[0]
    assert f"`{shown}`" in section and "`splice undo PR-1 --as maria`" in section
    r = splice(ws, shown.removeprefix("splice "))
    _ok(r, "currency=EUR")
    rows = {
        line.split()[0]: line.split()
        for line in r.stdout.splitlines()
        if line.startswith("2026-") and len(line.split()) > 1
    }
    assert list(rows) == ["2026-09-24", "2026-09-25", "2026-09-28", "2026-09-29", "2026-09-30"]
    friday = rows["2026-09-25"][1]
    for day in ("2026-09-28", "2026-09-29"):
        assert (rows[day][1] == friday) is frozen, r.stdout
        assert (rows[day][-1] == "stopped_moving") is frozen, r.stdout
        assert rows[day][2] != friday  # the baseline is apart from the frozen value
    assert rows["2026-09-25"][-1] != "stopped_moving"


def test_cli_md_examples(made: Any) -> None:
    """After the README tour (its undo opened INC-1 again) the metrics example shows the
    frozen rates; `splice ls --search gmv` puts pricing:marts.agg_gmv_daily first."""
    if splice(made.workspace, "proposals --all").stdout.find("PR-1 undone") < 0:
        pytest.skip("runs after the README tour (its undo)")
    metrics_show_example(made.workspace, frozen=True)
    shown = "splice ls --search gmv"
    assert f"`{shown}` puts `pricing:marts.agg_gmv_daily` first" in CLI_DOC.read_text()
    r = splice(made.workspace, shown.removeprefix("splice "))
    _ok(r)
    first = next(line for line in r.stdout.splitlines()[1:] if line.strip())
    assert first.split()[0] == "pricing:marts.agg_gmv_daily", r.stdout
